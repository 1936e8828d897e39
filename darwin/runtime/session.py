"""Runs a session window aggregation (``pn.SessionAggregate``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_SessionAggregate``). Rows of open sessions are
buffered, not folded: sessions are the runs of a key's rows, in time order, no more than ``gap``
apart, so merging is implied by ordering and needs no bookkeeping (rows are ordered by key in a
counting pass over their dense key ids, and by time only where a key's rows arrived out of order).
When the watermark may have closed a session (it passed the earliest buffered time + gap), the
buffer is split into sessions; the closed ones are folded by the generated fold kernel of updating
aggregations (their rows in arrival order, so a float sum adds as the reference does), emitted and
dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.aggregates import agg_type
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.routing import order_by_bucket
from darwin.timestamps import NO_WATERMARK

NEVER = np.iinfo(np.int64).max


class SessionAggregateRunner:
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool) -> None:
        node = o.node
        assert isinstance(node, pn.SessionAggregate)
        self.node, self.id, self.args = node, o.id, o.args
        self.gap, self.on = node.window.gap_ms, node.window.on
        schema = node.input.schema
        self.keys = GroupKeys([schema.field(k) for k in node.keys])
        self.folds = Folds(node.aggs, schema, config.cache_dir, "session window aggregation", pool)
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.wm = NO_WATERMARK
        self.late_rows = self.null_time_rows = self.windows_fired = 0
        # the buffer, in arrival order: per row its key's id, time, and the value and presence of each
        # aggregate's argument (``argued``: count() has none, every row counts); batches are appended as
        # chunks and joined only when sessions are split (``_joined``)
        self.argued = [(i, name) for i, name in enumerate(self.args) if name is not None]
        self.kid = np.zeros(0, np.int64)
        self.time = np.zeros(0, np.int64)
        self.x = [np.zeros(0, self.folds.slots[i].value_dtype or np.int64) for i, _ in self.argued]
        self.present = [np.zeros(0, np.bool_) for _ in self.argued]
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.earliest = NEVER  # the earliest buffered time

    # -- a batch ----------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        """Buffer the rows (nothing is emitted before a session closes)."""
        n = batch.length
        if n == 0:
            return None
        kid = self.keys.ids(batch)  # every row's key arrives, as in the reference, even a late one
        t = batch.columns[self.on]
        keep = np.ones(n, np.bool_) if t.valid is None else t.valid.copy()
        self.null_time_rows += int(n - keep.sum())
        times = t.values
        doubtful = np.flatnonzero(keep & (times + self.gap <= self.wm))
        if len(doubtful):
            self._joined()
        for i in doubtful.tolist():  # ended already: kept only if it meets an open session of its key
            earlier = np.flatnonzero(keep[:i] & (kid[:i] == kid[i]))
            met = np.any(np.abs(self.time[self.kid == kid[i]] - times[i]) <= self.gap) or \
                np.any(np.abs(times[earlier] - times[i]) <= self.gap)
            if not met:
                keep[i] = False
                self.late_rows += 1
        rows = np.flatnonzero(keep)
        if not len(rows):
            return None
        chunk = [kid[rows], times[rows]]
        for (_, name), x in zip(self.argued, self.x):
            c = batch.columns[name]
            chunk += [c.values[rows].astype(x.dtype, copy=False),
                      np.ones(len(rows), np.bool_) if c.valid is None else c.valid[rows]]
        self.chunks.append(tuple(chunk))
        self.earliest = min(self.earliest, int(times[rows].min()))
        return None

    def _joined(self) -> None:
        """The buffered chunks joined into the buffer's arrays."""
        if not self.chunks:
            return
        columns = [self.kid, self.time, *(a for pair in zip(self.x, self.present) for a in pair)]
        joined = [np.concatenate([mine, *(chunk[j] for chunk in self.chunks)]) for j, mine in enumerate(columns)]
        self.kid, self.time = joined[:2]
        self.x, self.present = joined[2::2], joined[3::2]
        self.chunks = []

    # -- sessions closing -------------------------------------------------------------------------
    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        if self.earliest == NEVER or self.earliest + self.gap > input_wm:
            return None  # no session can have ended: each ends at least gap after its first row
        self._joined()
        order = by_key_then_time(self.kid, self.time, self.keys.count)
        of_row, start, last, session_kid = split_sessions(self.kid, self.time, order, self.gap)
        end = last + self.gap
        closed = end <= input_wm
        if not closed.any():
            return None
        if closed.all():  # every buffered row's session: fold the buffer as it is, keep nothing
            out = self.folds.fold(of_row, len(closed), self._arguments(None))
            kept = np.zeros(0, np.int64)
        else:
            done = closed[of_row]
            rows = np.flatnonzero(done)  # the closed sessions' rows, in arrival order
            number = np.cumsum(closed) - 1  # closed sessions numbered 0..
            out = self.folds.fold(number[of_row[rows]], int(closed.sum()), self._arguments(rows))
            kept = np.flatnonzero(~done)
        fired = np.flatnonzero(closed)
        fired_start, fired_end, fired_kid = start[fired], end[fired], session_kid[fired]
        emit = np.lexsort([fired_kid, fired_start])
        columns = {pn.WINDOW_START: Column(fired_start[emit], None), pn.WINDOW_END: Column(fired_end[emit], None)}
        columns.update({k: Column(c.values, c.valid) for k, c in self.keys.columns(fired_kid[emit]).items()})
        for (name, _), (dtype, _), (values, valid) in zip(self.node.aggs, self.out_types, out):
            columns[name] = Column(values[emit].astype(dtype.numpy), None if valid is None else valid[emit])
        self._drop(kept)
        self.windows_fired += len(fired)
        return EncodedBatch(columns, len(fired))

    def _arguments(self, rows: np.ndarray | None) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """Per aggregate its buffered argument's values and presence (at ``rows``; None: every
        buffered row), None for count()."""
        args: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(self.args)
        for (i, _), x, present in zip(self.argued, self.x, self.present):
            args[i] = (x, present) if rows is None else (x[rows], present[rows])
        return args

    def _drop(self, kept: np.ndarray) -> None:
        """Keep the buffered rows ``kept`` (ascending: the buffer stays in arrival order)."""
        self.kid, self.time = self.kid[kept], self.time[kept]
        self.x = [x[kept] for x in self.x]
        self.present = [p[kept] for p in self.present]
        self.earliest = int(self.time.min()) if len(self.time) else NEVER

    # -- checkpoints -------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        return {"late_rows": self.late_rows, "null_time_rows": self.null_time_rows,
                "windows_fired": self.windows_fired}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        self._joined()
        arrays: dict[str, Any] = {**self.keys.saved(), "kid": self.kid, "time": self.time}
        for (i, _), x, present in zip(self.argued, self.x, self.present):  # by the aggregate's place
            arrays[f"x{i}"], arrays[f"p{i}"] = x, present
        np.savez(directory / name, **arrays)
        return {"file": name, "wm": self.wm, **self.counters()}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.keys.load(saved)
            self.kid, self.time = saved["kid"], saved["time"]
            self.x = [saved[f"x{i}"] for i, _ in self.argued]
            self.present = [saved[f"p{i}"] for i, _ in self.argued]
        self.chunks = []
        self.earliest = int(self.time.min()) if len(self.time) else NEVER
        self.wm = int(body["wm"])
        self.late_rows, self.null_time_rows = int(body["late_rows"]), int(body["null_time_rows"])
        self.windows_fired = int(body["windows_fired"])

    def close(self) -> None:
        pass


