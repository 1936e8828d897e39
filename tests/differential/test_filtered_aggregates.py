"""Filtered aggregates (``agg(x, filter=p)``) and ``count_distinct``: the compiled engine against the
reference interpreter on random streams, on every state backend; and against plain Python.

Windowed aggregations run on window rings and hash tables (memory, mmap, rocksdb); updating
aggregations run over append-only inputs and over updating ones (another aggregation, an outer
join), so filtered values and distinct values are retracted.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import source
from streams import streams as nullable_streams
from test_joins import HOW, SETTINGS, STATES, assert_agree, streams

import darwin as dw
from darwin import col, lit
from darwin.testing import assert_engines_agree

WINDOWED = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def filtered(v: str, p: dw.Expr) -> dict[str, dw.expr.Agg]:
    """Every aggregate of ``v`` under the filter ``p``, beside unfiltered ones."""
    return {"n": dw.count(), "np": dw.count(filter=p), "nv": dw.count(v, filter=p), "total": dw.sum(v, filter=p),
            "low": dw.min(v, filter=p), "high": dw.max(v, filter=p), "mean": dw.avg(v, filter=p),
            "all_high": dw.max(v)}


# -- windowed aggregations ----------------------------------------------------------------------------

def q_ring(t: dw.Table) -> dw.Table:
    """A global windowed aggregation: a window ring on memory state. A predicate on a nullable
    column is NULL for some rows: those are not counted."""
    return t.window(dw.Tumble("1s", on="ts")).agg(**filtered("v", col("f") > 0))


def q_hash(t: dw.Table) -> dw.Table:
    """String and bool keys over sliding windows (a hash table), filters on strings and booleans."""
    p = (col("s") == "apple") | col("b")
    return (t.window(dw.Slide("2s", every="500ms", on="ts")).group_by("s", "b")
            .agg(**filtered("f", p), odd=dw.count(filter=col("v") % 2 == 1), never=dw.sum("v", filter=lit(False))))


@pytest.mark.parametrize("shape", [q_ring, q_hash], ids=lambda f: f.__name__)
@pytest.mark.parametrize("state", STATES)
@WINDOWED
@given(data=nullable_streams())
def test_windowed_filtered_aggregates_agree(tmp_path_factory, shape, state, data):
    table, cuts, delay, batch_size = data
    directory = None if state == "memory" else str(tmp_path_factory.mktemp("state"))
    config = dw.Config(batch_size=batch_size, state=state, state_path=directory, state_delta_limit=2)
    assert_engines_agree(shape(source(table, cuts, delay)), config)


def test_a_filter_counts_only_rows_where_it_is_true():
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2, 3], pa.timestamp("ms")), "k": [1, 1, 1, 2],
                                "v": [5, None, 20, 7]}), time="ts")
    q = t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(
        n=dw.count(), big=dw.count(filter=col("v") > 6), s=dw.sum("v", filter=col("v") > 6),
        lo=dw.min("v", filter=col("v") < 0))
    # v NULL: the predicate is NULL, the row is not counted; no row passes v < 0: min is NULL, count 0
    assert [(r["k"], r["n"], r["big"], r["s"], r["lo"]) for r in assert_engines_agree(q).table.to_pylist()] == [
        (1, 3, 1, 20, None), (2, 1, 1, 7, None)]
    assert "s=sum(col('v')) filter (where (col('v') > 6))" in q.explain()


# -- updating aggregations ----------------------------------------------------------------------------

def with_distinct(p: dw.Expr) -> dict[str, dw.expr.Agg]:
    return {**filtered("v", p), "d": dw.count_distinct("v"), "dp": dw.count_distinct("v", filter=p),
            "ds": dw.count_distinct("s", filter=p), "dk": dw.count_distinct("k")}


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_updating_filtered_aggregates_agree(left, batch):
    assert_agree(left.group_by("k").agg(**with_distinct(col("v") > 0)), batch)
    assert_agree(left.group_by(g=col("v") % 3).agg(**with_distinct(col("s") != "L0")), batch)
    assert_agree(left.agg(n=dw.count(filter=col("k").is_null()), d=dw.count_distinct("t", filter=col("k") > 2)),
                 batch)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_distinct_counts_over_an_updating_aggregation_retract(left, batch):
    """Each key's running total changes as rows come: the old total leaves the second level's set."""
    per_key = left.group_by("k", "s").agg(total=dw.sum("v"), n=dw.count())
    assert_agree(per_key.group_by("s").agg(d=dw.count_distinct("total"), big=dw.count_distinct("total",
                                           filter=col("n") > 1), keys=dw.count_distinct("k"),
                                           n=dw.count(filter=col("total") > 0),
                                           hi=dw.max("total", filter=col("n") > 1),
                                           total=dw.sum("total", filter=col("n") > 1)), batch)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_distinct_counts_over_an_outer_join_retract(left, right, how, batch, state):
    """An outer join retracts its NULL-padded rows when a match comes."""
    joined = left.join(right, on=[("k", "k")], how=how)
    assert_agree(joined.group_by("k").agg(d=dw.count_distinct("v_right"), s=dw.count_distinct("s_right"),
                                          dp=dw.count_distinct("v", filter=col("v_right") > 0),
                                          n=dw.count(filter=col("v_right").is_null())), batch, state)


@st.composite
def values(draw) -> dw.Table:
    """Float values with NULL, NaN, -0.0 and 0.0, bools and strings, under few keys."""
    n = draw(st.integers(0, 30))
    pick = st.sampled_from([None, math.nan, -0.0, 0.0, 1.5, -2.25])
    return dw.from_arrow(pa.table({
        "k": pa.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), pa.int64()),
        "x": pa.array(draw(st.lists(pick, min_size=n, max_size=n)), pa.float64()),
        "b": pa.array(draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n)), pa.bool_()),
        "s": pa.array(draw(st.lists(st.sampled_from(["a", "b", "", None]), min_size=n, max_size=n)), pa.string())}),
        name="V")


@SETTINGS
@given(table=values(), batch=st.integers(1, 6))
def test_distinct_float_bool_and_string_values(table, batch):
    """0.0 and -0.0 are one value, every NaN one value, NULL none."""
    q = table.group_by("k").agg(x=dw.count_distinct("x"), b=dw.count_distinct("b"), s=dw.count_distinct("s"),
                                xs=dw.count_distinct("x", filter=col("s") == "a"))
    assert_agree(q, batch)
    expected: dict = {}
    for r in table.plan.source.table.to_pylist():
        sets = expected.setdefault(r["k"], (set(), set(), set(), set()))
        x = None if r["x"] is None else "nan" if r["x"] != r["x"] else r["x"] + 0.0
        for i, v in enumerate((x, r["b"], r["s"], x if r["s"] == "a" else None)):
            if v is not None:
                sets[i].add(v)
    got = q.collect(dw.Config(batch_size=batch)).to_pylist()
    assert {r["k"]: (r["x"], r["b"], r["s"], r["xs"]) for r in got} == {
        k: tuple(len(s) for s in sets) for k, sets in expected.items()}


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_the_final_table_is_the_filtered_group_by_of_all_rows(left, batch):
    q = left.group_by("k").agg(n=dw.count(filter=col("v") > 0), d=dw.count_distinct("s", filter=col("v") > 0),
                               total=dw.sum("v", filter=col("v") > 0))
    expected: dict = {}
    for r in left.plan.source.table.to_pylist():
        n, strings, total = expected.setdefault(r["k"], [0, set(), None])
        if r["v"] > 0:
            expected[r["k"]] = [n + 1, strings | {r["s"]}, r["v"] + (total or 0)]
    got = q.collect(dw.Config(batch_size=batch)).to_pylist()
    assert {r["k"]: (r["n"], r["d"], r["total"]) for r in got} == {
        k: (n, len(s), total) for k, (n, s, total) in expected.items()}
