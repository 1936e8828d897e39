"""The OVER runner's incremental paths, compiled against the reference interpreter: rows inserted
in the middle of a partition and at its end, retractions anywhere in it, partitions spanning many
batches, frames of 0 and of more rows than a partition holds, and the slabs that hold partitions
moved and compacted; and ``PartitionSlabs`` against a list per partition."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from test_joins import SETTINGS, assert_agree

import darwin as dw
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.runtime import slabs
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.over import OverRunner
from darwin.runtime.rows import Rows
from darwin.runtime.slabs import PartitionSlabs
from darwin.types import DType, Field


@st.composite
def long_streams(draw) -> dw.Table:
    """Up to 120 rows over 3 partitions, so partitions outlive batches; ``t`` mostly rising (rows
    land at a partition's end) with some rows back in time (they land in its middle)."""
    n = draw(st.integers(1, 120))
    parts = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    back = draw(st.lists(st.sampled_from([0, 0, 0, 1, 40]), min_size=n, max_size=n))
    times = [max(0, 10 * i - 10 * b) for i, b in enumerate(back)]
    values = draw(st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    table = pa.table({"p": pa.array(parts, pa.int64()), "k": pa.array(keys, pa.int64()),
                      "t": pa.array(times, pa.timestamp("ms")), "v": pa.array(values, pa.int64())})
    return dw.from_arrow(table, time="t", max_delay=1000, name="L")


@SETTINGS
@given(left=long_streams(), preceding=st.sampled_from([0, 1, 3, 200]), batch=st.integers(1, 16),
       compact=st.booleans(), order=st.sampled_from([["t", "k"], ["v", "t"], [dw.desc("v"), "k"]]))
def test_over_agrees_incrementally(left, preceding, batch, compact, order):
    """Ordered by ``v``, with NULLs, rows land anywhere in their partition and tie on their keys."""
    frame = dict(partition_by="p", order_by=order, rows=(preceding, 0))
    with mock.patch.object(slabs, "COMPACT_ABOVE", 0 if compact else slabs.COMPACT_ABOVE):
        assert_agree(left.with_columns(mean=dw.avg("v").over(**frame), n=dw.count().over(**frame),
                                       low=dw.min("v").over(**frame)), batch)


@SETTINGS
@given(left=long_streams(), preceding=st.sampled_from([0, 2, 200]), batch=st.integers(1, 16),
       compact=st.booleans())
def test_over_retracts_anywhere_in_a_partition(left, preceding, batch, compact):
    """A top-1 per key retracts its previous winner, wherever it sits in its partition."""
    best = left.top_n(1, by="k", order=[dw.desc("v"), "t"])
    frame = dict(partition_by="p", order_by=[dw.desc("t"), "k"], rows=(preceding, 0))
    with mock.patch.object(slabs, "COMPACT_ABOVE", 0 if compact else slabs.COMPACT_ABOVE):
        assert_agree(best.with_columns(mean=dw.avg("v").over(**frame), high=dw.max("v").over(**frame)), batch)


def _changes(runner: OverRunner, rows: list[tuple[int, int, int]], kind: pn.ChangeKind) -> list[tuple]:
    columns = {c: Column(np.array([r[i] for r in rows], np.int64), None) for i, c in enumerate("ptv")}
    columns[pn.CHANGE_KIND] = Column(np.full(len(rows), kind, np.int64), None)
    out = runner.push(EncodedBatch(columns, len(rows)))
    names = ["p", "t", "v", "n", pn.CHANGE_KIND]
    return [] if out is None else list(zip(*[out.columns[c].values.tolist() for c in names]))


def test_a_retraction_takes_back_only_an_equal_row():
    """A row with a retraction's sort keys but other values stays, whether it is the only row with
    those keys or one of several; an equal one goes (the earliest of equal ones)."""
    t = dw.from_arrow(pa.table({"p": [1], "t": [1], "v": [1]}))
    node = t.with_columns(n=dw.count().over(partition_by="p", order_by="t", rows=(1, 0))).plan.input
    assert isinstance(node, pn.Over)
    runner = OverRunner(op.StreamOperator(0, node, 0, (None,)), dw.Config(), StringPool())
    ins, dele, before, after = (pn.ChangeKind.INSERT, pn.ChangeKind.DELETE, pn.ChangeKind.UPDATE_BEFORE,
                                pn.ChangeKind.UPDATE_AFTER)
    assert _changes(runner, [(1, 1, 5), (1, 2, 6), (1, 2, 7), (1, 2, 7)], ins) == \
        [(1, 1, 5, 1, ins), (1, 2, 6, 2, ins), (1, 2, 7, 2, ins), (1, 2, 7, 2, ins)]
    assert _changes(runner, [(1, 1, 99)], dele) == []  # the only row with its keys
    assert _changes(runner, [(1, 2, 99)], dele) == []  # one of three
    assert _changes(runner, [(1, 1, 5), (1, 2, 7)], dele) == \
        [(1, 1, 5, 1, dele), (1, 2, 7, 2, dele), (1, 2, 6, 2, before), (1, 2, 6, 1, after)]

FIELDS = [Field("x", DType.INT64, False), Field("y", DType.FLOAT64, True)]


def _rows(values: list[int]) -> Rows:
    x = np.array(values, np.int64)
    return Rows(FIELDS, {"x": Column(x, None), "y": Column(x * 0.5, x % 3 != 0)}, len(values))


@given(steps=st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6), st.integers(0, 4)), min_size=1,
                               max_size=6, unique_by=lambda s: s[0]), max_size=25))
def test_slabs_hold_each_partition_in_order(steps):
    """Each step rewrites some partitions: (partition, rows kept, rows appended); the slabs hold
    what a list per partition does, through moves, compactions and a save and load."""
    with mock.patch.object(slabs, "COMPACT_ABOVE", 0):
        held = PartitionSlabs(FIELDS)
        held.ensure(6)
        model: dict[int, list[int]] = {}
        counter = 0
        for i, step in enumerate(steps):
            parts = np.array([p for p, _, _ in step], np.int64)
            keep = np.array([min(k, len(model.get(p, []))) for p, k, _ in step], np.int64)
            counts = np.array([c for _, _, c in step], np.int64)
            added = list(range(counter, counter + int(counts.sum())))
            counter += len(added)
            held.rewrite(parts, keep, _rows(added), np.array(added, np.int64) * 7, counts)
            for (p, _, c), k in zip(step, keep):
                model[p] = model.get(p, [])[:k] + added[:c]
                added = added[c:]
            if i % 2:
                saved = held.saved("h_")
                held = PartitionSlabs(FIELDS)
                held.load(saved, "h_")
        for p in range(6):
            flat, _ = held.spans(np.array([p]), np.array([0]))
            want = model.get(p, [])
            assert held.rows.columns["x"].values[flat].tolist() == want
            assert held.seq[flat].tolist() == [7 * v for v in want]
            valid = held.rows.columns["y"].valid
            assert valid is not None and valid[flat].tolist() == [v % 3 != 0 for v in want]
