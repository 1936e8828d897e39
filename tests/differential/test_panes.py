"""Sliding windows from panes give what folding each row into each of its windows gives.

A row folds once, into the pane of one slide it falls in, and a window combines its panes when it
fires. The output -- rows, their order, the counters -- must not change: not for out-of-order and
late rows (a row late for its pane's first windows but not its last), not on a window ring or a hash
table, not on several workers, not across random batch boundaries.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import source, streams

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal

COUNTERS = ("late_rows", "null_time_rows", "input_rows", "windows_fired", "output_rows")


def _sliding(t: dw.Table, keys: tuple[str, ...], size: str, slide: str) -> dw.Table:
    return (t.with_columns(kk=col("k") * 7 + 1, hv=col("v") % 1000)
            .window(dw.Slide(size, every=slide, on="ts")).group_by(*keys)
            .agg(n=dw.count(), nv=dw.count("v"), sv=dw.sum("v"), lo=dw.min("v"), hi=dw.max("hv"), m=dw.avg("hv"),
                 last=dw.max("ts")))


def _run(query: dw.Table, **config) -> dw.RunResult:
    return query.execute(dw.Config(**config))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from([(), ("k",), ("kk",), ("k", "s")]),
       st.sampled_from([("1s", "250ms"), ("2s", "500ms"), ("1500ms", "500ms"), ("1s", "1s")]),
       st.booleans(), st.sampled_from([1, 2, 4]))
def test_panes_give_the_per_window_fold(stream, keys, window, nullable, workers):
    """Hash tables (nullable or computed keys), rings (a NOT NULL source key), a global window; one
    worker or several (routed by key, or merged rings)."""
    table, cuts, delay, batch_size = stream
    if not nullable:
        table = table.drop_null()
        cuts = [min(c, table.num_rows) for c in cuts]
    query = _sliding(source(table, cuts, delay, nullable=nullable), keys, *window)
    expected = _run(query, batch_size=batch_size, panes=False)
    actual = _run(query, batch_size=batch_size, parallelism=workers)
    assert_table_equal(actual.table, expected.table, rel_tol=0.0, check_nullability=True)
    for key in COUNTERS:
        assert actual.metrics.get(key) == expected.metrics.get(key), key
    reference = query.collect(dw.Config(mode="interpreted"))
    assert_table_equal(actual.table, reference, rel_tol=0.0)


def test_a_row_late_for_its_panes_first_windows_reaches_only_the_others():
    """Windows of 3 s every 1 s, no delay. In one batch: rows at 0.5 s and 2.2 s (the watermark
    passes the ends of [-2 s, 1 s) and [-1 s, 2 s)), then a row at 0.7 s: late for those two windows,
    which were due before it, so only the row at 0.5 s counts there; [0 s, 3 s) takes all three."""
    times = [500, 2200, 700, 6000]
    t = pa.table({"ts": pa.array(times, pa.timestamp("ms")), "v": [1, 10, 100, 1000]})
    query = (dw.from_arrow(t, time="ts").window(dw.Slide("3s", every="1s", on="ts"))
             .agg(n=dw.count(), s=dw.sum("v")))
    result = _run(query, batch_size=4)
    starts = result.table["window_start"].cast(pa.int64()).to_pylist()
    got = dict(zip(starts, zip(result.table["n"].to_pylist(), result.table["s"].to_pylist())))
    assert got == {-2000: (1, 1), -1000: (1, 1), 0: (3, 111), 1000: (1, 10), 2000: (1, 10),
                   4000: (1, 1000), 5000: (1, 1000), 6000: (1, 1000)}
    assert result.metrics.get("late_rows") == 0  # late for some windows, not for all: not a late row
    assert_table_equal(result.table, _run(query, batch_size=4, panes=False).table, rel_tol=0.0)
    assert_table_equal(result.table, query.collect(dw.Config(mode="interpreted")), rel_tol=0.0)


def _explained(query: dw.Table, **config) -> str:
    return next(line for line in query.explain(dw.Config(**config)).splitlines() if "aggregate" in line)


def test_the_optimizer_uses_panes_where_windows_slide_and_aggregates_merge_exactly(tmp_path):
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "k": [1], "f": [0.5]}), time="ts")
    sliding = t.window(dw.Slide("10s", every="2s", on="ts")).group_by("k")
    assert "panes" in _explained(sliding.agg(n=dw.count(), hi=dw.max("k")))
    assert "panes" not in _explained(sliding.agg(n=dw.count()), panes=False)
    assert "panes" not in _explained(sliding.agg(s=dw.sum("f")))  # a float sum rounds by how rows are grouped
    assert "panes" not in _explained(t.window(dw.Tumble("2s", on="ts")).group_by("k").agg(n=dw.count()))
    # a window's panes are combined in DRAM, all at once: not on the backends that hold state on disk
    disk = _explained(sliding.agg(n=dw.count()), state="mmap", state_path=str(tmp_path / "state"))
    assert "panes" not in disk


@pytest.mark.parametrize("workers", [1, 2])
def test_a_long_stream_fires_each_window_once(workers):
    """An in-order stream over many panes: every window fires once, as the watermark passes it."""
    n = 20_000
    t = pa.table({"ts": pa.array(range(0, n * 10, 10), pa.timestamp("ms")), "k": [i % 50 for i in range(n)]})
    query = dw.from_arrow(t, time="ts").window(dw.Slide("1s", every="100ms", on="ts")).group_by("k").agg(
        n=dw.count())
    result = _run(query, batch_size=1000, parallelism=workers)
    assert result.metrics.get("windows_fired") == (n * 10 + 900) // 100  # starts -900 ms .. 199,900 ms
    assert sum(result.table["n"].to_pylist()) == n * 10  # each row in ten windows
    assert_table_equal(result.table, _run(query, batch_size=1000, panes=False).table, rel_tol=0.0)


@st.composite
def sparse_times(draw):
    """Clusters of event times, out of order within one, and between them gaps of up to 100 years:
    far more 1 ms windows than memory holds, nearly all empty."""
    times, at = [], draw(st.integers(-2**40, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        times += [at + d for d in draw(st.lists(st.integers(0, 20), min_size=1, max_size=5))]
        at += draw(st.sampled_from([10**12, 3_153_600_000_000, 86_400_000 * 36_500 // 2]))
    return times


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sparse_times(), st.sampled_from([("2ms", "1ms"), ("10ms", "1ms"), ("6ms", "2ms")]), st.integers(0, 5),
       st.integers(1, 5), st.sampled_from([1, 2]))
def test_a_watermark_far_past_sparse_panes_fires_only_the_windows_they_are_in(times, window, delay, batch_size,
                                                                            workers):
    """A gap of years between events under a millisecond slide: firing counted every window from the
    oldest pane's to the watermark's, one number each, and failed ('MemoryError: Allocation failed') for
    a gap of 10^12 windows. Now only windows holding a pane are counted, as folding each row into each of
    its windows gives."""
    keys = [i % 3 for i in range(len(times))]
    t = dw.from_arrow(pa.table({"ts": pa.array(times, pa.timestamp("ms")), "k": keys, "v": keys}), time="ts",
                      max_delay=delay, name="t")
    query = _sliding(t, ("k",), *window)
    assert "panes" in _explained(query, parallelism=workers)
    actual = _run(query, batch_size=batch_size, parallelism=workers)
    reference = query.execute(dw.Config(mode="interpreted", batch_size=batch_size))
    assert_table_equal(actual.table, reference.table, rel_tol=0.0)
    for key in COUNTERS:
        assert actual.metrics.get(key) == reference.metrics.get(key), key
