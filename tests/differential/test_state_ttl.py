"""``state_ttl`` of deduplication, top-N and aggregations without a window: a key is forgotten,
silently, once the operator's watermark is the TTL past the watermark at its last write (Flink's
``table.exec.state.ttl``, in event time: docs/decisions.md). Compiled against the interpreter over
out-of-order streams whose keys come back after they expired; the state stays bounded over an
unbounded key space; the Spark engine refuses it."""

from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_joins import SETTINGS, STATES, stream

import darwin as dw
from darwin.errors import PlanError, UnsupportedError
from darwin.plan import nodes as pn
from darwin.testing import assert_table_equal

QUERIES = {
    "first": lambda t, ttl: t.deduplicate(on="k", state_ttl=ttl),
    "last": lambda t, ttl: t.deduplicate(on=["k", "s"], keep="last", state_ttl=ttl),
    "first_by_time": lambda t, ttl: t.deduplicate(on="k", order="t", state_ttl=ttl),
    "last_by_value": lambda t, ttl: t.deduplicate(on="k", keep="last", order="v", state_ttl=ttl),
    "top_n": lambda t, ttl: t.top_n(2, by="k", order=[dw.desc("v")], rank="r", state_ttl=ttl),
    "aggregation": lambda t, ttl: t.group_by("k").agg(n=dw.count(), total=dw.sum("v"), low=dw.min("s"),
                                                      high=dw.max("v"), mean=dw.avg("v"), state_ttl=ttl),
    "global": lambda t, ttl: t.filter(dw.col("v") > -30).agg(n=dw.count(), high=dw.max("t"), state_ttl=ttl),
    "aggregation_below": lambda t, ttl: t.group_by("k").agg(n=dw.count(), state_ttl=ttl)
                                         .group_by("n").agg(keys=dw.count()),
}


@st.composite
def returning_streams(draw) -> dw.Table:
    """Rows moving forward in time with jitter (out of order by up to 3 s), keys from a few (NULL
    among them) that come back after gaps longer or shorter than the TTLs."""
    n = draw(st.integers(0, 60))
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(0, 1_500), min_size=n, max_size=n))
    jitter = draw(st.lists(st.integers(-3_000, 0), min_size=n, max_size=n))
    times = np.maximum(np.cumsum(steps, dtype=np.int64) + np.array(jitter, dtype=np.int64), 0).tolist()
    values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    return stream("S", keys, times, values, [f"S{v % 3}" for v in values], draw(st.sampled_from([0, 500, 3_000])))


BATCHES = st.one_of(st.integers(1, 8), st.integers(9, 1000))


@SETTINGS
@given(t=returning_streams(), name=st.sampled_from(sorted(QUERIES)), ttl=st.sampled_from([1, 700, 2_000, 6_000]),
       batch=BATCHES, state=st.sampled_from(STATES))
def test_a_state_ttl_agrees_with_the_interpreter(t, name, ttl, batch, state):
    q = QUERIES[name](t, ttl)
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    with tempfile.TemporaryDirectory() as directory:
        compiled = q.execute(dw.Config(batch_size=batch, state=state, state_delta_limit=1,
                                       state_path=None if state == "memory" else directory))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)


