"""Updating results' changelogs, checked change by change on random streams.

``collect()`` is the changelog folded by ``final_table``, which quietly skips a retraction of a row
that is not there; so these tests fold strictly instead, on every backend and at parallelism 1, 2
and 4, compiled and interpreted:

- every -U/-D retracts a row standing at that point, equal in every column (NaN equal to NaN, -0.0
  apart from 0.0), and the rows left standing are ``collect()``'s;
- by the result's unique key (``darwin.plan.keys``, the key an upsert sink writes by), a row is
  added only when no row of its key stands: a key's old row is retracted before its new one is
  added, so an upsert by the key (a retraction deletes the key) also ends in ``collect()``;
- an updating aggregation's final table is a fresh group-by of its input's final table, exactly
  (the float values are dyadic, so every sum is exact whatever the order; NaN and infinities too).
"""

from __future__ import annotations

import math
import struct
import tempfile

import pyarrow as pa
import pyarrow.parquet
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.plan.keys import unique_key

RUNS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5, 1.5, -2.25, 7.0]


@st.composite
def streams(draw, name: str) -> dw.Table:
    n = draw(st.integers(0, 16))
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 5000), min_size=n, max_size=n))
    values = draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n))
    floats = draw(st.lists(st.sampled_from(FLOATS), min_size=n, max_size=n))
    table = pa.table({"k": pa.array(keys, pa.int64()), "t": pa.array(times, pa.timestamp("ms")),
                      "v": pa.array(values, pa.int64()), "f": pa.array(floats, pa.float64()),
                      "s": pa.array([f"{name}{(v or 0) % 2}" for v in values], pa.string())})
    return dw.from_arrow(table, time="t", max_delay=draw(st.sampled_from([0, 1000])), name=name)


def _inputs(left: dw.Table, right: dw.Table, shape: str) -> dw.Table:
    """An input of columns k, x (int) and y (float): appending, an outer join's or an aggregation's."""
    if shape == "append":
        return left.select("k", x="v", y="f")
    if shape in ("left", "full"):
        return left.join(right, on=[("k", "k")], how=shape).select("k", x="v_right", y="f_right")
    if shape == "right":
        return left.join(right, on=[("k", "k")], how="right").select(k="k_right", x="v", y="f")
    per_key = left.group_by("k", "s").agg(c=dw.count(), m=dw.max("v"), g=dw.sum("f"), lo=dw.min("f"))
    return per_key.select(k="c", x="m", y="g" if shape == "aggregation" else "lo")  # its rows move between groups


AGGREGATES = {"n": ("count", None), "nx": ("count", "x"), "sx": ("sum", "x"), "ax": ("avg", "x"),
              "lx": ("min", "x"), "hx": ("max", "x"), "dx": ("count_distinct", "x"), "ny": ("count", "y"),
              "sy": ("sum", "y"), "ay": ("avg", "y"), "ly": ("min", "y"), "hy": ("max", "y"),
              "dy": ("count_distinct", "y")}


def _aggregates() -> dict[str, dw.Agg]:
    make = {"count": dw.count, "sum": dw.sum, "avg": dw.avg, "min": dw.min, "max": dw.max,
            "count_distinct": dw.count_distinct}
    return {name: make[f]() if c is None else make[f](c) for name, (f, c) in AGGREGATES.items()}


