"""Aggregates over windows of rows (OVER ... ROWS n PRECEDING): the compiled engine against the
reference interpreter (changelogs in order), over appending and updating inputs, and the final
table against a plain Python computation."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_joins import HOW, SETTINGS, assert_agree, streams

import darwin as dw
from darwin.errors import PlanError, UnsupportedError


@SETTINGS
@given(left=streams("L"), preceding=st.integers(0, 4), batch=st.integers(1, 8),
       order=st.sampled_from([["t"], [dw.desc("v"), "t"], ["s"]]))
def test_over_agrees(left, preceding, order, batch):
    frame = dict(partition_by="k", order_by=order, rows=(preceding, 0))
    assert_agree(left.with_columns(mean=dw.avg("v").over(**frame), n=dw.count().over(**frame),
                                   low=dw.min("v").over(**frame), total=dw.sum("v").over(**frame)), batch)
    assert_agree(left.select("k", "v", high=dw.max("t").over(order_by="t", rows=(preceding, 0))), batch)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8))
def test_over_an_updating_input_retracts(left, right, how, batch):
    """q6's shape: a top-1 per key, then an average over each partition's last rows."""
    joined = left.join(right, on=[("k", "k")], how=how).select("k", "s", "t", v=dw.col("v_right"))
    assert_agree(joined.with_columns(mean=dw.avg("v").over(partition_by="s", order_by="t", rows=(2, 0))), batch)
    best = left.top_n(1, by="k", order=dw.desc("v"))
    assert_agree(best.with_columns(mean=dw.avg("v").over(partition_by="s", order_by="t", rows=(3, 0))), batch)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_the_final_table_averages_the_last_rows(left, batch):
    rows = left.plan.source.table.to_pylist()
    q = left.select("k", "t", "v", mean=dw.avg("v").over(partition_by="k",
                                                                                    order_by=["t", "v"], rows=(2, 0)))
    result = q.collect(dw.Config(batch_size=batch))
    by_key: dict = {}
    for r in rows:
        by_key.setdefault(r["k"], []).append(r)
    want = []
    for k, part in by_key.items():
        part.sort(key=lambda r: (r["t"], r["v"]))
        for i, r in enumerate(part):
            frame = [x["v"] for x in part[max(0, i - 2):i + 1]]
            want.append((k, r["t"], r["v"], sum(frame) / len(frame)))
    got = [(r["k"], r["t"], r["v"], r["mean"]) for r in result.to_pylist()]
    assert sorted(got, key=str) == sorted(want, key=str)


def test_over_refuses_what_it_cannot_do():
    t = dw.from_arrow(pa.table({"k": [1], "v": [2]}))
    with pytest.raises(UnsupportedError, match="CURRENT|current"):
        t.with_columns(a=dw.avg("v").over(order_by="v", rows=(1, 1)))
    with pytest.raises(UnsupportedError, match="UNBOUNDED"):
        t.with_columns(a=dw.avg("v").over(order_by="v", rows=(None, 0)))
    with pytest.raises(PlanError, match="order_by"):
        t.with_columns(a=dw.avg("v").over(partition_by="k", rows=(1, 0)))
    with pytest.raises(PlanError, match="already a column"):
        t.with_columns(v=dw.avg("v").over(order_by="k", rows=(1, 0)))


def _ties(times: list[int], keys: list[int], values: list[int], primary_key: str | None = None) -> dw.Table:
    n = len(times)
    return dw.from_arrow(pa.table({"ts": pa.array(times, pa.timestamp("ms")), "k": keys, "v": values,
                                   "id": range(n)}), time="ts", max_delay="10s", primary_key=primary_key)


def test_an_over_window_over_another_is_refused_where_ties_would_rank_by_batches():
    """An OVER window reading another's result ranked rows tied in its order by when their changes
    reached it: an out-of-order row updates the rows after it, which came again after their ties, and
    partitions came one by one. Over these rows the second sum of row 0 was 19 at batch size 1 and
    27 at 3 and 1000 (as SQL's two windows in one SELECT were, d10a081). Chained, or two windows in
    one with_columns, it is refused unless a unique key of its input is among its partition and
    order columns."""
    rows = ([1000, 1000, 0, 0, 2000], [0, 0, 0, 0, 0], [6, 0, 7, 7, 7])
    first = _ties(*rows).with_columns(a=dw.sum("v").over(partition_by="k", order_by="ts", rows=(1, 0)))
    with pytest.raises(PlanError, match=r"over window of b: it reads another over window's result, whose rows tied "
                                        r"in order_by=\['ts'\] within partition_by=\['k'\] would rank by where "
                                        r"batches ended; that result has no unique key"):
        first.with_columns(b=dw.sum("a").over(partition_by="k", order_by="ts", rows=(1, 0)))
    with pytest.raises(PlanError, match=r"over window of b: .* order_by=\['ts'\] would rank"):
        _ties(*rows).with_columns(a=dw.sum("v").over(partition_by="k", order_by="ts", rows=(1, 0)),
                                  b=dw.max("v").over(order_by="ts", rows=(1, 0)))
    keyed = _ties(*rows, primary_key="id").with_columns(a=dw.sum("v").over(partition_by="k", order_by="ts",
                                                                           rows=(1, 0)))
    with pytest.raises(PlanError, match=r"that result is keyed by \['id'\]"):
        keyed.with_columns(b=dw.sum("a").over(partition_by="k", order_by="ts", rows=(1, 0)))
    ordered = keyed.with_columns(b=dw.sum("a").over(partition_by="k", order_by=["ts", "id"], rows=(1, 0)))
    for batch in (1, 3, 1000):  # rows 2, 3 (ts 0), 0, 1 (ts 1000), 4: the second sums a's of id order
        assert sorted((r["id"], r["b"]) for r in ordered.collect(dw.Config(batch_size=batch)).to_pylist()) == \
            [(0, 27), (1, 19), (2, 7), (3, 21), (4, 13)]


@SETTINGS
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(-5, 9)), min_size=1, max_size=25),
       second_partition=st.sampled_from([(), ("k",)]))
def test_an_over_window_over_another_ordered_by_a_unique_key_is_the_same_at_any_batch_size(rows, second_partition):
    """With the input's unique key in its order no rows tie: every batch size gives one final table."""
    t = _ties([ts * 1000 for ts, _, _ in rows], [k for _, k, _ in rows], [v for _, _, v in rows], primary_key="id")
    q = t.with_columns(a=dw.sum("v").over(partition_by="k", order_by=["ts", "id"], rows=(2, 0))) \
        .with_columns(b=dw.max("a").over(partition_by=second_partition, order_by=["ts", "id"], rows=(1, 0)))
    results = {(mode, batch): sorted((r["id"], r["a"], r["b"])
                                     for r in q.collect(dw.Config(mode=mode, batch_size=batch)).to_pylist())
               for mode in ("compiled", "interpreted") for batch in (1, 3, 1000)}
    assert len(set(map(tuple, results.values()))) == 1, results
