"""Unbounded runs on Spark: Structured Streaming over the paced Nexmark generator data source, with
watermarks from max_delay, Darwin's sinks written from foreachBatch and committed once per batch id."""

import json
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin.errors import UnsupportedError
from darwin.runtime.job import Driver
from darwin.spark.streaming import RECORD, streams
from darwin.testing import assert_table_equal
from nexmark.source import source

EVENTS, DELAY_MS = 6_000, 500


def windowed(rate_limit=None):
    bids = source(events=EVENTS, rate=1_000, max_delay=f"{DELAY_MS}ms", rate_limit=rate_limit).bid
    return bids.filter(dw.col("price") > 100).window(dw.Tumble("1s", on="date_time")).group_by("auction").agg(
        n=dw.count(), top=dw.max("price"))


def fired(batch: pa.Table) -> pa.Table:
    """The batch run's windows a stream has emitted: those ending by its last watermark (the largest
    event time less the delay); the stream never ends, so the later ones never fire."""
    times = source(events=EVENTS, rate=1_000).bid.select(t=dw.col("date_time")).collect().column("t")
    last = pc.max(times).cast(pa.int64()).as_py() - DELAY_MS
    ends = batch.column("window_end").cast(pa.int64())
    return batch.filter(pc.less_equal(ends, last))


def test_paced_sources_stream_and_bounded_ones_do_not():
    assert streams(windowed(rate_limit=1_000).plan)
    assert not streams(windowed().plan)


def test_a_streaming_run_gives_the_batch_runs_windows(spark):
    run = windowed(rate_limit=100_000).execute(dw.Config(engine="spark"))
    want = fired(windowed().collect())
    assert want.num_rows > 100
    assert_table_equal(run.table, want, sort=True)
    assert run.metrics["input_rows"] == windowed().execute().metrics["input_rows"]


def test_an_updating_aggregation_streams_as_upserts(spark, tmp_path):
    q = source(events=EVENTS, rate=1_000, rate_limit=100_000).bid.group_by("channel").agg(n=dw.count())
    result = q.sink(dw.sinks.Parquet(tmp_path / "out", mode="upsert")).run(dw.Config(engine="spark"))
    got = pq.read_table(result.files[0])
    assert_table_equal(got, source(events=EVENTS, rate=1_000).bid.group_by("channel").agg(n=dw.count()).collect(),
                       sort=True)


def _settled(directory, quiet_s: float = 2.0, timeout_s: float = 60.0) -> None:
    """Wait until no file under ``directory`` has appeared or changed for ``quiet_s`` (a stopped query's
    thread may still write Spark's commit log for a moment)."""
    def files():
        return {(str(p), p.stat().st_mtime_ns) for p in directory.rglob("*") if p.is_file()}
    seen, since, deadline = files(), time.monotonic(), time.monotonic() + timeout_s
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.25)
        now = files()
        if now != seen:
            seen, since = now, time.monotonic()


def test_a_restart_with_the_same_checkpoint_dir_writes_each_batch_once(spark, tmp_path):
    out, ck = tmp_path / "out", tmp_path / "ck"
    config = dw.Config(engine="spark", checkpoint_dir=str(ck), batch_size=1_500)  # four micro-batches of events
    q = windowed(rate_limit=20_000)
    run = Driver(q.plan, dw.sinks.Parquet(out), config).outputs()
    first = next(run)  # the first micro-batch with rows is committed ...
    run.close()  # ... and the query is stopped mid-way
    assert first.rows.num_rows < fired(windowed().collect()).num_rows
    _settled(ck / "spark")  # the stopped query's last writes land before the checkpoint is edited
    record = json.loads((ck / RECORD).read_text())
    assert record["batch_id"] >= 0
    # as if Spark had died after the sink committed but before Spark's own commit (the stop may have
    # done just that already): Spark replays the batch, which the sink must not write again
    assert (ck / "spark" / "offsets" / str(record["batch_id"])).exists()
    for name in (str(record["batch_id"]), f".{record['batch_id']}.crc"):  # the entry and its checksum file
        (ck / "spark" / "commits" / name).unlink(missing_ok=True)
    before = {p.name for p in out.glob("part-*")}
    assert before, "the first run committed parts"
    result = windowed(rate_limit=20_000).sink(dw.sinks.Parquet(out)).run(config)
    assert {p.name for p in out.glob("part-*")} > before
    written = pa.concat_tables([pq.read_table(f) for f in result.files])
    assert_table_equal(written, fired(windowed().collect()), sort=True)  # no row twice, none missing


def test_a_job_control_stop_ends_the_query_at_a_commit_and_a_restart_goes_on(spark, tmp_path):
    """``JobControl.stop()`` (what SIGTERM does to a ``darwin run`` job) on Spark: the streaming query
    ends between micro-batches, every written one committed, and a restart with the same
    checkpoint_dir writes the rest, no row twice."""
    from darwin.runtime.control import JobControl

    out, ck = tmp_path / "out", tmp_path / "ck"
    config = dw.Config(engine="spark", checkpoint_dir=str(ck), batch_size=1_500)
    control = JobControl()
    driver = Driver(windowed(rate_limit=20_000).plan, dw.sinks.Parquet(out), config, control)
    seen = 0
    for output in driver.outputs():
        seen += output.rows.num_rows
        control.stop()  # after the first micro-batch with rows: the run ends at its next commit
    assert driver.stopped
    everything = fired(windowed().collect())
    assert 0 < seen < everything.num_rows
    record = json.loads((ck / RECORD).read_text())
    assert record["batch_id"] >= 0 and record["sink"] is not None
    first = pa.concat_tables([pq.read_table(f) for f in out.glob("part-*")])
    assert first.num_rows == seen  # what the stopped run yielded is exactly what it committed
    _settled(ck / "spark")
    result = windowed(rate_limit=20_000).sink(dw.sinks.Parquet(out)).run(config)
    assert not result.stopped
    written = pa.concat_tables([pq.read_table(f) for f in result.files])
    assert_table_equal(written, everything, sort=True)  # no row twice, none missing


@pytest.mark.parametrize("shape, named", [
    (lambda t: t.top_n(3, by="auction", order=[dw.desc("price")]), "TopN"),
    (lambda t: t.join(t, on=[("auction", "auction")]), "Join"),
    (lambda t: t.group_by("auction").agg(n=dw.count()).join(t, on=[("auction", "auction")]),
     "Join: an input is an updating result"),
    (lambda t: t.window(dw.Tumble("1s", on="date_time")).group_by("auction").agg(bidders=dw.count_distinct("bidder")),
     "Aggregate: agg bidders=count_distinct"),
    (lambda t: t.group_by("auction").agg(bidders=dw.count_distinct("bidder")),
     "GroupAggregate: agg bidders=count_distinct"),
    (lambda t: t.group_by("auction").agg(n=dw.count(), state_ttl="1h"), "GroupAggregate with state_ttl"),
])
def test_what_streaming_cannot_express_is_refused_naming_the_node(spark, shape, named):
    q = shape(source(events=EVENTS, rate_limit=10_000).bid)
    with pytest.raises(UnsupportedError, match=f"plan node {named}"):
        q.collect(dw.Config(engine="spark"))
