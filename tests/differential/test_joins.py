"""Joins and unions: the compiled engine against the reference interpreter, on random streams.

Out-of-order and late rows, NULL keys, duplicate keys, empty sides and random batch boundaries;
every join kind, regular, interval and window joins, lookup joins and unions; outer joins compare
their whole changelog (retractions included), in order.
"""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal

HOW = ("inner", "left", "right", "full")
STATES = ("memory", "mmap", "rocksdb")
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def streams(draw, name: str, time: str = "t") -> dw.Table:
    n = draw(st.integers(0, 30))
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 20_000), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    return stream(name, keys, times, values, [f"{name}{v % 3}" for v in values],
                  draw(st.sampled_from([0, 500, 5000])), time=time)


@st.composite
def keyed_streams(draw, name: str) -> dw.Table:
    """A join side whose key ``k`` (NULLs allowed) no two rows share, declared its primary key."""
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 8)), max_size=12).filter(
        lambda ks: len([k for k in ks if k is not None]) == len({k for k in ks if k is not None})))
    n = len(keys)
    times = draw(st.lists(st.integers(0, 20_000), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    return stream(name, keys, times, values, [f"{name}{v % 3}" for v in values],
                  draw(st.sampled_from([0, 500, 5000])), primary_key="k")


def stream(name: str, keys: list, times: list, values: list, labels: list, max_delay: int,
           primary_key: str | None = None, time: str = "t") -> dw.Table:
    """A join side: key ``k`` (NULLs allowed), event time ``t`` (or ``time``), value ``v`` and label ``s``."""
    table = pa.table({"k": pa.array(keys, pa.int64()), time: pa.array(times, pa.timestamp("ms")),
                      "v": pa.array(values, pa.int64()), "s": pa.array(labels, pa.string())})
    return dw.from_arrow(table, time=time, max_delay=max_delay, name=name, primary_key=primary_key)


def assert_agree(query: dw.Table, batch_size: int, state: str = "memory") -> None:
    """Compiled on ``state`` (a small rocksdb cache, so blocks of rows leave it) against the interpreter."""
    with tempfile.TemporaryDirectory() as directory:
        config = dw.Config(batch_size=batch_size, state=state, state_path=None if state == "memory" else directory,
                           state_delta_limit=1)
        compiled = query.execute(config.replace(mode="compiled"))
    reference = query.execute(dw.Config(batch_size=batch_size, mode="interpreted"))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    for key in ("late_rows", "null_time_rows", "input_rows", "windows_fired"):
        assert compiled.metrics[key] == reference.metrics[key], key


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_regular_joins_agree(left, right, how, batch, state):
    assert_agree(left.join(right, on=[("k", "k")], how=how), batch, state)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_joins_with_a_condition_agree(left, right, how, batch, state):
    q = left.join(right, on=[("k", "k")], how=how, where=col("v") < col("v_right") + 10)
    assert_agree(q, batch, state)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_interval_joins_agree(left, right, how, batch, state):
    q = left.join(right, on=[("k", "k")], how=how,
                  where=col("t_right").between(col("t") - 1000, col("t") + 2000))
    assert "interval" in q.explain()
    assert_agree(q, batch, state)


def window_maxima_join(left: dw.Table, right: dw.Table, how: str = "inner") -> dw.Table:
    """Nexmark q7's shape: rows at the highest key of the other side's 1 s window that ends within 1 s after them."""
    maxima = right.window(dw.Tumble("1s", on="t")).agg(top=dw.max("k")).select("top", window_time=col("window_end"))
    return left.join(maxima, on=[("k", "top")], how=how,
                     where=col("t").between(col("window_time") - 1000, col("window_time")))


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES), scans=st.sampled_from([0, 1, 8]), spilling=st.sampled_from([1, 5, 1 << 18]),
       maxima=st.booleans())
def test_interval_joins_with_rows_pending_or_indexed_agree(left, right, how, batch, state, scans, spilling, maxima):
    """An inner side's rows wait unindexed (darwin.state.pending_rows) until probes have scanned
    ``scans`` times as many rows, or past a disk backend's limit (``spilling``), or a checkpoint:
    the same changelog as the interpreter's however often that happens."""
    from unittest import mock

    from darwin.state import join_rows, mmap, rocksdb

    q = window_maxima_join(left, right, how) if maxima else \
        left.join(right, on=[("k", "k")], how=how, where=col("t_right").between(col("t") - 1000, col("t") + 2000))
    with mock.patch.object(join_rows, "SCANS_PER_INDEX", scans), \
            mock.patch.object(mmap, "SPILLING_PENDING_ROWS", spilling), \
            mock.patch.object(rocksdb, "SPILLING_PENDING_ROWS", spilling):
        assert_agree(q, batch, state)


