"""Rows a join side keeps but has not indexed yet: the batches they came in, columnar, uncopied.

A side that is rarely probed (the bids of Nexmark q7, kept until their window's maximum arrives
at its end) pays for indexing every row (copying its columns into the side's arrays, inserting
its key) and uses the index once. Rows wait here instead, as the arrays (or row selections) of
the batches they arrived in; a probe scans them with an index over the probe's own rows, which is
small (``join_index.scan_rows``). ``JoinRows`` moves them into its arrays and index in bulk once
the scans have cost about what indexing them would (or at a checkpoint, or past a backend's
limit on rows held in memory).

Pending rows are numbered after the indexed ones, in arrival order, so a row's number is the one
it keeps when it is indexed: numbers handed out by a probe stay valid until the side compacts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from darwin.codegen import join_index as ji
from darwin.types import Schema

INT64_MAX = np.iinfo(np.int64).max
JOINED_ROWS = 4096  # a chunk smaller than this takes the next batch's rows in: few chunks to loop over


def owned(array: np.ndarray) -> np.ndarray:
    """``array``, copied if it is a small view of a larger array (a pipeline's output buffer holds
    a row per input row; a filter's survivors should not keep the whole buffer alive)."""
    base = array.base
    if isinstance(base, np.ndarray) and base.nbytes > 2 * array.nbytes:
        return array.copy()
    return array


@dataclass
class Chunk:
    """Rows of one batch (or of a few small ones, joined): columns by name (values, validity or
    None when all valid), key components, their hashes, bounds (empty if untracked), live rows."""

    columns: dict[str, tuple[np.ndarray, np.ndarray | None]]
    keys: np.ndarray
    hashes: np.ndarray
    bound: np.ndarray
    alive: np.ndarray
    dead: int = 0

    @property
    def rows(self) -> int:
        return len(self.keys)

    def lowest_bound(self) -> int:
        if not len(self.bound) or self.dead == self.rows:
            return INT64_MAX
        live = self.bound if self.dead == 0 else self.bound[self.alive]
        return int(live.min())

    def joined(self, other: Chunk) -> Chunk:
        def both(a: np.ndarray | None, b: np.ndarray | None, n: int, m: int) -> np.ndarray | None:
            if a is None and b is None:
                return None
            return np.concatenate((np.ones(n, np.bool_) if a is None else a, np.ones(m, np.bool_) if b is None else b))

        n, m = self.rows, other.rows
        columns = {name: (np.concatenate((values, other.columns[name][0])), both(valid, other.columns[name][1], n, m))
                   for name, (values, valid) in self.columns.items()}
        return Chunk(columns, np.concatenate((self.keys, other.keys)), np.concatenate((self.hashes, other.hashes)),
                     np.concatenate((self.bound, other.bound)), np.concatenate((self.alive, other.alive)),
                     self.dead + other.dead)

    def live_only(self) -> Chunk:
        keep = self.alive
        columns = {name: (values[keep], None if valid is None else valid[keep])
                   for name, (values, valid) in self.columns.items()}
        bound = self.bound[keep] if len(self.bound) else self.bound
        return Chunk(columns, self.keys[keep], self.hashes[keep], bound, self.alive[keep])


class PendingRows:
    """The chunks of one join side's pending rows, in arrival order (row ``j`` of them is the
    side's row ``stored + j``)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.nullable = frozenset(f.name for f in schema.fields if f.nullable)
        self.chunks: list[Chunk] = []
        self.starts = np.zeros(1, dtype=np.int64)  # chunk c holds rows starts[c]..starts[c+1]-1
        self.rows = 0
        self.dead = 0
        self.lowest_bound = INT64_MAX
        self._last: tuple[np.ndarray, list[tuple[int, np.ndarray, np.ndarray]]] | None = None  # ``_located``'s

    @property
    def live(self) -> int:
        return self.rows - self.dead

    def add(self, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray, keys: np.ndarray,
            hashes: np.ndarray, bound: np.ndarray | None) -> None:
        """Keep batch rows ``rows`` (ascending) of ``columns``/``keys``/``hashes``/``bound`` (None: untracked)."""
        every = len(rows) == len(keys)

        def take(array: np.ndarray) -> np.ndarray:
            return owned(array) if every else array[rows]

        kept = {}
        for f in self.schema.fields:
            values, valid = columns[f.name]
            kept[f.name] = (take(values), None if valid is None or f.name not in self.nullable else take(valid))
        bounds = take(bound) if bound is not None else np.zeros(0, dtype=np.int64)
        chunk = Chunk(kept, take(keys), take(hashes), bounds, np.ones(len(rows), dtype=np.bool_))
        if len(bounds):
            self.lowest_bound = min(self.lowest_bound, int(bounds.min()))
        if self.chunks and self.chunks[-1].rows < JOINED_ROWS:
            self.chunks[-1] = self.chunks[-1].joined(chunk)
            self._last = None
            self.starts[-1] += len(rows)
        else:
            self.chunks.append(chunk)
            self.starts = np.append(self.starts, self.starts[-1] + len(rows))
        self.rows += len(rows)

    def scan(self, keys: np.ndarray, hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (position in ``rows``, pending row) of equal keys, pending rows ascending."""
        size = 16
        while size < 2 * len(rows):
            size *= 2
        slots = np.empty((size, 1 + keys.shape[1]), dtype=np.int64)
        slots[:, 0] = ji.EMPTY
        nxt = np.empty(len(rows), dtype=np.int64)
        ji.append_rows(slots, nxt, keys, hashes, rows, 0, 0, len(rows) + 1)
        positions, found = [], []
        for c, chunk in enumerate(self.chunks):
            if chunk.dead == chunk.rows:
                continue
            out_position = np.empty(max(16, len(rows)), dtype=np.int64)
            out_row = np.empty(len(out_position), dtype=np.int64)
            j, m = ji.scan_rows(slots, nxt, chunk.keys, chunk.hashes, chunk.alive, 0, out_position, out_row, 0)
            while j < chunk.rows:  # more pairs than room: twice the room, from where it stopped
                out_position = np.concatenate((out_position, np.empty(len(out_position), dtype=np.int64)))
                out_row = np.concatenate((out_row, np.empty(len(out_row), dtype=np.int64)))
                j, m = ji.scan_rows(slots, nxt, chunk.keys, chunk.hashes, chunk.alive, j, out_position, out_row, m)
            if m:
                positions.append(out_position[:m])
                found.append(out_row[:m] + self.starts[c])
        if not positions:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        return np.concatenate(positions), np.concatenate(found)

    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Values and validity (None: all valid, for a NOT NULL column) of column ``name`` at pending rows ``rows``."""
        values = np.empty(len(rows), dtype=self.schema.field(name).dtype.numpy)
        valid = np.ones(len(rows), dtype=np.bool_) if name in self.nullable else None
        for c, here, at in self._located(rows):
            chunk_values, chunk_valid = self.chunks[c].columns[name]
            values[here] = chunk_values[at]
            if valid is not None and chunk_valid is not None:
                valid[here] = chunk_valid[at]
        return values, valid

    def _located(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Per chunk holding some of ``rows``: the chunk, which of ``rows`` it holds, and where in it.
        A join gathers every column at the same rows: found once for all of them."""
        if self._last is not None and self._last[0] is rows:
            return self._last[1]
        chunk_of = np.searchsorted(self.starts, rows, side="right") - 1
        order, bounds = ji.grouped_order(chunk_of, len(self.chunks))
        located = []
        for c in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
            here = order[bounds[c]:bounds[c + 1]]
            located.append((c, here, rows[here] - self.starts[c]))
        self._last = (rows, located)
        return located

    def free_below(self, watermark: int) -> np.ndarray:
        """Mark the live rows whose bound is below ``watermark`` dead; the freed pending rows, in order."""
        if watermark <= self.lowest_bound:
            return np.zeros(0, dtype=np.int64)
        freed = []
        for c, chunk in enumerate(self.chunks):
            if not len(chunk.bound):
                continue
            gone = np.flatnonzero(chunk.alive & (chunk.bound < watermark))
            if len(gone):
                chunk.alive[gone] = False
                chunk.dead += len(gone)
                freed.append(gone + self.starts[c])
        self.dead += sum(len(f) for f in freed)
        self.lowest_bound = min((chunk.lowest_bound() for chunk in self.chunks), default=INT64_MAX)
        return np.concatenate(freed) if freed else np.zeros(0, dtype=np.int64)

    def compact(self) -> None:
        """Drop dead rows: whole chunks, and chunks with more dead rows than live ones (renumbers the rows)."""
        if self.dead == 0:
            return
        chunks = [chunk if chunk.dead == 0 or 2 * chunk.dead < chunk.rows else chunk.live_only()
                  for chunk in self.chunks if chunk.dead < chunk.rows]
        self.chunks = chunks
        self._last = None
        self.starts = np.concatenate(([0], np.cumsum([chunk.rows for chunk in chunks], dtype=np.int64)))
        self.rows = int(self.starts[-1])
        self.dead = sum(chunk.dead for chunk in chunks)

    def take(self) -> list[Chunk]:
        """Every chunk, in order; none are left pending."""
        chunks = self.chunks
        self.chunks, self.starts = [], np.zeros(1, dtype=np.int64)
        self._last = None
        self.rows = self.dead = 0
        self.lowest_bound = INT64_MAX
        return chunks
