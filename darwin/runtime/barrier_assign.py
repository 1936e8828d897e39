"""Numbers rows by barrier window (``pn.BarrierAssign``): the reference interpreter's ``_BarrierAssign``.

A compiled pass over the batch with per-key arrays (the current window's id and start), so a
barrier of one key (``dw.Barrier(by=...)``) moves only that key's window.

On several workers the batch is cut into contiguous slices, and each worker numbers its slice from
the per-key state *forked* to it: the state before the batch moved on by the barriers of the
slices before its own. Only barrier rows move the state, so the forks come from one pass over the
batch's barriers (few), and the rows of one hot key are numbered by every worker at once. The last
slice's state is the batch's (the forks joined), so the result is one thread's at any parallelism.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.runtime.barrier import barriers_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.group_keys import GroupKeys
from darwin.runtime.workers import WorkerPool
from darwin.timestamps import NO_WATERMARK


class BarrierAssignRunner:
    """Every row with its window: the barriers of its ``by`` key (one key without it) before it, and
    with ``on`` the previous one's time (a barrier row closes its window, and carries its own time as
    window_end), and the ``carried`` columns of the barrier that opened its window. Per key: the
    current window's id and start, and the carried values (strings as their dictionary codes)."""

    def __init__(self, o: op.StreamOperator, config: Config, pool: StringPool,
                 workers: WorkerPool | None = None) -> None:
        self.workers = workers or WorkerPool(1)
        node = o.node
        assert isinstance(node, pn.BarrierAssign)
        self.node, self.id = node, o.id
        self.on = node.window.on
        self.keys = GroupKeys([node.input.schema.field(c) for c in node.window.by]) if node.window.by else None
        self.ids = np.zeros(1, np.int64)
        self.starts = np.zeros(1, np.int64)
        self.start_valid = np.zeros(1, np.bool_)
        schema = node.input.schema
        self.carried = [np.zeros(1, schema.field(source).dtype.numpy) for _, source in node.carried]
        self.carried_valid = [np.zeros(1, np.bool_) for _ in node.carried]
        self.wm = NO_WATERMARK

    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        is_barrier = barriers_of(batch)
        kid = np.zeros(n, np.int64) if self.keys is None else self.keys.ids(batch)
        if self.keys is not None and self.keys.count > len(self.ids):
            self._grow(max(self.keys.count, 2 * len(self.ids)))
        if self.on is None:
            t, t_valid = np.zeros(n, np.int64), np.zeros(n, np.bool_)
        else:
            c = batch.columns[self.on]
            t, t_valid = c.values.astype(np.int64, copy=False), np.ones(n, np.bool_) if c.valid is None else c.valid
        ident, start, start_valid = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.bool_)
        opener = np.empty(n, np.int64)
        last = self._numbered(kid, is_barrier, t, t_valid, ident, start, start_valid, opener)
        columns = {f.name: batch.columns[f.name] for f in self.node.input.schema.fields}
        columns[pn.WINDOW_ID] = Column(ident, None)
        if self.on is not None:
            columns[pn.WINDOW_START] = Column(start, start_valid)
            columns[pn.WINDOW_END] = Column(np.where(is_barrier, t, 0), is_barrier & t_valid)
        if self.carried:
            in_batch, at = opener >= 0, np.maximum(opener, 0)
            closed = np.flatnonzero(last >= 0)
            for (name, source), kept, kept_valid in zip(self.node.carried, self.carried, self.carried_valid):
                c = batch.columns[source]
                valid = np.ones(n, np.bool_) if c.valid is None else c.valid
                columns[name] = Column(np.where(in_batch, c.values[at], kept[kid]),
                                       np.where(in_batch, valid[at], kept_valid[kid]))
                kept[closed], kept_valid[closed] = c.values[last[closed]], valid[last[closed]]
        return EncodedBatch(columns, n)

    def _numbered(self, kid: np.ndarray, is_barrier: np.ndarray, t: np.ndarray, t_valid: np.ndarray,
                  ident: np.ndarray, start: np.ndarray, start_valid: np.ndarray, opener: np.ndarray) -> np.ndarray:
        """Fill each row's window and opener, slice by slice on the workers, each from its fork of the
        per-key state; the state moves to the batch's end. Per key, the batch's last barrier row (or -1)."""
        n, k = kid.shape[0], self.workers.workers
        cuts = [n * i // k for i in range(k + 1)]
        forks: list[tuple[np.ndarray, ...]] = [(self.ids, self.starts, self.start_valid,
                                                np.full(len(self.ids), -1, np.int64))]
        barrier_rows = np.flatnonzero(is_barrier)
        for before, first in zip(cuts, cuts[1:-1]):  # the state at each later slice's first row
            fork = tuple(a.copy() for a in forks[-1])
            _move(kid, barrier_rows[(barrier_rows >= before) & (barrier_rows < first)], t, t_valid, *fork)
            forks.append(fork)
        assign: Any = _assign  # a compiled function: its Python signature is not what mypy sees
        self.workers.run([partial(assign, kid, is_barrier, t, t_valid, *fork, ident, start, start_valid, opener,
                                  first, end) for first, end, fork in zip(cuts, cuts[1:], forks)])
        self.ids, self.starts, self.start_valid, last = forks[-1]
        return last

    def _grow(self, size: int) -> None:
        def grown(a: np.ndarray) -> np.ndarray:
            out = np.zeros(size, a.dtype)
            out[:len(a)] = a
            return out
        self.ids, self.starts, self.start_valid = grown(self.ids), grown(self.starts), grown(self.start_valid)
        self.carried = [grown(a) for a in self.carried]
        self.carried_valid = [grown(a) for a in self.carried_valid]

    def advance(self, input_wm: int) -> EncodedBatch | None:
        self.wm = input_wm
        return None

    def counters(self) -> dict[str, int]:
        return {}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"operator{self.id}.npz"
        arrays = {} if self.keys is None else dict(self.keys.saved())
        for j, (kept, kept_valid) in enumerate(zip(self.carried, self.carried_valid)):
            arrays[f"carried{j}"], arrays[f"carried_valid{j}"] = kept, kept_valid
        np.savez(directory / name, ids=self.ids, starts=self.starts, start_valid=self.start_valid, **arrays)
        return {"file": name, "wm": self.wm}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        with np.load(directory / body["file"]) as saved:
            if self.keys is not None:
                self.keys.load(saved)
            self.ids, self.starts, self.start_valid = saved["ids"], saved["starts"], saved["start_valid"]
            self.carried = [saved[f"carried{j}"] for j in range(len(self.carried))]
            self.carried_valid = [saved[f"carried_valid{j}"] for j in range(len(self.carried))]
        self.wm = int(body["wm"])

    def close(self) -> None:
        pass


@njit(cache=True, nogil=True)
def _move(kid: np.ndarray, rows: np.ndarray, t: np.ndarray, t_valid: np.ndarray, ids: np.ndarray,
          starts: np.ndarray, start_valid: np.ndarray, last: np.ndarray) -> None:
    """The per-key state after the barrier ``rows`` (ascending), as ``_assign`` leaves it."""
    for i in rows:
        k = kid[i]
        ids[k] += 1
        starts[k] = t[i]
        start_valid[k] = t_valid[i]
        last[k] = i


@njit(cache=True, nogil=True)
def _assign(kid: np.ndarray, is_barrier: np.ndarray, t: np.ndarray, t_valid: np.ndarray, ids: np.ndarray,
            starts: np.ndarray, start_valid: np.ndarray, last: np.ndarray, out_id: np.ndarray,
            out_start: np.ndarray, out_start_valid: np.ndarray, opener: np.ndarray, first: int, end: int) -> None:
    """Rows ``first`` to ``end``: each row's window (id, start) by its key's state, and the row of this
    batch whose barrier opened it (``opener``, -1: a barrier before the batch); a barrier then closes
    its key's window (``last``: per key, its last barrier's row in this batch, or -1)."""
    for i in range(first, end):
        k = kid[i]
        out_id[i] = ids[k]
        out_start[i] = starts[k]
        out_start_valid[i] = start_valid[k]
        opener[i] = last[k]
        if is_barrier[i]:
            ids[k] += 1
            starts[k] = t[i]
            start_valid[k] = t_valid[i]
            last[k] = i