def test_a_side_probed_rarely_keeps_its_rows_unindexed():
    """q7's shape over 60,000 rows in one 10 s window: its maximum probes the rows once, at the end,
    scanning them; none of them is copied into the side's arrays or indexed, and the answer is the
    interpreter's."""
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize
    from darwin.runtime.compiled import CompiledEngine
    from darwin.runtime.progress import Metrics

    n = 60_000
    table = pa.table({"k": pa.array([(i * 7919) % 50_000 for i in range(n)], pa.int64()),
                      "t": pa.array([i // 10 for i in range(n)], pa.timestamp("ms"))})
    bids = dw.from_arrow(table, time="t", name="bids")
    maxima = bids.window(dw.Tumble("10s", on="t")).agg(top=dw.max("k")).select("top", window_time=col("window_end"))
    q = bids.join(maxima, on=[("k", "top")], where=col("t").between(col("window_time") - 10_000, col("window_time")))
    config = dw.Config(batch_size=4096)
    engine = CompiledEngine(translate(optimize(q.plan), config), config, Metrics(), job="pending")
    most = indexed = 0
    for _ in engine.outputs():
        bids_side = engine.joins[0].sides[0]
        most, indexed = max(most, bids_side.count), max(indexed, bids_side.stored)
    engine.close()
    assert most == n and indexed == 0
    assert_table_equal(q.collect(config), q.collect(config.replace(mode="interpreted")))


@SETTINGS
@given(unique=keyed_streams("U"), other=streams("R"), unique_left=st.booleans(), how=st.sampled_from(HOW),
       kind=st.sampled_from(["regular", "condition", "interval"]), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_joins_with_a_side_unique_on_its_key_agree(unique, other, unique_left, how, kind, batch, state):
    """A row of the other side that found its match on the unique side is not kept (no second match
    can come): the same results, retractions included, as the interpreter keeping every row."""
    left, right = (unique, other) if unique_left else (other, unique)
    where = {"regular": None, "condition": col("v") < col("v_right") + 10,
             "interval": col("t_right").between(col("t") - 1000, col("t") + 2000)}[kind]
    q = left.join(right, on=[("k", "k")], how=how, where=where)
    assert f"{'left' if unique_left else 'right'} unique on the keys" in q.explain()
    assert_agree(q, batch, state)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_window_joins_agree(left, right, how, batch, state):
    q = left.window(dw.Tumble("5s", on="t")).join(right.window(dw.Tumble("5s", on="t")), on=[("k", "k")], how=how)
    assert "window join" in q.explain()
    assert_agree(q, batch, state)


WINDOWS_ALIKE = {"tumbling": lambda on: dw.Tumble("5s", on=on), "sliding": lambda on: dw.Slide("4s", "2s", on=on)}


@SETTINGS
@given(left=streams("L"), right=streams("R", time="t2"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES), kind=st.sampled_from(list(WINDOWS_ALIKE)))
def test_window_joins_over_time_columns_of_other_names_agree(left, right, how, batch, state, kind):
    """As in Flink, the two sides' windows must be alike (kind, size, slide), not their time columns."""
    window = WINDOWS_ALIKE[kind]
    q = left.window(window("t")).join(right.window(window("t2")), on=[("k", "k")], how=how)
    assert "window join" in q.explain()
    assert_agree(q, batch, state)


def test_a_window_join_over_time_columns_of_other_names_in_sql():
    """Flink's window join of two TUMBLE TVFs, each over its own time column, is a window join
    (rows freed as their window fires), with the rows of the same windows paired."""
    left = stream("L", [1, 1, 2], [0, 1500, 300], [1, 2, 3], ["a", "b", "c"], 0)
    right = stream("R", [1, 2, 1], [100, 400, 1200], [4, 5, 6], ["d", "e", "f"], 0, time="t2")
    q = dw.sql("SELECT L.v, R.v AS w FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(t), INTERVAL '1' SECOND)) L "
               "JOIN TABLE(TUMBLE(TABLE r, DESCRIPTOR(t2), INTERVAL '1' SECOND)) R "
               "ON L.k = R.k AND L.window_start = R.window_start AND L.window_end = R.window_end",
               tables={"l": left, "r": right})
    assert "window join" in q.explain()
    for mode in ("compiled", "interpreted"):
        rows = q.collect(dw.Config(mode=mode)).to_pylist()
        assert sorted(tuple(r.values()) for r in rows) == [(1, 4), (2, 6), (3, 5)]


def test_a_window_join_refuses_windows_of_another_size():
    left, right = stream("L", [], [], [], [], 0), stream("R", [], [], [], [], 0, time="t2")
    with pytest.raises(dw.errors.PlanError, match="same size and slide"):
        left.window(dw.Tumble("5s", on="t")).join(right.window(dw.Slide("5s", "1s", on="t2")), on=[("k", "k")])


@SETTINGS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_aggregation_over_a_join_agrees(left, right, batch, state):
    joined = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t"), col("t") + 3000))
    q = joined.window(dw.Tumble("5s", on="t")).group_by("k").agg(n=dw.count(), total=dw.sum("v_right"))
    assert_agree(q, batch, state)


@SETTINGS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8), state=st.sampled_from(STATES))
def test_strings_moved_through_a_join_then_compared_agree(left, right, batch, state):
    """Strings a join only carries are appended to the pool uninterned; grouped above it, they are interned."""
    joined = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t"), col("t") + 3000))
    q = joined.select("t", "s", r=col("s_right")).window(dw.Tumble("5s", on="t")).group_by("s", "r").agg(
        n=dw.count())
    assert_agree(q, batch, state)
    assert_agree(joined.select("t", "s", "s_right"), batch, state)
    # a function above the join (looked up per pool code, never for the appended ones)
    assert_agree(joined.select("t", u=col("s").str.upper(), r="s_right"), batch, state)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_aggregation_over_an_aggregation_agrees(left, batch):
    first = left.window(dw.Tumble("2s", on="t")).group_by("k").agg(n=dw.count())
    q = first.select(end=col("window_end"), n=col("n")).window(dw.Tumble("10s", on="end")).agg(
        most=dw.max("n"), groups=dw.count())
    assert_agree(q, batch)


@SETTINGS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8))
def test_unions_agree(left, right, batch):
    q = left.union(right).window(dw.Tumble("5s", on="t")).group_by("s").agg(n=dw.count())
    assert_agree(q, batch)
    assert_agree(left.union(right).filter(col("v") > 0), batch)


@SETTINGS
@given(left=streams("L"), how=st.sampled_from(HOW), batch=st.integers(1, 8), state=st.sampled_from(STATES),
       shape=st.sampled_from(["filtered right", "filtered left", "updating right", "union"]))
def test_one_source_read_by_both_sides_agrees_in_order(left, how, batch, state, shape):
    """A source both inputs read: each batch reaches the join's left input, then its right one, on both
    engines (the interpreter built the right side's stateless operators first, so their rows came first)."""
    other = left.filter(col("v") > 0).select(k=col("v") % 3, w="v")
    if shape == "filtered right":
        q = left.join(other, on=[("k", "k")], how=how, where=col("v") > col("w") - 40)
    elif shape == "filtered left":
        q = other.join(left, on=[("k", "k")], how=how)
    elif shape == "updating right":
        q = left.join(left.group_by("k").agg(n=dw.count()), on=[("k", "k")], how=how)
    else:
        q = left.select("k", "v").union(other.select("k", v="w"), left.select("k", "v"))
    assert_agree(q, batch, state)


@SETTINGS
@given(left=streams("L"), how=st.sampled_from(("inner", "left")), batch=st.integers(1, 8),
       table=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 4)), st.text("ab", max_size=2)), max_size=8))
