"""Runs a session window aggregation (``pn.SessionAggregate``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_SessionAggregate``). Rows of open sessions are
buffered, not folded; each buffered row holds the id of its session. Sessions are merged as rows
arrive, by a compiled pass over each batch in arrival order (``assign_sessions``): a row joins every
open session of its key its window [t, t + gap] meets (they merge: union-find over session ids), or
opens one, or is late. Over a source's rows each row is judged by the source's watermark just after
it (the rows come with the source's progress, ``op.PROGRESS_COLUMN``): a session whose end that
watermark has reached is closed for the row, and fires with the sessions that closed at the same row
(ordered by start, then by the order its key first arrived), so what forms and in which order it is
emitted does not depend on where batches end. Closed sessions are folded by the generated fold
kernel of updating aggregations (their rows in arrival order, so a float sum adds as the reference
does), emitted and dropped.
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
from darwin.plan.temporal import checks_window_times
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.progress import check_window_times
from darwin.runtime.routing import order_by_bucket
from darwin.timestamps import NO_WATERMARK

LATE = -1  # a row's session: none, the row was late


class SessionAggregateRunner:
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool) -> None:
        node = o.node
        assert isinstance(node, pn.SessionAggregate)
        self.node, self.id, self.args = node, o.id, o.args
        self.timing = o.timing  # the source whose progress each row comes with, if its rows are judged one by one
        self.gap, self.on = node.window.gap_ms, node.window.on
        self.checks_times = checks_window_times(node.input, self.on)  # not a time attribute: any int64
        schema = node.input.schema
        self.keys = GroupKeys([schema.field(k) for k in node.keys])
        self.folds = Folds(node.aggs, schema, config.cache_dir, "session window aggregation", pool)
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.wm = NO_WATERMARK
        self.late_rows = self.null_time_rows = self.windows_fired = 0
        # the buffer, in arrival order: per row its session, and the value and presence of each
        # aggregate's argument (``argued``: count() has none, every row counts); batches are appended
        # as chunks and joined only when sessions fire (``_joined``)
        self.argued = [(i, name) for i, name in enumerate(self.args) if name is not None]
        self.session = np.zeros(0, np.int64)
        self.x = [np.zeros(0, self.folds.slots[i].value_dtype or np.int64) for i, _ in self.argued]
        self.present = [np.zeros(0, np.bool_) for _ in self.argued]
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.sessions = Sessions()

    # -- a batch ----------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        """Merge the rows into their keys' sessions and buffer them; emit the sessions their
        watermarks closed, in the order they closed."""
        n = batch.length
        if n == 0:
            return None
        kid = self.keys.ids(batch)  # every row's key arrives, as in the reference, even a late one
        t = batch.columns[self.on]
        timed = np.ones(n, np.bool_) if t.valid is None else t.valid
        self.null_time_rows += int(n - timed.sum())
        marks = self._marks(batch)
        rows = np.flatnonzero(timed)
        times = t.values[rows].astype(np.int64, copy=False)
        if self.checks_times:
            check_window_times(times, self.on)
        session = self.sessions.assign(kid[rows], times, marks[rows], self.gap, self.keys.count)
        kept = session != LATE
        self.late_rows += int(len(kept) - kept.sum())
        rows = rows[kept]
        if len(rows):
            chunk = [session[kept]]
            for (_, name), x in zip(self.argued, self.x):
                c = batch.columns[name]
                chunk += [c.values[rows].astype(x.dtype, copy=False),
                          np.ones(len(rows), np.bool_) if c.valid is None else c.valid[rows]]
            self.chunks.append(tuple(chunk))
        if self.timing is None:
            return None  # judged by the watermark before the batch: nothing closes before it moves
        progress = np.maximum.accumulate(marks)  # the watermark after each row
        return self._fire(int(progress[-1]), progress)

    def _marks(self, batch: EncodedBatch) -> np.ndarray:
        """The watermark each row is judged by: the source's just after it, or the operator's before the batch."""
        if self.timing is None:
            return np.full(batch.length, self.wm, np.int64)
        progress = batch.columns[op.PROGRESS_COLUMN].values
        marks = np.where(progress == NO_WATERMARK, NO_WATERMARK, progress - self.timing.delay_ms)
        return np.maximum(marks, self.wm)

    def _joined(self) -> None:
        """The buffered chunks joined into the buffer's arrays."""
        if not self.chunks:
            return
        columns = [self.session, *(a for pair in zip(self.x, self.present) for a in pair)]
        joined = [np.concatenate([mine, *(chunk[j] for chunk in self.chunks)]) for j, mine in enumerate(columns)]
        self.session = joined[0]
        self.x, self.present = joined[1::2], joined[2::2]
        self.chunks = []

    # -- sessions closing -------------------------------------------------------------------------
    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return self._fire(input_wm, None)

    def _fire(self, wm: int, progress: np.ndarray | None) -> EncodedBatch | None:
        """The sessions whose end ``wm`` has reached, folded and emitted: ordered by the row whose
        watermark (``progress``, per row of the batch; None: all at once) closed them, then by start,
        then by the order their keys first arrived; they and their rows leave the state."""
        s = self.sessions
        closed = s.closed(wm)
        if not len(closed):
            return None
        start, end, key = s.start[closed], s.end[closed], s.key[closed]
        at = np.zeros(len(closed), np.int64) if progress is None else np.searchsorted(progress, end)
        emit = closed[np.lexsort([key, start, at])]  # session ids in the order they are emitted
        number = np.full(s.count, -1, np.int64)
        number[emit] = np.arange(len(emit))
        self._joined()
        of_row = number[s.roots(self.session)]
        done = of_row >= 0
        rows = np.flatnonzero(done)  # the closed sessions' rows, in arrival order
        out = self.folds.fold(of_row[rows], len(emit), self._arguments(rows))
        columns = {pn.WINDOW_START: Column(s.start[emit], None), pn.WINDOW_END: Column(s.end[emit], None)}
        columns.update({k: Column(c.values, c.valid) for k, c in self.keys.columns(s.key[emit]).items()})
        for (name, _), (dtype, _), (values, valid) in zip(self.node.aggs, self.out_types, out):
            columns[name] = Column(values.astype(dtype.numpy), valid)
        kept = np.flatnonzero(~done)
        self.session = s.drop(closed)[self.session[kept]]
        self.x = [x[kept] for x in self.x]
        self.present = [p[kept] for p in self.present]
        self.windows_fired += len(emit)
        return EncodedBatch(columns, len(emit))

    def _arguments(self, rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """Per aggregate its buffered argument's values and presence at ``rows``, None for count()."""
        args: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(self.args)
        for (i, _), x, present in zip(self.argued, self.x, self.present):
            args[i] = (x[rows], present[rows])
        return args

    # -- checkpoints -------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        return {"late_rows": self.late_rows, "null_time_rows": self.null_time_rows,
                "windows_fired": self.windows_fired}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        self._joined()
        arrays: dict[str, Any] = {**self.keys.saved(), "session": self.session, **self.sessions.saved()}
        for (i, _), x, present in zip(self.argued, self.x, self.present):  # by the aggregate's place
            arrays[f"x{i}"], arrays[f"p{i}"] = x, present
        np.savez(directory / name, **arrays)
        return {"file": name, "wm": self.wm, **self.counters()}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.keys.load(saved)
            self.x = [saved[f"x{i}"] for i, _ in self.argued]
            self.present = [saved[f"p{i}"] for i, _ in self.argued]
            if "session" in saved:
                self.session = saved["session"]
                self.sessions.load(saved, self.keys.count)
            else:  # a checkpoint of the runner that split its rows into sessions as they fired
                self.session = self.sessions.split(saved["kid"], saved["time"], self.gap, self.keys.count)
        self.chunks = []
        self.wm = int(body["wm"])
        self.late_rows, self.null_time_rows = int(body["late_rows"]), int(body["null_time_rows"])
        self.windows_fired = int(body["windows_fired"])

    def close(self) -> None:
        pass


