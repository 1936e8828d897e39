"""Windows, watermarks, firing and late events, with hand-checked expectations, in every mode."""

from datetime import UTC, datetime

import pyarrow as pa
import pytest

import darwin as dw
from darwin import col
from darwin.errors import PlanError


def ms(t):
    return datetime.fromtimestamp(t / 1000, UTC).replace(tzinfo=None)


def stream(ts, k=None, v=None):
    n = len(ts)
    return pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": k or [1] * n, "v": v or list(range(n))})


def test_tumbling_windows_and_late_events(config):
    # watermark = max ts - 1000; the 500 arrives after the watermark reached 1500: window [0,1000) fired
    t = dw.from_arrow(stream([0, 900, 2500, 500, 2600, 4100]), time="ts", max_delay="1s")
    r = t.window(dw.Tumble("1s", on="ts"), late_output=True).agg(n=dw.count(), s=dw.sum("v")).execute(
        config.replace(batch_size=2))
    assert r.table.to_pylist() == [
        {"window_start": ms(0), "window_end": ms(1000), "n": 2, "s": 1},
        {"window_start": ms(2000), "window_end": ms(3000), "n": 2, "s": 6},
        {"window_start": ms(4000), "window_end": ms(5000), "n": 1, "s": 5},
    ]
    assert r.metrics["late_rows"] == 1
    assert r.late.to_pylist() == [{"ts": ms(500), "k": 1, "v": 3}]


def test_late_rows_are_counted_when_not_kept(config):
    t = dw.from_arrow(stream([5000, 100, 200, 5100]), time="ts")
    r = t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count()).execute(config)
    assert r.metrics["late_rows"] == 2 and r.late is None
    assert r.table["n"].to_pylist() == [2]


def _late_kept_where_no_aggregation_keeps_them(t):
    windowed = t.window(dw.Tumble("1s", on="ts"), late_output=True)
    other = dw.from_arrow(stream([0, 3500, 4000]), time="ts", max_delay="1s", name="other")
    return {"window top-N": (windowed.top_n(1, by="k", order="v"), "TopN"),
            "window join": (windowed.join(other.window(dw.Tumble("1s", on="ts")), on=[("k", "k")]), "Join"),
            "window rows": (windowed.table(), "are the result"),
            "window rows windowed again": (windowed.table().select("k", t="window_end")
                                           .window(dw.Tumble("1s", on="t")).agg(n=dw.count()), "Project")}


@pytest.mark.parametrize("shape", ["window top-N", "window join", "window rows", "window rows windowed again"])
def test_late_output_is_refused_where_no_windowed_aggregation_returns_late_rows(config, shape):
    """late_output=True was honoured only by a windowed aggregation: a window top-N or window join
    counted the row at 3999 ms (its window closed at 4000 ms) in late_rows and returned no late rows,
    and a window's rows, which are never late, returned none either; each ran as if it kept them."""
    t = dw.from_arrow(stream([5000, 3999, 4000]), time="ts", max_delay="1s")
    query, reader = _late_kept_where_no_aggregation_keeps_them(t)[shape]
    with pytest.raises(PlanError, match=f"late_output=True on tumble\\(1000ms on ts\\): its rows .*{reader}.*"
                                        "Leave late_output out"):
        query.execute(config)
    kept = t.window(dw.Tumble("1s", on="ts"), late_output=True).group_by("k").agg(n=dw.count()).execute(config)
    assert kept.late.to_pylist() == [{"ts": ms(3999), "k": 1, "v": 1}]


def test_sliding_windows_repeat_rows(config):
    t = dw.from_arrow(stream([0, 1500, 2100]), time="ts")
    out = t.window(dw.Slide("2s", every="1s", on="ts")).agg(n=dw.count()).collect(config)
    starts = [r["window_start"] for r in out.to_pylist()]
    assert starts == [ms(-1000), ms(0), ms(1000), ms(2000)]
    assert out["n"].to_pylist() == [1, 2, 2, 1]


def test_windows_fire_as_the_watermark_passes_them(config):
    t = dw.from_arrow(stream([0, 100, 1200, 2300, 2400, 5000]), time="ts")
    q = t.window(dw.Tumble("1s", on="ts")).agg(n=dw.count())
    batches = list(q.iter_batches(config.replace(batch_size=2)))
    # input batches [0,100] [1200,2300] [2400,5000]: the first closes nothing, the second closes two
    # windows, the third one, and the last window fires at the end of input
    assert [b.column("n").to_pylist() for b in batches] == [[2, 1], [2], [1]]


def test_rows_without_event_time_are_dropped_and_counted(config):
    table = pa.table({"ts": pa.array([0, None, 10], pa.timestamp("ms")), "k": [1, 2, 1]})
    r = dw.from_arrow(table, time="ts").window(dw.Tumble("1s", on="ts")).group_by("k").agg(
        n=dw.count()).execute(config)
    assert r.metrics["null_time_rows"] == 1
    assert r.table.to_pylist() == [{"window_start": ms(0), "window_end": ms(1000), "k": 1, "n": 2}]


def test_global_aggregation_and_having(config):
    t = dw.from_arrow(stream([0, 10, 20, 1500], v=[4, 5, 6, 7]), time="ts")
    q = (t.window(dw.Tumble("1s", on="ts")).agg(hi=dw.max("v"), lo=dw.min("v"), mean=dw.avg("v"), n=dw.count())
         .filter(col("n") > 1))
    assert q.collect(config).to_pylist() == [
        {"window_start": ms(0), "window_end": ms(1000), "hi": 6, "lo": 4, "mean": 5.0, "n": 3}]


def test_string_keys_and_literals(config):
    table = pa.table({"ts": pa.array([0, 1, 2, 3], pa.timestamp("ms")),
                      "channel": ["apple", "google", "apple", None], "price": [1, 2, 3, 4]})
    q = (dw.from_arrow(table, time="ts").filter(col("channel").isin(["apple", "baidu"]) | col("channel").is_null())
         .window(dw.Tumble("1s", on="ts")).group_by("channel").agg(total=dw.sum("price")))
    assert [(r["channel"], r["total"]) for r in q.collect(config).to_pylist()] == [("apple", 4), (None, 4)]


def test_string_map_is_a_static_join(config):
    table = pa.table({"ts": pa.array([0, 1, 2], pa.timestamp("ms")), "ad": ["a1", "a2", "zz"]})
    q = dw.from_arrow(table, time="ts").select(campaign=col("ad").str.map({"a1": "c1", "a2": "c1"}))
    assert q.collect(config)["campaign"].to_pylist() == ["c1", "c1", None]
