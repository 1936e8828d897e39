"""count_distinct in tumbling and sliding windows.

The compiled engine counts it in two windowed steps (``darwin.plan.split_distinct``: per
(window, keys, value), then per window and keys); the reference interpreter keeps a set per window
and group. Random streams -- NULL keys and values, NaN and -0.0, strings, filters, out-of-order and
late rows, random batches -- must give the same rows in the same order, and the same counters, on
every state backend. What the two steps cannot compute is refused when the plan is built.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import SCHEMA, source

import darwin as dw
from darwin import col
from darwin.api import Table
from darwin.config import STATE_BACKENDS
from darwin.errors import UnsupportedError
from darwin.plan import nodes as pn
from darwin.plan.rules import optimize
from darwin.testing import assert_engines_agree, assert_table_equal

WINDOWS = {"tumble": dw.Tumble("1s", on="ts"), "slide": dw.Slide("2s", every="500ms", on="ts"),
           "slide3": dw.Slide("1500ms", every="500ms", on="ts")}
# the distinct value: columns of every type (a group key of step 1 as it is), an expression (a column
# of its own before the window), a group key itself
VALUES = {"int": col("v"), "string": col("s"), "float": col("f"), "bool": col("b"), "expression": col("v") % 3,
          "key": col("k"), "time": col("ts")}
FILTERS = {"none": None, "bool": col("b"), "compare": col("f") > 0, "string": col("s") != "x"}
OTHERS = {"none": {}, "count": {"n": dw.count()}, "exact": {"nv": dw.count("v"), "sv": dw.sum("v"),
                                                            "hi": dw.max("v"), "first": dw.min("ts")},
          "floats": {"lo": dw.min("f"), "fhi": dw.max("f", filter=col("b"))}}  # NaN, -0.0: a total order


@st.composite
def small_streams(draw):
    """Few distinct values, so they repeat within windows; NULLs everywhere but the time's jitter."""
    n = draw(st.integers(0, 70))
    jitter = draw(st.integers(0, 3000))
    maybe = lambda s: st.one_of(st.none(), s)  # noqa: E731
    ts = [None if draw(st.integers(0, 20)) == 0 else max(0, i * 200 + draw(st.integers(-jitter, jitter)))
          for i in range(n)]
    cols = {
        "ts": ts,
        "k": [draw(maybe(st.integers(0, 2))) for _ in range(n)],
        "v": [draw(maybe(st.integers(-3, 3))) for _ in range(n)],
        "f": [draw(maybe(st.sampled_from([0.0, -0.0, float("nan"), 1.5, -2.0]))) for _ in range(n)],
        "s": [draw(maybe(st.sampled_from(["x", "y", ""]))) for _ in range(n)],
        "b": [draw(maybe(st.booleans())) for _ in range(n)],
    }
    table = pa.table(cols, schema=SCHEMA)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return table, cuts, draw(st.sampled_from([0, 500, 2000])), draw(st.integers(1, 40))


def distinct_query(t: dw.Table, window: str, value: str, keys: tuple[str, ...], filters: tuple[str, ...],
                   others: str) -> dw.Table:
    aggs = {"d": dw.count_distinct(VALUES[value])}
    for i, name in enumerate(filters):
        aggs[f"d{i}"] = dw.count_distinct(VALUES[value], filter=FILTERS[name])
    return t.window(WINDOWS[window]).group_by(*keys).agg(**aggs, **OTHERS[others])


def _config(backend: str, tmp_path, **changes) -> dw.Config:
    extra = {"state_delta_limit": 3} if backend == "rocksdb" else {}  # rocksdb merges all the time
    return dw.Config(state=backend, state_path=str(tmp_path / "state"), **extra).replace(**changes)


@pytest.mark.parametrize("backend", STATE_BACKENDS)
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=small_streams(), window=st.sampled_from(sorted(WINDOWS)), value=st.sampled_from(sorted(VALUES)),
       keys=st.sampled_from([(), ("k",), ("s", "b"), ("f",)]),
       filters=st.lists(st.sampled_from(sorted(FILTERS)), max_size=2), others=st.sampled_from(sorted(OTHERS)))
def test_compiled_two_steps_agree_with_the_interpreters_sets(backend, tmp_path, data, window, value, keys, filters,
                                                             others):
    table, cuts, delay, batch_size = data
    q = distinct_query(source(table, cuts, delay), window, value, keys, tuple(filters), others)
    assert_engines_agree(q, _config(backend, tmp_path, batch_size=batch_size))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=small_streams(), window=st.sampled_from(sorted(WINDOWS)), value=st.sampled_from(sorted(VALUES)),
       keys=st.sampled_from([(), ("k",), ("s", "b")]), filters=st.lists(st.sampled_from(sorted(FILTERS)), max_size=2))
