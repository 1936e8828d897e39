"""Paced sources (``rate_limit=``) and the latency metrics of a run."""

import math
import time
import tracemalloc

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import darwin as dw
from darwin.errors import PlanError
from darwin.io.paced import ARRIVAL_KEY, Paced, arrival
from darwin.io.sources import ArrowSource
from darwin.runtime.latency import Latencies


def events(n, step_ms=5):
    return pa.table({"ts": pa.array([i * step_ms for i in range(n)], pa.timestamp("ms")),
                     "k": [i % 7 for i in range(n)]})


class FakeClock:
    """Wall-clock time that moves only when slept, or when a test moves it."""

    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_rows_are_released_in_chunks_at_their_due_time():
    clock = FakeClock()
    paced = Paced(ArrowSource(events(1000)), 1000, clock=clock, sleep=clock.sleep)  # chunks of 10 rows per 10 ms
    batches = list(paced.batches(("ts", "k"), 64))
    assert sum(b.num_rows for b in batches) == 1000
    assert {b.num_rows for b in batches} == {10, 4}  # 64 = 6 chunks of 10, then the batch's last 4 rows
    released, ends = 0, []
    for b in batches:
        released += b.num_rows
        ends.append(released)
        assert arrival(b) == pytest.approx(100.0 + released / 1000)  # the due time of the batch's last row
    assert clock.now == pytest.approx(101.0)  # 1000 rows at 1000/s: one second
    assert ARRIVAL_KEY in batches[0].schema.metadata


def test_a_reader_that_falls_behind_gets_every_due_row_at_once():
    clock = FakeClock()
    paced = Paced(ArrowSource(events(1000)), 1000, clock=clock, sleep=clock.sleep)
    it = paced.batches(("ts", "k"), 500)
    first = next(it)
    assert first.num_rows == 10
    clock.now += 0.3  # the engine was busy for 300 ms: 300 more rows are due
    second = next(it)
    assert second.num_rows == 300
    assert arrival(second) == pytest.approx(100.31)  # when its newest row was due, before it was read
    assert clock.slept[-1] == pytest.approx(0.01)  # nothing slept for it but the first chunk


def test_resuming_at_an_offset_paces_the_rest():
    clock = FakeClock()
    paced = Paced(ArrowSource(events(100)), 100, clock=clock, sleep=clock.sleep)
    rows = pa.Table.from_batches(list(paced.batches_from(("ts", "k"), 50, 60)))
    assert rows.column("k").to_pylist() == [i % 7 for i in range(60, 100)]
    assert clock.now == pytest.approx(100.4)


def test_pacing_really_paces():
    """A lower bound on the wall time of n rows at rate r (a check of the feature, not of speed)."""
    n, rate = 600, 2000
    q = dw.from_arrow(events(n), time="ts", rate_limit=rate).filter(dw.col("k") == 1)
    started = time.perf_counter()
    result = q.execute()
    elapsed = time.perf_counter() - started
    assert elapsed >= (n - rate * 0.01) / rate  # the last chunk is due at n / rate
    assert result.table.num_rows == sum(1 for i in range(n) if i % 7 == 1)


@pytest.mark.parametrize("rate", [0, -5, float("nan"), float("inf"), "fast", True])
def test_a_bad_rate_limit_is_refused_naming_the_source(rate):
    with pytest.raises(PlanError, match="rate_limit of source 'arrow'"):
        dw.from_arrow(events(3), time="ts", rate_limit=rate)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_latency_metrics_of_a_paced_windowed_query(parallelism):
    t = events(1200)
    query = dw.from_arrow(t, time="ts", max_delay="0s", rate_limit=3000).window(dw.Tumble("1s", on="ts")) \
        .group_by("k").agg(n=dw.count())
    started = time.perf_counter()
    result = query.execute(dw.Config(parallelism=parallelism))
    elapsed_ms = (time.perf_counter() - started) * 1000
    m = result.metrics
    assert 0 <= m["latency_p50_ms"] <= m["latency_p99_ms"] <= m["latency_max_ms"] < elapsed_ms
    # 1200 rows at 3000/s: no row is released before it is due, so the run lasts 0.4 s at least (how much
    # of it the reads spend waiting depends on whether the engine keeps up on a loaded machine)
    assert elapsed_ms >= 400 * 0.99 and m["source_seconds"] > 0 and m["input_wait_seconds"] >= 0
    unpaced = dw.from_arrow(t, time="ts", max_delay="0s").window(dw.Tumble("1s", on="ts")).group_by("k") \
        .agg(n=dw.count())
    assert result.table.equals(unpaced.collect())  # pacing changes when, never what


def test_every_result_row_has_a_latency_and_the_unpaced_run_reports_it_too():
    result = dw.from_arrow(events(500), time="ts").filter(dw.col("k") < 3).execute(dw.Config(batch_size=64))
    m = result.metrics
    assert m["latency_max_ms"] is not None and m["latency_p50_ms"] >= 0