@njit(nogil=True, cache=True)
def by_key_then_time(kid: np.ndarray, time: np.ndarray, keys: int) -> np.ndarray:
    """The buffer's rows ordered by key id, then time, equal times in arrival order (a stable sort by
    (key, time)). Key ids are dense (0..keys-1): rows are placed by key in one counting pass, and a
    key's rows, in arrival order, are sorted only if their times go back somewhere (in-order streams:
    never)."""
    order, counts = order_by_bucket(kid, keys)
    hi = 0
    for k in range(keys):
        lo, hi = hi, hi + counts[k]
        for j in range(lo + 1, hi):
            if time[order[j]] < time[order[j - 1]]:
                segment = order[lo:hi].copy()
                order[lo:hi] = segment[np.argsort(time[segment], kind="mergesort")]
                break
    return order


@njit(nogil=True, cache=True)
def split_sessions(kid: np.ndarray, time: np.ndarray, order: np.ndarray, gap: int) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sessions of the rows walked in ``order`` (by key, then time): a new one where the key changes
    or the time jumps by more than ``gap``. Per buffered row its session; per session its first and
    last time and its key id."""
    n = order.shape[0]
    of_row = np.empty(n, np.int64)
    start = np.empty(n, np.int64)
    last = np.empty(n, np.int64)
    session_kid = np.empty(n, np.int64)
    sessions = 0
    for j in range(n):
        i = order[j]
        if j == 0 or kid[i] != kid[order[j - 1]] or time[i] - time[order[j - 1]] > gap:
            start[sessions], session_kid[sessions] = time[i], kid[i]
            sessions += 1
        last[sessions - 1] = time[i]
        of_row[i] = sessions - 1
    return of_row, start[:sessions], last[:sessions], session_kid[:sessions]
