"""Regular joins whose inputs are updating results (aggregations, top-N), as Flink's regular joins
take retraction inputs: a withdrawn row (-U/-D) takes back one kept row of its side with exactly
its values and every joined row it made; an outer side's padded row comes back when its last
match goes. Unions of updating results: a union of changelogs.

On random streams (NULL keys, duplicate rows, groups that vanish, floats with -0.0 and NaN), every
join kind with and without a condition, every backend, parallelism 1 and 2, random batch sizes:
the compiled changelog equals the interpreter's, change by change; it folds strictly (every
retraction takes back a row that stands); and what it folds to is the batch join of the two
inputs' final tables, computed here in plain Python.
"""

from __future__ import annotations

import math
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_changelog_fold import assert_folds_strictly

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal

RUNS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = [None, math.nan, -0.0, 0.0, 0.5, -2.25, 7.0]
SHAPES = ("append", "unique", "aggregation", "top", "vanishing")
APPENDING = ("append", "unique")
HOW = ("inner", "left", "right", "full")


@st.composite
def streams(draw, name: str) -> dw.Table:
    n = draw(st.integers(0, 20))
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    floats = draw(st.lists(st.sampled_from(FLOATS), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n))
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values, pa.int64()),
                      "f": pa.array(floats, pa.float64()), "t": pa.array(times, pa.timestamp("ms")),
                      "s": pa.array([f"{name}{v % 2}" for v in values], pa.string())})
    return dw.from_arrow(table, name=name, time="t", max_delay=draw(st.sampled_from([0, 1000])))


def side(t: dw.Table, shape: str) -> dw.Table:
    """A join input of columns k (int), x (int) and y (float): appending or updating."""
    if shape == "append":
        return t.select("k", x="v", y="f")
    if shape == "unique":  # appends, one row per k: a row of the other side that matched it is not kept
        return t.deduplicate(on="k", keep="first").select("k", x="v", y="f")
    if shape == "aggregation":  # rows of one k per label: duplicates, zeros of either sign
        return t.group_by("k", "s").agg(x=dw.count(), y=dw.min("f")).select("k", "x", "y")
    if shape == "top":  # rows leave the top (-D), duplicates among them
        return t.top_n(2, by="k", order=[dw.desc("v")]).select("k", x="v", y="f")
    # a (label, k) group loses its only row when k's top row moves to the other label: it vanishes (-D)
    top = t.top_n(1, by="k", order=[dw.desc("v")])
    return top.group_by("s", "k").agg(x=dw.count(), y=dw.max("f")).select("k", "x", "y")