def test_lookup_joins_agree(left, how, batch, table):
    side = dw.from_arrow(pa.table({"key": pa.array([k for k, _ in table], pa.int64()),
                                   "label": pa.array([v for _, v in table], pa.string())}), name="side")
    q = left.join(side.lookup(), on=[(col("k") % 3, "key")], how=how)
    assert_agree(q, batch)
    agg = q.window(dw.Tumble("5s", on="t")).group_by("label").agg(n=dw.count())
    assert_agree(agg, batch)


@st.composite
def coarse_streams(draw, name: str) -> dw.Table:
    """Times on a 1 s grid and no delay: rows often arrive exactly at the other side's watermark."""
    n = draw(st.integers(1, 12))
    keys = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 6).map(lambda t: t * 1000), min_size=n, max_size=n))
    return stream(name, keys, times, list(range(n)), ["x"] * n, 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(left=coarse_streams("L"), right=coarse_streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 3))
def test_interval_join_rows_at_the_other_sides_watermark_agree(left, right, how, batch):
    """A row whose bound the other side's watermark has passed is not kept (it could match no row
    that is not late); one whose bound equals it still matches a row arriving at the watermark."""
    q = left.join(right, on=[("k", "k")], how=how, where=col("t_right").between(col("t"), col("t") + 1000))
    assert_agree(q, batch)


