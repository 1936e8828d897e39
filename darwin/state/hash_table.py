"""A keyed table of accumulators in DRAM: the state of a hash aggregation on the ``memory`` backend.

Keys are struct-of-arrays int64 columns (``darwin.codegen.hashtable``); each value
column is one array with a slot per entry. Compiled kernels update it in place;
this class grows it, fires whole windows out of it and compacts what remains.
Backends that place the arrays elsewhere subclass it (``darwin.state.mmap``) or
use it as their in-memory delta (``darwin.state.rocksdb``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.hashtable import (
    EMPTY,
    NO_WINDOW,
    compact,
    index_size_for,
    next_window,
    rebuild_index,
    select_window,
)
from darwin.state.snapshot import load_arrays, save_arrays

FIRE_CHUNK = 1 << 20  # entries per batch of fired windows
INT64_MAX = np.iinfo(np.int64).max
NO_LOGGED, NO_SLOTS = np.zeros(0, np.uint8), np.zeros(0, np.int64)  # stand-ins: this table keeps no undo log


class HashTableState:
    meta_slots = 3  # [entry count, undo rows, undo base]: kernels read these; the last two matter on mmap only

    def __init__(self, name: str, key_width: int, value_dtypes: Sequence[np.dtype], capacity: int = 1024) -> None:
        self.name = name
        self.key_width = key_width
        self.value_dtypes = [np.dtype(d) for d in value_dtypes]
        self.meta = self._array("meta", self.meta_slots, np.dtype(np.int64))
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
    def fire(self, watermark: int, size_ms: int, final: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """Take out the entries of windows with end <= watermark (all if ``final``), by window then first seen.

        Yields chunks of at most ``FIRE_CHUNK`` entries, so a fired window may be larger than
        memory; the entries leave the table once the last chunk has been taken.
        """
        count, starts = self.count, self.keys[0]
        last = INT64_MAX if final else watermark - size_ms
        chunk = np.empty(min(FIRE_CHUNK, max(count, 1)), dtype=np.int64)
        window = next_window(starts, count, NO_WINDOW, last)
        while window != NO_WINDOW:
            pos = 0
            while pos < count:
                n, pos = select_window(starts, count, window, pos, chunk)
                if n:
                    selected = chunk[:n]
                    yield [k[selected] for k in self.keys], [v[selected] for v in self.values]
            window = next_window(starts, count, window, last)
        if not final:
            self.retain(starts[:count] > last)
        elif count:
            self.clear()

    def min_start(self) -> int | None:
        return int(self.keys[0][: self.count].min()) if self.count else None

    def max_start(self) -> int | None:
        return int(self.keys[0][: self.count].max()) if self.count else None

    # -- panes (``darwin.state.panes``): windows combine them, so they are read before they leave ----
    def panes_through(self, last: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copies of the entries whose window start (a pane's) is at most ``last``, in table order."""
        held = np.flatnonzero(self.keys[0][: self.count] <= last)
        return [k[held] for k in self.keys], [v[held] for v in self.values]

    def drop_through(self, last: int) -> None:
        """Drop the entries whose window start is at most ``last``."""
        self.retain(self.keys[0][: self.count] > last)

    def retain(self, keep: np.ndarray) -> None:
        """Drop every entry whose ``keep`` flag is False; survivors keep their order."""
        if keep.all():
            return
        self.meta[0] = self._compact(keep)
        rebuild_index(self.index, self.keys, self.count)

    def _compact(self, keep: np.ndarray) -> int:
        columns = self._columns()  # meta[2] (the undo base) is 0: nothing is logged into the stand-ins
        return compact(keep, columns, self.count, self.meta, NO_LOGGED, NO_SLOTS, columns)

    def _columns(self) -> tuple[np.ndarray, ...]:
        """Every key and value array as int64, for compiled helpers that move whole entries."""
        return tuple(a.view(np.int64) for a in self.keys + self.values)

    def clear(self) -> None:
        self.retain(np.zeros(self.count, dtype=np.bool_))

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

    def entries(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copies of every entry's key and value columns."""
        count = self.count
        return [k[:count].copy() for k in self.keys], [v[:count].copy() for v in self.values]

    def add_entries(self, keys: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Append entries whose keys the table does not hold (state moving between workers)."""
        count, n = self.count, len(keys[0])
        self.grow(n)
        for a, added in zip(self.keys + self.values, [*keys, *values]):
            a[count:count + n] = added
        self.meta[0] = count + n
        rebuild_index(self.index, self.keys, count + n)

    def end_batch(self) -> None:
        """Called after the kernel has been through an input batch."""

    def after_checkpoint(self, checkpoint_id: int) -> None:
        """Called once the checkpoint's manifest is durable."""

    def close(self) -> None:
        """Release what the table holds outside the process (files, databases)."""
