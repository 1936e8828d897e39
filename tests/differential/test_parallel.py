"""Parallel workers give the sequential run's output: the same rows in the same order.

Every query shape of the differential suites runs at parallelism 1, 2, 4 and 8 while the workers
are stalled at random (``darwin.runtime.workers.inject_delays``), and its whole output sequence --
the changelog of an updating result, in order -- and its counters must equal the one-thread run's.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import SHAPES, q_late_output, source
from streams import streams as single_streams
from test_joins import streams

import darwin as dw
from darwin import col
from darwin.runtime import parallel
from darwin.runtime.adaptive import force_workers
from darwin.runtime.workers import inject_delays
from darwin.testing import assert_table_equal

PARALLELISM = (2, 4, 8)
COUNTERS = ("late_rows", "null_time_rows", "input_rows", "windows_fired", "output_rows")
RUNS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sequence(result: dw.RunResult):
    """What the run emitted, in order: the changes of an updating result, else its rows."""
    return result.changelog if result.changelog is not None else result.table


def _random_stalls(seed: int):
    rng = random.Random(seed)
    return lambda worker: rng.random() * 0.002


def assert_same_at_every_parallelism(query: dw.Table, batch_size: int, seed: int) -> None:
    """At 4 workers rows are routed to their keys' owners; at 2 and 8, where the aggregates merge
    exactly, slices are pre-aggregated too, switching between the two ways at random batches.
    Shared pipelines run each batch on a random number of their workers (as adapting them while
    the job runs may): slices on fewer threads, rows routed to their owners on fewer threads or,
    on one, every owner in turn on the coordinating thread; and the run's thread budget moves at
    random (owners' windows fired on one thread or on the workers, splits read one at a time or
    side by side)."""
    expected = query.execute(dw.Config(batch_size=batch_size))
    for workers in PARALLELISM:
        switches = random.Random(seed).random()  # a threshold on partials per row: some batches each way
        with inject_delays(_random_stalls(seed * 31 + workers)), _pre_aggregation(pays_off=switches), \
                force_workers(_random_counts(seed * 17 + workers, workers)):
            actual = query.execute(dw.Config(batch_size=batch_size, parallelism=workers, pre_aggregate=workers != 4))
        assert_table_equal(sequence(actual), sequence(expected), rel_tol=0.0, check_nullability=True)
        if expected.late is not None:
            assert_table_equal(actual.late, expected.late, rel_tol=0.0)
        for key in COUNTERS:
            assert actual.metrics.get(key) == expected.metrics.get(key), (workers, key)


def _random_counts(seed: int, most: int):
    rng = random.Random(seed)
    return lambda pipeline, batch: rng.randint(1, most)


@contextmanager
def _pre_aggregation(pays_off: float):
    """Pre-aggregate while partials are at most ``pays_off`` of the rows, else route the next batch;
    the partials merge into their owners on the workers or (few of them) on the coordinating thread."""
    saved = parallel.PAYS_OFF, parallel.RETRY_AFTER, parallel.MERGE_HERE
    parallel.PAYS_OFF, parallel.RETRY_AFTER = pays_off, 1
    parallel.MERGE_HERE = 0 if pays_off < 0.5 else 2048
    try:
        yield
    finally:
        parallel.PAYS_OFF, parallel.RETRY_AFTER, parallel.MERGE_HERE = saved


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__)
@RUNS
@given(data=single_streams(), seed=st.integers(0, 1000))
def test_window_shapes_are_the_same_at_every_parallelism(shape, data, seed):
    table, cuts, delay, batch_size = data
    assert_same_at_every_parallelism(shape(source(table, cuts, delay)), batch_size, seed)


CHUNKED_SHAPES = {
    "updating_aggregation": lambda t: t.group_by("k").agg(n=dw.count(), high=dw.max("v")),
    "late_output": q_late_output,
}


@pytest.mark.parametrize("name", sorted(CHUNKED_SHAPES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=single_streams(), chunks=st.lists(st.integers(0, 60), max_size=12))
def test_a_table_of_any_chunks_gives_the_one_chunk_tables_output(name, data, chunks):
    """from_arrow reads batches of the size configured across the table's chunks: a table of many
    chunks (pq.read_table, concat_tables) was read in batches no longer than its chunks, so an
    updating result emitted other changes, and other rows were late, than the same rows in one chunk."""
    table, _, delay, batch_size = data
    bounds = sorted({0, table.num_rows, *(c for c in chunks if c <= table.num_rows)})
    chunked = pa.concat_tables([table.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]) if table.num_rows \
        else table
    query = CHUNKED_SHAPES[name]
    expected = query(dw.from_arrow(table, time="ts", max_delay=delay)).execute(
        dw.Config(batch_size=batch_size, mode="interpreted"))
    for workers in (1, 2):
        actual = query(dw.from_arrow(chunked, time="ts", max_delay=delay)).execute(
            dw.Config(batch_size=batch_size, parallelism=workers))
        assert_table_equal(sequence(actual), sequence(expected), rel_tol=0.0)
        for key in COUNTERS:
            assert actual.metrics.get(key) == expected.metrics.get(key), (workers, key)


OTHER_SHAPES = {
    "full_join": lambda left, right: left.join(right.select("t", "k", w="v"), on=[("k", "k")], how="full"),
    "interval_join": lambda left, right: left.select("t", "k", "s").join(
        right.select("t", "k", w="v"), on=[("k", "k")], how="left",
        where=col("t_right").between(col("t") - 500, col("t") + 1000)),
    "window_join": lambda left, right: left.window(dw.Tumble("5s", on="t")).join(
        right.window(dw.Tumble("5s", on="t")), on=[("k", "k")]),
    "aggregation_over_a_join": lambda left, right: left.join(right, on=[("k", "k")], how="left")
        .group_by("s").agg(n=dw.count(), total=dw.sum("v")),
    "updating_aggregation": lambda left, right: left.group_by("k").agg(n=dw.count(), high=dw.max("v")),
    "union_then_window": lambda left, right: left.union(right).window(dw.Tumble("2s", on="t"))
        .group_by("k").agg(n=dw.count()),
    "top_n": lambda left, right: left.top_n(2, by="k", order=[dw.desc("v")], rank="rank"),
    "deduplicate": lambda left, right: left.deduplicate(on=["k"], keep="last", order="t"),
    "session": lambda left, right: left.window(dw.Session("3s", on="t")).group_by("k").agg(n=dw.count()),
    "over": lambda left, right: left.with_columns(avg=dw.avg("v").over(partition_by="k", order_by="t",
                                                                        rows=(2, 0))),
    "window_top_n": lambda left, right: left.window(dw.Tumble("5s", on="t")).top_n(1, by="k",
                                                                                   order=[dw.desc("v")]),
    "aggregation_of_windows": lambda left, right: left.window(dw.Tumble("2s", on="t")).group_by("k", "s")
        .agg(n=dw.count()).select("k", end=col("window_end"), n=col("n")).window(dw.Tumble("10s", on="end"))
        .group_by("k").agg(m=dw.max("n"), groups=dw.count()),
    "join_of_aggregations": lambda left, right: left.group_by("k").agg(n=dw.count()).join(
        right.group_by("k").agg(total=dw.sum("v")), on=[("k", "k")], how="left"),
    "union_of_aggregations": lambda left, right: left.group_by("k").agg(n=dw.count()).union(
        right.group_by("k").agg(n=dw.count())),
    "string_extremes": lambda left, right: left.window(dw.Tumble("2s", on="t")).group_by("k")
        .agg(lo=dw.min("s"), hi=dw.max("s")),
    "text_keys": lambda left, right: left.group_by(text=col("v").cast("string")).agg(n=dw.count()),
}


@pytest.mark.parametrize("name", sorted(OTHER_SHAPES))
@RUNS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8), seed=st.integers(0, 1000))
def test_joins_and_stream_operators_are_the_same_at_every_parallelism(name, left, right, batch, seed):
    assert_same_at_every_parallelism(OTHER_SHAPES[name](left, right), batch, seed)


def test_the_workers_really_share_keyed_and_stateless_pipelines():
    """So the tests above compare parallel runs, not one thread's twice."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"t": pa.array([1, 2], pa.timestamp("ms")), "k": [1, 2], "v": [3, 4],
                                "x": [0.5, 1.5]}), time="t")
    grouped = t.window(dw.Tumble("1s", on="t")).group_by("k")
    # an integer key in a known range: a window ring per worker over every key, merged as windows fire
    assert "parallel in slices, local/global: window rings merged" in grouped.agg(n=dw.count()).explain(
        dw.Config(parallelism=4))
    # a float average does not merge exactly: rows go to their key's owner
    assert "parallel by key groups of [k]" in grouped.agg(a=dw.avg("x")).explain(dw.Config(parallelism=4))
    assert "parallel in slices" in t.filter(col("v") > 3).explain(dw.Config(parallelism=2))
    assert "parallel" not in t.filter(col("v") > 3).explain(dw.Config())