def test_null_keys_never_match_and_outer_joins_retract():
    left = dw.from_arrow(pa.table({"k": pa.array([1, None], pa.int64()), "t": pa.array([0, 1], pa.timestamp("ms"))}),
                         time="t", name="L")
    right = dw.from_arrow(pa.table({"k": pa.array([None, 1], pa.int64()), "t": pa.array([5, 6], pa.timestamp("ms"))}),
                          time="t", name="R")
    q = left.join(right, on=[("k", "k")], how="left")
    log = q.changelog(dw.Config(batch_size=1))
    assert log.column("op").to_pylist() == ["+I", "+I", "-D", "+I"]
    final = q.collect(dw.Config(batch_size=1))
    assert sorted(final.column("k_right").to_pylist(), key=str) == [1, None]
    assert left.join(right, on=[("k", "k")]).collect().num_rows == 1


def test_interval_join_state_stays_bounded_on_a_long_stream():
    n = 200_000
    times = pa.array(range(0, n * 10, 10), pa.timestamp("ms"))
    left = dw.from_arrow(pa.table({"k": pa.array([i % 100 for i in range(n)], pa.int64()), "t": times}), time="t",
                         name="L")
    right = dw.from_arrow(pa.table({"k": pa.array([i % 100 for i in range(n)], pa.int64()), "t": times}), time="t",
                          name="R")
    q = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t"), col("t") + 1000))
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize
    from darwin.runtime.compiled import CompiledEngine
    from darwin.runtime.progress import Metrics

    config = dw.Config(batch_size=4096)
    engine = CompiledEngine(translate(optimize(q.plan), config), config, Metrics(), job="bounded")
    most = 0
    rows = 0
    for out in engine.outputs():
        if out.kind == "result":
            rows += out.batch.num_rows
        most = max(most, max(j.sides[0].count + j.sides[1].count for j in engine.joins))
    engine.close()
    assert rows > 0
    assert most < 40_000, most  # ~1 s of each side plus a batch, not 400,000 rows


def _most_rows_kept(q: dw.Table) -> tuple[int, int]:
    """The result's rows, and the most rows the query's joins held at once (both sides)."""
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize
    from darwin.runtime.compiled import CompiledEngine
    from darwin.runtime.progress import Metrics

    config = dw.Config(batch_size=4096)
    engine = CompiledEngine(translate(optimize(q.plan), config), config, Metrics(), job="kept")
    most = rows = 0
    for out in engine.outputs():
        if out.kind == "result":
            rows += out.batch.num_rows
        most = max(most, max(j.sides[0].count + j.sides[1].count for j in engine.joins))
    engine.close()
    return rows, most


def _on_a_grid(name: str, n: int) -> dw.Table:
    """``n`` rows 10 ms apart, keys 0-99 in turn."""
    table = pa.table({"k": pa.array([i % 100 for i in range(n)], pa.int64()),
                      "t": pa.array(range(0, n * 10, 10), pa.timestamp("ms"))})
    return dw.from_arrow(table, time="t", name=name)


TIME = col("t_right")
BOUND_WRITTEN_OTHER_WAYS = {  # each the interval 0 <= t_right - t <= 1000, or a point of it
    "a no-op cast": {"where": TIME.between(col("t"), col("t") + dw.lit(1000).cast("int64"))},
    "a product of constants": {"where": TIME.between(col("t"), col("t") + dw.lit(500) * 2)},
    "the constant first": {"where": TIME.between(col("t"), 1000 + col("t"))},
    "nested sums": {"where": TIME.between(col("t"), (col("t") + 400) + (dw.lit(300) + 300))},
    "a difference of the times": {"where": (TIME - col("t") >= 0) & (TIME - col("t") <= 1000)},
    "either side, strict": {"where": (col("t") - 1 < TIME) & (col("t") + 1001 > TIME)},
    "equal times as a key": {"on": [("k", "k"), ("t", "t")]},
    "equal times in the condition": {"where": col("t") == TIME},
}


