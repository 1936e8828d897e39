import pytest

pytest.importorskip("pyspark")  # the Spark tests need pyspark (the `test` extra installs it)


@pytest.fixture(scope="session")
def spark():
    """The process's one SparkSession, shared with every other Spark test."""
    from darwin.spark import spark_session

    return spark_session("darwin-tests")