class Sessions:
    """The open sessions: per id its start, end and key id; ``parent`` links an id merged into another
    to it (union-find); each key's open sessions are a list (``head`` per key, ``next`` per session)."""

    def __init__(self) -> None:
        self.count = 0
        self.start = np.zeros(16, np.int64)
        self.end = np.zeros(16, np.int64)
        self.key = np.zeros(16, np.int64)
        self.parent = np.zeros(16, np.int64)
        self.next = np.zeros(16, np.int64)
        self.head = np.full(16, -1, np.int64)

    def assign(self, kid: np.ndarray, time: np.ndarray, marks: np.ndarray, gap: int, keys: int) -> np.ndarray:
        """Each row's session (``LATE`` for a late row), merging and opening sessions as the rows come."""
        self._room(self.count + len(kid), keys)
        session = np.empty(len(kid), np.int64)
        self.count = assign_sessions(kid, time, marks, gap, self.head, self.next, self.start, self.end, self.key,
                                     self.parent, self.count, session)
        return session

    def closed(self, wm: int) -> np.ndarray:
        """The ids of the sessions (not merged into another) whose end ``wm`` has reached."""
        ended = np.flatnonzero(self.end[:self.count] <= wm)
        return ended[self.parent[ended] == ended]

    def roots(self, session: np.ndarray) -> np.ndarray:
        """The session each row's session was merged into (itself if none)."""
        return find_roots(self.parent, session)

    def drop(self, closed: np.ndarray) -> np.ndarray:
        """Forget the ``closed`` sessions; the open ones are renumbered 0.. in their order, those merged
        into another are gone. Per old id the new id of the session it is part of (-1: closed)."""
        n = self.count
        roots = find_roots(self.parent, np.arange(n))
        keep = roots == np.arange(n)
        keep[closed] = False
        ids = np.flatnonzero(keep)
        renumbered = np.full(n, -1, np.int64)
        renumbered[ids] = np.arange(len(ids))
        self.start[:len(ids)], self.end[:len(ids)], self.key[:len(ids)] = \
            self.start[ids], self.end[ids], self.key[ids]
        self.count = len(ids)
        self.parent[:self.count] = np.arange(self.count)
        relink(self.key, self.count, self.head, self.next)
        return renumbered[roots]

    def split(self, kid: np.ndarray, time: np.ndarray, gap: int, keys: int) -> np.ndarray:
        """Sessions made from buffered rows alone: each key's runs of time-sorted rows no more than
        ``gap`` apart (how the runner before this one kept them). Each row's session."""
        order = by_key_then_time(kid, time, keys)
        of_row, start, last, session_kid = split_sessions(kid, time, order, gap)
        self.count = 0
        self._room(len(start), keys)
        self.count = len(start)
        self.start[:self.count], self.end[:self.count] = start, last + gap
        self.key[:self.count] = session_kid
        self.parent[:self.count] = np.arange(self.count)
        relink(self.key, self.count, self.head, self.next)
        return of_row

    def _room(self, sessions: int, keys: int) -> None:
        if sessions > len(self.start):
            size = max(sessions, 2 * len(self.start))
            for name in ("start", "end", "key", "parent", "next"):
                grown = np.zeros(size, np.int64)
                grown[:self.count] = getattr(self, name)[:self.count]
                setattr(self, name, grown)
        if keys > len(self.head):
            head = np.full(max(keys, 2 * len(self.head)), -1, np.int64)
            head[:len(self.head)] = self.head
            self.head = head

    def saved(self) -> dict[str, np.ndarray]:
        n = self.count
        return {"session_start": self.start[:n], "session_end": self.end[:n], "session_key": self.key[:n],
                "session_parent": self.parent[:n]}

    def load(self, saved: Any, keys: int) -> None:
        n = len(saved["session_start"])
        self.count = 0
        self._room(n, keys)
        self.count = n
        self.start[:n], self.end[:n] = saved["session_start"], saved["session_end"]
        self.key[:n], self.parent[:n] = saved["session_key"], saved["session_parent"]
        self.head[:] = -1
        relink_open(self.key, self.parent, self.count, self.head, self.next)