def test_the_two_steps_are_the_same_rows_on_the_interpreter(data, window, value, keys, filters):
    """The rewrite itself, run by the reference interpreter: its two steps give what its sets give."""
    table, cuts, delay, batch_size = data
    q = distinct_query(source(table, cuts, delay), window, value, keys, tuple(filters), "exact")
    split = Table(optimize(q.plan))
    assert any(isinstance(n, pn.Aggregate) and n.second_step for n in pn.walk(split.plan))
    config = dw.Config(mode="interpreted", batch_size=batch_size)
    native, two = q.execute(config), split.execute(config)
    assert_table_equal(two.table, native.table, rel_tol=0.0, check_nullability=True)
    for key in ("late_rows", "windows_fired", "input_rows"):
        assert two.metrics[key] == native.metrics[key], key


def _expected(rows: list[dict], size: int, slide: int, key: str, value: str, keep=lambda r: True) -> list[tuple]:
    """(window start ms, key, distinct values) by plain Python, windows in order, keys first-seen."""
    groups: dict[tuple, set] = {}
    for r in rows:
        last = r["ts"] - r["ts"] % slide
        for start in range(last - size + slide, last + 1, slide):
            seen = groups.setdefault((start, r[key]), set())
            if r[value] is not None and keep(r):
                seen.add(r[value])
    return [(start, k, len(seen)) for (start, k), seen in sorted(groups.items(), key=lambda g: g[0][0])]


def _ms(table: pa.Table) -> list[dict]:
    """Rows with every timestamp as int64 milliseconds."""
    return table.cast(pa.schema([pa.field(f.name, pa.int64() if pa.types.is_timestamp(f.type) else f.type)
                                 for f in table.schema])).to_pylist()


ROWS = pa.table({"ts": pa.array([0, 100, 300, 900, 1200, 1300, 1700, 2500, 2600], pa.timestamp("ms")),
                 "k": [1, 2, 1, 1, 2, 1, 2, 1, 1], "v": [7, 7, 8, 7, None, 9, 9, 9, 9],
                 "p": [True, True, False, None, True, True, False, True, True]})


@pytest.mark.parametrize("window, size, slide", [(dw.Tumble("1s", on="ts"), 1000, 1000),
                                                 (dw.Slide("2s", every="1s", on="ts"), 2000, 1000)])
def test_distinct_values_per_window_and_key(window, size, slide):
    t = dw.from_arrow(ROWS, time="ts")
    q = t.window(window).group_by("k").agg(d=dw.count_distinct("v"), dp=dw.count_distinct("v", filter=col("p")),
                                            n=dw.count())
    out = _ms(assert_engines_agree(q).table)
    rows = _ms(ROWS)
    assert [(r["window_start"], r["k"], r["d"]) for r in out] == _expected(rows, size, slide, "k", "v")
    assert [(r["window_start"], r["k"], r["dp"]) for r in out] == \
        _expected(rows, size, slide, "k", "v", lambda r: r["p"] is True)
    assert [f.nullable for f in q.plan.schema.fields][-3:] == [False, False, False]


def test_explain_shows_the_two_steps():
    t = dw.from_arrow(ROWS, time="ts")
    text = t.window(dw.Slide("2s", every="1s", on="ts")).group_by("k").agg(
        d=dw.count_distinct("v", filter=col("p")), n=dw.count()).explain()
    optimized = text.split("== optimized plan ==")[1].split("== operator graph ==")[0]
    assert "Aggregate keys=[k, v] aggs=[__darwin_seen0=count(col('v')) filter (where col('p')), " \
           "__darwin_part1=count()]" in optimized
    assert "WindowAssign tumble(1000ms on __darwin_end)" in optimized
    assert "Aggregate keys=[k] aggs=[d=count(col('v')) filter (where (col('__darwin_seen0') > 0)), " \
           "n=sum(col('__darwin_part1'))] (count_distinct's second step)" in optimized
    assert "Project window_start=(col('window_end') - 2000), window_end, k, d, n" in optimized
    graph = text.split("== operator graph ==")[1]
    assert "fired windows of pipeline 0" in graph and "second-step" in graph


def test_late_rows_are_counted_and_kept_as_for_any_window():
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 2500, 100, 3100], pa.timestamp("ms")), "k": [1, 1, 1, 2],
                                "v": [1, 2, 3, 4]}), time="ts", max_delay=0)
    q = t.window(dw.Tumble("1s", on="ts"), late_output=True).group_by("k").agg(d=dw.count_distinct("v"))
    result = assert_engines_agree(q, dw.Config(batch_size=1))
    assert result.metrics["late_rows"] == 1 and result.late.column("v").to_pylist() == [3]
    assert [(r["k"], r["d"]) for r in result.table.to_pylist()] == [(1, 1), (1, 1), (2, 1)]


