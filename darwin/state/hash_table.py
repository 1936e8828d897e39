"""A keyed table of accumulators in DRAM: the state of a hash aggregation on the ``memory`` backend.

Keys are struct-of-arrays int64 columns (``darwin.codegen.hashtable``); each value
column is one array with a slot per entry. Compiled kernels update it in place;
this class grows it, fires whole windows out of it and compacts what remains.
Backends that place the arrays elsewhere subclass it (``darwin.state.mmap``) or
use it as their in-memory delta (``darwin.state.rocksdb``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.hashtable import EMPTY, index_size_for, rebuild_index
from darwin.state.snapshot import load_arrays, save_arrays

META = 4  # [entry count, undo rows, undo base, undo epoch]: the last three only on the mmap backend


class HashTableState:
    undo = False  # whether kernels must log old entries before changing them (mmap)

    def __init__(self, name: str, key_width: int, value_dtypes: Sequence[np.dtype], capacity: int = 1024) -> None:
        self.name = name
        self.key_width = key_width
        self.value_dtypes = [np.dtype(d) for d in value_dtypes]
        self.meta = self._array("meta", META, np.dtype(np.int64))
        self._allocate(capacity)

    # -- placement: subclasses put the arrays elsewhere -------------------------------------
    def _array(self, part: str, length: int, dtype: np.dtype) -> np.ndarray:
        return np.zeros(length, dtype=dtype)

    def _allocate(self, capacity: int) -> None:
        self.keys = [self._array(f"key{j}", capacity, np.dtype(np.int64)) for j in range(self.key_width)]
        self.values = [self._array(f"value{j}", capacity, d) for j, d in enumerate(self.value_dtypes)]
        self.index = self._array("index", index_size_for(capacity), np.dtype(np.int32))
        self.index[:] = EMPTY

    # -- what kernels see --------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        """The array a kernel argument names: index, meta, k<j> (key column j), v<j> (value column j)."""
        if name in ("index", "meta"):
            return getattr(self, name)
        return (self.keys if name[0] == "k" else self.values)[int(name[1:])]

    @property
    def count(self) -> int:
        return int(self.meta[0])

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[0]

    def is_empty(self) -> bool:
        return self.count == 0

    def grow(self, needed: int) -> None:
        """Make room for at least ``needed`` more entries (doubling, so growth is amortised)."""
        capacity = self.capacity
        while capacity < self.count + needed:
            capacity *= 2
        if capacity != self.capacity:
            self._resize(capacity)

    def _resize(self, capacity: int) -> None:
        count = self.count
        old = self.keys + self.values
        self._allocate(capacity)
        for new, a in zip(self.keys + self.values, old):
            new[:count] = a[:count]
        rebuild_index(self.index, self.keys, count)

    # -- firing windows ---------------------------------------------------------------------
    def fire(self, watermark: int, size_ms: int, final: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Take out the entries of windows with end <= watermark (all if ``final``), by window then first seen."""
        count = self.count
        starts = self.keys[0][:count]
        fired = np.ones(count, dtype=np.bool_) if final else (starts + size_ms <= watermark)
        selected = np.flatnonzero(fired)
        selected = selected[np.argsort(starts[selected], kind="stable")]
        keys, values = [k[selected] for k in self.keys], [v[selected] for v in self.values]
        self.retain(~fired)
        return keys, values

    def min_start(self) -> int | None:
        return int(self.keys[0][: self.count].min()) if self.count else None

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

    def clear(self) -> None:
        count = self.count
        for a in self.keys + self.values:
            a[:count] = 0
        self.meta[0] = 0
        self.index[:] = EMPTY

    # -- checkpoints: the memory backend copies the live entries ------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        count = self.count
        arrays = {f"key{j}": k[:count] for j, k in enumerate(self.keys)}
        arrays |= {f"value{j}": v[:count] for j, v in enumerate(self.values)}
        return {"count": count}, save_arrays(directory, self.name, arrays)

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        count = int(meta["count"])
        arrays = load_arrays(directory, self.name, [f"key{j}" for j in range(self.key_width)]
                             + [f"value{j}" for j in range(len(self.value_dtypes))])
        self.clear()
        self.grow(count)
        for a, saved in zip(self.keys + self.values, arrays):
            a[:count] = saved
        self.meta[0] = count
        rebuild_index(self.index, self.keys, count)

    def after_checkpoint(self, checkpoint_id: int) -> None:
        """Called once the checkpoint's manifest is durable."""

    def close(self) -> None:
        """Release what the table holds outside the process (files, databases)."""
