"""What an interval or window join passes on downstream: its output watermark is held back by how long
it keeps rows, so a window over its output finds none of its rows late (as Flink holds back an
interval join's watermark). Checked against a plain Python join and windowing, on both engines."""

from __future__ import annotations

import math
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col


def _side(name: str, times: list[int], keys: list[int], delay: int = 0) -> dw.Table:
    table = pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": pa.array(keys, pa.int64()),
                      "v": pa.array(range(len(times)), pa.int64())})
    return dw.from_arrow(table, time="t", max_delay=delay, name=name)


def _counts(result: dw.RunResult) -> list[tuple[int, int, int]]:
    return [(r["window_start"], r["k"], r["n"]) for r in
            result.table.select(["window_start", "k", "n"]).cast(pa.schema(
                [("window_start", pa.int64()), ("k", pa.int64()), ("n", pa.int64())])).to_pylist()]


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@pytest.mark.parametrize("batch_size", [1, 2])
def test_a_window_over_an_interval_join_finds_no_joined_row_late(mode, batch_size):
    """The left row at 0 s stays in the join until the right watermark passes 5 s. Read one row at a
    time, the left side's watermark is 3 s when the right row at 4 s pairs with it: the pair's
    left time, 0 s, was behind the join's watermark (2 s), and the 1 s window over it dropped it as
    late, where two rows a batch kept it (the output depended on batch boundaries)."""
    left = _side("L", [0, 3000], [1, 9])
    right = _side("R", [2000, 4000], [9, 1])
    joined = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t") - 1000, col("t") + 5000))
    result = joined.window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count()).execute(
        dw.Config(mode=mode, batch_size=batch_size))
    assert result.metrics["late_rows"] == 0
    assert _counts(result) == [(0, 1, 1), (3000, 9, 1)]


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_window_over_a_window_join_finds_no_joined_row_late(mode):
    """A window join keeps a 10 s window's rows until it ends on both sides: the row at 0 s pairs
    with the right row at 9.5 s when the join's watermark is 8 s; the 1 s window over the pairs
    found it late."""
    w = dw.Tumble("10s", on="t")
    joined = _side("L", [0, 9000], [1, 9]).window(w).join(_side("R", [8000, 9500], [9, 1]).window(w), on=[("k", "k")])
    result = joined.select("t", "k").window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count()).execute(
        dw.Config(mode=mode, batch_size=1))
    assert result.metrics["late_rows"] == 0
    assert _counts(result) == [(0, 1, 1), (9000, 9, 1)]


def test_a_side_kept_until_another_column_has_no_time_attribute_after_the_join():
    """Auctions stay until the bids' watermark passes their expiry, so an auction's own time has no
    bound after the join (a window over it could find rows late at any age); the bid's time keeps one."""
    from darwin.plan.temporal import time_attributes

    bids = _side("B", [0], [1])
    auctions = dw.from_arrow(pa.table({"t": pa.array([0], pa.timestamp("ms")), "k": [1],
                                       "expires": pa.array([10], pa.timestamp("ms"))}), time="t", name="A")
    joined = bids.join(auctions, on=[("k", "k")], where=col("t").between(col("t_right"), col("expires")))
    assert "interval" in joined.explain()
    assert time_attributes(joined.plan) == {"t"}


@st.composite
def _joined_windows(draw):
    n = draw(st.integers(1, 40))
    low, high = draw(st.sampled_from([(-500, 1000), (0, 0), (-1000, -200), (200, 1500), (0, 3000), (-3000, 0)]))
    sides = []
    for _ in range(2):
        lag = draw(st.sampled_from([0, 1000, -1000, 3000]))
        delay = draw(st.sampled_from([0, 100, 1000]))
        times = sorted(draw(st.lists(st.integers(0, n * 100), min_size=n, max_size=n)))
        times = [t + lag + draw(st.integers(0, delay)) for t in times]  # out of order within the delay
        sides.append((times, draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), delay))
    how = draw(st.sampled_from(["inner", "left", "right"]))
    on = {"left": "t", "right": "t_right"}.get(how) or draw(st.sampled_from(["t", "t_right"]))
    return sides, (low, high), how, on, draw(st.sampled_from([100, 500, 1000])), draw(st.integers(1, 16))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_joined_windows(), mode=st.sampled_from(["compiled", "interpreted"]))
def test_windows_over_interval_joins_count_every_pair(case, mode):
    """No row is late on its own side (each source is out of order within its delay), so every pair
    (and every padded row of an outer side) lands in its window, whatever the batches."""
    ((lt, lk, ld), (rt, rk, rd)), (low, high), how, on, size, batch = case
    joined = _side("L", lt, lk, ld).join(_side("R", rt, rk, rd), on=[("k", "k")], how=how,
                                          where=col("t_right").between(col("t") + low, col("t") + high))
    result = joined.window(dw.Tumble(size, on=on)).group_by("k").agg(n=dw.count()).execute(
        dw.Config(mode=mode, batch_size=batch))
    pairs, matched_left, matched_right = [], set(), set()
    for i in range(len(lt)):
        for j in range(len(rt)):
            if lk[i] == rk[j] and lt[i] + low <= rt[j] <= lt[i] + high:
                pairs.append((lt[i], rt[j], lk[i]))
                matched_left.add(i)
                matched_right.add(j)
    if how == "left":
        pairs += [(lt[i], None, lk[i]) for i in range(len(lt)) if i not in matched_left]
    if how == "right":
        pairs += [(None, rt[j], None) for j in range(len(rt)) if j not in matched_right]
    want: Counter = Counter()
    for left_time, right_time, k in pairs:
        t = left_time if on == "t" else right_time
        want[(math.floor(t / size) * size, k)] += 1
    got: Counter = Counter()
    for start, k, n in _counts(result):
        got[(start, k)] += n
    assert result.metrics["late_rows"] == 0
    assert got == want