def test_the_interpreter_reports_no_latency():
    m = dw.from_arrow(events(50), time="ts").execute(dw.Config(mode="interpreted")).metrics
    assert m["latency_p99_ms"] is None


def test_percentiles_are_over_rows():
    lat = Latencies()
    lat.record(0.0, 0.001, 98)  # 98 rows at 1 ms
    lat.record(0.0, 0.5, 2)  # 2 rows at 500 ms
    assert lat.percentile(50) == pytest.approx(1.0)
    assert lat.percentile(98) == pytest.approx(1.0)
    assert lat.percentile(99) == pytest.approx(500.0)
    assert lat.summary()["latency_max_ms"] == pytest.approx(500.0)
    assert lat.kept_percentile(50, since=0.4) == pytest.approx(500.0)  # the second result alone
    assert lat.kept_percentile(50, until=0.4) == pytest.approx(1.0)
    assert Latencies().summary() == {"latency_p50_ms": None, "latency_p99_ms": None, "latency_max_ms": None}


def test_latencies_keep_no_record_of_every_result_batch():
    """A stream job runs for ever: the latencies held a list entry per result batch for the whole
    run (~150 bytes a batch; 250,000 batches of a filter grew the process by 39 MB). Only the last
    minute's are kept one by one now; the run's percentiles come from a histogram."""
    lat = Latencies()

    def feed(first: int, last: int) -> None:  # 100 result batches a second, 2.0-2.6 ms late
        for i in range(first, last):
            lat.record(i / 100, i / 100 + 0.002 + (i % 7) / 10_000, 10)

    tracemalloc.start()
    feed(0, 20_000)
    held = tracemalloc.get_traced_memory()[0]
    feed(20_000, 60_000)
    grown = tracemalloc.get_traced_memory()[0] - held
    tracemalloc.stop()
    assert grown < 100_000, grown  # 40,000 batches more: ~6 MB of lists before
    assert len(lat.recent) <= 6001 and len(lat) == 600_000
    assert lat.summary() == {"latency_p50_ms": pytest.approx(2.3, rel=3e-3),
                             "latency_p99_ms": pytest.approx(2.6, rel=3e-3), "latency_max_ms": pytest.approx(2.6)}


@given(st.lists(st.tuples(st.floats(1e-3, 1e7), st.integers(1, 1000)), min_size=1, max_size=60),
       st.sampled_from([0, 1, 50, 90, 99, 99.9, 100]))
def test_a_runs_percentile_is_a_latency_seen_just_above_the_exact_one(results, q):
    lat = Latencies()
    for millis, rows in results:
        lat.record(0.0, millis / 1000, rows)
    each = sorted(m / 1000 * 1000.0 for m, rows in results for _ in range(rows))  # as record computes it
    exact = each[max(math.ceil(q / 100 * len(each)), 1) - 1]
    got = lat.percentile(q)
    assert got is not None
    assert got in [lat.largest[i] for i in range(len(lat.largest)) if lat.rows_in[i]]
    assert exact <= got <= exact * 2 ** (1 / 256) * (1 + 1e-12)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_window_is_stamped_with_the_batch_that_moved_the_watermark_past_its_end(parallelism):
    from darwin.io.sinks import Blackhole
    from darwin.runtime.job import Driver

    clock = FakeClock()
    paced = Paced(ArrowSource(events(1000)), 1000, clock=clock, sleep=clock.sleep)  # 10 rows per 10 ms
    query = dw.from_source(paced, time="ts", max_delay="0s").window(dw.Tumble("1s", on="ts")).group_by("k") \
        .agg(n=dw.count())
    driver = Driver(query.plan, Blackhole(), dw.Config(parallelism=parallelism, batch_size=50))
    stamps = {}
    for out in driver.outputs():
        if out.kind == "result":
            for start in out.rows.column("window_start").cast(pa.int64()).to_pylist():
                stamps.setdefault(start, set()).add(round(out.ingested, 6))
    # row 200 (ts 1000 ms) closes [0, 1 s); it is in the chunk of rows 200-209, due at 100 + 210 / 1000
    assert stamps[0] == {100.21}
    assert stamps[1000] == {100.41}
    assert stamps[4000] == {101.0}  # the last window fires at the end of the input: the last batch
    assert len(driver.latency) == 35  # 5 windows of 7 keys, each a result with its latency


def test_read_timed_stamps_paced_batches_with_their_arrival_and_measures_the_lag():
    from darwin.runtime.compiled import ReadTiming, read_timed

    due = time.perf_counter() - 0.5  # read half a second after it was due
    paced = events(3).to_batches()[0]
    paced = paced.replace_schema_metadata({ARRIVAL_KEY: repr(due)})
    plain = events(2).to_batches()[0]
    timing = ReadTiming()
    before = time.perf_counter()
    (a, ingested_a), (b, ingested_b) = read_timed(iter([paced, plain]), timing)
    assert ingested_a == due and before <= ingested_b <= time.perf_counter()  # unpaced: when it was read
    assert timing.lag_ms >= 500 and timing.max_lag_ms == timing.lag_ms
    assert timing.seconds >= 0
