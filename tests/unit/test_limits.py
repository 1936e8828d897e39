"""Window and watermark parameters are bounded by what the engine can hold, and refused early."""

import math
from datetime import timedelta

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.durations import MAX_DURATION_MS, MAX_EVENT_TIME_MS
from darwin.errors import ConfigError, PlanError, SourceError
from darwin.runtime import pipeline
from darwin.testing import assert_engines_agree


def table(ts, k=None):
    k = k if k is not None else list(range(len(ts)))
    return pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": k})


@pytest.mark.parametrize("size, message", [
    (float("nan"), "finite"), (float("inf"), "finite"), (-1, "negative"), (1.5, "whole number"),
    ("1.0005s", "whole number"), (timedelta(microseconds=1500), "whole number"),
    (10**20, "100 years"), ("100000000000000000000d", "100 years"), ("36501d", "100 years"),
])
def test_bad_window_sizes_are_plan_errors(size, message):
    with pytest.raises(PlanError, match=message):
        dw.Tumble(size, on="ts")
    with pytest.raises(PlanError, match=message):
        dw.Slide(size, every="1s", on="ts")


def test_too_many_windows_per_row_is_refused_with_a_hint():
    with pytest.raises(PlanError, match=r"86400000 windows; at most 1000 .* slide of at least 86400ms"):
        dw.Slide("1d", every="1ms", on="ts")
    assert dw.Slide("1d", every="86400ms", on="ts").windows_per_row == 1000


def test_window_built_directly_is_bounded_too():
    with pytest.raises(PlanError, match="integer"):
        dw.Window(1.5, 1.5, "ts")
    with pytest.raises(PlanError, match="100 years"):
        dw.Window(2**62, 2**62, "ts")


@pytest.mark.parametrize("delay, message", [(float("nan"), "finite"), ("1000000000d", "100 years"),
                                            (-5, "negative"), (0.5, "whole number")])
def test_bad_source_delays_are_plan_errors(delay, message):
    with pytest.raises(PlanError, match=f"max_delay: .*{message}"):
        dw.from_arrow(table([0]), time="ts", max_delay=delay)


def test_bad_config_delay_is_a_config_error():
    with pytest.raises(ConfigError, match="max_delay.*100 years"):
        dw.Config(max_delay="1000000000d")
    with pytest.raises(ConfigError, match="finite"):
        dw.Config(max_delay=math.nan)


def test_the_longest_window_and_delay_run_in_both_engines(config):
    t = dw.from_arrow(table([0, 5, 86_400_000 * 36_499, 3]), time="ts", max_delay="36500d")
    q = t.window(dw.Tumble("36500d", on="ts")).agg(n=dw.count())
    r = q.collect(config)
    assert r["n"].to_pylist() == [4]
    assert r["window_end"].cast(pa.int64()).to_pylist() == [86_400_000 * 36_500]
    assert_engines_agree(q)


def test_a_long_delay_over_a_short_slide_uses_the_hash_table_not_a_huge_ring():
    """(delay + size) / slide ring slots for a global aggregation must respect RING_CELLS."""
    t = dw.from_arrow(table([0, 1500, 400, 2500]), time="ts", max_delay="36500d")
    q = t.window(dw.Tumble("1s", on="ts")).agg(n=dw.count())
    assert "window-hash-aggregate" in q.explain()
    assert q.collect()["n"].to_pylist() == [2, 1, 1]


def test_sliding_rows_are_written_in_bounded_chunks(monkeypatch):
    """Output buffers hold rows_per_input rows per input row: a batch runs in chunks when that is large."""
    monkeypatch.setattr(pipeline, "OUT_BUFFER_ROWS", 3000)  # 1000 windows per row: three input rows per chunk
    ts = [0, 7, 86_400, 100_000, 3, 250_000, 9]
    t = dw.from_arrow(table(ts, [1, None, 3, 4, 5, 6, 7]), time="ts", max_delay="1d")
    q = (t.filter(dw.col("k") != 3).window(dw.Slide("1d", every="86400ms", on="ts")).table()
         .select("window_start", "k"))
    result = assert_engines_agree(q, dw.Config(batch_size=7))
    assert result.table.num_rows == 5 * 1000