def test_the_optimizer_pre_aggregates_only_what_merges_exactly():
    """Counts and integer sums (of an average too) merge bit for bit; a float sum would round by how
    rows were grouped."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"t": pa.array([1, 2], pa.timestamp("ms")), "k": [1, 2], "v": [3, 4],
                                "x": [0.5, 1.5]}), time="t")
    grouped = t.window(dw.Tumble("1s", on="t")).group_by("k")
    two = dw.Config(parallelism=2)
    assert "local/global" in grouped.agg(n=dw.count(), s=dw.sum("v"), m=dw.max("v"), a=dw.avg("v")).explain(two)
    assert "local/global" not in grouped.agg(n=dw.count(), s=dw.sum("x")).explain(two)
    assert "local/global" not in grouped.agg(n=dw.count()).explain(two.replace(pre_aggregate=False))


@pytest.mark.parametrize("state", ["ring", "hash"])
def test_a_hot_key_is_pre_aggregated_and_counted_the_same(state):
    """Nearly every row on one key: merged window rings never move it, and (a string key: hash tables)
    the slices fold it, so partials stay few and every batch is pre-aggregated; the windows equal the
    one-thread run's."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    n = 20_000
    keys = np.where(rng.random(n) < 0.9, 7, rng.integers(0, 50, n))
    t = dw.from_arrow(pa.table({"t": pa.array(np.sort(rng.integers(0, 60_000, n)), pa.timestamp("ms")),
                                "k": keys if state == "ring" else keys.astype(str), "v": rng.integers(-5, 100, n)}),
                      time="t")
    query = t.window(dw.Tumble("5s", on="t")).group_by("k").agg(n=dw.count(), s=dw.sum("v"), lo=dw.min("v"))
    expected = query.execute(dw.Config(batch_size=1000))
    actual = query.execute(dw.Config(batch_size=1000, parallelism=2))
    assert_table_equal(actual.table, expected.table, rel_tol=0.0)
    assert ("window rings merged" in query.explain(dw.Config(parallelism=2))) == (state == "ring")
    assert actual.metrics.get("pre_aggregated_batches") == (20 if state == "hash" else None)
    [pipeline] = [p for p in actual.metrics["pipelines"] if p.get("workers_most", 1) > 1]  # the aggregation's
    assert pipeline["rows_in"] == n and pipeline["workers_most"] == 2 and len(pipeline["worker_busy_seconds"]) == 2
    assert pipeline["imbalance"] >= 1.0 and pipeline["seconds"] > 0
    assert all(p["workers"] == 1 for p in expected.metrics["pipelines"])