@pytest.mark.parametrize("written", BOUND_WRITTEN_OTHER_WAYS)
def test_an_interval_written_any_way_frees_its_rows(written):
    """However the constant or the comparison is written, a condition bounding the times from both
    sides is an interval join: rows leave the state as the watermarks pass, instead of every row
    of both sides being kept for ever."""
    n = 50_000
    args = {"on": [("k", "k")], **BOUND_WRITTEN_OTHER_WAYS[written]}
    q = _on_a_grid("L", n).join(_on_a_grid("R", n), **args)
    assert " interval on " in q.explain()
    rows, most = _most_rows_kept(q)
    assert rows == (n if "equal" in written else 2 * n - 100)  # a key's rows lie 1 s apart
    assert most < 12_000, most  # ~1 s of each side and a batch, not 100,000 rows


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       written=st.sampled_from(list(BOUND_WRITTEN_OTHER_WAYS)))
def test_an_interval_written_other_ways_gives_what_between_gives(left, right, how, batch, written):
    """The same changelog, on both engines, as the interval written the usual way."""
    equal = "equal" in written
    usual = left.join(right, on=[("k", "k")], how=how,
                      where=TIME.between(col("t"), col("t") + (0 if equal else 1000)))
    q = left.join(right, **{"on": [("k", "k")], "how": how, **BOUND_WRITTEN_OTHER_WAYS[written]})
    config = dw.Config(batch_size=batch)
    for mode in ("compiled", "interpreted"):
        assert_table_equal(q.changelog(config.replace(mode=mode)), usual.changelog(config.replace(mode=mode)),
                           check_nullability=True)


def test_a_regular_join_keeps_no_row_that_found_its_match_on_a_unique_side():
    """Orders joined with their customers (declared unique by id), customers first: an order that
    found its customer is not kept, so the state holds the customers, not every order forever."""
    customers = pa.table({"id": pa.array(range(100), pa.int64()), "t": pa.array([0] * 100, pa.timestamp("ms"))})
    n = 50_000
    orders = pa.table({"customer": pa.array([i % 100 for i in range(n)], pa.int64()),
                       "t": pa.array(range(1, n + 1), pa.timestamp("ms"))})
    kept = {}
    for key in (None, "id"):
        q = dw.from_arrow(orders, time="t", name="orders").join(
            dw.from_arrow(customers, time="t", name="customers", primary_key=key), on=[("customer", "id")])
        kept[key] = _most_rows_kept(q)
    assert kept[None][0] == kept["id"][0] == n  # the same result
    assert kept[None][1] >= n  # every order kept
    assert kept["id"][1] <= 100 + 4096, kept  # the customers, and at most a batch of orders before them


def test_a_primary_key_names_distinct_columns_of_the_source():
    table = pa.table({"id": [1, 2], "x": [3, 4]})
    with pytest.raises(dw.errors.PlanError, match="unknown column 'nope' in primary_key of arrow"):
        dw.from_arrow(table, primary_key=["nope"])
    with pytest.raises(dw.errors.PlanError, match="distinct column names"):
        dw.from_arrow(table, primary_key=["id", "id"])
    with pytest.raises(dw.errors.PlanError, match="distinct column names"):
        dw.from_arrow(table, primary_key=[])


@pytest.mark.parametrize("how", HOW)
def test_join_names_clash_with_a_suffix(how):
    a = dw.from_arrow(pa.table({"id": [1], "x": [2]}), name="a")
    b = dw.from_arrow(pa.table({"id": [1], "x": [3]}), name="b")
    assert a.join(b, on=[("id", "id")], how=how, suffix="_b").columns == ["id", "x", "id_b", "x_b"]


def test_a_lookup_join_refuses_float_keys_its_index_cannot_hold():
    side = dw.from_arrow(pa.table({"key": [1.5], "label": ["x"]}), name="side")
    stream = dw.from_arrow(pa.table({"k": [1.5]}), name="stream")
    with pytest.raises(dw.errors.DarwinTypeError, match="lookup join: key .* is float64"):
        stream.join(side.lookup(), on=[("k", "key")])


