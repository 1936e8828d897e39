"""Filtered aggregates and count_distinct in plans: types, explain, what each engine folds, windowed
distinct counts against the workaround they were refused with, and the distinct sets' table."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.errors import DarwinTypeError, PlanError, UnsupportedError
from darwin.expr import Agg
from darwin.plan import exprs as ex
from darwin.runtime.distinct import INITIAL_ENTRIES, DistinctSets
from darwin.state.snapshot import load_arrays
from darwin.testing import assert_engines_agree

T = pa.table({"ts": pa.array([0, 400, 900, 1100, 1500, 2100, 2200], pa.timestamp("ms")),
              "k": [1, 1, 2, 1, 2, 1, 1], "v": [5, 5, 6, 7, None, 7, 8], "s": list("aabbacc")})


def table() -> dw.Table:
    return dw.from_arrow(T, time="ts")


def test_a_filter_is_kept_on_the_call_and_shown():
    q = table().group_by("k").agg(n=dw.count(filter=col("v") > 5), d=dw.count_distinct("s", filter=col("v") > 5))
    text = q.explain()
    assert "n=count() filter (where (col('v') > 5))" in text
    assert "d=count_distinct(col('s')) filter (where (col('v') > 5))" in text
    (_, call), _ = q.plan.aggs
    assert call == ex.AggCall("count", None, ex.Binary("gt", ex.Column("v"), ex.Literal(5, dw.DType.INT64)))


def test_what_every_engine_folds():
    """The argument where the filter holds, NULL elsewhere; count() counts the rows where it holds."""
    p = ex.Binary("gt", ex.Column("v"), ex.Literal(5, dw.DType.INT64))
    null = ex.Literal(None, None)
    assert ex.AggCall("sum", ex.Column("v")).input == ex.Column("v")
    assert ex.AggCall("sum", ex.Column("v"), p).input == ex.Case(((p, ex.Column("v")),), null)
    assert ex.AggCall("count", None, p).input == ex.Case(((p, ex.Literal(1, dw.DType.INT64)),), null)
    assert ex.columns_of(ex.AggCall("count", ex.Column("s"), p)) == {"s", "v"}


def test_result_types():
    """A filtered sum, min, max or avg is NULL for a group where no row passes; counts are never NULL."""
    q = table().group_by("k").agg(n=dw.count(filter=col("v") > 100), s=dw.sum("k", filter=col("v") > 100),
                                  lo=dw.min("k"), d=dw.count_distinct("k", filter=col("v") > 100))
    nullable = {f.name: f.nullable for f in q.plan.schema.fields}
    assert nullable == {"k": False, "n": False, "s": True, "lo": False, "d": False}
    out = assert_engines_agree(q).table.to_pylist()
    assert out == [{"k": 1, "n": 0, "s": None, "lo": 1, "d": 0}, {"k": 2, "n": 0, "s": None, "lo": 2, "d": 0}]


def test_bad_filters_and_arguments():
    t = table()
    with pytest.raises(DarwinTypeError, match="the filter col\\('v'\\) is int64, not bool"):
        t.group_by("k").agg(n=dw.count(filter=col("v")))
    with pytest.raises(PlanError, match="'nope'"):
        t.group_by("k").agg(n=dw.sum("v", filter=col("nope") > 1))
    with pytest.raises(PlanError, match="count_distinct\\(\\) needs a column"):
        t.group_by("k").agg(n=Agg(ex.AggCall("count_distinct", None)))
    with pytest.raises(DarwinTypeError, match="sum needs int64 or float64, got string"):
        t.group_by("k").agg(n=dw.sum("s", filter=col("v") > 1))


def test_windowed_distinct_counts_equal_the_two_step_workaround_they_were_refused_with():
    """count_distinct in a window (refused before, naming this workaround) gives what the workaround
    gives: one row per (window, keys, value), then a count per window and keys."""
    t = table()
    q = t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(d=dw.count_distinct("v"))
    got = {(r["window_start"].timestamp(), r["k"]): r["d"] for r in assert_engines_agree(q).table.to_pylist()}
    step = (t.filter(col("v").is_not_null()).window(dw.Tumble("1s", on="ts")).group_by("k", "v")
            .agg(n=dw.count()).select("k", "v", start=col("window_start")))
    workaround = step.window(dw.Tumble("1s", on="start")).group_by("k").agg(distinct=dw.count())
    by_hand = {(r["window_start"].timestamp(), r["k"]): r["distinct"]
               for r in assert_engines_agree(workaround).table.to_pylist()}
    want: dict = {}
    for r in T.to_pylist():
        want.setdefault((r["ts"].timestamp() // 1, r["k"]), set()).update([r["v"]] if r["v"] is not None else [])
    assert got == {key: len(values) for key, values in want.items()}
    assert by_hand == {key: n for key, n in got.items() if n}  # a group of only NULLs has no row there


def test_filters_on_every_aggregate_in_windows_on_a_ring_and_a_hash_table():
    ring = table().window(dw.Tumble("1s", on="ts")).agg(n=dw.count(filter=col("s") == "a"),
                                                         hi=dw.max("v", filter=col("s") != "a"))
    hashed = table().window(dw.Tumble("1s", on="ts")).group_by("s").agg(
        n=dw.count(filter=col("k") == 1), a=dw.avg("v", filter=col("k") == 1), lo=dw.min("v", filter=col("k") == 2))
    assert "window-ring-aggregate" in ring.explain() and "window-hash-aggregate" in hashed.explain()
    assert [(r["n"], r["hi"]) for r in assert_engines_agree(ring).table.to_pylist()] == [(2, 6), (1, 7), (0, 8)]
    rows = assert_engines_agree(hashed).table.to_pylist()
    assert [(r["s"], r["n"], r["a"], r["lo"]) for r in rows] == [
        ("a", 2, 5.0, None), ("b", 0, None, 6), ("b", 1, 7.0, None), ("a", 0, None, None), ("c", 2, 7.5, None)]


# -- the distinct sets' table ---------------------------------------------------------------------------

def push(sets: DistinctSets, groups: list[int], signs: list[int], values: list[int], members: int = 2) -> None:
    n = len(groups)
    ids, sign, v = (np.array(a, dtype=np.int64) for a in (groups, signs, values))
    present = [np.ones(n, dtype=np.bool_), v % 2 == 0][:members]
    sets.ensure_groups(max(groups) + 1)
    sets.push(ids, sign, [v] * members, present)


def saved(sets: DistinctSets, groups: int) -> dict[str, np.ndarray]:
    """What a checkpoint of ``sets`` holds, read back: parts ``d.pairs`` and ``d.distinct``."""
    with tempfile.TemporaryDirectory() as directory:
        sets.save(Path(directory), "t", "d.", groups)
        return dict(zip(["d.pairs", "d.distinct"], load_arrays(Path(directory), "t", ["d.pairs", "d.distinct"])))


def test_distinct_sets_count_values_in_and_out():
    sets = DistinctSets(2, 4)
    push(sets, [0, 0, 0, 1, 1], [1, 1, 1, 1, 1], [4, 4, 5, 4, 7])
    assert sets.counts(0, np.array([0, 1])).tolist() == [2, 2] and sets.counts(1, np.array([0, 1])).tolist() == [1, 1]
    push(sets, [0, 0, 1], [-1, -1, -1], [4, 5, 4])  # 4 stays once in group 0; 5 and group 1's 4 leave
    assert sets.counts(0, np.array([0, 1])).tolist() == [1, 1] and sets.counts(1, np.array([0, 1])).tolist() == [1, 0]


def test_pairs_no_value_holds_are_dropped_when_the_table_fills():
    """An updating input that churns through values: the table stays the size of what is held."""
    sets = DistinctSets(1, 1)
    for start in range(0, 40 * INITIAL_ENTRIES, 500):
        values = list(range(start, start + 500))
        push(sets, [0] * 500, [1] * 500, values, members=1)
        push(sets, [0] * 500, [-1] * 500, values, members=1)
    push(sets, [0, 0, 0], [1, 1, 1], [1, 2, 1], members=1)
    assert sets.counts(0, np.array([0])).tolist() == [2]
    assert len(sets.table) <= 2 * INITIAL_ENTRIES  # 20,000 values came and went
    assert sorted(map(tuple, saved(sets, 1)["d.pairs"].tolist())) == [(1, 1, 2), (1, 2, 1)]


def test_filters_in_session_windows_and_over_windows():
    t = table()
    sessions = t.window(dw.Session("300ms", on="ts")).group_by("k").agg(
        n=dw.count(), big=dw.count(filter=col("v") > 5), s=dw.sum("v", filter=col("s") != "a"))
    rows = assert_engines_agree(sessions).table.to_pylist()
    assert sorted((r["k"], r["n"], r["big"], r["s"]) for r in rows) == [
        (1, 1, 0, None), (1, 1, 0, None), (1, 1, 1, 7), (1, 2, 2, 15), (2, 1, 0, None), (2, 1, 1, 6)]
    over = t.with_columns(hi=dw.max("v", filter=col("s") == "a").over(partition_by="k", order_by="ts", rows=(2, 0)),
                          n=dw.count(filter=col("v") > 5).over(partition_by="k", order_by="ts", rows=(2, 0)))
    out = assert_engines_agree(over).table.to_pylist()
    assert [(r["k"], r["v"], r["hi"], r["n"]) for r in sorted(out, key=lambda r: r["ts"])] == [
        (1, 5, 5, 0), (1, 5, 5, 0), (2, 6, None, 1), (1, 7, 5, 1), (2, None, None, 1), (1, 7, 5, 2),
        (1, 8, None, 3)]


def test_distinct_counts_are_refused_in_every_kind_of_window():
    t = table()
    with pytest.raises(UnsupportedError, match="count_distinct in a session window aggregation is not supported"):
        t.window(dw.Session("1s", on="ts")).group_by("k").agg(d=dw.count_distinct("v"))
    with pytest.raises(UnsupportedError, match="count_distinct in an OVER window is not supported"):
        t.with_columns(d=dw.count_distinct("v").over(partition_by="k", order_by="ts", rows=(2, 0)))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3_000)), max_size=2_500),
       members=st.integers(1, 4), cut=st.integers(0, 2_500))
def test_an_input_that_never_retracts_keeps_a_bit_per_member(rows, members, cut):
    """Seen bits count what multiplicities count when nothing is taken back, through the table's
    growth and a checkpoint taken in the middle; an entry is three words whatever the members."""
    both = (DistinctSets(members, 6, retracting=True), DistinctSets(members, 6, retracting=False))
    halves = (rows[:cut], rows[cut:])
    for n, half in enumerate(halves):
        if n == 1:  # restore the bits' table from its checkpoint, then go on
            restored = DistinctSets(members, 6, retracting=False)
            restored.restore(saved(both[1], 6), "d.", 6)
            both = (both[0], restored)
        if half:
            ids, v = (np.array(c, dtype=np.int64) for c in zip(*half))
            present = [v % (j + 1) == 0 for j in range(members)]  # member j sees multiples of j + 1
            for sets in both:
                sets.ensure_groups(6)
                sets.push(ids, np.ones(len(ids), dtype=np.int64), [v] * members, present)
    assert both[1].table.shape[1] == 3 and both[0].table.shape[1] == 2 + members
    for j in range(members):
        assert both[1].counts(j, np.arange(6)).tolist() == both[0].counts(j, np.arange(6)).tolist()
    want = {(g, v) for g, v in rows}
    assert both[1].counts(0, np.arange(6)).tolist() == [sum(1 for g, _ in want if g == k) for k in range(6)]
