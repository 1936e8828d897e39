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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.codegen.distinct import FREE, fold_distinct, fold_seen, insert_entries, live_entries

INITIAL_ENTRIES = 2048
SEEN_BITS = 63  # members an entry's bits of an input that never retracts can hold


class DistinctSets:
    def __init__(self, members: int, groups: int, retracting: bool = True) -> None:
        self.members = members
        self.seen_bits = not retracting and members <= SEEN_BITS  # a bit per member, not a multiplicity
        self.used = 0  # entries holding a pair
        self.table = self._empty(INITIAL_ENTRIES)
        self.distinct = np.zeros((groups, members), dtype=np.int64)

    def _empty(self, size: int) -> np.ndarray:
        assert FREE == 0  # a table of zeros is a table of free entries
        return np.zeros((size, 3 if self.seen_bits else 2 + self.members), dtype=np.int64)

    def ensure_groups(self, capacity: int) -> None:
        """Room for the runner's groups (ids below ``capacity``)."""
        if capacity > len(self.distinct):
            grown = np.zeros((capacity, self.members), dtype=np.int64)
            grown[:len(self.distinct)] = self.distinct
            self.distinct = grown

    def _rebuild(self) -> None:
        """The pairs still held, in a table they fill at most a quarter of."""
        live = live_entries(self.table)
        size = len(self.table)
        while size < 4 * len(live):
            size *= 2
        self._fill(live, size)

    def _fill(self, entries: np.ndarray, size: int) -> None:
        self.table = self._empty(size)
        insert_entries(self.table, entries)
        self.used = len(entries)

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
    def arrays(self, groups: int) -> dict[str, np.ndarray]:
        """What a checkpoint keeps: the pairs still held with their multiplicities, and the counts."""
        return {"pairs": live_entries(self.table), "distinct": self.distinct[:groups]}

    def restore(self, saved: Any, prefix: str, groups: int) -> None:
        entries = saved[f"{prefix}pairs"]
        size = INITIAL_ENTRIES
        while size < 4 * len(entries):
            size *= 2
        self._fill(entries, size)
        self.distinct = np.zeros((max(groups, len(self.distinct)), self.members), dtype=np.int64)
        self.distinct[:groups] = saved[f"{prefix}distinct"]
