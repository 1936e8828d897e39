"""Runs aggregates over windows of rows (``pn.Over``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_Over``). Each partition's rows are held in order
(``PartitionSlabs``) with the aggregates last emitted for them. A batch changes a partition only
from the first position where it inserts or retracts a row (found by binary search of the sort
keys, the last row first: new rows mostly land at the end); only rows from there on are re-sorted
with the new ones, and their frames, their ``preceding`` rows and themselves, folded by the generated
fold kernel of updating aggregations, oldest row first, so every aggregate computes as the
reference's accumulators do; rows whose aggregates changed are emitted.
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
from darwin.runtime.encoding import Column, EncodedBatch, StringPool, concat_columns
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.rows import (
    ADDS,
    Rows,
    first_seen,
    order_key,
    retracted,
    row_bits,
    same_values,
    sort_rows,
)
from darwin.runtime.slabs import PartitionSlabs
from darwin.runtime.stream_operators import InputTime
from darwin.timestamps import NO_WATERMARK
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
        self.folds = Folds(node.aggs, schema, config.cache_dir, "over a window of rows", pool)
        self.results = [Field(name, *agg_type(call, schema, name)) for name, call in node.aggs]
        # each argument travels as a column of its own (``op.StreamOperator.args``), held with the row
        self.held_fields = self.fields + [Field(a, type_of(call.input, schema).dtype or DType.INT64, True)
                                          for a, (_, call) in zip(o.args, node.aggs)
                                          if a is not None and call.input is not None]
        self.args = o.args
        self.order_fields = [schema.field(c) for c in dict.fromkeys(k.column for k in node.order_by)]
        # each held row with the aggregates last emitted for it
        self.slabs = PartitionSlabs(self.held_fields + self.results)
        self.next_seq = 0
        self.wm = NO_WATERMARK

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        rows = Rows.of(self.held_fields, batch)
        ids = self.parts.ids(EncodedBatch(rows.columns, n))
        self.slabs.ensure(self.parts.count)
        touched = first_seen(ids)
        place = np.empty(self.parts.count, np.int64)
        place[touched] = np.arange(len(touched))
        change = batch.columns.get(pn.CHANGE_KIND)
        adds = np.ones(n, np.bool_) if change is None else np.isin(change.values, ADDS)
        seq = self.next_seq + np.arange(n, dtype=np.int64)
        self.next_seq += n
        added, removed = np.flatnonzero(adds), np.flatnonzero(~adds)
        # from where each touched partition changes: its first row retracted, or after a new row
        first = self.slabs.length[touched].copy()
        np.minimum.at(first, place[ids[added]], self._bound(rows.take(added), ids[added], upper=True))
        gone, gone_part, gone_pos = self._retracted(rows.take(removed), ids[removed])
        np.minimum.at(first, place[gone_part], gone_pos)
        # the rows from there on, after the ``preceding`` rows before them their frames need
        context = np.minimum(first, self.node.preceding)
        flat, which = self.slabs.spans(touched, first - context)
        stored = self.slabs.rows.take(flat)
        held, shown = Rows.of(self.held_fields, stored), Rows.of(self.results, stored)
        cand = Rows.concat([held, rows.take(added)])
        part = np.concatenate([which, place[ids[added]]])
        cand_seq = np.concatenate([self.slabs.seq[flat], seq[added]])
        alive = np.ones(cand.length, np.bool_)
        alive[:held.length] = ~np.isin(flat, gone)
        ranked, pos = sort_rows(cand, self.types, self.node.order_by, False, part, cand_seq, np.flatnonzero(alive),
                                len(touched), self.pool)
        targets = np.flatnonzero(pos >= context[part[ranked]])  # the rows whose frames may change
        new = self._frames(cand, ranked, pos, targets)
        out = self._changes(cand, held.length, shown, part, alive, ranked, targets, new)
        region = ranked[targets]
        kept = cand.take(region)
        columns = {f.name: kept.columns[f.name] for f in self.held_fields}
        columns.update(new.columns)
        self.slabs.rewrite(touched, first, Rows(self.slabs.fields, columns, len(region)), cand_seq[region],
                           np.bincount(part[region], minlength=len(touched)))
        return out

    def _bound(self, rows: Rows, parts: np.ndarray, upper: bool) -> np.ndarray:
        """Per row, how many rows of its partition sort before it by the sort keys: the rows whose
        keys are below its own, and with ``upper`` the rows whose keys equal its own too (held rows
        arrived before it). A binary search, after a look at the last row when ``upper``."""
        rows = Rows.of(self.order_fields, rows)
        lo = np.zeros(rows.length, np.int64)
        hi = self.slabs.length[parts].copy()
        if upper:
            some = np.flatnonzero(hi > 0)
            after_last = self._compare(self.slabs.at(parts[some], hi[some] - 1), rows.take(some)) <= 0
            lo[some[after_last]] = hi[some[after_last]]
            hi[some[~after_last]] -= 1
        active = np.flatnonzero(lo < hi)
        while len(active):
            mid = (lo[active] + hi[active]) // 2
            c = self._compare(self.slabs.at(parts[active], mid), rows.take(active))
            right = c <= 0 if upper else c < 0
            lo[active] = np.where(right, mid + 1, lo[active])
            hi[active] = np.where(right, hi[active], mid)
            active = active[lo[active] < hi[active]]
        return lo

    def _compare(self, flat: np.ndarray, rows: Rows) -> np.ndarray:
        """Row by row, -1, 0 or 1 as held row ``flat[i]`` sorts before, with or after ``rows[i]``
        by the sort keys (NULLs and directions as ``sort_rows`` orders them)."""
        m = len(flat)
        result = np.zeros(m, np.int64)
        both = np.arange(2 * m)
        for k in self.node.order_by:
            mine = self.slabs.rows.columns[k.column]
            column = concat_columns([Column(mine.values[flat], None if mine.valid is None else mine.valid[flat]),
                                     rows.columns[k.column]])
            value, nulls = order_key(column, self.types[k.column], k.descending, both, self.pool)
            for key in ([] if nulls is None else [nulls.astype(np.int64)]) + [value]:
                undecided = result == 0
                a, b = key[:m][undecided], key[m:][undecided]
                result[undecided] = (a > b).astype(np.int64) - (a < b)
        return result

    def _retracted(self, gone: Rows, parts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The held rows the retractions ``gone`` take back (the earliest equal ones): their flat
        indices, partitions and positions. Only the rows with a retraction's sort keys are looked at."""
        if not gone.length:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        lo, hi = self._bound(gone, parts, upper=False), self._bound(gone, parts, upper=True)
        n = hi - lo
        offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        pos = np.repeat(lo, n) + offset
        cand_part = np.repeat(parts, n)
        at = self.slabs.at(cand_part, pos)
        if (n == 1).all() and len(np.unique(at)) == len(at):
            # each retraction's keys are one held row's, a row of its own: taken back if it is equal
            stored = self.slabs.rows.take(at)
            same = np.ones(len(at), np.bool_)
            for f in self.held_fields:
                mine, theirs = row_bits(stored.columns[f.name], len(at)), row_bits(gone.columns[f.name], len(at))
                same &= (mine[0] == theirs[0]) & (mine[1] == theirs[1])
            return at[same], parts[same], pos[same]
        flat, unique = np.unique(at, return_index=True)
        stored = self.slabs.rows.take(flat)
        held = Rows.of(self.held_fields, stored)
        taken = retracted(held, self.slabs.seq[flat], gone)
        return flat[taken], cand_part[unique][taken], pos[unique][taken]

    def _frames(self, cand: Rows, ranked: np.ndarray, pos: np.ndarray, targets: np.ndarray) -> Rows:
        """The aggregates of ranked rows ``targets`` over each one and the ``preceding`` rows before it."""
        m = len(targets)
        width = np.minimum(pos[targets], self.node.preceding) + 1  # rows stay in their partition: pos counts within it
        frame = np.repeat(np.arange(m), width)  # for each frame member, the row whose frame it is
        offset = np.arange(len(frame)) - np.repeat(np.cumsum(width) - width, width)  # 0 for the oldest
        source = ranked[np.repeat(targets - width + 1, width) + offset]
        args: list[tuple[np.ndarray, np.ndarray] | None] = []
        for name in self.args:
            if name is None:  # count(): every row counts
                args.append(None)
            else:
                c = cand.columns[name]
                args.append((c.values[source], np.ones(len(source), np.bool_) if c.valid is None else c.valid[source]))
        columns = {f.name: Column(np.asarray(result).astype(f.dtype.numpy), valid)
                   for f, (result, valid) in zip(self.results, self.folds.fold(frame, m, args))}
        return Rows(self.results, columns, m)

    def _changes(self, cand: Rows, held: int, shown: Rows, part: np.ndarray, alive: np.ndarray,
                 ranked: np.ndarray, targets: np.ndarray, new: Rows) -> EncodedBatch | None:
        """-D for held rows retracted, of every partition, then per target row, in rank order, +I
        (new) or -U/+U (aggregates changed); partitions in the order the batch first touched them."""
        gone = np.flatnonzero(~alive[:held])
        old_at = np.full(cand.length, -1, np.int64)
        old_at[:held] = np.arange(held)
        row = ranked[targets]
        was = old_at[row]  # the target row's index among held rows, -1 if it is new
        same = np.zeros(len(row), np.bool_)
        kept = was >= 0
        same[kept] = _equal(shown.take(was[kept]), new.take(np.flatnonzero(kept)))
        updated = np.flatnonzero(kept & ~same)
        inserted = np.flatnonzero(~kept)
        # events: (partition, phase, position, sub): phase 0 deletes in held order, 1 the rest in rank order
        event_part = np.concatenate([part[gone], part[row[inserted]], part[row[updated]], part[row[updated]]])
        phase = np.concatenate([np.zeros(len(gone), np.int64), np.ones(len(inserted) + 2 * len(updated), np.int64)])
        position = np.concatenate([gone, targets[inserted], targets[updated], targets[updated]])
        sub = np.concatenate([np.zeros(len(gone) + len(inserted) + len(updated), np.int64),
                              np.ones(len(updated), np.int64)])
        kinds = np.concatenate([np.full(len(gone), pn.ChangeKind.DELETE), np.full(len(inserted), pn.ChangeKind.INSERT),
                                np.full(len(updated), pn.ChangeKind.UPDATE_BEFORE),
                                np.full(len(updated), pn.ChangeKind.UPDATE_AFTER)])
        if not len(kinds):
            return None
        rows = Rows.concat([cand.take(gone), cand.take(row[inserted]), cand.take(row[updated]),
                            cand.take(row[updated])])
        results = Rows.concat([shown.take(gone), new.take(inserted), shown.take(was[updated]), new.take(updated)])
        order = np.lexsort([sub, position, event_part, phase])  # every partition's deletes first
        columns = {f.name: rows.columns[f.name] for f in self.fields}
        columns.update(results.columns)
        columns = {name: Column(c.values[order], None if c.valid is None else c.valid[order])
                   for name, c in columns.items()}
        columns[pn.CHANGE_KIND] = Column(kinds[order].astype(np.int64), None)
        return EncodedBatch(columns, len(order))

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        np.savez(directory / name, **self.parts.saved(), **self.slabs.saved("held_"))
        return {"file": name, "wm": self.wm, "next_seq": self.next_seq}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.parts.load(saved)
            self.slabs.load(saved, "held_")
        self.wm, self.next_seq = int(body["wm"]), int(body["next_seq"])


def _equal(a: Rows, b: Rows) -> np.ndarray:
    """Row by row: the same values (NaN equal to NaN) and the same NULLs."""
    same = np.ones(a.length, np.bool_)
    for f in a.fields:
        x, y = a.columns[f.name], b.columns[f.name]
        same &= same_values((x.values, x.valid), (y.values, y.valid), a.length)
    return same
