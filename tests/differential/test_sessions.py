"""Session windows: the compiled engine against the reference interpreter (rows, late rows, fired
sessions), merges by a bridging row, and the sessions of all rows against a plain Python split."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_joins import SETTINGS, assert_agree, streams

import darwin as dw
from darwin.errors import DarwinTypeError, PlanError


@SETTINGS
@given(left=streams("L"), gap=st.sampled_from(["1s", "3s", "7s"]), batch=st.integers(1, 8))
def test_session_aggregations_agree(left, gap, batch):
    sessions = left.window(dw.Session(gap, on="t"))
    assert_agree(sessions.group_by("k").agg(n=dw.count(), total=dw.sum("v"), low=dw.min("v"), high=dw.max("t"),
                                            mean=dw.avg("v")), batch)
    assert_agree(sessions.agg(n=dw.count()), batch)  # sessions of all rows, without a key
    assert_agree(sessions.group_by("s", "k").agg(n=dw.count("v")), batch)


def _ts(values):
    return pa.array(values, pa.timestamp("ms"))


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_bridging_row_merges_two_sessions(mode):
    """Rows at 0 and 20 s open two sessions of gap 10 s; a row at 10 s meets both (windows that touch
    merge) and they become one; nothing has closed yet because the watermark waits 30 s."""
    t = dw.from_arrow(pa.table({"t": _ts([0, 20_000, 10_000, 45_000]), "k": [1, 1, 1, 1]}), time="t",
                      max_delay="30s")
    out = t.window(dw.Session("10s", on="t")).group_by("k").agg(n=dw.count()).collect(
        dw.Config(mode=mode, batch_size=1))
    assert out.to_pylist() == [
        {"window_start": _ts([0])[0].as_py(), "window_end": _ts([30_000])[0].as_py(), "k": 1, "n": 3},
        {"window_start": _ts([45_000])[0].as_py(), "window_end": _ts([55_000])[0].as_py(), "k": 1, "n": 1}]


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_late_row_is_counted_unless_it_meets_an_open_session(mode):
    """With no delay, after a row at 50 s the watermark is 50 s: a row at 30 s (window ends 40 s)
    meeting nothing is late; a row at 45 s meets the open session [50 s, 60 s] and joins it."""
    t = dw.from_arrow(pa.table({"t": _ts([50_000, 30_000, 45_000]), "k": [1, 1, 1]}), time="t", max_delay=0)
    result = t.window(dw.Session("10s", on="t")).group_by("k").agg(n=dw.count()).execute(
        dw.Config(mode=mode, batch_size=1))
    assert result.metrics["late_rows"] == 1
    assert result.table.column("n").to_pylist() == [2]


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_sessions_of_all_rows_are_runs_no_more_than_gap_apart(left, batch):
    """With a watermark that never makes a row late, sessions are each key's runs of times sorted."""
    table = left.plan.source.table
    t = dw.from_arrow(table, time="t", max_delay="100s")
    out = t.window(dw.Session("2s", on="t")).group_by("k").agg(n=dw.count()).collect(dw.Config(batch_size=batch))
    expected = []
    by_key: dict = {}
    for row in table.to_pylist():
        if row["t"] is not None:
            by_key.setdefault(row["k"], []).append(int(row["t"].timestamp() * 1000))
    for k, times in by_key.items():
        times.sort()
        run = 1
        for a, b in zip(times, times[1:]):
            if b - a > 2000:
                expected.append((k, run))
                run = 0
            run += 1
        expected.append((k, run))
    assert sorted(((r["k"], r["n"]) for r in out.to_pylist()), key=str) == sorted(expected, key=str)


def test_session_windows_only_aggregate():
    t = dw.from_arrow(pa.table({"t": _ts([0]), "k": [1]}), time="t")
    with pytest.raises(PlanError, match="positive"):
        dw.Session(0, on="t")
    with pytest.raises(PlanError, match="late_output"):
        t.window(dw.Session("1s", on="t"), late_output=True)
    with pytest.raises(DarwinTypeError, match="timestamp"):
        t.window(dw.Session("1s", on="k")).agg(n=dw.count())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jitter=st.lists(st.integers(-20, 20), min_size=1, max_size=60), keys=st.lists(st.integers(0, 2), min_size=60,
                                                                                       max_size=60),
       gap=st.sampled_from([2, 5, 9]), delay=st.sampled_from([0, 4, 10]))
def test_sessions_over_a_source_judge_each_row_by_its_watermark_whatever_the_batches(jitter, keys, gap, delay):
    """A row is judged by the source's watermark just after it, and a session that watermark has
    reached is closed for it (it fires there): which sessions form, which rows are late and the order
    sessions are emitted in are the same at every batch size, on both engines (with the watermark
    before the batch, a session the batch's own rows had closed still took a later row of the batch)."""
    n = len(jitter)
    t = dw.from_arrow(pa.table({"k": keys[:n], "v": list(range(n)),
                                "ts": _ts([3 * i + j for i, j in enumerate(jitter)])}), time="ts", max_delay=delay)
    q = t.window(dw.Session(gap, on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v"))
    runs = [q.execute(dw.Config(batch_size=b, mode=mode)) for b in (1, 2, 5, 1000)
            for mode in ("compiled", "interpreted")]
    assert all(r.table.to_pylist() == runs[0].table.to_pylist() for r in runs)
    assert len({r.metrics["late_rows"] for r in runs}) == 1