def test_sql_count_distinct_in_tumble_and_hop_with_filter():
    bids = dw.from_arrow(pa.table({
        "ts": pa.array([0, 1_000, 2_000, 11_000, 12_000, 13_000, 25_000], pa.timestamp("ms")),
        "auction": [1, 1, 2, 1, 1, 2, 2], "bidder": [7, 8, 7, 7, 7, None, 9], "price": [10, 30, 20, 5, 40, 15, 50],
    }), time="ts", name="bids")
    tumble = dw.sql("SELECT window_start, auction, COUNT(DISTINCT bidder) AS bidders, "
                    "COUNT(DISTINCT bidder) FILTER (WHERE price > 10) AS big, count(*) AS n "
                    "FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
                    "GROUP BY auction, window_start, window_end", tables={"bids": bids})
    rows = assert_engines_agree(tumble).table
    assert [(r["window_start"] // 1000, r["auction"], r["bidders"], r["big"], r["n"]) for r in _ms(rows)] == [
        (0, 1, 2, 1, 2), (0, 2, 1, 1, 1), (10, 1, 1, 1, 2), (10, 2, 0, 0, 1), (20, 2, 1, 1, 1)]
    hop = dw.sql("SELECT window_end, COUNT(DISTINCT bidder) AS bidders FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), "
                 "INTERVAL '10' SECOND, INTERVAL '20' SECOND)) GROUP BY window_start, window_end",
                 tables={"bids": bids})
    rows = _ms(assert_engines_agree(hop).table)
    assert [(r["window_end"] // 1000, r["bidders"]) for r in rows] == [(10, 2), (20, 2), (30, 2), (40, 1)]
    group_window = dw.sql("SELECT TUMBLE_END(ts, INTERVAL '10' SECOND) AS e, COUNT(DISTINCT bidder) AS bidders "
                          "FROM bids GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)", tables={"bids": bids})
    rows = _ms(assert_engines_agree(group_window).table)
    assert [(r["e"] // 1000, r["bidders"]) for r in rows] == [(10, 2), (20, 1), (30, 1)]


# -- what is refused, and what is not ------------------------------------------------------------------

def _windowed() -> dw.GroupedTable:
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "k": [1], "v": [2], "w": [3],
                                "x": [0.5]}), time="ts")
    return t.window(dw.Tumble("1s", on="ts")).group_by("k")


def test_aggregates_that_do_not_combine_exactly_are_refused_beside_it():
    g = _windowed()
    with pytest.raises(UnsupportedError, match=r"avg of int64 beside count_distinct \(d=\) in a windowed aggregation "
                                               r"is not supported\. count_distinct in a tumbling or sliding window "
                                               r"is counted in two steps.*join the two on window_start"):
        g.agg(d=dw.count_distinct("v"), a=dw.avg("v"))
    with pytest.raises(UnsupportedError, match="sum of float64 beside count_distinct"):
        g.agg(d=dw.count_distinct("v"), s=dw.sum("x"))
    g.agg(d=dw.count_distinct("v"), s=dw.sum("v"), n=dw.count("x"), hi=dw.max("v"), lo=dw.min("x"))  # exact
    g.agg(a=dw.avg("v"), s=dw.sum("x"))  # and without a distinct count, anything goes


def test_other_distinct_counts_that_two_steps_cannot_make_are_refused():
    g = _windowed()
    with pytest.raises(UnsupportedError, match=r"count_distinct of more than one expression in one windowed "
                                               r"aggregation is not supported yet \(col\('v'\) in d=, col\('w'\)"):
        g.agg(d=dw.count_distinct("v"), e=dw.count_distinct("w"))
    g.agg(d=dw.count_distinct("v"), e=dw.count_distinct("v", filter=col("w") > 1))  # one value, two filters
    with pytest.raises(UnsupportedError, match="count_distinct of the window's bounds"):
        g.agg(d=dw.count_distinct("window_start"))
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "v": [2]}), time="ts")
    kept = t.window(dw.Tumble("1s", on="ts"), late_output=True)
    with pytest.raises(UnsupportedError, match=r"count_distinct of an expression in a window keeping late rows"):
        kept.agg(d=dw.count_distinct(col("v") + 1))
    kept.agg(d=dw.count_distinct("v"))


def test_session_barrier_and_over_windows_still_refuse_it():
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "k": [1], "v": [2]}), time="ts")
    with pytest.raises(UnsupportedError, match="count_distinct in a session window aggregation is not supported "
                                               "yet. It is in a tumbling or sliding window"):
        t.window(dw.Session("1s", on="ts")).group_by("k").agg(d=dw.count_distinct("v"))
    with pytest.raises(UnsupportedError, match="count_distinct in a barrier window aggregation is not supported"):
        t.window(dw.Barrier(when=col("v") > 1)).group_by("k").agg(d=dw.count_distinct("v"))
    with pytest.raises(UnsupportedError, match="count_distinct in an OVER window is not supported"):
        t.with_columns(d=dw.count_distinct("v").over(partition_by="k", order_by="ts", rows=(2, 0)))


def test_the_compiled_translation_refuses_a_plan_the_rule_did_not_split():
    from darwin.graph.translate import translate

    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "v": [2]}), time="ts")
    q = t.window(dw.Tumble("1s", on="ts")).agg(d=dw.count_distinct("v"))
    with pytest.raises(UnsupportedError, match="split_distinct"):
        translate(optimize(q.plan, frozenset({"split_distinct"})), dw.Config())