def _key(v):
    """A join key as the join compares it: NaN equal to NaN, -0.0 to 0.0."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v + 0.0
    return v


def batch_join(left: list[dict], right: list[dict], on: str, how: str, condition: bool) -> list[dict]:
    """The join of two final tables: NULL keys never match; ``condition``: x < x_right + 2."""
    def match(a: dict, b: dict) -> bool:
        if a[on] is None or b[on] is None or _key(a[on]) != _key(b[on]):
            return False
        return not condition or (a["x"] is not None and b["x"] is not None and a["x"] < b["x"] + 2)

    def joined(a: dict | None, b: dict | None) -> dict:
        row = {c: None if a is None else a[c] for c in ("k", "x", "y")}
        row.update({f"{c}_right": None if b is None else b[c] for c in ("k", "x", "y")})
        return row

    out = [joined(a, b) for a in left for b in right if match(a, b)]
    if how in ("left", "full"):
        out += [joined(a, None) for a in left if not any(match(a, b) for b in right)]
    if how in ("right", "full"):
        out += [joined(None, b) for b in right if not any(match(a, b) for a in left)]
    return out


def _exact(v):
    return "nan" if isinstance(v, float) and math.isnan(v) else (v, math.copysign(1, v)) if isinstance(v, float) \
        else v


def _rows(rows: list[dict]) -> list[tuple]:
    return sorted((tuple(_exact(v) for v in r.values()) for r in rows), key=repr)


def _config(state: str, parallelism: int, batch: int, mode: str, directory: str) -> dw.Config:
    return dw.Config(batch_size=batch, state=state, parallelism=parallelism, mode=mode, state_delta_limit=1,
                     state_path=None if state == "memory" else directory)


@RUNS
@given(left=streams("L"), right=streams("R"), shapes=st.sampled_from([(a, b) for a in SHAPES for b in SHAPES
                                                                       if a not in APPENDING or b not in APPENDING]),
       how=st.sampled_from(HOW), on=st.sampled_from(["k", "y"]), condition=st.booleans(), batch=st.integers(1, 5),
       state=st.sampled_from(["memory", "mmap", "rocksdb"]), parallelism=st.sampled_from([1, 2]))
def test_joins_of_updating_inputs_fold_to_the_join_of_their_final_tables(left, right, shapes, how, on, condition,
                                                                         batch, state, parallelism):
    a, b = side(left, shapes[0]), side(right, shapes[1])
    q = a.join(b, on=[(on, on)], how=how, where=col("x") < col("x_right") + 2 if condition else None)
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    with tempfile.TemporaryDirectory() as directory:
        compiled = q.execute(_config(state, parallelism, batch, "compiled", directory))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)
    assert_folds_strictly(compiled.changelog, compiled.table, None)
    inputs = [t.collect(dw.Config(batch_size=batch, mode="interpreted")).to_pylist() for t in (a, b)]
    assert _rows(compiled.table.to_pylist()) == _rows(batch_join(*inputs, on, how, condition))


@RUNS
@given(left=streams("L"), right=streams("R"), shapes=st.sampled_from([(a, b) for a in SHAPES for b in SHAPES
                                                                       if a not in APPENDING or b not in APPENDING]),
       how=st.sampled_from(HOW), ttl=st.sampled_from([1, 500, 2000]), batch=st.integers(1, 5),
       state=st.sampled_from(["memory", "mmap", "rocksdb"]))
def test_joins_of_updating_inputs_with_a_state_ttl_agree(left, right, shapes, how, ttl, batch, state):
    """Rows leave the state by watermark; a retraction of a row already gone still takes back its
    pairs with the other side's kept rows (as Flink's): compiled and interpreted alike."""
    q = side(left, shapes[0]).join(side(right, shapes[1]), on=[("k", "k")], how=how, state_ttl=ttl)
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    with tempfile.TemporaryDirectory() as directory:
        compiled = q.execute(_config(state, 1, batch, "compiled", directory))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)


@RUNS
@given(left=streams("L"), right=streams("R"), shapes=st.lists(st.sampled_from(SHAPES), min_size=2, max_size=3),
       same=st.booleans(), regroup=st.booleans(), batch=st.integers(1, 5),
       state=st.sampled_from(["memory", "mmap", "rocksdb"]), parallelism=st.sampled_from([1, 2]))
def test_unions_of_updating_inputs_fold_to_their_final_tables(left, right, shapes, same, regroup, batch, state,
                                                             parallelism):
    """A union of changelogs is a changelog: each part's rows keep their kinds (an appending part's
    are +I) and it folds to every part's final table; an aggregation over it to a fresh group-by.
    Parts may read one source (``same``): they are fed in plan order on both engines."""
    parts = [side(left if same or i % 2 == 0 else right, shape) for i, shape in enumerate(shapes)]
    q = parts[0].union(*parts[1:])
    if regroup:
        q = q.group_by("k").agg(x=dw.sum("x"), y=dw.count())
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    with tempfile.TemporaryDirectory() as directory:
        compiled = q.execute(_config(state, parallelism, batch, "compiled", directory))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)
    assert_folds_strictly(compiled.changelog, compiled.table, ("k",) if regroup else None)
    rows = [r for p in parts for r in p.collect(dw.Config(batch_size=batch, mode="interpreted")).to_pylist()]
    if regroup:
        groups: dict = {}
        for r in rows:
            groups.setdefault(r["k"], []).append(r["x"])
        rows = [{"k": k, "x": sum(v for v in xs if v is not None) if any(v is not None for v in xs) else None,
                 "y": len(xs)} for k, xs in groups.items()]
    assert _rows(compiled.table.to_pylist()) == _rows(rows)


def _changes(result: dw.RunResult) -> list[tuple]:
    return [(c["op"], c["k"], c["x"], c["k_right"], c["x_right"]) for c in result.changelog.to_pylist()]


def test_a_retracted_row_takes_back_its_pairs_and_pads_the_other_side_again(mode):
    """Counts per k on both sides, full join, the left side read first: its k=1 count goes 1 -> 2
    (the padded row of 1 goes, the one of 2 comes); then the right side's k=2 count goes 1 -> 2:
    its -U takes back the joined row (-D, an outer side's) and the left k=2 row, matched no more,
    is padded again (+I), until +U pairs it anew."""
    t = dw.from_arrow(pa.table({"k": [1, 2, 1]}), name="T")
    u = dw.from_arrow(pa.table({"k": [2, 1, 2]}), name="U")
    a, b = t.group_by("k").agg(x=dw.count()), u.group_by("k").agg(x=dw.count())
    q = a.join(b, on=[("k", "k")], how="full")
    result = q.execute(dw.Config(mode=mode, batch_size=1))
    assert _changes(result) == [
        ("+I", 1, 1, None, None), ("+I", 2, 1, None, None), ("-D", 1, 1, None, None), ("+I", 1, 2, None, None),
        ("-D", 2, 1, None, None), ("+I", 2, 1, 2, 1), ("-D", 1, 2, None, None), ("+I", 1, 2, 1, 1),
        ("-D", 2, 1, 2, 1), ("+I", 2, 1, None, None), ("-D", 2, 1, None, None), ("+I", 2, 1, 2, 2)]
    assert sorted((r["k"], r["x"], r["k_right"], r["x_right"]) for r in result.table.to_pylist()) == [
        (1, 2, 1, 1), (2, 1, 2, 2)]
    assert_folds_strictly(result.changelog, result.table, None)


def test_an_inner_join_passes_its_input_s_kinds_on(mode):
    """As Flink's: an inner join's rows of an update are -U/+U; an outer side's update gives -D/+I."""
    u = dw.from_arrow(pa.table({"k": [1]}), name="U")  # read first: the plan's first source
    t = dw.from_arrow(pa.table({"k": [1, 1]}), name="T")
    b = u.select("k", x=col("k"))
    a = t.group_by("k").agg(x=dw.count())
    inner = b.join(a, on=[("k", "k")]).execute(dw.Config(mode=mode, batch_size=1))
    assert _changes(inner) == [("+I", 1, 1, 1, 1), ("-U", 1, 1, 1, 1), ("+U", 1, 1, 1, 2)]
    right = b.join(a, on=[("k", "k")], how="right").execute(dw.Config(mode=mode, batch_size=1))
    assert _changes(right) == [("+I", 1, 1, 1, 1), ("-D", 1, 1, 1, 1), ("+I", 1, 1, 1, 2)]


def test_a_retraction_takes_back_its_own_zero_not_an_equal_one(mode):
    """Two rows of key 1 on the left that differ in the sign of a zero alone (the minima of two
    labels), then the -0.0 one goes: the kept 0.0 stays, and the pair left is 0.0's."""
    t = dw.from_arrow(pa.table({"k": [1, 1, 1], "s": ["a", "b", "b"], "f": [0.0, -0.0, -1.0]}), name="T")
    u = dw.from_arrow(pa.table({"k": [1]}), name="U")
    a = t.group_by("k", "s").agg(y=dw.min("f")).select("k", "y")
    q = u.join(a, on=[("k", "k")])
    for batch in (1, 2, 3):
        result = q.execute(dw.Config(mode=mode, batch_size=batch))
        assert _rows(result.table.to_pylist()) == _rows([{"k": 1, "k_right": 1, "y": 0.0},
                                                         {"k": 1, "k_right": 1, "y": -1.0}])
        assert_folds_strictly(result.changelog, result.table, None)


def test_a_time_bound_over_an_updating_input_is_a_regular_join_s_condition(mode):
    """An updating result carries no time attribute, so a BETWEEN on its times bounds no interval
    join: it is the condition of a regular join, which keeps its rows (as Flink plans it)."""
    t = dw.from_arrow(pa.table({"k": [1, 1], "t": pa.array([0, 9000], pa.timestamp("ms"))}), time="t", name="T")
    u = dw.from_arrow(pa.table({"k": [1], "t": pa.array([500], pa.timestamp("ms"))}), time="t", name="U")
    latest = t.group_by("k").agg(t=dw.max("t"))
    q = latest.join(u, on=[("k", "k")], where=col("t_right").between(col("t") - 1000, col("t") + 1000))
    assert "(regular)" in q.explain()
    result = q.execute(dw.Config(mode=mode, batch_size=1))
    assert result.table.num_rows == 0  # the pair with t=0 was taken back when the latest time became 9 s
    assert_folds_strictly(result.changelog, result.table, None)
