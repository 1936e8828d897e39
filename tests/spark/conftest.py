import pyspark  # noqa: F401 -- the `test` extra installs it: a missing pyspark fails, never skips
import pytest


@pytest.fixture(scope="session")
def spark():
    """The process's one SparkSession, shared with every other Spark test."""
    from darwin.spark import spark_session

    return spark_session("darwin-tests")
