"""A keyed table of accumulators: the state of a hash aggregation.

Keys are struct-of-arrays int64 columns (``darwin.codegen.hashtable``); each value
column is one array with a slot per entry. Compiled kernels update it in place;
this class grows it, drains selected entries and compacts what remains.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from darwin.codegen.hashtable import EMPTY, index_size_for, rebuild_index
from darwin.state.backend import StateBackend


class HashTableState:
    def __init__(self, backend: StateBackend, name: str, key_width: int, value_dtypes: Sequence[np.dtype],
                 capacity: int = 1024) -> None:
        self.backend, self.name = backend, name
        self.key_width = key_width
        self.value_dtypes = [np.dtype(d) for d in value_dtypes]
        self.meta = np.zeros(2, dtype=np.int64)  # [entry count, unused]
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        b = self.backend
        self.keys = [b.allocate(self.name, f"key{j}", (capacity,), np.dtype(np.int64)) for j in range(self.key_width)]
        self.values = [b.allocate(self.name, f"value{j}", (capacity,), d) for j, d in enumerate(self.value_dtypes)]
        self.index = b.allocate(self.name, "index", (index_size_for(capacity),), np.dtype(np.int32))
        self.index[:] = EMPTY

    @property
    def count(self) -> int:
        return int(self.meta[0])

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[0]

    def grow(self, needed: int) -> None:
        """Make room for at least ``needed`` more entries (doubling, so growth is amortised)."""
        count = self.count
        capacity = self.capacity
        while capacity < count + needed:
            capacity *= 2
        if capacity == self.capacity:
            return
        old_keys, old_values = self.keys, self.values
        self._allocate(capacity)
        for new, old in zip(self.keys + self.values, old_keys + old_values):
            new[:count] = old[:count]
        rebuild_index(self.index, self.keys, count)

    def take(self, selected: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copies of the keys and values of the entries at ``selected``."""
        return [k[selected] for k in self.keys], [v[selected] for v in self.values]

    def retain(self, keep: np.ndarray) -> None:
        """Drop every entry whose ``keep`` flag is False; survivors keep their order."""
        count = self.count
        survivors = np.flatnonzero(keep)
        m = survivors.shape[0]
        if m == count:
            return
        for a in self.keys + self.values:
            a[:m] = a[survivors]
            a[m:count] = 0
        self.meta[0] = m
        rebuild_index(self.index, self.keys, m)
