"""Windows over another operator's rows: every shape the plan takes is judged alike whatever the
batches, and the ones it refuses are those whose column could lie behind a window end.
(docs/decisions.md, Event time: a window over another operator's rows needs a time attribute.)"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col, lit
from darwin.errors import UnsupportedError

SIZES = st.sampled_from([1, 2, 3, 4, 6, 12])


@st.composite
def cascades(draw: st.DrawFn) -> dw.Table:
    """A sliding or tumbling count per key (or a window top-N), its window_start or window_end shifted
    by a few ms or a window's length, summed again in windows of another size (ms-sized too)."""
    unit = draw(st.sampled_from([1, 10, 100]))
    size, size2 = unit * draw(SIZES), unit * draw(SIZES)
    slide = size // 2 if size % 2 == 0 and draw(st.booleans()) else size
    slide2 = size2 // 2 if size2 % 2 == 0 and draw(st.booleans()) else size2
    bound = draw(st.sampled_from(["window_start", "window_end"]))
    shift = draw(st.sampled_from([0, 1, 2, unit, size, -1, -2, -unit, -size]))
    step = draw(st.sampled_from([1, 3, 50]))
    jitter = draw(st.lists(st.integers(-5 * step, 5 * step), min_size=60, max_size=60))
    times = [i * step + j for i, j in enumerate(jitter)]
    source = dw.from_arrow(pa.table({"k": [i % 3 for i in range(60)], "ts": pa.array(times, pa.timestamp("ms"))}),
                           time="ts", max_delay=draw(st.sampled_from([0, 3 * step])), name="events")
    windows = source.window(dw.Slide(size, every=slide, on="ts"))
    if draw(st.booleans()):
        first = windows.group_by("k").agg(n=dw.count())
    else:  # a window top-N: each window's two latest rows per key
        first = windows.top_n(2, by="k", order=[dw.desc("ts")]).select("k", "window_start", "window_end", n=lit(1))
    column = col(bound) + shift if shift else col(bound)
    return first.select("k", "n", s=column).window(dw.Slide(size2, every=slide2, on="s")).agg(total=dw.sum("n"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_cascade_the_plan_takes_is_judged_alike_whatever_the_batches(data: st.DataObject) -> None:
    try:
        query = data.draw(cascades())
    except UnsupportedError as e:
        assert "is not a time attribute there" in str(e)
        return
    results = [sorted(query.collect(dw.Config(batch_size=b)).to_pylist(), key=str) for b in (1, 2, 5, 1000)]
    assert all(r == results[0] for r in results)



WINDOWED = {
    "tumble": lambda t: t.window(dw.Tumble(10, on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v")),
    "slide": lambda t: t.window(dw.Slide(20, every=5, on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v")),
    "global": lambda t: t.window(dw.Tumble(10, on="ts")).agg(n=dw.count()),
    "top-n": lambda t: t.window(dw.Tumble(10, on="ts")).top_n(2, by="k", order=[dw.desc("v")]),
}


@st.composite
def union_windows(draw: st.DrawFn) -> tuple[dw.Table, dw.Table]:
    """A window over the union of two disjoint branches of one out-of-order source (a projection in
    one), and the same window over the one filter that keeps both branches' rows."""
    jitter = draw(st.lists(st.integers(-15, 15), min_size=50, max_size=50))
    keys = draw(st.lists(st.integers(0, 3), min_size=50, max_size=50))
    source = dw.from_arrow(pa.table({"k": keys, "v": list(range(50)),
                                     "ts": pa.array([3 * i + j for i, j in enumerate(jitter)], pa.timestamp("ms"))}),
                           time="ts", max_delay=draw(st.sampled_from([0, 5])), name="events")
    cut = draw(st.integers(0, 3))
    first, second = col("k") < cut, col("k") >= cut
    windowed = WINDOWED[draw(st.sampled_from(sorted(WINDOWED)))]
    both = source.filter(first).union(source.filter(second).select("k", v=col("v") + 0, ts=col("ts")))
    return windowed(both), windowed(source.filter(first | second))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_window_over_a_union_of_one_sources_branches_judges_rows_as_the_source_would(data: st.DataObject) -> None:
    union, one_filter = data.draw(union_windows())
    expected = one_filter.execute(dw.Config(batch_size=7))
    for batch, mode, workers in ((1, "compiled", 1), (3, "interpreted", 1), (5, "compiled", 2),
                                 (1000, "compiled", 1), (1000, "interpreted", 1)):
        run = union.execute(dw.Config(batch_size=batch, mode=mode, parallelism=workers))
        assert sorted(run.table.to_pylist(), key=str) == sorted(expected.table.to_pylist(), key=str)
        assert run.metrics["late_rows"] == expected.metrics["late_rows"]
