"""The window-ring aggregation: when it is chosen, and that it agrees with the reference."""

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.graph.translate import translate
from darwin.plan.rules import optimize
from darwin.testing import assert_engines_agree


def sink_of(q):
    return translate(optimize(q.plan), dw.Config()).pipelines[0].sink


def table(ts, k, v):
    return pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": pa.array(k, pa.int64()),
                     "v": pa.array(v, pa.int64())})


def test_ring_is_chosen_only_where_it_is_sound():
    t = dw.from_arrow(table([0, 1], [5, 9], [1, 2]), time="ts", max_delay="2s")
    ring = sink_of(t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())).ring
    assert (ring.low, ring.size, ring.slots) == (5, 5, 8)  # (2000 + 1000) / 1000 + 2 slots, to a power of two
    assert sink_of(t.window(dw.Tumble("1s", on="ts")).agg(n=dw.count())).ring.size == 1
    # a computed key, a nullable key, or no watermark: the hash table
    computed = t.with_columns(k2=col("k") + 1).window(dw.Tumble("1s", on="ts")).group_by("k2").agg(n=dw.count())
    assert sink_of(computed).ring is None
    renamed = t.with_columns(k2=col("k")).window(dw.Tumble("1s", on="ts")).group_by("k2").agg(n=dw.count())
    assert sink_of(renamed).ring is not None
    nullable = dw.from_arrow(table([0, 1], [5, None], [1, 2]), time="ts")
    assert sink_of(nullable.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())).ring is None
    untimed = dw.from_arrow(table([0, 1], [5, 9], [1, 2]))
    assert sink_of(untimed.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())).ring is None
    huge = dw.from_arrow(table([0, 1], [0, 2**40], [1, 2]), time="ts")
    assert sink_of(huge.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())).ring is None


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_ring_agrees_with_reference(data):
    n = data.draw(st.integers(0, 80))
    jump = data.draw(st.sampled_from([0, 5000, 60_000]))  # big jumps close windows mid-batch
    ts = [max(0, i * 200 + data.draw(st.integers(-1500, 1500)) + (jump if i % 17 == 16 else 0) * (i // 17))
          for i in range(n)]
    k = [data.draw(st.integers(-3, 4)) for _ in range(n)]
    v = [data.draw(st.one_of(st.none(), st.integers(-100, 100))) for _ in range(n)]
    delay = data.draw(st.sampled_from([0, 700, 3000]))
    window = data.draw(st.sampled_from([dw.Tumble("1s", on="ts"), dw.Slide("2s", every="500ms", on="ts")]))
    t = dw.from_arrow(table(ts, k, v), time="ts", max_delay=delay)
    keyed = t.window(window, late_output=True).group_by("k").agg(
        n=dw.count(), s=dw.sum("v"), lo=dw.min("v"), hi=dw.max("k"), m=dw.avg("v"))
    whole = t.window(window).agg(n=dw.count(), s=dw.sum("v"))
    batch = dw.Config(batch_size=data.draw(st.integers(1, 100)))
    if n:
        assert sink_of(keyed).ring is not None
    assert_engines_agree(keyed, batch)
    assert_engines_agree(whole, batch)


def test_a_key_computed_at_the_source_boundary_is_not_a_source_column():
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2], pa.timestamp("ms")), "s": ["aa", "a", "b"]}), time="ts")
    q = t.with_columns(n=col("s").str.count_char("a")).window(dw.Tumble("1s", on="ts")).group_by("n").agg(
        c=dw.count())
    assert sink_of(q).ring is None  # no statistics for a computed key: the hash table
    assert [(r["n"], r["c"]) for r in assert_engines_agree(q).table.to_pylist()] == [(2, 1), (1, 1), (0, 1)]


def test_parquet_statistics_give_domains_and_prove_no_nulls(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(table([0, 5, 9], [7, 3, 12], [1, None, 2]), path, row_group_size=2)
    t = dw.read_parquet(path, time="ts")
    assert {f.name: f.nullable for f in t.schema} == {"ts": False, "k": False, "v": True}
    ring = sink_of(t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())).ring
    assert (ring.low, ring.size) == (3, 10)


class LyingStatistics:
    """A source whose statistics claim a narrower key range than its data has."""

    def __init__(self, table):
        self.inner = dw.from_arrow(table).plan.source
        self.name, self.schema = "liar", self.inner.schema

    def batches(self, columns, batch_size):
        return self.inner.batches(columns, batch_size)

    def bounds(self, column):
        return (0, 3)


def test_a_key_outside_the_promised_domain_is_a_clear_error():
    t = dw.from_source(LyingStatistics(table([0, 1, 2], [1, 2, 7], [1, 1, 1])), "ts")
    with pytest.raises(dw.errors.SourceError, match=r"group key 'k' is outside \[0, 3\]"):
        t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count()).collect()


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_window_on_another_time_than_the_sources_takes_the_hash_table(data):
    """A ring has slots for the windows the source's watermark bounds: those of its own event time. A window
    on another timestamp column of its rows (a second one, or the event time moved ahead) opens windows
    anywhere ahead of max time: a row 4 s ahead of a watermark 0 (windows of 1 s, delay 1 s) took the slot
    of an open window and stopped the run ('internal error: a window ring is full of open windows')."""
    n = data.draw(st.integers(1, 12))
    ts = [i * 1000 for i in range(n)]
    us = [data.draw(st.integers(-5000, 60_000)) for _ in range(n)]
    t = dw.from_arrow(table(ts, [i % 3 for i in range(n)], us), time="ts", max_delay="1s")
    t = t.with_columns(u=col("v").cast("timestamp"), ahead=col("ts") + 30_000)
    on = data.draw(st.sampled_from(["u", "ahead"]))
    window = data.draw(st.sampled_from([dw.Tumble("1s", on=on), dw.Slide("2s", every="1s", on=on)]))
    q = t.window(window).group_by("k").agg(n=dw.count(), s=dw.sum("v"))
    assert sink_of(q).ring is None
    assert_engines_agree(q, dw.Config(batch_size=data.draw(st.integers(1, 4))))
