"""Runs a barrier window aggregation (``pn.BarrierAggregate``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_BarrierAggregate``). The
aggregation's state is forked among the workers: every key group belongs to one worker
(``darwin.runtime.routing``), which folds its keys' rows, in row order, into a share of its own.
Between two barriers the workers never meet. A barrier needs all of the state: the shares are
joined (each worker's groups, ordered by the serial of the row that first brought the group into
the window, which is the order one thread sees them in), emitted once, and forked back empty.
So the output is the one-thread output at any parallelism and under any timing.

A batch is one step for the workers however many barriers it holds: each worker folds its rows of
the open window into its share, closes it at the batch's first barrier, folds the windows the
batch opens and closes in one pass (a group per window and key), and starts the share afresh with
the rows after the last barrier; the coordinator joins the closed windows of all workers at once.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from darwin.config import Config
from darwin.graph import operators as op
from darwin.graph.translate import BARRIER_COLUMN
from darwin.plan import nodes as pn
from darwin.plan.aggregates import agg_type
from darwin.plan.window import BarrierWindow
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.routing import key_columns, key_groups, owners, split_rows
from darwin.runtime.workers import WorkerPool
from darwin.timestamps import NO_WATERMARK


def barriers_of(batch: EncodedBatch) -> np.ndarray:
    """Which rows are barriers: the condition holds (a NULL condition does not)."""
    c = batch.columns[BARRIER_COLUMN]
    is_barrier = c.values.astype(np.bool_)
    return is_barrier if c.valid is None else is_barrier & c.valid


class _Bounds:
    """Where the windows stand: the current window's id and start (the last barrier's time)."""

    def __init__(self, window: BarrierWindow) -> None:
        self.on = window.on
        self.id = 0
        self.start: int | None = None

    def close(self, batch: EncodedBatch, row: int) -> None:
        self.id += 1
        if self.on is not None:
            t = batch.columns[self.on]
            self.start = None if t.valid is not None and not t.valid[row] else int(t.values[row])

    def saved(self) -> dict[str, Any]:
        return {"window_id": self.id, "start": self.start}

    def load(self, body: dict[str, Any]) -> None:
        self.id, self.start = int(body["window_id"]), body["start"]


Args = list[tuple[np.ndarray, np.ndarray]]  # per aggregate: its argument's values and presence, per row
Results = list[tuple[np.ndarray, np.ndarray | None]]  # per aggregate: finished values and validity, per group


class Closed:
    """Groups of closed windows: each one's window (the batch's barrier that closed it), key id,
    the serial of its first row, and its finished aggregates."""

    def __init__(self, window: np.ndarray, groups: np.ndarray, first: np.ndarray, results: Results) -> None:
        self.window, self.groups, self.first, self.results = window, groups, first, results

    @staticmethod
    def joined(parts: list[Closed], aggregates: int) -> Closed:
        """The parts as one, their groups in the order one thread meets them (by first serial)."""
        first = np.concatenate([p.first for p in parts])
        order = np.argsort(first, kind="stable")
        results: Results = []
        for j in range(aggregates):
            values = np.concatenate([p.results[j][0] for p in parts])[order]
            valid = None
            if any(p.results[j][1] is not None for p in parts):
                valid = np.concatenate([np.ones(len(p.groups), np.bool_) if p.results[j][1] is None
                                        else p.results[j][1] for p in parts])[order]
            results.append((values, valid))
        return Closed(np.concatenate([p.window for p in parts])[order],
                      np.concatenate([p.groups for p in parts])[order], first[order], results)


class _Share:
    """One worker's share of the state: its keys' groups of the open window (global key ids in the
    order they came), the serial of each one's first row, and the aggregates' value and count slots."""

    def __init__(self, folds: Folds) -> None:
        self.folds, self.slots = folds, folds.slots
        self.slot_of = np.full(0, -1, np.int64)  # global key id -> its slot here, or -1
        self._empty()

    def _empty(self) -> None:
        self.groups = np.zeros(0, np.int64)
        self.first = np.zeros(0, np.int64)
        self.values = [np.zeros(0, s.value_dtype or np.int64) for s in self.slots]
        self.counts = [np.zeros(0, np.int64) for _ in self.slots]

    def reserve(self, keys: int) -> None:
        """Room for global key ids below ``keys`` (in the scheduler's thread, before the workers run)."""
        if len(self.slot_of) < keys:
            grown = np.full(max(keys, 2 * len(self.slot_of)), -1, np.int64)
            grown[:len(self.slot_of)] = self.slot_of
            self.slot_of = grown

    def step(self, kid: np.ndarray, window: np.ndarray, serial: np.ndarray, args: Args, barriers: int) -> Closed:
        """This worker's rows of one batch, in row order (``window``: how many of the batch's
        ``barriers`` came before each): the open window's rows fold into the share, which the first
        barrier closes; the windows opened and closed within the batch are folded apart; the rows
        after the last barrier start the share afresh. The closed windows' groups are returned."""
        if barriers == 0:
            self._fold(kid, serial, args)
            return _no_groups(len(self.slots))
        rows = [np.flatnonzero(window == 0), np.flatnonzero((window > 0) & (window < barriers)),
                np.flatnonzero(window == barriers)]
        self._fold(kid[rows[0]], serial[rows[0]], _taken(args, rows[0]))
        parts = [self._close()]
        if len(rows[1]):
            inner = rows[1]
            parts.append(self._complete(kid[inner], window[inner], serial[inner], _taken(args, inner)))
        self._fold(kid[rows[2]], serial[rows[2]], _taken(args, rows[2]))
        return Closed.joined(parts, len(self.slots))

    def _fold(self, kid: np.ndarray, serial: np.ndarray, args: Args) -> None:
        """Rows of the open window into the share's slots."""
        if not len(kid):
            return
        ids = np.empty(len(kid), np.int64)
        new_rows = np.empty(len(kid), np.int64)
        fresh = _slots(kid, self.slot_of, len(self.groups), ids, new_rows)
        if fresh:
            new_rows = new_rows[:fresh]
            self.groups = np.concatenate([self.groups, kid[new_rows]])
            self.first = np.concatenate([self.first, serial[new_rows]])
            size = len(self.groups)
            self.values = [np.concatenate([v, np.zeros(size - len(v), v.dtype)]) for v in self.values]
            self.counts = [np.concatenate([c, np.zeros(size - len(c), np.int64)]) for c in self.counts]
        self._run(ids, args, self.values, self.counts)

    def _run(self, ids: np.ndarray, args: Args, values: list[np.ndarray], counts: list[np.ndarray]) -> None:
        flat: list[np.ndarray] = []
        for (x, present), v, c in zip(args, values, counts):
            flat += [np.ascontiguousarray(x), np.ascontiguousarray(present), v, c]
        self.folds.run(ids, np.ones(len(ids), np.int64), np.zeros(len(values[0]) if values else 0, np.int64), flat)

    def _close(self) -> Closed:
        """The open window's groups, finished; the share is empty again (forked back)."""
        closed = Closed(np.zeros(len(self.groups), np.int64), self.groups, self.first, self._finished())
        self.slot_of[self.groups] = -1
        self._empty()
        return closed

    def _finished(self, values: list[np.ndarray] | None = None, counts: list[np.ndarray] | None = None) -> Results:
        values = self.values if values is None else values
        counts = self.counts if counts is None else counts
        return [s.function.finalize(None if s.value_dtype is None else v, c)
                for s, v, c in zip(self.slots, values, counts)]

    def _complete(self, kid: np.ndarray, window: np.ndarray, serial: np.ndarray, args: Args) -> Closed:
        """Windows opened and closed within one batch: one group per (window, key) met."""
        ids = np.empty(len(kid), np.int64)
        at = np.empty(len(kid), np.int64)
        size = _groups_per_window(kid, window, self.slot_of, ids, at)
        at = at[:size]
        values = [np.zeros(size, s.value_dtype or np.int64) for s in self.slots]
        counts = [np.zeros(size, np.int64) for _ in self.slots]
        self._run(ids, args, values, counts)
        return Closed(window[at], kid[at], serial[at], self._finished(values, counts))

    def saved(self, i: int) -> dict[str, np.ndarray]:
        arrays = {f"groups{i}": self.groups, f"first{i}": self.first}
        for j, (v, c) in enumerate(zip(self.values, self.counts)):
            arrays[f"v{i}_{j}"], arrays[f"c{i}_{j}"] = v, c
        return arrays


@njit(cache=True, nogil=True)
def _slots(kid: np.ndarray, slot_of: np.ndarray, groups: int, ids: np.ndarray, new_rows: np.ndarray) -> int:
    """Each row's slot (``ids``); a key without one gets the next, and its row goes to ``new_rows``.
    How many keys were new."""
    fresh = 0
    for i in range(kid.shape[0]):
        s = slot_of[kid[i]]
        if s < 0:
            s = groups + fresh
            slot_of[kid[i]] = s
            new_rows[fresh] = i
            fresh += 1
        ids[i] = s
    return fresh


@njit(cache=True, nogil=True)
def _groups_per_window(kid: np.ndarray, window: np.ndarray, slot_of: np.ndarray, ids: np.ndarray,
                       first: np.ndarray) -> int:
    """Dense ids of the (window, key) pairs of rows ordered by window, in first-come order (``ids``),
    and each pair's first row (``first``); ``slot_of`` (all -1: the share is empty) is borrowed to
    number a window's keys and left all -1 again. How many pairs."""
    groups = 0
    start = 0
    n = kid.shape[0]
    for i in range(n + 1):
        if i == n or (i > start and window[i] != window[start]):
            for j in range(start, i):  # the window ended: its keys leave the borrowed array
                slot_of[kid[j]] = -1
            start = i
            if i == n:
                break
        s = slot_of[kid[i]]
        if s < 0:
            s = groups
            slot_of[kid[i]] = s
            first[groups] = i
            groups += 1
        ids[i] = s
    return groups


def _taken(args: Args, rows: np.ndarray) -> Args:
    return [(x[rows], p[rows]) for x, p in args]


def _no_groups(aggregates: int) -> Closed:
    empty = np.zeros(0, np.int64)
    return Closed(empty, empty, empty, [(empty, None) for _ in range(aggregates)])


class BarrierAggregateRunner:
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool, workers: WorkerPool) -> None:
        node = o.node
        assert isinstance(node, pn.BarrierAggregate)
        self.node, self.id, self.args, self.workers = node, o.id, o.args, workers
        schema = node.input.schema
        self.key_fields = [schema.field(k) for k in node.keys]
        self.keys = GroupKeys(self.key_fields)
        folds = Folds(node.aggs, schema, config.cache_dir, "barrier window aggregation", pool)
        self.slots = folds.slots
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.owner = owners(workers.workers)
        self.shares = [_Share(folds) for _ in range(workers.workers)]
        self.bounds = _Bounds(node.window)
        self.serial = 0  # rows seen: a group's first row's serial orders the groups of a window
        self.wm = NO_WATERMARK
        self.windows_fired = 0

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        """Every worker folds its keys' rows of the batch; the windows the batch's barriers close
        are joined from the workers' shares and emitted."""
        n = batch.length
        if n == 0:
            return None
        is_barrier = barriers_of(batch)
        barriers = int(is_barrier.sum())
        rows = np.flatnonzero(~is_barrier)
        window = (np.cumsum(is_barrier) - is_barrier)[rows]
        serial = self.serial + rows
        self.serial += n
        kid = self.keys.ids(batch)[rows]
        for share in self.shares:
            share.reserve(self.keys.count)
        args = []
        for i, name in enumerate(self.args):
            if name is None:
                args.append((np.zeros(len(rows), np.int64), np.ones(len(rows), np.bool_)))
            else:
                c = batch.columns[name]
                dtype = self.slots[i].value_dtype or np.int64
                args.append((c.values[rows].astype(dtype, copy=False),
                             np.ones(len(rows), np.bool_) if c.valid is None else c.valid[rows]))
        if len(self.shares) == 1:
            parts = [self.shares[0].step(kid, window, serial, args, barriers)]
        else:
            if self.key_fields:
                keys = [batch.columns[k] for k in self.node.keys]
                owner = self.owner[key_groups(key_columns([Column(c.values[rows], None if c.valid is None
                                                                 else c.valid[rows]) for c in keys],
                                                          [f.nullable for f in self.key_fields]))]
            else:
                owner = np.zeros(len(rows), np.int64)
            mine = split_rows(owner, np.arange(len(self.shares), dtype=np.int64), len(self.shares))
            parts = self.workers.run([partial(share.step, kid[r], window[r], serial[r], _taken(args, r), barriers)
                                      for share, r in zip(self.shares, mine)])
        if barriers == 0:
            return None
        return self._emit(batch, np.flatnonzero(is_barrier), Closed.joined(parts, len(self.slots)))

    def _emit(self, batch: EncodedBatch, at: np.ndarray, closed: Closed) -> EncodedBatch:
        """The closed windows' rows; the barriers at rows ``at`` of ``batch`` closed them."""
        size, w = len(closed.groups), closed.window
        columns = {pn.WINDOW_ID: Column(self.bounds.id + w, None)}
        if self.bounds.on is not None:
            t = batch.columns[self.bounds.on]
            times = t.values[at].astype(np.int64)
            valid = np.ones(len(at), np.bool_) if t.valid is None else t.valid[at]
            start = self.bounds.start
            starts = np.r_[0 if start is None else start, times[:-1]]
            starts_valid = np.r_[start is not None, valid[:-1]]
            columns[pn.WINDOW_START] = Column(starts[w], starts_valid[w])
            columns[pn.WINDOW_END] = Column(times[w], valid[w])
        columns.update({k: Column(c.values, c.valid) for k, c in self.keys.columns(closed.groups).items()})
        for (name, _), (dtype, _), (values, valid) in zip(self.node.aggs, self.out_types, closed.results):
            columns[name] = Column(values.astype(dtype.numpy), valid)
        self.bounds.close(batch, int(at[-1]))
        self.bounds.id += len(at) - 1
        self.windows_fired += len(at)
        return EncodedBatch(columns, size)

    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return None

    # -- checkpoints: the shares saved side by side, forked again on restore (at any parallelism) ---
    def counters(self) -> dict[str, int]:
        return {"windows_fired": self.windows_fired}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        arrays: dict[str, Any] = dict(self.keys.saved())
        for i, share in enumerate(self.shares):
            arrays.update(share.saved(i))
        np.savez(directory / name, **arrays)
        return {"file": name, "wm": self.wm, "shares": len(self.shares), "serial": self.serial,
                **self.bounds.saved(), **self.counters()}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            self.keys.load(saved)
            entries = [(saved[f"groups{i}"], saved[f"first{i}"],
                        [(saved[f"v{i}_{j}"], saved[f"c{i}_{j}"]) for j in range(len(self.slots))])
                       for i in range(int(body["shares"]))]
        groups = np.concatenate([g for g, _, _ in entries])
        first = np.concatenate([f for _, f, _ in entries])
        slots = [(np.concatenate([e[2][j][0] for e in entries]), np.concatenate([e[2][j][1] for e in entries]))
                 for j in range(len(self.slots))]
        if self.key_fields and len(self.shares) > 1 and len(groups):
            cols = self.keys.columns(groups)
            owner = self.owner[key_groups(key_columns([cols[k] for k in self.node.keys],
                                                      [f.nullable for f in self.key_fields]))]
        else:
            owner = np.zeros(len(groups), np.int64)
        for w, share in enumerate(self.shares):
            share.reserve(self.keys.count)
            mine = np.flatnonzero(owner == w)
            mine = mine[np.argsort(first[mine], kind="stable")]
            share.groups, share.first = groups[mine], first[mine]
            share.slot_of[share.groups] = np.arange(len(mine))
            share.values = [v[mine] for v, _ in slots]
            share.counts = [c[mine] for _, c in slots]
        self.wm, self.serial = int(body["wm"]), int(body["serial"])
        self.bounds.load(body)
        self.windows_fired = int(body["windows_fired"])

    def close(self) -> None:
        pass
