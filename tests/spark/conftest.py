import pyspark  # noqa: F401 -- the `test` extra installs it: a missing pyspark fails, never skips
import pytest


@pytest.fixture
def spark():
    """The process's SparkSession as each test starts, shared with every other Spark test: one kept
    for the whole run was a stopped one after a test on a cluster or with another conf (see
    tests/conftest.py)."""
    from darwin.spark import spark_session

    return spark_session("darwin-tests")