def _exact(v):
    """A value as a comparable token: NaN one value, -0.0 apart from 0.0."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else struct.pack("<d", v)
    return v


def _key_token(v):
    return _exact(v + 0.0) if isinstance(v, float) else _exact(v)  # grouping holds -0.0 equal to 0.0


def _row(r: dict) -> tuple:
    return tuple(_exact(v) for v in r.values())


def assert_folds_strictly(changelog: pa.Table, table: pa.Table, key: tuple[str, ...] | None) -> None:
    standing: list[dict] = []
    for i, change in enumerate(changelog.to_pylist()):
        op = change.pop("op")
        if op in ("+I", "+U"):
            if key is not None:
                mine = tuple(_key_token(change[c]) for c in key)
                clash = [r for r in standing if tuple(_key_token(r[c]) for c in key) == mine]
                assert not clash, f"change {i}: {op} {change} while its key's row {clash[0]} stands"
            standing.append(change)
        else:
            at = [j for j, r in enumerate(standing) if _row(r) == _row(change)]
            assert at, f"change {i}: {op} {change} retracts a row that does not stand"
            del standing[at[-1]]
    assert sorted(map(_row, standing), key=repr) == sorted(map(_row, table.to_pylist()), key=repr)


def _fresh(rows: list[dict], keyed: bool) -> list[tuple]:
    """The aggregation computed afresh over ``rows`` (the input's final table)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(_key_token(r["k"]) if keyed else (), (r["k"], []))[1].append(r)
    out = []
    for k, members in groups.values():
        result = [k] if keyed else []
        for f, c in AGGREGATES.values():
            values = [1 if c is None else r[c] for r in members if c is None or r[c] is not None]
            if f == "count":
                result.append(len(values))
            elif f == "count_distinct":
                result.append(len({"nan" if v != v else v + 0 for v in values}))
            elif not values:
                result.append(None)
            elif f in ("min", "max"):
                order = [(v != v, v, math.copysign(1, v) if isinstance(v, float) else 0) for v in values]
                result.append(values[order.index((min if f == "min" else max)(order))])
            else:
                total = sum(values)
                result.append(total if f == "sum" else total / len(values))
        out.append(tuple(_exact(v) for v in result))
    return sorted(out, key=repr)


def _config(state: str, parallelism: int, batch: int, mode: str, directory: str) -> dw.Config:
    return dw.Config(batch_size=batch, state=state, parallelism=parallelism, mode=mode, state_delta_limit=1,
                     state_path=None if state == "memory" else directory)


ENGINES = dict(state=st.sampled_from(["memory", "mmap", "rocksdb"]), parallelism=st.sampled_from([1, 2, 4]),
               mode=st.sampled_from(["compiled", "compiled", "interpreted"]), batch=st.integers(1, 5))


@RUNS
@given(left=streams("L"), right=streams("R"), shape=st.sampled_from(["append", "left", "right", "full",
                                                                      "aggregation", "extremes"]),
       keyed=st.booleans(), **ENGINES)
def test_an_updating_aggregation_folds_to_a_fresh_group_by(left, right, shape, keyed, state, parallelism, mode,
                                                          batch):
    source = _inputs(left, right, shape)
    q = source.group_by("k").agg(**_aggregates()) if keyed else source.agg(**_aggregates())
    with tempfile.TemporaryDirectory() as directory:
        result = q.execute(_config(state, parallelism, batch, mode, directory))
    assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))
    rows = source.collect(dw.Config(batch_size=batch, mode="interpreted")).to_pylist()
    assert sorted(map(_row, result.table.to_pylist()), key=repr) == _fresh(rows, keyed)


def _ranked(left: dw.Table, shape: str) -> dw.Table:
    per_key = left.group_by("k", "s").agg(n=dw.count(), m=dw.max("v"))  # keyed by (k, s)
    # rows that may differ in the sign of a zero alone (s dropped): a retraction must take back its own
    lowest = left.group_by("k", "s").agg(lo=dw.min("f")).select("k", "lo")
    return {
        "top": left.top_n(2, by="k", order=[dw.desc("v")]),
        "top-rank": per_key.top_n(2, by="s", order=[dw.desc("n")], rank="rn"),
        "top-updating": per_key.top_n(2, by="s", order=[dw.desc("n")]),
        "top-moving": per_key.top_n(2, by="m", order=[dw.desc("n")]),  # a key's row changes partition
        "top1-moving": per_key.top_n(1, by="n", order=[dw.desc("m")]),
        "top-global": per_key.top_n(3, order=["m", dw.desc("n")]),
        "dedup-last": left.deduplicate(on="k", keep="last", order="v"),
        "dedup-first": left.deduplicate(on="k", keep="first"),
        "filter": per_key.filter(col("n") > 1),
        "over": per_key.with_columns(a=dw.max("n").over(partition_by="m", order_by="n", rows=(1, 0))),
        "over-top1": per_key.top_n(1, by="k", order=[dw.desc("n")]).with_columns(
            a=dw.sum("n").over(partition_by="s", order_by="m", rows=(2, 0))),
        "top-zeros": lowest.top_n(2, by="k", order=[dw.desc("lo")]),
        "over-zeros": lowest.with_columns(a=dw.min("lo").over(partition_by="k", order_by="lo", rows=(1, 0))),
    }[shape]


@RUNS
@given(left=streams("L"), shape=st.sampled_from(["top", "top-rank", "top-updating", "top-moving", "top1-moving",
                                                 "top-global", "dedup-last", "dedup-first", "filter", "over",
                                                 "over-top1", "top-zeros", "over-zeros"]), **ENGINES)
def test_ranked_and_over_results_fold_by_their_keys(left, shape, state, parallelism, mode, batch):
    q = _ranked(left, shape)
    with tempfile.TemporaryDirectory() as directory:
        result = q.execute(_config(state, parallelism, batch, mode, directory))
    assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))


def _batches(rows: list[tuple], cuts: list[int]) -> dw.Table:
    """Rows (g, v) in batches ending at ``cuts``."""
    schema = pa.schema([("g", pa.string()), ("v", pa.int64())])
    bounds = [0, *cuts, len(rows)]
    return dw.from_batches(schema, lambda: [pa.record_batch(list(map(list, zip(*rows[a:b]))), schema=schema)
                                            for a, b in zip(bounds, bounds[1:])], name="T")


