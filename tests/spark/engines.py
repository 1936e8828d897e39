"""Runs a query on the compiled engine, the reference interpreter and Darwin-on-Spark."""

import darwin as dw
from darwin.testing import assert_table_equal


def assert_three_engines_agree(query: dw.Table, batch_size: int = 65_536) -> dw.RunResult:
    """Compiled == reference (in order), and Spark's final table == reference's as a multiset (a Spark
    job has no output order); the late rows and the input row counts too."""
    config = dw.Config(batch_size=batch_size)
    compiled = query.execute(config)
    reference = query.execute(config.replace(mode="interpreted"))
    spark = query.execute(config.replace(engine="spark"))
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    assert_table_equal(spark.table, reference.table, sort=True, check_nullability=True)
    if reference.late is not None:
        assert spark.late is not None, "Spark kept no late rows"
        assert_table_equal(spark.late, reference.late, sort=True)
        assert spark.metrics["late_rows"] == reference.metrics["late_rows"]
    assert spark.metrics["input_rows"] == reference.metrics["input_rows"]
    return spark