@pytest.mark.parametrize("state", ["mmap", "rocksdb"])
def test_join_state_on_disk_equals_memory_across_many_blocks(state, tmp_path):
    """Tens of thousands of kept rows: rocksdb's blocks leave its two-block cache and come back, and
    an interval join's freed rows are compacted away, on disk as in memory."""
    n = 30_000
    times = pa.array(range(0, n * 10, 10), pa.timestamp("ms"))

    def side(name: str, modulus: int) -> dw.Table:
        keys = pa.array([(i * 7919) % modulus for i in range(n)], pa.int64())
        labels = pa.array([f"{name}{i % 97}" for i in range(n)], pa.string())
        return dw.from_arrow(pa.table({"k": keys, "t": times, "s": labels}), time="t", max_delay=50, name=name)

    regular = side("L", 10_000).join(side("R", 10_000), on=[("k", "k")], how="full")
    interval = side("L", 100).join(side("R", 100), on=[("k", "k")], how="left",
                                   where=col("t_right").between(col("t") - 1000, col("t") + 1000))
    for q in (regular, interval):
        memory = q.changelog(dw.Config(batch_size=1000))
        on_disk = q.changelog(dw.Config(batch_size=1000, state=state, state_path=str(tmp_path / state),
                                        state_delta_limit=1))
        assert memory.num_rows > n
        assert_table_equal(on_disk, memory, check_nullability=True)


def _ts(values):
    return pa.array(values, pa.timestamp("ms"))


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_window_join_keeps_rows_until_their_window_fires(mode):
    """A row is late for a window join once its window has fired, not once its window_start has passed."""
    left = dw.from_arrow(pa.table({"k": [1, 1, 1], "t": _ts([1000, 6000, 7000])}), time="t", max_delay="0s")
    right = dw.from_arrow(pa.table({"k": [1], "t": _ts([8000])}), time="t", max_delay="0s")
    q = left.window(dw.Tumble("10s", on="t")).join(right.window(dw.Tumble("10s", on="t")), on=[("k", "k")])
    for batch_size in (1, 1024):
        assert q.collect(dw.Config(batch_size=batch_size, mode=mode)).num_rows == 3


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_windowed_aggregations_join_on_their_window_start(mode):
    """Nexmark q8's shape: a window's result arrives when it fires, and is not late for the join."""
    a = dw.from_arrow(pa.table({"k": [1, 2], "t": _ts([1000, 2000])}), time="t", max_delay="0s")
    b = dw.from_arrow(pa.table({"k": [1, 2], "t": _ts([1500, 2500])}), time="t", max_delay="0s")

    def per_window(s: dw.Table) -> dw.Table:
        return s.window(dw.Tumble("10s", on="t")).group_by("k").agg(n=dw.count()).select("k", start=col("window_start"))
    q = per_window(a).join(per_window(b), on=[("k", "k"), ("start", "start")])
    assert sorted(q.collect(dw.Config(mode=mode)).column("k").to_pylist()) == [1, 2]


@pytest.mark.parametrize("state", ["mmap", "rocksdb"])
def test_a_lookup_join_runs_on_persistent_state(state, tmp_path):
    """The lookup table is loaded by a run of its own, which must not claim the job's state_path."""
    stream = dw.from_arrow(pa.table({"k": [1, 2, 3], "t": _ts([1, 2, 3])}), time="t")
    side = dw.from_arrow(pa.table({"key": [1, 2], "v": ["a", "b"]}))
    got = stream.join(side.lookup(), on=[("k", "key")]).collect(dw.Config(state=state, state_path=str(tmp_path)))
    assert got.column("v").to_pylist() == ["a", "b"]


@pytest.mark.parametrize("state", STATES)
def test_a_lookup_join_fanning_out_into_a_windowed_aggregation_has_room(state):
    """One input row becomes 500 rows, each a new group: the hash table grows for all of them
    (it grew for the row's windows only, and the kernel wrote past its end)."""
    n = 4_000
    bids = dw.from_arrow(pa.table({"ts": pa.array([i * 10 for i in range(n)], pa.timestamp("ms")),
                                   "k": [i % 4 for i in range(n)]}), time="ts")
    table = dw.from_arrow(pa.table({"key": [i % 4 for i in range(2_000)], "w": list(range(2_000))}))
    q = bids.join(table.lookup(), on=[("k", "key")]).window(dw.Tumble("1s", on="ts")).group_by("w").agg(
        n=dw.count())
    assert_agree(q, 1_000, state)


FLOAT_KEYS = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.0, 2.5, 3.0, float("nan"), 2.0**53, -1.0]),
                       st.integers(-2, 5).map(float))
INT_KEYS = st.one_of(st.none(), st.integers(-2, 5), st.sampled_from([2**53, 2**53 + 1, -(2**63)]))


@SETTINGS
@given(ints=st.lists(INT_KEYS, max_size=12), floats=st.lists(FLOAT_KEYS, max_size=12), how=st.sampled_from(HOW),
       int_left=st.booleans(), batch=st.integers(1, 8), state=st.sampled_from(STATES))
