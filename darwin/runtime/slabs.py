"""Rows held per partition, in order, for runners that rewrite only the tail of a partition
(``OverRunner``): each partition owns a slab of the flat columns with room to grow at its end, so a
batch copies what it rewrites, not every held row. A partition that outgrows its slab moves to a
new one half as large again at the end of the columns; the columns are compacted in place once the
slabs left behind outweigh half of them."""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.runtime.encoding import Column
from darwin.runtime.rows import Rows
from darwin.types import Field

MIN_ROOM = 4
COMPACT_ABOVE = 4096  # rows of columns below which slabs left behind are not worth compacting


class PartitionSlabs:
    """Per partition (0..parts-1), its rows in order at ``start[p]:start[p] + length[p]`` of the
    flat ``rows`` and ``seq`` (arrival numbers), within its slab of ``room[p]`` rows."""

    def __init__(self, fields: list[Field]) -> None:
        self.fields = fields
        self.rows = Rows.empty(fields)
        self.seq = np.zeros(0, np.int64)
        self.start = np.zeros(0, np.int64)
        self.length = np.zeros(0, np.int64)
        self.room = np.zeros(0, np.int64)
        self.used = 0  # rows of the columns given to slabs
        self.abandoned = 0  # rows of slabs that partitions moved out of

    def ensure(self, parts: int) -> None:
        """Room in the per-partition arrays for partitions 0..parts-1 (new ones hold nothing)."""
        have = len(self.start)
        if parts > have:
            grown = max(parts, 2 * have)
            self.start, self.length, self.room = (np.concatenate([a, np.zeros(grown - have, np.int64)])
                                                  for a in (self.start, self.length, self.room))

    def at(self, parts: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The flat index of the row at ``positions[i]`` of partition ``parts[i]``."""
        return self.start[parts] + positions

    def spans(self, parts: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flat indices of the rows of each partition ``parts[i]`` from position ``first[i]`` on,
        partition after partition, in order; and for each, its ``i``."""
        n = self.length[parts] - first
        which = np.repeat(np.arange(len(parts)), n)
        flat = np.repeat(self.start[parts] + first - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        return flat, which

    def rewrite(self, parts: np.ndarray, keep: np.ndarray, rows: Rows, seq: np.ndarray, counts: np.ndarray) -> None:
        """Each partition ``parts[i]`` keeps its first ``keep[i]`` rows, followed by its ``counts[i]``
        rows of ``rows`` (grouped partition after partition, in the order of ``parts``)."""
        new_length = keep + counts
        moving = np.flatnonzero(new_length > self.room[parts])
        if len(moving):
            grown = new_length[moving]
            self._move(parts[moving], keep[moving], np.maximum(grown + grown // 2, MIN_ROOM))
        first = np.cumsum(counts) - counts
        to = np.repeat(self.start[parts] + keep - first, counts) + np.arange(rows.length)
        self.rows.put(to, rows, np.arange(rows.length))
        self.seq[to] = seq
        self.length[parts] = new_length
        if self.abandoned > self.used // 2 and self.used > COMPACT_ABOVE:  # looked up here: tests lower it
            self._compact()

    def _move(self, parts: np.ndarray, keep: np.ndarray, room: np.ndarray) -> None:
        """Partitions ``parts`` move to new slabs of ``room`` rows, taking their first ``keep`` rows."""
        self._reserve(self.used + int(room.sum()))
        start = self.used + np.cumsum(room) - room
        first = np.cumsum(keep) - keep
        offset = np.arange(int(keep.sum()))
        source = np.repeat(self.start[parts] - first, keep) + offset
        to = np.repeat(start - first, keep) + offset
        self.rows.put(to, self.rows, source)
        self.seq[to] = self.seq[source]
        self.abandoned += int(self.room[parts].sum())
        self.start[parts], self.room[parts] = start, room
        self.used += int(room.sum())

    def _reserve(self, rows: int) -> None:
        capacity = len(self.seq)
        if rows > capacity:
            grown = max(rows, capacity + capacity // 2)
            self.rows = self.rows.resized(grown)
            self.seq = np.concatenate([self.seq, np.zeros(grown - capacity, np.int64)])

    def _compact(self) -> None:
        """Every partition in a slab of half its length again as room, slab after slab from the
        start of the columns, in place."""
        length = self.length
        room = np.where(length > 0, length + length // 2 + 1, 0)
        source, _ = self.spans(np.arange(len(length)), np.zeros(len(length), np.int64))
        start = np.cumsum(room) - room
        to = np.repeat(start - (np.cumsum(length) - length), length) + np.arange(len(source))
        total = int(room.sum())
        self._reserve(total)
        self.rows.put(to, self.rows, source)  # each column's moved rows are read before any is written
        self.seq[to] = self.seq[source]
        self.start, self.room = start, room
        self.used, self.abandoned = total, 0

    def saved(self, prefix: str) -> dict[str, Any]:
        arrays: dict[str, Any] = {f"{prefix}seq": self.seq[:self.used], f"{prefix}start": self.start,
                                  f"{prefix}length": self.length, f"{prefix}room": self.room,
                                  f"{prefix}used": np.int64(self.used), f"{prefix}abandoned": np.int64(self.abandoned)}
        for i, f in enumerate(self.fields):
            c = self.rows.columns[f.name]
            arrays[f"{prefix}v{i}"] = c.values[:self.used]
            if c.valid is not None:
                arrays[f"{prefix}m{i}"] = c.valid[:self.used]
        return arrays

    def load(self, saved: Any, prefix: str) -> None:
        self.used, self.abandoned = int(saved[f"{prefix}used"]), int(saved[f"{prefix}abandoned"])
        self.start, self.length, self.room = (np.array(saved[f"{prefix}{a}"]) for a in ("start", "length", "room"))
        self.seq = np.array(saved[f"{prefix}seq"])
        self.rows = Rows(self.fields, {f.name: Column(np.array(saved[f"{prefix}v{i}"]),
                                                      np.array(saved[f"{prefix}m{i}"]) if f"{prefix}m{i}" in saved
                                                      else None)
                                       for i, f in enumerate(self.fields)}, self.used)

