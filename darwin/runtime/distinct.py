"""Exact sets of values per group for ``count_distinct`` in an updating aggregation.

One ``DistinctSets`` serves every distinct count of the aggregation over the same value (its
*members*, which differ only in their filters): a compiled index gives each (group, value) pair a
dense id, each member keeps a multiplicity per pair, and a group's distinct count for a member
changes only when a pair's multiplicity goes 0 -> 1 or 1 -> 0 (``darwin.codegen.distinct``). A
retraction takes the value's multiplicity down; the value leaves the set at zero.

Pairs left with no multiplicity stay indexed (their id comes back if the value does) until they
are the majority when the index is full: then the index is rebuilt from the live pairs only, so
an updating input that churns through values does not grow it without bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.codegen import group_index as gi
from darwin.codegen.distinct import fold_pairs, pair_keys

INITIAL_PAIRS = 1024


class DistinctSets:
    def __init__(self, members: int, groups: int) -> None:
        self.members = members
        self.count = 0  # pairs indexed
        self._allocate_pairs(INITIAL_PAIRS)
        self.distinct = np.zeros((groups, members), dtype=np.int64)

    def _allocate_pairs(self, capacity: int) -> None:
        self.keys = np.zeros((capacity, 2), dtype=np.int64)
        self.mult = np.zeros((capacity, self.members), dtype=np.int64)
        self.slots = np.full(2 * capacity, gi.EMPTY, dtype=np.int64)

    def ensure_groups(self, capacity: int) -> None:
        """Room for the runner's groups (ids below ``capacity``)."""
        if capacity > len(self.distinct):
            grown = np.zeros((capacity, self.members), dtype=np.int64)
            grown[:len(self.distinct)] = self.distinct
            self.distinct = grown

    def _room(self, new: int) -> None:
        """Room for ``new`` more pairs. A full index is rebuilt over its live pairs, twice as large
        while they fill more than half of it, so rebuilding is amortised over the pairs added."""
        capacity = len(self.keys)
        if self.count + new <= capacity:
            return
        live = np.flatnonzero(np.any(self.mult[:self.count] != 0, axis=1))
        while capacity < len(live) + new or 2 * len(live) > capacity:
            capacity *= 2
        self._rebuild(live, capacity)

    def _rebuild(self, live: np.ndarray, capacity: int) -> None:
        """The index over the pairs ``live`` only, in ``capacity`` entries."""
        keys, mult = self.keys[live], self.mult[live]
        self._allocate_pairs(capacity)
        self.count = len(live)
        self.keys[:self.count], self.mult[:self.count] = keys, mult
        gi.rehash(self.slots, self.keys, self.count)

    def push(self, ids: np.ndarray, sign: np.ndarray, values: list[np.ndarray], present: list[np.ndarray]) -> None:
        """Fold a batch: per member its values (int64 key bits) and where it sees one."""
        vals = np.stack(values) if len(values) > 1 else values[0].reshape(1, -1)
        seen = np.stack(present) if len(present) > 1 else present[0].reshape(1, -1)
        rows, keys = pair_keys(ids, vals, seen)
        if len(rows) == 0:
            return
        self._room(len(rows))
        pairs = np.empty(len(rows), dtype=np.int64)
        self.count = gi.assign(self.slots, self.keys, self.count, keys, gi.hash_keys(keys), pairs)
        fold_pairs(ids, rows, pairs, sign, seen, self.mult, self.distinct)

    def counts(self, member: int, groups: np.ndarray) -> np.ndarray:
        return self.distinct[groups, member]

    # -- checkpoints ----------------------------------------------------------------------------
    def arrays(self, groups: int) -> dict[str, np.ndarray]:
        """What a checkpoint keeps: the pairs with their multiplicities, and the groups' counts."""
        return {"keys": self.keys[:self.count], "mult": self.mult[:self.count], "distinct": self.distinct[:groups]}

    def restore(self, saved: Any, prefix: str, groups: int) -> None:
        keys, mult = saved[f"{prefix}keys"], saved[f"{prefix}mult"]
        capacity = INITIAL_PAIRS
        while capacity < len(keys):
            capacity *= 2
        self._allocate_pairs(capacity)
        self.count = len(keys)
        self.keys[:self.count], self.mult[:self.count] = keys, mult
        gi.rehash(self.slots, self.keys, self.count)
        self.distinct = np.zeros((max(groups, len(self.distinct)), self.members), dtype=np.int64)
        self.distinct[:groups] = saved[f"{prefix}distinct"]