def test_an_integer_key_joins_a_float_key_as_a_double(ints, floats, how, int_left, batch, state):
    """BIGINT = DOUBLE joins as Flink compares them, as DOUBLE: the integer side is widened (2**53 + 1
    matches 2**53.0; NaN matches no integer; 0 matches -0.0). Refused before ('cast one side so both
    have the same type'). Compiled on every backend against the interpreter and a plain-Python join;
    the key columns keep their types."""
    i = dw.from_arrow(pa.table({"t": pa.array([0] * len(ints), pa.timestamp("ms")), "k": pa.array(ints, pa.int64()),
                                "a": pa.array(range(len(ints)), pa.int64())}), time="t", name="I")
    f = dw.from_arrow(pa.table({"t": pa.array([0] * len(floats), pa.timestamp("ms")),
                                "f": pa.array(floats, pa.float64()), "b": pa.array(range(len(floats)), pa.int64())}),
                      time="t", name="F")
    q = i.join(f, on=[("k", "f")], how=how) if int_left else f.join(i, on=[("f", "k")], how=how)
    assert_agree(q, batch, state)
    table = q.collect()
    assert (table.schema.field("k").type, table.schema.field("f").type) == (pa.int64(), pa.float64())
    pairs = {(x, y) for x, k in enumerate(ints) for y, v in enumerate(floats)
             if k is not None and v is not None and float(k) == v}
    got = {(r["a"], r["b"]) for r in table.to_pylist()}
    assert {(a, b) for a, b in got if a is not None and b is not None} == pairs
    keeps_ints = how == "full" or how == ("left" if int_left else "right")
    keeps_floats = how == "full" or how == ("right" if int_left else "left")
    assert {a for a, b in got if b is None} == \
        ({x for x in range(len(ints)) if all(p[0] != x for p in pairs)} if keeps_ints else set())
    assert {b for a, b in got if a is None} == \
        ({y for y in range(len(floats)) if all(p[1] != y for p in pairs)} if keeps_floats else set())


def test_an_integer_key_joins_a_float_key_in_a_window_join_and_in_sql():
    i = dw.from_arrow(pa.table({"t": pa.array([0, 1, 2], pa.timestamp("ms")), "k": [1, 2, 3]}), time="t", name="i")
    f = dw.from_arrow(pa.table({"t": pa.array([0, 1, 2], pa.timestamp("ms")), "f": [1.0, 2.5, 3.0]}), time="t",
                      name="f")
    windowed = i.window(dw.Tumble("1s", on="t")).join(f.window(dw.Tumble("1s", on="t")), on=[("k", "f")])
    for mode in ("compiled", "interpreted"):
        config = dw.Config(mode=mode)
        assert sorted((r["k"], r["f"]) for r in windowed.collect(config).to_pylist()) == [(1, 1.0), (3, 3.0)]
        for condition in ("i.k = f.f", "f.f = i.k"):
            sql = dw.sql(f"SELECT i.k, f.f FROM i JOIN f ON {condition}", tables={"i": i, "f": f})
            assert sorted(tuple(r.values()) for r in sql.collect(config).to_pylist()) == [(1, 1.0), (3, 3.0)]


# -- null-safe keys: a NULL key meets a NULL key of the other side (Flink's IS NOT DISTINCT FROM) --------

NULL_SAFE_JOINS = {
    "regular": lambda a, b, how: a.join(b, on=[dw.null_safe("k")], how=how),
    "beside a plain key": lambda a, b, how: a.join(b, on=[(col("v") % 2, col("v") % 2), dw.null_safe("k")],
                                                    how=how),
    "condition": lambda a, b, how: a.join(b, on=[dw.null_safe("k")], how=how, where=col("v") < col("v_right") + 10),
    "interval": lambda a, b, how: a.join(b, on=[dw.null_safe("k")], how=how,
                                         where=col("t_right").between(col("t") - 1000, col("t") + 2000)),
    "tumbling window": lambda a, b, how: a.window(dw.Tumble("5s", on="t")).join(
        b.window(dw.Tumble("5s", on="t")), on=[dw.null_safe("k")], how=how),
    "sliding window": lambda a, b, how: a.window(dw.Slide("4s", "2s", on="t")).join(
        b.window(dw.Slide("4s", "2s", on="t")), on=[dw.null_safe("k")], how=how),
    "string": lambda a, b, how: a.join(b, on=[dw.null_safe(dw.when(col("k") > 2, "s").end(),
                                                           dw.when(col("k") > 2, col("s")).end())], how=how),
    "float": lambda a, b, how: a.join(b, on=[dw.null_safe(col("k").cast("float64") / 2, "k")], how=how),
}


