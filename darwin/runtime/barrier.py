"""Runs barrier windows (``pn.BarrierAggregate``, ``pn.BarrierAssign``) over the rows a pipeline emits.

The semantics are the reference interpreter's (``_BarrierAggregate``, ``_BarrierAssign``). The
aggregation's state is forked among the workers: every key group belongs to one worker
(``darwin.runtime.routing``), which folds its keys' rows, in row order, into a share of its own.
Between two barriers the workers never meet. A barrier needs all of the state: the shares are
joined (each worker's groups, ordered by the serial of the row that first brought the group into
the window, which is the order one thread sees them in), emitted once, and forked back empty.
So the output is the one-thread output at any parallelism and under any timing.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.group_fold import FoldSlot
from darwin.config import Config
from darwin.graph import operators as op
from darwin.graph.translate import BARRIER_COLUMN
from darwin.plan import nodes as pn
from darwin.plan.aggregates import agg_type
from darwin.plan.window import BarrierWindow
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import Folds
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.progress import NO_WATERMARK
from darwin.runtime.routing import key_columns, key_groups, owners, split_rows
from darwin.runtime.workers import WorkerPool

Share = tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray | None]]]  # groups, first serials, results


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


class _Fold:
    """One worker's share of the open window: its groups (global key ids, in the order they came),
    the serial of each one's first row, and its aggregates' value and count slots."""

    def __init__(self, slots: list[FoldSlot], kernel: Any) -> None:
        self.slots, self.kernel = slots, kernel
        self.slot_of = np.full(0, -1, np.int64)  # global key id -> its slot here, or -1
        self.groups = np.zeros(0, np.int64)
        self.first = np.zeros(0, np.int64)
        self.values = [np.zeros(0, s.value_dtype or np.int64) for s in slots]
        self.counts = [np.zeros(0, np.int64) for _ in slots]

    def reserve(self, keys: int) -> None:
        """Room for global key ids below ``keys`` (in the scheduler's thread, before the workers run)."""
        if len(self.slot_of) < keys:
            grown = np.full(max(keys, 2 * len(self.slot_of)), -1, np.int64)
            grown[:len(self.slot_of)] = self.slot_of
            self.slot_of = grown

    def fold(self, kid: np.ndarray, serial: np.ndarray, args: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Rows (in row order) of this worker's keys into its slots."""
        if not len(kid):
            return
        fresh = self.slot_of[kid] < 0
        if fresh.any():
            new, first = np.unique(kid[fresh], return_index=True)
            order = np.argsort(first, kind="stable")
            new, first = new[order], serial[fresh][first[order]]
            self.slot_of[new] = len(self.groups) + np.arange(len(new))
            self.groups = np.concatenate([self.groups, new])
            self.first = np.concatenate([self.first, first])
            size = len(self.groups)
            self.values = [np.concatenate([v, np.zeros(size - len(v), v.dtype)]) for v in self.values]
            self.counts = [np.concatenate([c, np.zeros(size - len(c), np.int64)]) for c in self.counts]
        ids = self.slot_of[kid]
        flat: list[np.ndarray] = []
        for (x, present), v, c in zip(args, self.values, self.counts):
            flat += [np.ascontiguousarray(x), np.ascontiguousarray(present), v, c]
        self.kernel(ids, np.ones(len(ids), np.int64), np.zeros(len(self.groups), np.int64), *flat)

    def join(self) -> Share:
        """This share's groups, first serials and finished aggregates; then the share is empty again."""
        results = [s.function.finalize(None if s.value_dtype is None else v, c)
                   for s, v, c in zip(self.slots, self.values, self.counts)]
        out = (self.groups, self.first, results)
        self.slot_of[self.groups] = -1
        self.groups, self.first = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self.values = [np.zeros(0, v.dtype) for v in self.values]
        self.counts = [np.zeros(0, np.int64) for _ in self.counts]
        return out

    def saved(self, i: int) -> dict[str, np.ndarray]:
        arrays = {f"groups{i}": self.groups, f"first{i}": self.first}
        for j, (v, c) in enumerate(zip(self.values, self.counts)):
            arrays[f"v{i}_{j}"], arrays[f"c{i}_{j}"] = v, c
        return arrays


class BarrierAggregateRunner:
    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool, workers: WorkerPool) -> None:
        node = o.node
        assert isinstance(node, pn.BarrierAggregate)
        self.node, self.id, self.args, self.workers = node, o.id, o.args, workers
        schema = node.input.schema
        self.key_fields = [schema.field(k) for k in node.keys]
        self.keys = GroupKeys(self.key_fields)
        folds = Folds(node.aggs, schema, config.cache_dir, "barrier window aggregation")
        self.slots = folds.slots
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.owner = owners(workers.workers)
        self.shares = [_Fold(folds.slots, folds.kernel) for _ in range(workers.workers)]
        self.bounds = _Bounds(node.window)
        self.serial = 0  # rows seen in the open window: the order groups first came in
        self.wm = NO_WATERMARK
        self.windows_fired = 0

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        """Fold the rows between barriers; at each barrier join the shares and emit the window."""
        n = batch.length
        if n == 0:
            return None
        is_barrier = barriers_of(batch)
        kid = self.keys.ids(batch)
        for share in self.shares:
            share.reserve(self.keys.count)
        if self.key_fields and len(self.shares) > 1:
            owner = self.owner[key_groups(key_columns([batch.columns[k] for k in self.node.keys]))]
        else:
            owner = np.zeros(n, np.int64)
        args = []
        for i, name in enumerate(self.args):
            if name is None:
                args.append((np.zeros(n, np.int64), np.ones(n, np.bool_)))
            else:
                c = batch.columns[name]
                dtype = self.slots[i].value_dtype or np.int64
                args.append((c.values.astype(dtype, copy=False), np.ones(n, np.bool_) if c.valid is None else c.valid))
        out: list[EncodedBatch] = []
        lo = 0
        for b in [*np.flatnonzero(is_barrier).tolist(), n]:
            if b > lo:
                self._fold(kid[lo:b], owner[lo:b], [(x[lo:b], p[lo:b]) for x, p in args])
            if b < n:
                out.append(self._fire(batch, b))
            lo = b + 1
        return _joined(out, self.node.schema) if out else None

    def _fold(self, kid: np.ndarray, owner: np.ndarray, args: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Rows of one window: each worker folds its keys' rows into its share."""
        serial = self.serial + np.arange(len(kid), dtype=np.int64)
        self.serial += len(kid)
        if len(self.shares) == 1:
            self.shares[0].fold(kid, serial, args)
            return
        mine = split_rows(owner, np.arange(len(self.shares), dtype=np.int64), len(self.shares))
        self.workers.run([partial(share.fold, kid[rows], serial[rows], [(x[rows], p[rows]) for x, p in args])
                          for share, rows in zip(self.shares, mine)])

    def _fire(self, batch: EncodedBatch, row: int) -> EncodedBatch:
        """The barrier at ``row``: join the shares in first-arrival order, emit, fork back empty."""
        parts = [share.join() for share in self.shares]
        groups = np.concatenate([g for g, _, _ in parts])
        order = np.argsort(np.concatenate([f for _, f, _ in parts]), kind="stable")
        size = len(groups)
        columns = {pn.WINDOW_ID: Column(np.full(size, self.bounds.id, np.int64), None)}
        if self.bounds.on is not None:
            t = batch.columns[self.bounds.on]
            end_valid = t.valid is None or bool(t.valid[row])
            start = self.bounds.start
            columns[pn.WINDOW_START] = Column(np.full(size, 0 if start is None else start, np.int64),
                                              np.full(size, start is not None))
            columns[pn.WINDOW_END] = Column(np.full(size, int(t.values[row]), np.int64), np.full(size, end_valid))
        columns.update({k: Column(c.values, c.valid) for k, c in self.keys.columns(groups[order]).items()})
        for j, ((name, _), (dtype, _)) in enumerate(zip(self.node.aggs, self.out_types)):
            values = np.concatenate([r[j][0] for _, _, r in parts])[order].astype(dtype.numpy)
            valid = None
            if any(r[j][1] is not None for _, _, r in parts):
                valid = np.concatenate([np.ones(len(g), np.bool_) if r[j][1] is None else r[j][1]
                                        for g, _, r in parts])[order]
            columns[name] = Column(values, valid)
        self.bounds.close(batch, row)
        self.serial = 0
        self.windows_fired += 1
        return EncodedBatch(columns, size)

    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return None

    # -- checkpoints: the joined shares, forked again on restore (at any parallelism) ---------------
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
            owner = self.owner[key_groups(key_columns([cols[k] for k in self.node.keys]))]
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


class BarrierAssignRunner:
    """Every row with its window: the barriers before it, and with ``on`` the previous barrier's time
    (a barrier row closes its window, and carries its own time as window_end)."""

    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool) -> None:
        node = o.node
        assert isinstance(node, pn.BarrierAssign)
        self.node, self.id = node, o.id
        self.bounds = _Bounds(node.window)
        self.wm = NO_WATERMARK

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        is_barrier = barriers_of(batch)
        before = np.cumsum(is_barrier) - is_barrier  # barriers before each row, in this batch
        columns = {f.name: batch.columns[f.name] for f in self.node.input.schema.fields}
        columns[pn.WINDOW_ID] = Column(self.bounds.id + before, None)
        on = self.bounds.on
        if on is not None:
            t = batch.columns[on]
            t_valid = np.ones(n, np.bool_) if t.valid is None else t.valid
            # each row's previous barrier in this batch (-1: none, its window started before the batch)
            last = np.maximum.accumulate(np.where(is_barrier, np.arange(n), -1))
            previous = np.r_[-1, last[:-1]]
            inside = previous >= 0
            start = np.where(inside, t.values[np.maximum(previous, 0)], 0 if self.bounds.start is None
                             else self.bounds.start)
            start_valid = np.where(inside, t_valid[np.maximum(previous, 0)], self.bounds.start is not None)
            columns[pn.WINDOW_START] = Column(start.astype(np.int64), start_valid.astype(np.bool_))
            columns[pn.WINDOW_END] = Column(np.where(is_barrier, t.values, 0).astype(np.int64), is_barrier & t_valid)
        barriers = np.flatnonzero(is_barrier)
        if len(barriers):
            self.bounds.close(batch, int(barriers[-1]))
            self.bounds.id += len(barriers) - 1
        return EncodedBatch(columns, n)

    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return None

    def counters(self) -> dict[str, int]:
        return {}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        return {"wm": self.wm, **self.bounds.saved()}, []

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        self.wm = int(body["wm"])
        self.bounds.load(body)

    def close(self) -> None:
        pass


def _joined(batches: list[EncodedBatch], schema: Any) -> EncodedBatch:
    """The windows fired by one input batch, in order, as one batch."""
    if len(batches) == 1:
        return batches[0]
    columns = {}
    for f in schema.fields:
        parts = [b.columns[f.name] for b in batches]
        valid = None
        if any(c.valid is not None for c in parts):
            valid = np.concatenate([np.ones(len(c.values), np.bool_) if c.valid is None else c.valid for c in parts])
        columns[f.name] = Column(np.concatenate([c.values for c in parts]), valid)
    return EncodedBatch(columns, sum(b.length for b in batches))
