"""Parallel workers give the sequential run's output: the same rows in the same order.

Every query shape of the differential suites runs at parallelism 1, 2, 4 and 8 while the workers
are stalled at random (``darwin.runtime.workers.inject_delays``), and its whole output sequence --
the changelog of an updating result, in order -- and its counters must equal the one-thread run's.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import SHAPES, source
from streams import streams as single_streams
from test_joins import streams

import darwin as dw
from darwin import col
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
    expected = query.execute(dw.Config(batch_size=batch_size))
    for workers in PARALLELISM:
        with inject_delays(_random_stalls(seed * 31 + workers)):
            actual = query.execute(dw.Config(batch_size=batch_size, parallelism=workers))
        assert_table_equal(sequence(actual), sequence(expected), rel_tol=0.0, check_nullability=True)
        if expected.late is not None:
            assert_table_equal(actual.late, expected.late, rel_tol=0.0)
        for key in COUNTERS:
            assert actual.metrics.get(key) == expected.metrics.get(key), (workers, key)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__)
@RUNS
@given(data=single_streams(), seed=st.integers(0, 1000))
def test_window_shapes_are_the_same_at_every_parallelism(shape, data, seed):
    table, cuts, delay, batch_size = data
    assert_same_at_every_parallelism(shape(source(table, cuts, delay)), batch_size, seed)


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
}


@pytest.mark.parametrize("name", sorted(OTHER_SHAPES))
@RUNS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8), seed=st.integers(0, 1000))
def test_joins_and_stream_operators_are_the_same_at_every_parallelism(name, left, right, batch, seed):
    assert_same_at_every_parallelism(OTHER_SHAPES[name](left, right), batch, seed)


def test_the_workers_really_share_keyed_and_stateless_pipelines():
    """So the tests above compare parallel runs, not one thread's twice."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"t": pa.array([1, 2], pa.timestamp("ms")), "k": [1, 2], "v": [3, 4]}), time="t")
    windows = t.window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count()).explain(dw.Config(parallelism=4))
    assert "parallel by key groups of [k]" in windows
    assert "parallel in slices" in t.filter(col("v") > 3).explain(dw.Config(parallelism=2))
    assert "parallel" not in t.filter(col("v") > 3).explain(dw.Config())
