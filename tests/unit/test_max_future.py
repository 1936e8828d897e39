"""One event far in the future: a logged warning when rows turn late, and ``max_future`` to prevent it."""

import logging

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import SCHEMA, q_all_aggregates, q_global_window, q_stateless, streams

import darwin as dw
from darwin.errors import PlanError
from darwin.plan.explain import render
from darwin.runtime.progress import LateRowsWarning, WatermarkClock
from darwin.testing import assert_engines_agree

FAR = 10**12  # about 31 years after the stream's other events
TS = [0, 1000, FAR, 2000, 3000, 4500, 5200]


def spiked(max_future=None, late_output=False):
    t = dw.from_arrow(pa.table({"ts": pa.array(TS, pa.timestamp("ms")), "k": [1, 2, 1, 2, 1, 2, 1]}),
                      time="ts", max_delay="1s", max_future=max_future)
    return t.window(dw.Tumble("1s", on="ts"), late_output=late_output).group_by("k").agg(n=dw.count())


def late_warnings(caplog):
    return [r for r in caplog.records if r.levelno == logging.WARNING and "late rows" in r.getMessage()]


def test_without_max_future_later_rows_are_late_and_a_warning_says_so(config, caplog):
    caplog.set_level(logging.WARNING)
    r = spiked().execute(config.replace(batch_size=3))
    assert r.metrics["late_rows"] == 4 and r.metrics["future_rows"] == 0
    (warning,) = late_warnings(caplog)  # rows turned late in two batches: one warning within the interval
    message = warning.getMessage()
    assert "'arrow'" in message and "late rows so far dropped" in message
    assert "max_delay" in message and "max_future" in message and f"watermark {FAR - 1000} ms" in message


def test_with_max_future_the_spike_does_not_move_the_watermark(config, caplog):
    caplog.set_level(logging.WARNING)
    r = spiked("1h").execute(config.replace(batch_size=3))
    assert r.metrics["late_rows"] == 0 and r.metrics["future_rows"] == 1
    assert r.table["n"].to_pylist() == [1, 1, 1, 1, 1, 1, 1]  # the spike is aggregated too: nothing is lost
    assert not late_warnings(caplog)
    assert_engines_agree(spiked("1h"), dw.Config(batch_size=2))


def test_max_future_is_part_of_the_plan_text():
    assert "max_delay=1000ms max_future=3600000ms" in render(spiked("1h").plan)
    assert "max_future" not in render(spiked().plan)


@pytest.mark.parametrize("value, message", [(0, "positive"), (float("nan"), "finite"), ("1000000d", "100 years")])
def test_bad_max_future_is_a_plan_error(value, message):
    with pytest.raises(PlanError, match=message):
        spiked(value)
    with pytest.raises(PlanError, match="time column"):
        dw.from_arrow(pa.table({"x": [1]}), max_future="1h")


def test_the_warning_is_rate_limited(caplog):
    caplog.set_level(logging.WARNING)
    now = [0.0]
    w = LateRowsWarning("src", interval_s=60, clock=lambda: now[0])
    w.update(0, 5)
    w.update(3, 5)
    now[0] = 30
    w.update(7, 6)
    assert len(late_warnings(caplog)) == 1 and "3 late rows" in caplog.records[0].getMessage()
    now[0] = 61
    w.update(7, 6)
    w.update(9, 6)
    assert len(late_warnings(caplog)) == 2 and "7 late rows" in caplog.records[1].getMessage()
    now[0] = 200
    w.update(9, 6)
    assert len(late_warnings(caplog)) == 3 and "9 late rows" in caplog.records[2].getMessage()


def test_the_clock_ignores_rows_beyond_max_future():
    c = WatermarkClock(100, max_future_ms=1000)
    for t in (5, 2000, 1005, 10**9, 1500):
        c.observe(t)
    assert (c.max_time, c.watermark, c.future_rows) == (1500, 1400, 2)


def q_late_output_keyed(t):
    return t.window(dw.Tumble("500ms", on="ts"), late_output=True).group_by("k").agg(n=dw.count())


@pytest.mark.parametrize("shape", [q_all_aggregates, q_global_window, q_late_output_keyed, q_stateless],
                         ids=lambda f: f.__name__)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams(), spikes=st.lists(st.tuples(st.integers(0, 59), st.integers(10**4, 10**12)), max_size=4),
       max_future=st.sampled_from([None, 1, 3000, "1h"]))
def test_far_future_spikes_agree_with_the_reference(shape, data, spikes, max_future):
    table, cuts, delay, batch_size = data
    ts = table.column("ts").cast(pa.int64()).to_pylist()
    for i, ahead in spikes:
        if i < len(ts) and ts[i] is not None:
            ts[i] += ahead
    table = table.set_column(0, "ts", pa.array(ts, pa.int64()).cast(pa.timestamp("ms")))

    def batches():
        bounds = [0, *cuts, table.num_rows]
        for a, b in zip(bounds, bounds[1:]):
            yield pa.RecordBatch.from_arrays([c.combine_chunks().slice(a, b - a) for c in table.columns],
                                             schema=SCHEMA)
    q = shape(dw.from_batches(SCHEMA, batches, time="ts", max_delay=delay, max_future=max_future))
    compiled = assert_engines_agree(q, dw.Config(batch_size=batch_size))
    reference = q.execute(dw.Config(batch_size=batch_size, mode="interpreted"))
    assert compiled.metrics["future_rows"] == reference.metrics["future_rows"]
    if max_future is None:
        assert compiled.metrics["future_rows"] == 0


def test_rows_beyond_max_future_open_windows_a_ring_cannot_hold(config):
    """A ring covers windows up to max time; rows past max_future are beyond it, so the hash table is used."""
    ts = [i * 250 for i in range(40)]  # with max_future=1ms every row after the first is a future row
    t = dw.from_arrow(pa.table({"ts": pa.array(ts, pa.timestamp("ms"))}), time="ts", max_future=1)
    q = t.window(dw.Tumble("750ms", on="ts")).agg(n=dw.count())
    assert "window-hash-aggregate" in q.explain()
    r = q.execute(config)
    assert sum(r.table["n"].to_pylist()) == 40 and r.metrics["future_rows"] == 39
