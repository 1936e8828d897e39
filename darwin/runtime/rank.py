"""Runs a top-N or a deduplication (``pn.TopN``, ``pn.Deduplicate``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``darwin.reference.interpreter._Rank``, and
``darwin.plan.ranking``); here a batch is ranked at once, and the kept rows of the partitions it
touches before and after are compared by their arrival numbers, which name rows uniquely.

Over an appending input, a partition only ever needs its first ``n`` rows: they sit in ``n``
fixed slots per partition, in rank order, and the batch's rows go through their partitions'
slots once (``darwin.codegen.top_slots``). Over an updating input every row is kept (a
retraction may bring a lower row back), in flat arrays; the rows of the partitions a batch
touches are sorted together by (partition, sort keys, arrival) and cut at ``n``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.top_slots import top_changes, top_rows, touched_partitions
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.ranking import ranking_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool, concat_columns
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.rows import ADDS, Rows, first_seen, order_components, retracted, sort_rows
from darwin.timestamps import NO_WATERMARK


class RankRunner:
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool) -> None:
        node = o.node
        assert isinstance(node, (pn.TopN, pn.Deduplicate))
        self.r, self.id = ranking_of(node), o.id
        self.pool = pool
        schema = node.input.schema
        self.fields = list(schema.fields)
        self.types = {f.name: f.dtype for f in self.fields}
        self.parts = GroupKeys([schema.field(c) for c in self.r.partition])
        self.wm = NO_WATERMARK
        self.next_seq = 0
        self.late_rows = 0
        self.ttl = node.state_ttl_ms  # with one, ``live`` marks the partitions holding rows
        n = self.r.n
        if self.r.retracting:  # every row, flat: its partition, arrival number and values
            self.part = np.zeros(0, np.int64)
            self.seq = np.zeros(0, np.int64)
            self.rows = Rows.empty(self.fields)
        else:  # n slots per partition, in rank order; an empty slot's arrival number is -1
            self.seq = np.full(self.parts.capacity * n, -1, np.int64)
            self.rows = Rows.empty(self.fields, self.parts.capacity * n)
            self.live = np.zeros(self.parts.capacity, np.bool_)  # windowed: holds rows of an open window
            self.mark = np.full(self.parts.capacity, -1, np.int64)  # touched_partitions' scratch
            self.stamp = np.full(self.parts.capacity, NO_WATERMARK, np.int64)  # watermark at the last change

    # -- a batch ----------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        r = self.r
        rows = Rows.of(self.fields, batch)
        if r.windowed:
            on_time = batch.columns[pn.WINDOW_END].values > self.wm
            self.late_rows += int(batch.length - on_time.sum())
            if not on_time.all():
                rows = rows.take(np.flatnonzero(on_time))
        if rows.length == 0:
            return None
        ids = self.parts.ids(EncodedBatch(rows.columns, rows.length))
        self._grow()
        seq = self.next_seq + np.arange(rows.length, dtype=np.int64)
        self.next_seq += rows.length
        if not r.retracting:
            return self._push_to_slots(rows, ids, seq)
        touched = first_seen(ids)
        place = np.empty(self.parts.count, np.int64)
        place[touched] = np.arange(len(touched))
        adds = np.ones(rows.length, np.bool_)
        change = batch.columns.get(pn.CHANGE_KIND)
        if change is not None:
            adds = np.isin(change.values, ADDS)
        held, held_part, held_seq, old_top = self._held_rows(touched, place)
        added = np.flatnonzero(adds)
        cand = Rows.concat([held, rows.take(added)])
        cand_part = np.concatenate([held_part, place[ids[added]]])
        cand_seq = np.concatenate([held_seq, seq[added]])
        alive = np.ones(cand.length, np.bool_)
        if not adds.all():
            alive[:held.length] = ~retracted(held, held_seq, rows.take(np.flatnonzero(~adds)))
        ranked, pos = self._rank(cand, cand_part, cand_seq, np.flatnonzero(alive), len(touched))
        top = pos < r.n
        new_top = np.full(len(touched) * r.n, -1, np.int64)
        new_top[cand_part[ranked[top]] * r.n + pos[top]] = ranked[top]
        rest = np.flatnonzero(~np.isin(self.part, touched))
        self.rows = Rows.concat([self.rows.take(rest), cand.take(ranked)])
        self.part = np.concatenate([self.part[rest], touched[cand_part[ranked]]])
        self.seq = np.concatenate([self.seq[rest], cand_seq[ranked]])
        return self._changes(cand, cand_seq, old_top, new_top)

    def _push_to_slots(self, rows: Rows, ids: np.ndarray, seq: np.ndarray) -> EncodedBatch | None:
        """An appending input: each touched partition's slots and the batch's rows go through
        ``top_rows`` once; only the rows that end up kept are copied."""
        n = self.r.n
        touched, place = touched_partitions(ids, self.mark)
        slots = (touched[:, None] * n + np.arange(n)).ravel()
        slot_seq = self.seq[slots]
        present = np.flatnonzero(slot_seq >= 0)
        held, held_seq = self.rows.take(slots[present]), slot_seq[present]
        old_top = np.full(len(slots), -1, np.int64)
        old_top[present] = np.arange(len(present))
        keys = self._order_keys(held, rows, np.concatenate([held_seq, seq]))
        top = top_rows(np.concatenate([present // n, place]), keys, n, len(touched))
        came = top >= held.length  # batch rows kept: copied after the held ones
        chosen = top[came] - held.length
        cand = Rows.concat([held, rows.take(chosen)])
        cand_seq = np.concatenate([held_seq, seq[chosen]])
        new_top = top.copy()
        new_top[came] = held.length + np.arange(len(chosen))
        kept = new_top >= 0
        self.seq[slots] = np.where(kept, cand_seq[new_top], -1)
        self.rows.put(slots[kept], cand, new_top[kept])
        if self.r.windowed:
            self.live[touched] = True
            return None
        if self.ttl is not None:  # a partition's last write: a change of the rows it keeps
            changed = (slot_seq != self.seq[slots]).reshape(-1, n).any(axis=1)
            self.stamp[touched[changed]] = self.wm
            self.live[touched] = True
        return self._changes(cand, cand_seq, old_top, new_top)

    def _order_keys(self, held: Rows, rows: Rows, seq: np.ndarray) -> np.ndarray:
        """Rows x components ranking the held rows, then the batch's, as ``sort_rows`` does within a
        partition: each sort key (where NULLs go, then the value), then arrival."""
        read = list(dict.fromkeys(k.column for k in self.r.order))
        both = Rows(self.fields, {c: concat_columns([held.columns[c], rows.columns[c]]) for c in read}, len(seq))
        components = order_components(both, self.types, self.r.order, np.arange(len(seq)), self.pool)
        components.append(-seq if self.r.latest_first else seq)
        return np.ascontiguousarray(np.column_stack(components))  # int64, as the arrival numbers are

    def _grow(self) -> None:
        if self.r.retracting:
            return
        n, have = self.r.n, len(self.live)
        if self.parts.capacity > have:
            self.seq = np.concatenate([self.seq, np.full((self.parts.capacity - have) * n, -1, np.int64)])
            self.rows = self.rows.resized(self.parts.capacity * n)
            self.live = np.concatenate([self.live, np.zeros(self.parts.capacity - have, np.bool_)])
            self.stamp = np.concatenate([self.stamp, np.full(self.parts.capacity - have, NO_WATERMARK, np.int64)])
        if len(self.mark) < self.parts.capacity:
            self.mark = np.full(self.parts.capacity, -1, np.int64)

    def _held_rows(self, touched: np.ndarray, place: np.ndarray) -> tuple[Rows, np.ndarray, np.ndarray, np.ndarray]:
        """Over an updating input: the rows kept of the ``touched`` partitions (their partition as a
        place in ``touched``, their arrival numbers), and each partition's top ``n`` as indices into
        them (-1 for none)."""
        n = self.r.n
        at = np.flatnonzero(np.isin(self.part, touched))
        held, part, seq = self.rows.take(at), place[self.part[at]], self.seq[at]
        ranked, pos = self._rank(held, part, seq, np.arange(held.length), len(touched))
        top = np.full(len(touched) * n, -1, np.int64)
        kept = pos < n
        top[part[ranked[kept]] * n + pos[kept]] = ranked[kept]
        return held, part, seq, top

    def _rank(self, rows: Rows, part: np.ndarray, seq: np.ndarray, among: np.ndarray, parts: int) \
            -> tuple[np.ndarray, np.ndarray]:
        return sort_rows(rows, self.types, self.r.order, self.r.latest_first, part, seq, among, parts, self.pool)

    # -- changes ------------------------------------------------------------------------------------
    def _changes(self, cand: Rows, seq: np.ndarray, old_top: np.ndarray, new_top: np.ndarray) -> EncodedBatch | None:
        """The changes from each touched partition's old top to its new one (indices into ``cand``)."""
        n = self.r.n
        old_seq = np.where(old_top >= 0, seq[old_top], -1)
        new_seq = np.where(new_top >= 0, seq[new_top], -1)
        at, enters, kinds = top_changes(old_seq, new_seq, n, self.r.by_position)
        if self.r.retractions_first:  # every row that left before every row that entered (``ranking``)
            first = np.argsort(enters, kind="stable")
            at, enters, kinds = at[first], enters[first], kinds[first]
        rows = np.where(enters, new_top[at], old_top[at])
        if self.r.by_position:
            return self._emit(cand, rows, kinds, at % n + 1)
        return self._emit(cand, rows, kinds if self.r.updates else None, None)

    def _emit(self, cand: Rows, rows: np.ndarray, kinds: np.ndarray | None, ranks: np.ndarray | None) \
            -> EncodedBatch | None:
        if not len(rows):
            return None
        out = dict(cand.take(rows).columns)
        if self.r.rank is not None:
            assert ranks is not None
            out[self.r.rank] = Column(ranks.astype(np.int64), None)
        if kinds is not None:
            out[pn.CHANGE_KIND] = Column(kinds.astype(np.int64), None)
        return EncodedBatch(out, len(rows))

    # -- event time and checkpoints -------------------------------------------------------------
    def advance(self, input_wm: int) -> EncodedBatch | None:
        """Over windows: emit and forget the kept rows of every window the watermark closed. With a
        state_ttl: forget, silently, the partitions whose time ran out."""
        self.wm = input_wm
        if not self.r.windowed:
            if self.ttl is not None and input_wm != NO_WATERMARK:
                self._expire(input_wm)
            return None
        live = np.flatnonzero(self.live[:self.parts.count])
        ends = self.parts.columns(live)[pn.WINDOW_END].values
        fired = live[ends <= input_wm]
        if not len(fired):
            return None
        fired = fired[np.lexsort([fired, self.parts.columns(fired)[pn.WINDOW_END].values])]
        n = self.r.n
        slots = (fired[:, None] * n + np.arange(n)).ravel()
        present = slots[self.seq[slots] >= 0]
        self.seq[slots] = -1
        self.live[fired] = False
        out = self._emit(self.rows, present, None, present % n + 1)
        self._forget_emptied()
        return out

    def _expire(self, wm: int) -> None:
        """Empty the partitions last changed ``ttl`` before ``wm`` (stamped before any watermark: time
        starts at the first, as a join's rows' does); their keys start afresh if they come again."""
        assert self.ttl is not None
        held = np.flatnonzero(self.live[:self.parts.count])
        stamp = self.stamp[held]
        stamp[stamp == NO_WATERMARK] = wm
        self.stamp[held] = stamp
        gone = held[stamp < wm - self.ttl]
        if not len(gone):
            return
        n = self.r.n
        self.seq[(gone[:, None] * n + np.arange(n)).ravel()] = -1
        self.live[gone] = False
        self._forget_emptied()

    def _forget_emptied(self) -> None:
        """Drop the partitions holding no rows (of fired windows, or expired) once they are a quarter
        of the slots, moving the others to the front in their order (which orders firing): no row of
        a fired window is taken again (``push`` drops it as late), an expired key starts afresh, and
        kept, each window's partitions held ``n`` slots of rows for ever, so a long stream's state
        grew with every window (or key) it saw."""
        count, n = self.parts.count, self.r.n
        open_parts = np.flatnonzero(self.live[:count])
        if (count - len(open_parts)) * 4 < self.parts.capacity:
            return
        slots = (open_parts[:, None] * n + np.arange(n)).ravel()
        at = np.arange(len(slots))
        self.rows.put(at, self.rows.take(slots), at)
        self.seq[:len(slots)] = self.seq[slots]
        self.seq[len(slots):count * n] = -1
        self.live[:count] = False
        self.live[:len(open_parts)] = True
        self.stamp[:len(open_parts)] = self.stamp[open_parts]
        self.stamp[len(open_parts):count] = NO_WATERMARK
        self.parts.retain(open_parts)

    def counters(self) -> dict[str, int]:
        return {"late_rows": self.late_rows}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        arrays: dict[str, Any] = {**self.parts.saved(), "seq": self.seq}
        if self.r.retracting:
            arrays["part"] = self.part
        else:
            arrays["live"], arrays["stamp"] = self.live, self.stamp
        for i, f in enumerate(self.fields):
            c = self.rows.columns[f.name]
            arrays[f"v{i}"] = c.values
            if c.valid is not None:
                arrays[f"m{i}"] = c.valid
        np.savez(directory / name, **arrays)
        return {"file": name, "wm": self.wm, "next_seq": self.next_seq, "late_rows": self.late_rows,
                "length": self.rows.length}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.parts.load(saved)
            self.seq = saved["seq"].copy()
            columns = {f.name: Column(saved[f"v{i}"].copy(), saved[f"m{i}"].copy() if f"m{i}" in saved else None)
                       for i, f in enumerate(self.fields)}
            self.rows = Rows(self.fields, columns, int(body["length"]))
            if self.r.retracting:
                self.part = saved["part"].copy()
            else:
                self.live = saved["live"].copy()
                self.stamp = saved["stamp"].copy() if "stamp" in saved else \
                    np.full(len(self.live), NO_WATERMARK, np.int64)  # a checkpoint from before state_ttl
        self.wm, self.next_seq, self.late_rows = int(body["wm"]), int(body["next_seq"]), int(body["late_rows"])
        self._grow()

    def close(self) -> None:
        pass
