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
