"""Spark reads back what a partitioned Darwin sink wrote: the directories name the partition
values as Spark's ``partitionBy`` would (escaped, NULL as ``__HIVE_DEFAULT_PARTITION__``), the
files hold the other columns; bids partitioned by a time part and awkward strings alike."""

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal

AWKWARD = ["10:00", "a/b", "../..", "x=y", "100%", "", None, "über", "q?#*[]^{'\"\\", "tab\tnew\nline", ".hidden"]


def bids(n: int = 2_000) -> pa.Table:
    start = datetime(2015, 7, 15, 9, 58)
    return pa.table({
        "auction": pa.array([i % 37 for i in range(n)], pa.int64()),
        "price": pa.array([float(i % 101) * 1.5 for i in range(n)], pa.float64()),
        "date_time": pa.array([start + timedelta(milliseconds=97 * i) for i in range(n)], pa.timestamp("ms")),
        "tag": pa.array([AWKWARD[i % len(AWKWARD)] for i in range(n)], pa.string()),
        "hot": pa.array([i % 3 == 0 for i in range(n)], pa.bool_()),
    })


def read_back(spark, out, fmt: str, expected: pa.Table) -> pa.Table:
    """The directory as Spark reads it, given the expected schema (partition columns included)."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType, TimestampType

    from darwin.spark.session import to_arrow

    types = {pa.int64(): LongType(), pa.float64(): DoubleType(), pa.string(): StringType(), pa.bool_(): BooleanType(),
             pa.timestamp("ms"): TimestampType()}
    schema = StructType([StructField(f.name, types[f.type]) for f in expected.schema])
    reader = spark.read.schema(schema)
    df = reader.parquet(str(out)) if fmt == "parquet" else reader.option("header", True).csv(str(out))
    return to_arrow(df.select(*expected.schema.names)).cast(expected.schema)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_spark_reads_a_partitioned_directory_back(spark, fmt, tmp_path):
    sink = {"parquet": dw.sinks.Parquet, "csv": dw.sinks.CSV}[fmt]
    q = dw.from_arrow(bids(), time="date_time").with_columns(minute=col("date_time").dt.minute(), p=col("auction") % 3)
    out = tmp_path / "out"
    result = q.sink(sink(out, partition_by=["minute", "p", "tag"])).run(
        dw.Config(batch_size=300, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches"))
    assert all(len(f.relative_to(out).parts) == 4 for f in result.files)
    assert (out / "minute=59" / "p=2" / "tag=10%3A00").is_dir()
    assert (out / "minute=59" / "p=2" / "tag=__HIVE_DEFAULT_PARTITION__").is_dir()  # NULL and ''
    expected = q.collect(dw.Config(batch_size=300))  # an empty partition value reads back as NULL, as in Spark
    expected = expected.set_column(expected.schema.get_field_index("tag"), "tag",
                                   pa.array([t or None for t in expected["tag"].to_pylist()], pa.string()))
    assert_table_equal(read_back(spark, out, fmt, expected), expected, sort=True)


def test_spark_reads_timestamp_and_bool_partitions(spark, tmp_path):
    ms = col("date_time").cast("int64")
    q = dw.from_arrow(bids(300), time="date_time").select("auction", "price", "hot",
                                                           second=(ms - ms % 10_000).cast("timestamp"))
    out = tmp_path / "out"
    q.sink(dw.sinks.Parquet(out, partition_by=["second", "hot"])).run()
    assert (out / "second=2015-07-15 09%3A58%3A10" / "hot=true").is_dir()
    expected = q.collect()
    assert_table_equal(read_back(spark, out, "parquet", expected), expected, sort=True)
