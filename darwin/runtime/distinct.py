"""Exact sets of values per group for ``count_distinct`` in an updating aggregation.

One ``DistinctSets`` serves every distinct count of the aggregation over the same value (its
*members*, which differ only in their filters): a compiled table holds each (group, value) pair
with one multiplicity per member, and a group's distinct count for a member changes only when a
pair's multiplicity goes 0 -> 1 or 1 -> 0 (``darwin.codegen.distinct``). A retraction takes the
value's multiplicity down; the value leaves the set at zero. Over an input that never retracts,
a pair keeps one bit per member that has seen it instead (24 bytes an entry, not 16 + 8 a member).

A pair left with no multiplicity keeps its entry (it comes back if the value does) until the table
is half full: it is then rebuilt from the pairs still held, twice as large while they fill more
than a quarter of it, so an updating input that churns through values does not grow it without
bound, and rebuilding is amortised over the pairs added.

The table and the counts live where the runner's ``Placement`` puts them (memory-mapped files on
the persistent backends); rebuilding, checkpoints and restores go a chunk of entries at a time, so
the sets may exceed memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from darwin.codegen.distinct import FREE, count_live, fold_distinct, fold_seen, insert_entries, live_entries
from darwin.state.placement import LOAD_CHUNK, InMemory, Placement, copy_rows
from darwin.state.snapshot import save_arrays, save_chunks

INITIAL_ENTRIES = 2048
SEEN_BITS = 63  # members an entry's bits of an input that never retracts can hold


class DistinctSets:
    def __init__(self, members: int, groups: int, retracting: bool = True, placement: Placement | None = None,
                 name: str = "distinct") -> None:
        """``placement``, ``name``: where the arrays go, under part names starting with ``name``."""
        self.members, self.name = members, name
        self.placement = placement if placement is not None else InMemory()
        self.seen_bits = not retracting and members <= SEEN_BITS  # a bit per member, not a multiplicity
        self.used = 0  # entries holding a pair
        self.table = self._empty(INITIAL_ENTRIES)
        self.distinct = self.placement.allocate(f"{name}.counts", (groups, members), np.dtype(np.int64))

    def _empty(self, size: int) -> np.ndarray:
        assert FREE == 0  # a table of zeros is a table of free entries
        width = 3 if self.seen_bits else 2 + self.members
        return self.placement.allocate(f"{self.name}.table", (size, width), np.dtype(np.int64))

    def ensure_groups(self, capacity: int) -> None:
        """Room for the runner's groups (ids below ``capacity``)."""
        if capacity > len(self.distinct):
            old = self.distinct
            self.distinct = self.placement.allocate(f"{self.name}.counts", (capacity, self.members),
                                                    np.dtype(np.int64))
            copy_rows(self.distinct, old, len(old))

    def _rebuild(self) -> None:
        """The pairs still held, in a table they fill at most a quarter of."""
        old = self.table
        size = len(old)
        while size < 4 * count_live(old):
            size *= 2
        self._fill(_live_chunks(old), size)

    def _fill(self, chunks: Iterator[np.ndarray], size: int) -> None:
        """A new table of ``size`` entries holding the entries ``chunks`` give."""
        self.table = self._empty(size)
        self.used = 0
        for entries in chunks:
            insert_entries(self.table, entries)
            self.used += len(entries)

    def push(self, ids: np.ndarray, sign: np.ndarray, values: list[np.ndarray], present: list[np.ndarray]) -> None:
        """Fold a batch: per member its values (int64 key bits) and where it sees one."""
        row, n = 0, len(ids)
        while True:
            if self.seen_bits:
                row, self.used = fold_seen(self.table, self.used, self.distinct, ids, tuple(values),
                                           tuple(present), row)
            else:
                row, self.used = fold_distinct(self.table, self.used, self.distinct, ids, sign, tuple(values),
                                               tuple(present), row)
            if row == n:
                return
            self._rebuild()  # half full: make room, go on from the row that needs it

    def counts(self, member: int, groups: np.ndarray) -> np.ndarray:
        return self.distinct[groups, member]

    # -- checkpoints ----------------------------------------------------------------------------
    def save(self, directory: Path, table: str, prefix: str, groups: int) -> list[str]:
        """Write what a checkpoint keeps, as parts ``<prefix>pairs`` (the pairs still held with their
        multiplicities) and ``<prefix>distinct`` (the counts) of ``table``; the files' names."""
        pairs = save_chunks(directory, table, f"{prefix}pairs", (count_live(self.table), self.table.shape[1]),
                            self.table.dtype, _live_chunks(self.table))
        return [pairs, *save_arrays(directory, table, {f"{prefix}distinct": self.distinct[:groups]})]

    def restore(self, saved: Mapping[str, np.ndarray], prefix: str, groups: int) -> None:
        """The sets ``save`` wrote (``saved``: the parts by name, arrays or mapped files)."""
        entries = saved[f"{prefix}pairs"]
        size = INITIAL_ENTRIES
        while size < 4 * len(entries):
            size *= 2
        self._fill((np.array(entries[i:i + LOAD_CHUNK]) for i in range(0, len(entries), LOAD_CHUNK)), size)
        self.distinct = self.placement.allocate(f"{self.name}.counts", (max(groups, len(self.distinct)), self.members),
                                                np.dtype(np.int64))
        copy_rows(self.distinct, saved[f"{prefix}distinct"], groups)


def _live_chunks(table: np.ndarray) -> Iterator[np.ndarray]:
    """The entries ``live_entries`` gives, a chunk of the table at a time (a placed table may exceed memory)."""
    for start in range(0, len(table), LOAD_CHUNK):
        yield live_entries(table[start:start + LOAD_CHUNK])