@RUNS
@given(seed=st.integers(0, 10_000), rows=st.integers(1, 3_000), delay=st.sampled_from([0, 50, 400]),
       window=st.sampled_from([("tumble", 100), ("tumble", 1_000), ("slide", 300)]), batch=st.integers(1, 700))
def test_merged_window_rings_equal_one_thread(seed, rows, delay, window, batch):
    """Integer keys in a known range: every worker keeps a window ring over all keys for its slices,
    rings fill and fire mid-batch on out-of-order times, and the merged windows come out in the
    one-thread order, late rows counted alike."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.integers(0, 20, rows)) + rng.integers(-300, 300, rows)  # out of order
    t = dw.from_arrow(pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": rng.integers(-3, 40, rows),
                                "v": rng.integers(-50, 50, rows)}), time="t", max_delay=f"{delay}ms")
    kind, size = window
    w = dw.Tumble(f"{size}ms", on="t") if kind == "tumble" else dw.Slide(f"{size}ms", "100ms", on="t")
    query = t.window(w).group_by("k").agg(n=dw.count(), s=dw.sum("v"), lo=dw.min("v"), hi=dw.max("t"))
    assert "window rings merged" in query.explain(dw.Config(parallelism=2))
    assert_same_at_every_parallelism(query, batch, seed)