DURATIONS = st.one_of(st.sampled_from([1, 1000, MAX_DURATION_MS // 2]), st.integers(1, MAX_DURATION_MS // 2))
EDGE_TIMES = st.sampled_from([MAX_EVENT_TIME_MS, -MAX_EVENT_TIME_MS, MAX_EVENT_TIME_MS - 1, -MAX_EVENT_TIME_MS + 1])
BEYOND = st.one_of(st.integers(MAX_EVENT_TIME_MS + 1, 2**63 - 1), st.integers(-2**63, -MAX_EVENT_TIME_MS - 1),
                   st.sampled_from([2**63 - 1, -2**63, MAX_EVENT_TIME_MS + 1, -MAX_EVENT_TIME_MS - 1]))


@st.composite
def near_an_end(draw, size):
    """Event times within 20 windows of ``size`` of one end of the supported times, the end among them."""
    end = draw(st.sampled_from([MAX_EVENT_TIME_MS, -MAX_EVENT_TIME_MS]))
    inward = -1 if end > 0 else 1
    offsets = draw(st.lists(st.integers(0, 20 * size), min_size=1, max_size=8))
    return [end + inward * o for o in [*offsets, 0]]


def edge_windows(t, size, kind):
    window = {"tumble": dw.Tumble(size, on="ts"), "slide": dw.Slide(size * 2, every=size, on="ts"),
              "session": dw.Session(size, on="ts")}[kind]
    return t.window(window).group_by("k").agg(n=dw.count(), s=dw.sum("k"))


@pytest.mark.parametrize("state", ["memory", "mmap", "rocksdb"])
@settings(max_examples=15, deadline=None)
@given(data=st.data(), size=DURATIONS, delay=st.one_of(st.just(0), DURATIONS),
       kind=st.sampled_from(["tumble", "slide", "session"]), batch_size=st.integers(1, 4))
def test_windows_at_the_ends_of_the_supported_event_times(tmp_path_factory, state, data, size, delay, kind,
                                                          batch_size):
    """Every window of an event time within 2^62 ms of 1970, of durations up to 100 years, is held in int64
    on both engines and every backend: its start at or before the time, its end after it."""
    ts = data.draw(near_an_end(size))
    t = dw.from_arrow(table(ts, [i % 3 for i in range(len(ts))]), time="ts", max_delay=delay, name="t")
    path = None if state == "memory" else str(tmp_path_factory.mktemp("state"))
    result = assert_engines_agree(edge_windows(t, size, kind),
                                  dw.Config(batch_size=batch_size, state=state, state_path=path))
    for start, end in zip(*(result.table[c].cast(pa.int64()).to_pylist() for c in ("window_start", "window_end"))):
        assert start < end and any(start <= x < end for x in ts)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@settings(max_examples=15, deadline=None)
@given(ts=st.lists(EDGE_TIMES, max_size=4), bad=BEYOND, at=st.integers(0, 4), kind=st.sampled_from(["tumble",
                                                                                                    "session"]))
def test_event_times_beyond_the_supported_ones_are_a_source_error(mode, ts, bad, at, kind):
    """A time near int64's ends has no window int64 holds: the compiled engine fired one whose end had
    wrapped around (an event at -2^63 in [2^63 - 192, -2^63 + 1000)), the interpreter failed in Arrow
    ('Python int too large to convert to C long'), and both counted other rows late than each other."""
    ts = [*ts[:at], bad, *ts[at:]]
    t = dw.from_arrow(table(ts), time="ts", name="far")
    with pytest.raises(SourceError, match=rf"source 'far': event time column 'ts' holds {bad} ms since 1970, "
                                          r"beyond .* \(-2\^62 to 2\^62 ms"):
        edge_windows(t, 1000, kind).collect(dw.Config(mode=mode, batch_size=2))


def other_time_windows(t, kind):
    """A window of ``kind`` on column ``u``, one of the source's rows but not its event time."""
    window = {"tumble": dw.Tumble(1000, on="u"), "slide": dw.Slide(2000, every=1000, on="u"),
              "session": dw.Session(1000, on="u"), "top": dw.Tumble(1000, on="u")}[kind]
    if kind == "top":
        return t.window(window).top_n(1, by="k", order=[dw.desc("v")])
    return t.window(window).group_by("k").agg(n=dw.count(), s=dw.sum("v"))


def with_other_time(us, computed):
    """A source timed by ``ts`` (in order, a second apart) whose column ``u`` holds ``us``, or computes them
    from integers (``computed``)."""
    n = len(us)
    columns = {"ts": pa.array([i * 1000 for i in range(n)], pa.timestamp("ms")), "k": [i % 2 for i in range(n)],
               "v": list(range(n))}
    if computed:
        columns["i"] = pa.array(us, pa.int64())
        t = dw.from_arrow(pa.table(columns), time="ts", max_delay="1s", name="far")
        return t.select("ts", "k", "v", u=col("i").cast("timestamp"))
    columns["u"] = pa.array(us, pa.timestamp("ms"))
    return dw.from_arrow(pa.table(columns), time="ts", max_delay="1s", name="far")


@settings(max_examples=25, deadline=None)
@given(us=st.lists(st.one_of(EDGE_TIMES, st.integers(-5000, 5000)), min_size=1, max_size=6),
       kind=st.sampled_from(["tumble", "slide", "session", "top"]), computed=st.booleans(),
       batch_size=st.integers(1, 4))
def test_windows_on_another_time_at_the_ends_agree(us, kind, computed, batch_size):
    """A window on a timestamp column that is not the source's event time, at the ends of the supported
    times: the same windows and late rows compiled and interpreted."""
    assert_engines_agree(other_time_windows(with_other_time(us, computed), kind), dw.Config(batch_size=batch_size))


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@settings(max_examples=15, deadline=None)
@given(us=st.lists(EDGE_TIMES, max_size=4), bad=BEYOND, at=st.integers(0, 4),
       kind=st.sampled_from(["tumble", "slide", "session", "top"]), computed=st.booleans())
def test_windows_on_another_time_beyond_the_supported_ones_are_a_source_error(mode, us, bad, at, kind, computed):
    """A window's time beyond 2^62 ms is refused when it is not the source's event time too (a second
    timestamp column, or one computed): near int64's ends the compiled engine's window ends wrapped around,
    so it counted rows late the interpreter did not (3 and 1 of [2^63 - 1, 2^63 - 2, 0])."""
    us = [*us[:at], bad, *us[at:]]
    with pytest.raises(SourceError, match=rf"window on column 'u' meets {bad} ms since 1970, "
                                          r"beyond .* \(-2\^62 to 2\^62 ms"):
        other_time_windows(with_other_time(us, computed), kind).collect(dw.Config(mode=mode, batch_size=2))