def test_a_top_n_retracts_a_key_s_old_row_before_adding_its_new_one(mode):
    """Counts per g, the top 2: in the second batch A goes from 1 to 4 (A1 leaves, A4 enters) and C
    enters with 3 (B leaves). Pairing the i-th row that left with the i-th that entered gave -U B,
    +U A4, -U A1, +U C3: A's new row before its old one was withdrawn, so an upsert sink keyed by g
    deleted A and its snapshot lacked a row of collect()."""
    t = _batches([("B", 0), ("B", 0), ("A", 0)] + [("A", 0)] * 3 + [("C", 0)] * 3, [3])
    q = t.group_by("g").agg(n=dw.count()).top_n(2, order=[dw.desc("n")])
    result = q.execute(dw.Config(mode=mode))
    changes = [(c["op"], c["g"], c["n"]) for c in result.changelog.to_pylist()]
    assert changes == [("+I", "B", 2), ("+I", "A", 1), ("-U", "B", 2), ("-U", "A", 1), ("+U", "A", 4),
                       ("+U", "C", 3)]
    assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))
    with tempfile.TemporaryDirectory() as directory:
        q.sink(dw.sinks.Parquet(directory + "/out", mode="upsert")).run(dw.Config(mode=mode))
        snapshot = pa.parquet.read_table(directory + "/out/snapshot.parquet")
    assert sorted(snapshot.to_pylist(), key=str) == sorted(result.table.to_pylist(), key=str) == [
        {"g": "A", "n": 4}, {"g": "C", "n": 3}]


@pytest.mark.parametrize("shape", ["top1", "over"])
def test_a_row_moving_to_another_partition_leaves_the_old_one_first(mode, shape):
    """The top row per count of the counts per g: in the second batch Y goes from 2 to 3 and X from 1
    to 2, so partition n=2 (touched first, by Y's -U) gets X's new row while X's old one still
    stands in n=1. Partitions emitted in the order the batch touched them wrote +U X2 before -D X1;
    the same for an OVER window partitioned by the count."""
    t = _batches([("X", 1), ("Y", 1), ("Y", 1), ("Y", 1), ("X", 1)], [3])
    per_g = t.group_by("g").agg(n=dw.count(), v=dw.max("v"))
    q = per_g.top_n(1, by="n", order=[dw.desc("v")]) if shape == "top1" else \
        per_g.with_columns(a=dw.sum("v").over(partition_by="n", order_by="g", rows=(1, 0)))
    result = q.execute(dw.Config(mode=mode))
    assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))
    with tempfile.TemporaryDirectory() as directory:
        q.sink(dw.sinks.Parquet(directory + "/out", mode="upsert")).run(dw.Config(mode=mode))
        snapshot = pa.parquet.read_table(directory + "/out/snapshot.parquet")
    assert sorted(snapshot.to_pylist(), key=str) == sorted(result.table.to_pylist(), key=str)


def test_a_retraction_takes_back_its_own_zero_not_an_equal_one(mode):
    """Group minima 0.0 (group 2), -0.0 (group 1) and 5.0, the top 2 by the minimum; then group 1's
    minimum becomes -1.0. The top held 5.0 and the 0.0 that came first; the retraction of group 1's
    -0.0 took back the top's 0.0 (-0.0 == 0.0) and brought the -0.0 in: the result was 5.0, -0.0
    where the groups' minima are 0.0, -1.0 and 5.0 (read one or two rows at a time)."""
    t = pa.table({"g": [2, 1, 3, 1, 3], "x": [0.0, -0.0, 5.0, -1.0, 7.0]})
    lowest = dw.from_arrow(t).group_by("g").agg(lo=dw.min("x")).select("lo")
    q = lowest.top_n(2, order=[dw.desc("lo")])
    for batch in range(1, 6):
        result = q.execute(dw.Config(batch_size=batch, mode=mode))
        assert sorted(map(_row, result.table.to_pylist())) == sorted([_row({"lo": 5.0}), _row({"lo": 0.0})])
        assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))


def test_an_over_window_emits_a_result_whose_zero_changed_sign(mode):
    """Minima 0.0 (group a) and 1.0 (group r), each with the minimum of itself and the row before it
    by ``lo``; then a's minimum becomes -0.0 and r's 0.5. r's frame minimum went from 0.0 to -0.0,
    which compared equal, so nothing was emitted but -0.0 was kept as shown: r's -D then retracted
    (1.0, -0.0), which never stood, and (1.0, 0.0) stayed in the result though group r's row is 0.5."""
    t = pa.table({"k": [1, 1, 1, 1], "g": ["a", "r", "a", "r"], "x": [0.0, 1.0, -0.0, 0.5]})
    lowest = dw.from_arrow(t).group_by("k", "g").agg(lo=dw.min("x")).select("k", "lo")
    q = lowest.with_columns(a=dw.min("lo").over(partition_by="k", order_by="lo", rows=(1, 0)))
    result = q.execute(dw.Config(batch_size=1, mode=mode))
    assert sorted(map(_row, result.table.to_pylist())) == sorted([_row({"k": 1, "lo": -0.0, "a": -0.0}),
                                                                  _row({"k": 1, "lo": 0.5, "a": -0.0})])
    assert_folds_strictly(result.changelog, result.table, unique_key(q.plan))
