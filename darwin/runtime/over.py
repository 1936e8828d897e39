"""Runs aggregates over windows of rows (``pn.Over``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_Over``). Every row is kept, flat, with the
aggregates last emitted for it. A batch's partitions are re-sorted with their new rows (and
without retracted ones); each row's frame, its ``preceding`` rows and itself, is folded by the
generated fold kernel of updating aggregations, oldest row first, so every aggregate computes as
the reference's accumulators do; rows whose aggregates changed are emitted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.aggregates import agg_type
from darwin.plan.exprs import type_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.progress import NO_WATERMARK
from darwin.runtime.rows import ADDS, Rows, first_seen, retracted, same_values, sort_rows
from darwin.runtime.stream_operators import InputTime
from darwin.types import DType, Field


class OverRunner(InputTime):
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool) -> None:
        node = o.node
        assert isinstance(node, pn.Over)
        self.node, self.id, self.pool = node, o.id, pool
        schema = node.input.schema
        self.fields = list(schema.fields)
        self.types = {f.name: f.dtype for f in self.fields}
        self.parts = GroupKeys([schema.field(c) for c in node.partition_by])
        self.folds = Folds(node.aggs, schema, config.cache_dir, "over a window of rows")
        self.results = [Field(name, *agg_type(call, schema, name)) for name, call in node.aggs]
        # each argument travels as a column of its own (``op.StreamOperator.args``), held with the row
        self.held_fields = self.fields + [Field(a, type_of(call.input, schema).dtype or DType.INT64, True)
                                          for a, (_, call) in zip(o.args, node.aggs)
                                          if a is not None and call.input is not None]
        self.args = o.args
        self.rows = Rows.empty(self.held_fields)
        self.shown = Rows.empty(self.results)  # the aggregates last emitted, per held row
        self.part = np.zeros(0, np.int64)
        self.seq = np.zeros(0, np.int64)
        self.next_seq = 0
        self.wm = NO_WATERMARK

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        rows = Rows(self.held_fields, {f.name: batch.columns[f.name] for f in self.held_fields}, n)
        ids = self.parts.ids(EncodedBatch(rows.columns, n))
        touched = first_seen(ids)
        place = np.empty(self.parts.count, np.int64)
        place[touched] = np.arange(len(touched))
        change = batch.columns.get(pn.CHANGE_KIND)
        adds = np.ones(n, np.bool_) if change is None else np.isin(change.values, ADDS)
        seq = self.next_seq + np.arange(n, dtype=np.int64)
        self.next_seq += n
        at = np.flatnonzero(np.isin(self.part, touched))  # the held rows of the touched partitions, in order
        held, shown = self.rows.take(at), self.shown.take(at)
        added = np.flatnonzero(adds)
        cand = Rows.concat([held, rows.take(added)])
        part = np.concatenate([place[self.part[at]], place[ids[added]]])
        cand_seq = np.concatenate([self.seq[at], seq[added]])
        alive = np.ones(cand.length, np.bool_)
        if not adds.all():
            alive[:held.length] = ~retracted(held, self.seq[at], rows.take(np.flatnonzero(~adds)))
        ranked, pos = sort_rows(cand, self.types, self.node.order_by, False, part, cand_seq, np.flatnonzero(alive),
                                len(touched), self.pool)
        new = self._frames(cand, ranked, pos)
        out = self._changes(cand, held.length, shown, part, alive, ranked, new)
        rest = np.flatnonzero(~np.isin(self.part, touched))
        self.rows = Rows.concat([self.rows.take(rest), cand.take(ranked)])
        self.shown = Rows.concat([self.shown.take(rest), new])
        self.part = np.concatenate([self.part[rest], touched[part[ranked]]])
        self.seq = np.concatenate([self.seq[rest], cand_seq[ranked]])
        return out

    def _frames(self, cand: Rows, ranked: np.ndarray, pos: np.ndarray) -> Rows:
        """Each ranked row's aggregates over itself and the ``preceding`` rows before it."""
        m = len(ranked)
        width = np.minimum(pos, self.node.preceding) + 1  # rows stay in their partition: pos counts within it
        frame = np.repeat(np.arange(m), width)  # for each frame member, the row whose frame it is
        offset = np.arange(len(frame)) - np.repeat(np.cumsum(width) - width, width)  # 0 for the oldest
        source = ranked[frame - np.repeat(width - 1, width) + offset]
        args = []
        for name in self.args:
            if name is None:
                args.append((np.zeros(len(source), np.int64), np.ones(len(source), np.bool_)))
            else:
                c = cand.columns[name]
                args.append((c.values[source], np.ones(len(source), np.bool_) if c.valid is None else c.valid[source]))
        columns = {f.name: Column(np.asarray(result).astype(f.dtype.numpy), valid)
                   for f, (result, valid) in zip(self.results, self.folds.fold(frame, m, args))}
        return Rows(self.results, columns, m)

    def _changes(self, cand: Rows, held: int, shown: Rows, part: np.ndarray, alive: np.ndarray,
                 ranked: np.ndarray, new: Rows) -> EncodedBatch | None:
        """-D for held rows retracted, then per ranked row +I (new) or -U/+U (aggregates changed)."""
        gone = np.flatnonzero(~alive[:held])
        old_at = np.full(cand.length, -1, np.int64)
        old_at[:held] = np.arange(held)
        was = old_at[ranked]  # the ranked row's index among held rows, -1 if it is new
        same = np.zeros(len(ranked), np.bool_)
        kept = was >= 0
        same[kept] = _equal(shown.take(was[kept]), new.take(np.flatnonzero(kept)))
        updated = np.flatnonzero(kept & ~same)
        inserted = np.flatnonzero(~kept)
        # events: (partition, phase, position, sub): phase 0 deletes in held order, 1 the rest in rank order
        rank_pos = np.arange(len(ranked))
        event_part = np.concatenate([part[gone], part[ranked[inserted]], part[ranked[updated]],
                                     part[ranked[updated]]])
        phase = np.concatenate([np.zeros(len(gone), np.int64), np.ones(len(inserted) + 2 * len(updated), np.int64)])
        position = np.concatenate([gone, rank_pos[inserted], rank_pos[updated], rank_pos[updated]])
        sub = np.concatenate([np.zeros(len(gone) + len(inserted) + len(updated), np.int64),
                              np.ones(len(updated), np.int64)])
        kinds = np.concatenate([np.full(len(gone), pn.ChangeKind.DELETE), np.full(len(inserted), pn.ChangeKind.INSERT),
                                np.full(len(updated), pn.ChangeKind.UPDATE_BEFORE),
                                np.full(len(updated), pn.ChangeKind.UPDATE_AFTER)])
        if not len(kinds):
            return None
        rows = Rows.concat([cand.take(gone), cand.take(ranked[inserted]), cand.take(ranked[updated]),
                            cand.take(ranked[updated])])
        results = Rows.concat([shown.take(gone), new.take(inserted), shown.take(was[updated]), new.take(updated)])
        order = np.lexsort([sub, position, phase, event_part])
        columns = {f.name: rows.columns[f.name] for f in self.fields}
        columns.update(results.columns)
        columns = {name: Column(c.values[order], None if c.valid is None else c.valid[order])
                   for name, c in columns.items()}
        columns[pn.CHANGE_KIND] = Column(kinds[order].astype(np.int64), None)
        return EncodedBatch(columns, len(order))

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        arrays: dict[str, Any] = {**self.parts.saved(), "part": self.part, "seq": self.seq}
        for prefix, rows in (("r", self.rows), ("s", self.shown)):
            for i, f in enumerate(rows.fields):
                c = rows.columns[f.name]
                arrays[f"{prefix}v{i}"] = c.values
                if c.valid is not None:
                    arrays[f"{prefix}m{i}"] = c.valid
        np.savez(directory / name, **arrays)
        return {"file": name, "wm": self.wm, "next_seq": self.next_seq}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.parts.load(saved)
            self.part, self.seq = saved["part"], saved["seq"]
            n = len(self.seq)
            self.rows, self.shown = (
                Rows(rows.fields, {f.name: Column(saved[f"{p}v{i}"], saved[f"{p}m{i}"] if f"{p}m{i}" in saved else None)
                                   for i, f in enumerate(rows.fields)}, n)
                for p, rows in (("r", self.rows), ("s", self.shown)))
        self.wm, self.next_seq = int(body["wm"]), int(body["next_seq"])


def _equal(a: Rows, b: Rows) -> np.ndarray:
    """Row by row: the same values (NaN equal to NaN) and the same NULLs."""
    same = np.ones(a.length, np.bool_)
    for f in a.fields:
        x, y = a.columns[f.name], b.columns[f.name]
        same &= same_values((x.values, x.valid), (y.values, y.valid), a.length)
    return same
