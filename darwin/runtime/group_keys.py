"""Dense ids for the keys of groups, in the order the keys first arrive.

The key columns of a batch become rows of int64 components (floats as normalised bit patterns,
strings as dictionary codes, a NULL as a 0 plus a validity component); a compiled open-addressing
index (``darwin.codegen.group_index``) maps each row to its group's id, adding new groups as they
come. A group that empties keeps its id, unless its owner knows it will never come back (a fired
window's partitions) and ``retain``s the others, which renumbers them in their order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.codegen import group_index as gi
from darwin.runtime.encoding import Column, EncodedBatch
from darwin.state.placement import InMemory, Placement, copy_rows
from darwin.types import DType, Field

INITIAL_GROUPS = 1024


class GroupKeys:
    def __init__(self, fields: list[Field], placement: Placement | None = None) -> None:
        """``placement``: where the keys and the index live (DRAM unless an owner places them in files)."""
        self.fields = fields
        self.placement = placement if placement is not None else InMemory()
        self.width = max(1, sum(1 + f.nullable for f in fields))
        self.count = 0
        self._allocate(INITIAL_GROUPS)

    @property
    def capacity(self) -> int:
        return len(self.keys)

    def _allocate(self, capacity: int) -> None:
        self.keys = self.placement.allocate("keys", (capacity, self.width), np.dtype(np.int64))
        self.index = self.placement.allocate("index", (2 * capacity,), np.dtype(np.int64))
        self.index[:] = gi.EMPTY

    def _grow(self, needed: int) -> None:
        """Room for ``needed`` groups (the index stays at most half full)."""
        capacity = self.capacity
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        keys = self.keys
        self._allocate(capacity)
        self.keys[:self.count] = keys[:self.count]
        gi.rehash(self.index, self.keys, self.count)

    def ids(self, batch: EncodedBatch) -> np.ndarray:
        """The group id of every row of ``batch``, new groups added."""
        n = batch.length
        rows = np.zeros((n, self.width), dtype=np.int64)
        pos = 0
        for f in self.fields:
            c = batch.columns[f.name]
            v = gi.key_bits(c.values)
            rows[:, pos] = v if c.valid is None else np.where(c.valid, v, 0)
            if f.nullable:
                rows[:, pos + 1] = 1 if c.valid is None else c.valid
            pos += 1 + f.nullable
        self._grow(self.count + n)
        ids = np.empty(n, dtype=np.int64)
        self.count = gi.assign(self.index, self.keys, self.count, rows, gi.hash_keys(rows), ids)
        return ids

    def retain(self, groups: np.ndarray) -> None:
        """Keep only ``groups`` (ascending ids), numbered 0, 1, ... in that order: groups whose keys
        will never arrive again are forgotten, so the ids stay as many as the groups still in use."""
        self.keys[:len(groups)] = self.keys[groups]
        self.count = len(groups)
        self.index[:] = gi.EMPTY
        gi.rehash(self.index, self.keys, self.count)

    def columns(self, groups: np.ndarray) -> dict[str, Column]:
        """The key columns of ``groups``, decoded from their components."""
        out: dict[str, Column] = {}
        pos = 0
        for f in self.fields:
            raw = self.keys[groups, pos]
            values = raw.view(np.float64) if f.dtype is DType.FLOAT64 else \
                raw.astype(np.bool_) if f.dtype is DType.BOOL else raw
            valid = self.keys[groups, pos + 1].astype(np.bool_) if f.nullable else None
            out[f.name] = Column(values, valid)
            pos += 1 + f.nullable
        return out

    def saved(self) -> dict[str, Any]:
        return {"keys": self.keys[:self.count]}

    def load(self, arrays: Any) -> None:
        """The keys ``saved`` gave (a mapped file's may exceed memory: copied a chunk at a time)."""
        keys = arrays["keys"]
        self.count = 0
        self._grow(max(len(keys), 1))
        self.count = len(keys)
        copy_rows(self.keys, keys, self.count)
        self.index[:] = gi.EMPTY
        gi.rehash(self.index, self.keys, self.count)