@njit(nogil=True, cache=True)
def assign_sessions(kid: np.ndarray, time: np.ndarray, marks: np.ndarray, gap: int, head: np.ndarray,
                    next_: np.ndarray, start: np.ndarray, end: np.ndarray, key: np.ndarray, parent: np.ndarray,
                    count: int, session: np.ndarray) -> int:
    """Each row, in arrival order, into its key's open sessions: those whose end the row's watermark
    (``marks``) has reached are closed for it and leave the key's list (they fire with the others
    that closed); every other one its window [t, t + gap] meets merges into the first met; none met,
    the row opens a session, or is late (``LATE``) if its window has ended by its watermark. The
    number of session ids after the rows."""
    for i in range(kid.shape[0]):
        k, t, m = kid[i], time[i], marks[i]
        root = -1
        before = -1
        s = head[k]
        while s >= 0:
            following = next_[s]
            meets = start[s] <= t + gap and t <= end[s]
            if end[s] <= m or (meets and root >= 0):  # closed for the row, or merged: out of the key's list
                if end[s] > m:  # met after the first one met: merged into it
                    parent[s] = root
                    start[root] = min(start[root], start[s])
                    end[root] = max(end[root], end[s])
                if before < 0:
                    head[k] = following
                else:
                    next_[before] = following
            else:
                if meets:  # the first open session the row meets takes it
                    root = s
                    start[s] = min(start[s], t)
                    end[s] = max(end[s], t + gap)
                before = s
            s = following
        if root < 0:
            if t + gap <= m:
                session[i] = LATE
                continue
            root = count
            count += 1
            start[root], end[root], key[root], parent[root] = t, t + gap, k, root
            next_[root] = head[k]
            head[k] = root
        session[i] = root
    return count


@njit(nogil=True, cache=True)
def find_roots(parent: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The root of each of ``ids`` (a merged session's chain followed to the session it is part of)."""
    out = np.empty(ids.shape[0], np.int64)
    for j in range(ids.shape[0]):
        s = ids[j]
        while parent[s] != s:
            s = parent[s]
        out[j] = s
    return out


@njit(nogil=True, cache=True)
def relink(key: np.ndarray, count: int, head: np.ndarray, next_: np.ndarray) -> None:
    """Each key's list of sessions 0..count-1 (all open), made again."""
    head[:] = -1
    for s in range(count):
        next_[s] = head[key[s]]
        head[key[s]] = s


@njit(nogil=True, cache=True)
def relink_open(key: np.ndarray, parent: np.ndarray, count: int, head: np.ndarray, next_: np.ndarray) -> None:
    """Each key's list of its sessions not merged into another, made again."""
    for s in range(count):
        if parent[s] == s:
            next_[s] = head[key[s]]
            head[key[s]] = s


@njit(nogil=True, cache=True)
def by_key_then_time(kid: np.ndarray, time: np.ndarray, keys: int) -> np.ndarray:
    """The rows ordered by key id, then time, equal times in arrival order (a stable sort by
    (key, time)). Key ids are dense (0..keys-1): rows are placed by key in one counting pass, and a
    key's rows, in arrival order, are sorted only if their times go back somewhere."""
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
    or the time jumps by more than ``gap``. Per row its session; per session its first and last time
    and its key id."""
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
