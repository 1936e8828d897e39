"""Barrier windows: the compiled engine against the reference interpreter (rows and counters), the
same output at parallelism 2, 4 and 8 under random stalls, and the semantics on a hand-made stream."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import source, streams
from test_parallel import assert_same_at_every_parallelism

import darwin as dw
from darwin import col
from darwin.errors import DarwinTypeError, PlanError, UnsupportedError
from darwin.testing import assert_table_equal

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _windows(t: dw.Table, on: str | None, by: tuple[str, ...] = ()) -> dw.BarrierWindowedTable:
    return t.window(dw.Barrier(col("b") & (col("v") % 3 == 0), on=on, by=by))  # b, v nullable: NULL is no barrier


SHAPES = {
    "keyed": lambda t, on: _windows(t, on).group_by("k").agg(
        n=dw.count(), nv=dw.count("v"), sv=dw.sum("v"), sf=dw.sum("f"), lo=dw.min("f"), hi=dw.max("v"),
        mean=dw.avg("f"), last=dw.max("ts")),
    "string_keys": lambda t, on: _windows(t, on).group_by("s", "k").agg(n=dw.count(), sf=dw.sum("f")),
    "float_and_bool_keys": lambda t, on: _windows(t, on).group_by("f", "b").agg(n=dw.count(), lo=dw.min("v")),
    "no_key": lambda t, on: _windows(t, on).agg(n=dw.count(), sv=dw.sum("v")),
    "assigned": lambda t, on: _windows(t, on).table(),
    "assigned_per_key": lambda t, on: _windows(t, on, by=("k",)).table(),
    "assigned_per_string_key": lambda t, on: _windows(t, on, by=("s", "k")).table(),
    "carried": lambda t, on: _windows(t, on, by=("k",)).table(opened_f="f", opened_s="s", opened_b="b",
                                                               opened_ts="ts"),
    "model_joined": lambda t, on: _windows(t, on).table().filter(
        dw.when(col("b") & (col("v") % 3 == 0), False).otherwise(True)).join(
        _windows(t, on).group_by("k").agg(mean=dw.avg("f")).select("k", "mean", next=col("window_id") + 1),
        on=[("k", "k"), ("window_id", "next")]),
}


def assert_agree(query: dw.Table, batch_size: int) -> None:
    compiled = query.execute(dw.Config(batch_size=batch_size))
    reference = query.execute(dw.Config(batch_size=batch_size, mode="interpreted"))
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    for key in ("input_rows", "windows_fired", "output_rows"):
        assert compiled.metrics.get(key) == reference.metrics.get(key), key


@pytest.mark.parametrize("shape", SHAPES)
@SETTINGS
@given(data=streams(), on=st.sampled_from([None, "ts"]))
def test_barrier_windows_agree_with_the_reference(shape, data, on):
    table, cuts, delay, batch_size = data
    assert_agree(SHAPES[shape](source(table, cuts, delay), on), batch_size)


@pytest.mark.parametrize("shape", ["keyed", "string_keys", "float_and_bool_keys", "model_joined", "assigned_per_key",
                                   "carried"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams(), seed=st.integers(0, 1000))
def test_barrier_windows_are_the_same_at_every_parallelism(shape, data, seed):
    table, cuts, delay, batch_size = data
    assert_same_at_every_parallelism(SHAPES[shape](source(table, cuts, delay), "ts"), batch_size, seed)


def _ts(values):
    return pa.array(values, pa.timestamp("ms"))


def _events():
    return dw.from_arrow(pa.table({
        "t": _ts([1, 2, 3, 4, 5, 6, 7]), "k": [1, 2, 1, 9, 2, 1, 1],
        "v": [10, 20, 30, 99, 50, 60, 70], "kind": ["x", "x", "x", "barrier", "x", "barrier", "x"]}), time="t")


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_barrier_closes_the_window_of_every_key(mode, parallelism):
    """Each barrier emits every key's sum since the previous one (keys in first-arrival order); the
    barrier row is in no window; the rows after the last barrier are never emitted."""
    out = _events().window(dw.Barrier(col("kind") == "barrier", on="t")).group_by("k").agg(s=dw.sum("v")) \
        .collect(dw.Config(mode=mode, parallelism=parallelism, batch_size=3))
    ms = {i: _ts([i])[0].as_py() for i in (4, 6)}
    assert out.to_pylist() == [
        {"window_id": 0, "window_start": None, "window_end": ms[4], "k": 1, "s": 40},
        {"window_id": 0, "window_start": None, "window_end": ms[4], "k": 2, "s": 20},
        {"window_id": 1, "window_start": ms[4], "window_end": ms[6], "k": 2, "s": 50}]


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_rows_carry_the_id_of_their_window(mode):
    out = _events().window(dw.Barrier(col("kind") == "barrier")).table().collect(dw.Config(mode=mode, batch_size=2))
    assert out.column("window_id").to_pylist() == [0, 0, 0, 0, 1, 1, 2]
    assert "window_start" not in out.column_names


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_per_key_barrier_closes_the_window_of_its_key_only(mode):
    out = _events().window(dw.Barrier(col("kind") == "barrier", on="t", by="k")).table() \
        .collect(dw.Config(mode=mode, batch_size=2))
    # keys 1, 2, 1, 9 (a barrier of key 9), 2, 1 (a barrier of key 1), 1
    assert out.column("window_id").to_pylist() == [0, 0, 0, 0, 0, 0, 1]
    assert out.column("window_start").to_pylist()[6] == _ts([6])[0].as_py()


def test_per_key_barriers_only_number_rows():
    with pytest.raises(UnsupportedError, match="per-key barriers"):
        _events().window(dw.Barrier(col("kind") == "barrier", by="k")).group_by("k").agg(n=dw.count())


def test_a_barrier_condition_must_be_a_bool_and_its_time_a_timestamp():
    t = _events()
    with pytest.raises(DarwinTypeError, match="not bool"):
        t.window(dw.Barrier(col("v") + 1))
    with pytest.raises(DarwinTypeError, match="timestamp"):
        t.window(dw.Barrier(col("kind") == "barrier", on="v"))
    with pytest.raises(PlanError, match="late_output"):
        t.window(dw.Barrier(col("kind") == "barrier"), late_output=True)


def test_explain_shows_the_barrier_operators():
    windows = _events().window(dw.Barrier(col("kind") == "barrier", on="t"))
    text = windows.group_by("k").agg(s=dw.sum("v")).explain(dw.Config(parallelism=2))
    assert "BarrierAggregate keys=[k] aggs=[s=sum(col('v'))] barrier(when (col('kind') == 'barrier') on t)" in text
    assert "__darwin_barrier -> emit -> parallel in slices" in text  # the condition is computed by the workers
    assert "BarrierAssign barrier(when (col('kind') == 'barrier'))" in \
        _events().window(dw.Barrier(col("kind") == "barrier")).table().explain()