@pytest.mark.parametrize("kind", list(NULL_SAFE_JOINS))
@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_null_safe_keys_agree(left, right, how, batch, state, kind):
    """NULL keys on both sides meet each other (and nothing else) in every join kind, on every backend,
    retractions of outer joins included, compiled as the interpreter."""
    q = NULL_SAFE_JOINS[kind](left, right, how)
    assert "<=>" in q.explain()
    if kind in ("interval", "tumbling window", "sliding window"):
        assert "regular" not in q.explain()
    assert_agree(q, batch, state)


KEYS = st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=10)


@SETTINGS
@given(lefts=KEYS, rights=KEYS, how=st.sampled_from(HOW), batch=st.integers(1, 8))
def test_null_safe_keys_pair_the_rows_plain_python_pairs(lefts, rights, how, batch):
    """Against a join written in plain Python where None == None: every pair of rows whose keys are
    equal or both NULL, and the rows of an outer side that found none."""
    a = dw.from_arrow(pa.table({"k": pa.array(lefts, pa.int64()), "a": pa.array(range(len(lefts)), pa.int64())}),
                      name="A")
    b = dw.from_arrow(pa.table({"k": pa.array(rights, pa.int64()), "b": pa.array(range(len(rights)), pa.int64())}),
                      name="B")
    pairs = {(x, y) for x, k in enumerate(lefts) for y, j in enumerate(rights) if k == j}
    expected = set(pairs)
    if how in ("left", "full"):
        expected |= {(x, None) for x in range(len(lefts)) if all(p[0] != x for p in pairs)}
    if how in ("right", "full"):
        expected |= {(None, y) for y in range(len(rights)) if all(p[1] != y for p in pairs)}
    q = a.join(b, on=[dw.null_safe("k")], how=how)
    for mode in ("compiled", "interpreted"):
        got = q.collect(dw.Config(batch_size=batch, mode=mode)).to_pylist()
        assert sorted(((r["a"], r["b"]) for r in got), key=str) == sorted(expected, key=str)


def test_a_null_safe_key_matches_null_with_null_and_outer_joins_retract():
    left = dw.from_arrow(pa.table({"k": pa.array([1, None], pa.int64()), "t": pa.array([0, 1], pa.timestamp("ms"))}),
                         time="t", name="L")
    right = dw.from_arrow(pa.table({"k": pa.array([None, 1], pa.int64()), "t": pa.array([5, 6], pa.timestamp("ms"))}),
                          time="t", name="R")
    q = left.join(right, on=[dw.null_safe("k")], how="left")
    for mode in ("compiled", "interpreted"):
        log = q.changelog(dw.Config(batch_size=1, mode=mode))
        # the right side's NULL comes before the left's (the schedule): the left NULL meets it at once
        assert [(r["op"], r["k"], r["k_right"], r["t_right"] is None) for r in log.to_pylist()] == [
            ("+I", 1, None, True), ("+I", None, None, False), ("-D", 1, None, True), ("+I", 1, 1, False)]
        final = q.collect(dw.Config(batch_size=1, mode=mode))
        assert sorted(((r["k"], r["k_right"]) for r in final.to_pylist()), key=str) == [(1, 1), (None, None)]


@SETTINGS
@given(left=streams("L"), how=st.sampled_from(("inner", "left")), batch=st.integers(1, 8),
       table=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 4)), st.text("ab", max_size=2)), max_size=8))
def test_null_safe_lookup_joins_agree(left, how, batch, table):
    side = dw.from_arrow(pa.table({"key": pa.array([k for k, _ in table], pa.int64()),
                                   "label": pa.array([v for _, v in table], pa.string())}), name="side")
    q = left.join(side.lookup(), on=[dw.null_safe(col("k") % 3, "key")], how=how)
    assert_agree(q, batch)
    matched = {(r["v"], r["label"]) for r in q.collect().to_pylist() if r["k"] is None and r["label"] is not None}
    assert {lb for _, lb in matched} <= {lb for k, lb in table if k is None}


def test_a_null_safe_key_is_given_in_on():
    a = dw.from_arrow(pa.table({"k": [1]}), name="a")
    with pytest.raises(dw.errors.PlanError, match="null-safe key pair in on="):
        a.join(a, left_on=[dw.null_safe("k")], right_on=["k"])