def _stream(keys: list[int], times: list[int]) -> dw.Table:
    table = pa.table({"k": pa.array(keys, pa.int64()), "t": pa.array(times, pa.timestamp("ms")),
                      "v": pa.array(range(len(keys)), pa.int64())})
    return dw.from_arrow(table, time="t", max_delay=0)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_an_expired_key_starts_afresh_without_a_retraction(mode):
    """Rows one at a time, so a row's write is at the watermark before it (the previous row's time).
    Key 1, last written at watermark 1 s (its row at 2 s), expires (3 s) when the watermark reaches
    5 s: its row at 8 s is kept as a first again, and counted from zero with +I, with nothing taken
    back. A first row is the only write of a deduplication keeping the first (as in Flink): key 2's
    first row, written at watermark 0, expires at watermark 4 s although a duplicate came then."""
    t = _stream([1, 2, 1, 2, 2, 1], [0, 1_000, 2_000, 4_000, 5_000, 8_000])
    config = dw.Config(batch_size=1, mode=mode)
    first = t.deduplicate(on="k", state_ttl="3s").execute(config).changelog
    assert [(r["k"], r["v"], r["op"]) for r in first.to_pylist()] == [(1, 0, "+I"), (2, 1, "+I"), (2, 4, "+I"),
                                                                  (1, 5, "+I")]
    last = t.deduplicate(on="k", keep="last", state_ttl="3s").execute(config).changelog
    assert [(r["k"], r["v"], r["op"]) for r in last.to_pylist()] == [
        (1, 0, "+I"), (2, 1, "+I"), (1, 0, "-U"), (1, 2, "+U"), (2, 1, "-U"), (2, 3, "+U"),
        (2, 3, "-U"), (2, 4, "+U"), (1, 5, "+I")]
    counts = t.group_by("k").agg(n=dw.count(), state_ttl="3s").execute(config).changelog
    assert [(r["k"], r["n"], r["op"]) for r in counts.to_pylist()] == [
        (1, 1, "+I"), (2, 1, "+I"), (1, 1, "-U"), (1, 2, "+U"), (2, 1, "-U"), (2, 2, "+U"),
        (2, 2, "-U"), (2, 3, "+U"), (1, 1, "+I")]
    without = t.group_by("k").agg(n=dw.count()).execute(config).table
    assert sorted(map(tuple, (r.values() for r in without.to_pylist()))) == [(1, 3), (2, 3)]


@pytest.mark.parametrize("query", ["dedup", "top_n", "aggregation"])
def test_the_keys_held_stay_bounded_over_an_unbounded_key_space(query, monkeypatch):
    """A new key every 10 ms for 200 s of event time, each seen twice, 250 ms a batch: with a 1 s TTL
    the operator holds about the last second's keys (and ids for a few times as many), not every
    key it saw."""
    from darwin.runtime.group_aggregate import GroupAggregateRunner
    from darwin.runtime.rank import RankRunner

    n = 20_000
    times = np.repeat(np.arange(n, dtype=np.int64) * 10, 2)
    table = pa.table({"k": np.repeat(np.arange(n, dtype=np.int64), 2), "t": pa.array(times, pa.timestamp("ms")),
                      "v": np.arange(2 * n, dtype=np.int64)})
    t = dw.from_arrow(table, time="t", max_delay="100ms")
    q = {"dedup": t.deduplicate(on="k", state_ttl="1s"),
         "top_n": t.top_n(1, by="k", order=[dw.desc("v")], state_ttl="1s"),
         "aggregation": t.group_by("k").agg(n=dw.count(), state_ttl="1s")}[query]
    runner = GroupAggregateRunner if query == "aggregation" else RankRunner
    held: list[tuple[int, int]] = []
    advance = runner.advance

    def counting(self, input_wm):
        out = advance(self, input_wm)
        live = self.rows[:self.count] > 0 if query == "aggregation" else self.live[:self.parts.count]
        held.append((int(live.sum()), self.count if query == "aggregation" else self.parts.count))
        return out

    monkeypatch.setattr(runner, "advance", counting)
    result = q.execute(dw.Config(batch_size=50))
    assert result.changelog.num_rows >= n
    running = [keys for keys, _ in held[10:-1]]  # the last is at the end of the input: every key expired
    assert 50 <= min(running) <= max(running) <= 150  # ~1 s of keys
    assert max(ids for _, ids in held) <= 512  # ids are retained, not one per key ever seen


def test_a_state_ttl_is_refused_where_it_means_nothing_or_is_not_written():
    t = _stream([1], [0])
    with pytest.raises(PlanError, match="positive"):
        t.deduplicate(on="k", state_ttl=0)
    with pytest.raises(PlanError, match="window"):
        t.window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count(), state_ttl="1s")
    with pytest.raises(PlanError, match="window"):
        pn.TopN(t.window(dw.Tumble("1s", on="t")).table().plan, 1, (), (dw.asc("v"),), None, 1000)
    with pytest.raises(UnsupportedError, match="updating"):
        t.group_by("k").agg(n=dw.count()).group_by("n").agg(keys=dw.count(), state_ttl="1s")
    with pytest.raises(UnsupportedError, match="distinct"):
        t.group_by("k").agg(n=dw.count_distinct("v"), state_ttl="1s")
    with pytest.raises(PlanError, match="aggregate otherwise"):
        t.group_by("k").agg(state_ttl=dw.count())
