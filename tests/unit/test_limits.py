"""Window and watermark parameters are bounded by what the engine can hold, and refused early."""

import math
from datetime import timedelta

import pyarrow as pa
import pytest

import darwin as dw
from darwin.errors import ConfigError, PlanError
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
