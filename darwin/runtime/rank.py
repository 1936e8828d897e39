"""Runs a top-N or a deduplication (``pn.TopN``, ``pn.Deduplicate``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``darwin.reference.interpreter._Rank``, and
``darwin.plan.ranking``); here a batch is ranked at once. The rows of the partitions it touches
(what the state holds of them, and the batch's) are sorted together by (partition, sort keys,
arrival) and cut at ``n``; the kept rows of the partitions before and after are compared by
their arrival numbers, which name rows uniquely.

Over an appending input, a partition only ever needs its first ``n`` rows: they sit in ``n``
fixed slots per partition, in rank order, so a batch touches only its partitions' slots. Over
an updating input every row is kept (a retraction may bring a lower row back), in flat arrays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.group_index import key_bits
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.ranking import ranking_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.progress import NO_WATERMARK
from darwin.types import DType, Field

ADDS = (pn.ChangeKind.INSERT, pn.ChangeKind.UPDATE_AFTER)
CANONICAL_NAN = np.int64(0x7FF8000000000000)
MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


class _Rows:
    """Rows as columns (values and validity), indexed together."""

    def __init__(self, fields: list[Field], columns: dict[str, Column], length: int) -> None:
        self.fields, self.columns, self.length = fields, columns, length

    @staticmethod
    def empty(fields: list[Field], length: int = 0) -> _Rows:
        return _Rows(fields, {f.name: Column(np.zeros(length, f.dtype.numpy),
                                             np.zeros(length, np.bool_) if f.nullable else None)
                              for f in fields}, length)

    def take(self, at: np.ndarray) -> _Rows:
        return _Rows(self.fields, {n: Column(c.values[at], None if c.valid is None else c.valid[at])
                                   for n, c in self.columns.items()}, len(at))

    def put(self, at: np.ndarray, rows: _Rows, source: np.ndarray) -> None:
        for f in self.fields:
            mine, theirs = self.columns[f.name], rows.columns[f.name]
            mine.values[at] = theirs.values[source]
            if mine.valid is not None:
                mine.valid[at] = True if theirs.valid is None else theirs.valid[source]

    @staticmethod
    def concat(parts: list[_Rows]) -> _Rows:
        fields = parts[0].fields
        columns = {}
        for f in fields:
            values = np.concatenate([p.columns[f.name].values for p in parts]).astype(f.dtype.numpy, copy=False)
            valid = None
            if any(p.columns[f.name].valid is not None for p in parts):
                valid = np.concatenate([_valid(p.columns[f.name], p.length) for p in parts])
            columns[f.name] = Column(values, valid)
        return _Rows(fields, columns, sum(p.length for p in parts))

    def resized(self, length: int) -> _Rows:
        grown = _Rows.empty(self.fields, length)
        n = min(length, self.length)
        grown.put(np.arange(n), self, np.arange(n))
        return grown


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
        n = self.r.n
        if self.r.retracting:  # every row, flat: its partition, arrival number and values
            self.part = np.zeros(0, np.int64)
            self.seq = np.zeros(0, np.int64)
            self.rows = _Rows.empty(self.fields)
        else:  # n slots per partition, in rank order; an empty slot's arrival number is -1
            self.seq = np.full(self.parts.capacity * n, -1, np.int64)
            self.rows = _Rows.empty(self.fields, self.parts.capacity * n)
            self.live = np.zeros(self.parts.capacity, np.bool_)  # windowed: holds rows of an open window

    # -- a batch ----------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        r = self.r
        rows = _Rows(self.fields, {f.name: batch.columns[f.name] for f in self.fields}, batch.length)
        if r.windowed:
            on_time = batch.columns[pn.WINDOW_END].values > self.wm
            self.late_rows += int(batch.length - on_time.sum())
            if not on_time.all():
                rows = rows.take(np.flatnonzero(on_time))
        if rows.length == 0:
            return None
        ids = self.parts.ids(EncodedBatch(rows.columns, rows.length))
        self._grow()
        touched = _first_seen(ids)
        place = np.empty(self.parts.count, np.int64)
        place[touched] = np.arange(len(touched))
        adds = np.ones(rows.length, np.bool_)
        change = batch.columns.get(pn.CHANGE_KIND)
        if change is not None:
            adds = np.isin(change.values, ADDS)
        seq = self.next_seq + np.arange(rows.length, dtype=np.int64)
        self.next_seq += rows.length
        held, held_part, held_seq, old_top = self._held(touched, place)
        added = np.flatnonzero(adds)
        cand = _Rows.concat([held, rows.take(added)])
        cand_part = np.concatenate([held_part, place[ids[added]]])
        cand_seq = np.concatenate([held_seq, seq[added]])
        alive = np.ones(cand.length, np.bool_)
        if not adds.all():
            alive[:held.length] = ~_retracted(held, held_seq, rows.take(np.flatnonzero(~adds)))
        ranked, pos = self._rank(cand, cand_part, cand_seq, np.flatnonzero(alive), len(touched))
        top = pos < r.n
        new_top = np.full(len(touched) * r.n, -1, np.int64)
        new_top[cand_part[ranked[top]] * r.n + pos[top]] = ranked[top]
        self._keep(touched, cand, cand_part, cand_seq, ranked, pos)
        if r.windowed:
            self.live[touched] = True
            return None
        return self._changes(cand, cand_seq, old_top, new_top, len(touched))

    def _grow(self) -> None:
        if self.r.retracting:
            return
        n, have = self.r.n, len(self.live)
        if self.parts.capacity > have:
            self.seq = np.concatenate([self.seq, np.full((self.parts.capacity - have) * n, -1, np.int64)])
            self.rows = self.rows.resized(self.parts.capacity * n)
            self.live = np.concatenate([self.live, np.zeros(self.parts.capacity - have, np.bool_)])

    def _held(self, touched: np.ndarray, place: np.ndarray) -> tuple[_Rows, np.ndarray, np.ndarray, np.ndarray]:
        """The rows the state holds of the ``touched`` partitions (their partition as a place in
        ``touched``, their arrival numbers), and each partition's kept rows as indices into them
        (``n`` per partition in rank order, -1 for none)."""
        n = self.r.n
        if self.r.retracting:
            at = np.flatnonzero(np.isin(self.part, touched))
            held, part, seq = self.rows.take(at), place[self.part[at]], self.seq[at]
            ranked, pos = self._rank(held, part, seq, np.arange(held.length), len(touched))
            top = np.full(len(touched) * n, -1, np.int64)
            kept = pos < n
            top[part[ranked[kept]] * n + pos[kept]] = ranked[kept]
            return held, part, seq, top
        slots = (touched[:, None] * n + np.arange(n)).ravel()
        seq = self.seq[slots]
        present = np.flatnonzero(seq >= 0)
        top = np.full(len(slots), -1, np.int64)
        top[present] = np.arange(len(present))
        return self.rows.take(slots[present]), present // n, seq[present], top

    def _rank(self, rows: _Rows, part: np.ndarray, seq: np.ndarray, among: np.ndarray, parts: int) \
            -> tuple[np.ndarray, np.ndarray]:
        """The rows ``among`` sorted by (partition, sort keys, arrival), and each one's position in
        its partition."""
        keys: list[np.ndarray] = [-seq[among] if self.r.latest_first else seq[among]]
        for k in reversed(self.r.order):
            value, nulls = self._order_key(rows.columns[k.column], self.types[k.column], k.descending, among)
            keys += [value, nulls]
        keys.append(part[among])
        ranked = among[np.lexsort(keys)]
        sorted_part = part[ranked]
        first = np.searchsorted(sorted_part, np.arange(parts))
        return ranked, np.arange(len(ranked)) - first[sorted_part]

    def _order_key(self, c: Column, dtype: DType, descending: bool, among: np.ndarray) \
            -> tuple[np.ndarray, np.ndarray]:
        """Integers ordering as the column's values do (NaN above every number, -0.0 equal to 0.0,
        strings by their text), reversed when descending; and where NULLs go."""
        v = c.values[among]
        if dtype is DType.FLOAT64:
            bits = np.where(np.isnan(v), CANONICAL_NAN, (v + 0.0).view(np.int64))
            key = np.where(bits < 0, bits ^ MAGNITUDE, bits)
        elif dtype is DType.STRING:
            text = np.array([self.pool.value(int(code)) for code in v], dtype=object)
            key = np.unique(text, return_inverse=True)[1].astype(np.int64) if len(text) else v.astype(np.int64)
        else:
            key = v.astype(np.int64)
        if descending:
            key = ~key
        valid = np.ones(len(among), np.bool_) if c.valid is None else c.valid[among]
        return np.where(valid, key, 0), (~valid if descending else valid).astype(np.int8)

    def _keep(self, touched: np.ndarray, cand: _Rows, part: np.ndarray, seq: np.ndarray, ranked: np.ndarray,
              pos: np.ndarray) -> None:
        """What the state holds of the touched partitions from now on."""
        n = self.r.n
        if self.r.retracting:
            rest = np.flatnonzero(~np.isin(self.part, touched))
            self.rows = _Rows.concat([self.rows.take(rest), cand.take(ranked)])
            self.part = np.concatenate([self.part[rest], touched[part[ranked]]])
            self.seq = np.concatenate([self.seq[rest], seq[ranked]])
            return
        slots = (touched[:, None] * n + np.arange(n)).ravel()
        self.seq[slots] = -1
        kept = ranked[pos < n]
        at = touched[part[kept]] * n + pos[pos < n]
        self.seq[at] = seq[kept]
        self.rows.put(at, cand, kept)

    # -- changes ------------------------------------------------------------------------------------
    def _changes(self, cand: _Rows, seq: np.ndarray, old_top: np.ndarray, new_top: np.ndarray, parts: int) \
            -> EncodedBatch | None:
        n = self.r.n
        old_seq = np.where(old_top >= 0, seq[old_top], -1)
        new_seq = np.where(new_top >= 0, seq[new_top], -1)
        if self.r.by_position:
            changed = old_seq != new_seq
            emit_old, emit_new = changed & (old_seq >= 0), changed & (new_seq >= 0)
            take = np.stack([emit_old, emit_new], axis=1).ravel()
            which = np.tile([0, 1], len(changed))[take]
            at = np.repeat(np.arange(len(changed)), 2)[take]
            kinds = np.where(which == 0,
                             np.where(new_seq[at] >= 0, pn.ChangeKind.UPDATE_BEFORE, pn.ChangeKind.DELETE),
                             np.where(old_seq[at] >= 0, pn.ChangeKind.UPDATE_AFTER, pn.ChangeKind.INSERT))
            rows = np.where(which == 0, old_top[at], new_top[at])
            return self._emit(cand, rows, kinds, at % n + 1)
        left = ((old_seq >= 0) & ~np.isin(old_seq, new_seq)).reshape(parts, n)
        came = ((new_seq >= 0) & ~np.isin(new_seq, old_seq)).reshape(parts, n)
        left_i, came_i = np.cumsum(left, axis=1) - 1, np.cumsum(came, axis=1) - 1
        n_left, n_came = left.sum(axis=1), came.sum(axis=1)
        lp, ls = np.nonzero(left)
        cp, cs = np.nonzero(came)
        li, ci = left_i[lp, ls], came_i[cp, cs]
        part = np.concatenate([lp, cp])
        index = np.concatenate([li, ci])
        sub = np.concatenate([np.zeros(len(lp), np.int64), np.ones(len(cp), np.int64)])
        rows = np.concatenate([old_top[lp * n + ls], new_top[cp * n + cs]])
        kinds = np.concatenate([np.where(li < n_came[lp], pn.ChangeKind.UPDATE_BEFORE, pn.ChangeKind.DELETE),
                                np.where(ci < n_left[cp], pn.ChangeKind.UPDATE_AFTER, pn.ChangeKind.INSERT)])
        order = np.lexsort([sub, index, part])
        return self._emit(cand, rows[order], kinds[order] if self.r.updates else None, None)

    def _emit(self, cand: _Rows, rows: np.ndarray, kinds: np.ndarray | None, ranks: np.ndarray | None) \
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
        """Over windows: emit and forget the kept rows of every window the watermark closed."""
        self.wm = input_wm
        if not self.r.windowed:
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
        return self._emit(self.rows, present, None, present % n + 1)

    def counters(self) -> dict[str, int]:
        return {"late_rows": self.late_rows}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        arrays: dict[str, Any] = {**self.parts.saved(), "seq": self.seq}
        if self.r.retracting:
            arrays["part"] = self.part
        else:
            arrays["live"] = self.live
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
            self.rows = _Rows(self.fields, columns, int(body["length"]))
            if self.r.retracting:
                self.part = saved["part"].copy()
            else:
                self.live = saved["live"].copy()
        self.wm, self.next_seq, self.late_rows = int(body["wm"]), int(body["next_seq"]), int(body["late_rows"])
        self._grow()

    def close(self) -> None:
        pass


def _first_seen(ids: np.ndarray) -> np.ndarray:
    """The distinct ids in the order they first appear."""
    unique, first = np.unique(ids, return_index=True)
    return unique[np.argsort(first, kind="stable")]


def _retracted(held: _Rows, seq: np.ndarray, gone: _Rows) -> np.ndarray:
    """Which held rows the retractions ``gone`` take back: per distinct row, as many of its equals
    as are retracted, the earliest arrivals first."""
    both = _Rows.concat([held, gone])
    matrix = np.stack([bits for c in both.columns.values() for bits in _row_bits(c, both.length)], axis=1)
    _, group = np.unique(matrix, axis=0, return_inverse=True)
    group = group.ravel()
    mine, theirs = group[:held.length], group[held.length:]
    wanted = np.bincount(theirs, minlength=group.max() + 1)
    order = np.lexsort([seq, mine])
    sorted_groups = mine[order]
    nth = np.arange(len(order)) - np.searchsorted(sorted_groups, sorted_groups)
    out = np.zeros(held.length, np.bool_)
    out[order] = nth < wanted[sorted_groups]
    return out


def _row_bits(c: Column, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A column as int64 components that are equal where its values are (NULLs equal to each other)."""
    valid = _valid(c, n)
    return np.where(valid, key_bits(c.values), 0), valid.astype(np.int64)


def _valid(c: Column, n: int) -> np.ndarray:
    return np.ones(n, np.bool_) if c.valid is None else c.valid
