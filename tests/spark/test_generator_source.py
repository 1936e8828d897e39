"""The Nexmark generator as a PySpark data source: Spark generates the same rows Darwin's generator
gives, split by event-id ranges, with the arrival columns Darwin's driver-side read gives."""

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import darwin as dw
from darwin.spark.sources import SEQ, read_scans
from darwin.testing import assert_table_equal
from nexmark import spark_source
from nexmark.generator import GeneratorConfig
from nexmark.source import source


def test_split_covers_the_range_on_batch_bounds():
    ranges = spark_source.split(0, 10_050, 4, 1000)
    assert [(r.start, r.end) for r in ranges] == [(0, 2000), (2000, 5000), (5000, 8000), (8000, 10_050)]
    assert [(r.start, r.end) for r in spark_source.split(130, 170, 8, 1000)] == [(130, 170)]
    assert spark_source.split(5, 5, 3, 10) == []


@pytest.mark.parametrize("stream", ["bid", "auction", "person", "ads"])
def test_generator_data_source_gives_darwins_rows(spark, stream):
    # batches of 100 rows: a person batch spans 5,000 event ids, so 30,000 events make six of them
    streams = source(events=30_000, rate=1_000, max_delay="2s")  # ads: YSB's events, one per event id
    scan = getattr(streams, stream).plan
    config = dw.Config(batch_size=100)
    want = read_scans([scan], config)[id(scan)]
    assert want.num_rows > 0 and len(set(want.column("__dw_mark").to_pylist())) > 3  # watermarks that move
    spark_source.register(spark)
    opts = spark_source.options(streams.config, stream, scan.columns, 100, 2_000, partitions=5)
    df = spark.read.format("nexmark").options(**opts).load()
    assert df.rdd.getNumPartitions() == (1 if stream == "ads" else 5)  # ads: split by chunks of 65,536 events
    got = df.toArrow()
    got = pa.table([c.cast(f.type) for c, f in zip(got.columns, want.schema)], schema=want.schema)
    # SEQ is the event id there and the position in Darwin's read: the same order
    got, want = got.sort_by(SEQ), want.sort_by(SEQ)
    assert pc.all(pc.greater(got.column(SEQ).slice(1), got.column(SEQ).slice(0, got.num_rows - 1))).as_py()
    assert_table_equal(got.drop_columns([SEQ]), want.drop_columns([SEQ]))
    # what ``ordered_by`` tells Darwin-on-Spark's sessions: the times never decrease in arrival order
    times = want.column(scan.source.ordered_by).cast(pa.int64())
    assert pc.all(pc.greater_equal(times.slice(1), times.slice(0, want.num_rows - 1))).as_py()


def test_darwin_on_spark_reads_the_generator_through_the_data_source(spark):
    q = source(events=8_000, rate=1_000).bid.window(dw.Tumble("1s", on="date_time")).group_by("auction").agg(
        n=dw.count(), top=dw.max("price"))
    from darwin.spark.engine import dataframe

    plan = dataframe(q.plan, dw.Config(engine="spark"))._jdf.queryExecution().optimizedPlan().toString()
    assert "RelationV2" in plan and "nexmark" in plan, plan  # Spark reads the data source, not the driver's table
    result = q.execute(dw.Config(engine="spark"))
    assert_table_equal(result.table, q.collect(), sort=True)
    assert result.metrics["input_rows"] == q.execute(dw.Config()).metrics["input_rows"]


@pytest.mark.parametrize("name", ["q3", "q5", "q12", "ysb"])
def test_twins_over_the_generator_data_source_agree_with_darwin(spark, name):
    """``nexmark run --spark-input generator``: the PySpark twins read the same events from the data source."""
    from darwin.spark import to_arrow
    from nexmark import bench
    from nexmark.spark_queries import QUERIES as TWINS

    events = 3_000
    twin = to_arrow(TWINS[name](bench.spark_streams({}, GeneratorConfig(events=events))))  # no Parquet at all
    darwin = bench.darwin_query(name, events, 0).collect()
    assert darwin.num_rows > 0
    assert bench.difference(darwin, twin) is None
