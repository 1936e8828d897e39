"""Window-ring state: one slot per open window, each a dense array over the key domain.

Slot r holds the window whose start / slide is r modulo the slot count; within a
slot, entry d is key - low. ``order`` lists each slot's entries in first-seen order
so a fired window drains in the same order as the hash table's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from darwin.codegen.layout import EMPTY_SLOT
from darwin.graph.operators import Ring
from darwin.state.backend import StateBackend

EMPTY = EMPTY_SLOT


class RingState:
    def __init__(self, backend: StateBackend, name: str, ring: Ring, value_dtypes: Sequence[np.dtype]) -> None:
        self.ring = ring
        cells = ring.slots * ring.size
        self.ring_start = backend.allocate(name, "ring_start", (ring.slots,), np.dtype(np.int64))
        self.ring_start[:] = EMPTY
        self.ring_count = backend.allocate(name, "ring_count", (ring.slots,), np.dtype(np.int64))
        self.order = backend.allocate(name, "order", (cells,), np.dtype(np.int64))
        self.seen = backend.allocate(name, "seen", (cells,), np.dtype(np.uint8))
        self.values = [backend.allocate(name, f"value{j}", (cells,), d) for j, d in enumerate(value_dtypes)]

    def array(self, name: str) -> np.ndarray:
        if name.startswith("v") and name[1:].isdigit():
            return self.values[int(name[1:])]
        return getattr(self, name)

    @property
    def count(self) -> int:
        return int(self.ring_count.sum())

    def fire(self, watermark: int, size_ms: int, final: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Remove the windows with end <= watermark (all if ``final``): their key columns and values."""
        ring = self.ring
        slots = [r for r in range(ring.slots) if self.ring_start[r] != EMPTY
                 and (final or self.ring_start[r] + size_ms <= watermark)]
        slots.sort(key=lambda r: self.ring_start[r])
        starts, entries = [], []
        for r in slots:
            d = self.order[r * ring.size: r * ring.size + self.ring_count[r]].copy()
            starts.append(np.full(len(d), self.ring_start[r], dtype=np.int64))
            entries.append(r * ring.size + d)
        cells = np.concatenate(entries) if entries else np.zeros(0, dtype=np.int64)
        keys = [np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)]
        if ring.keyed:
            keys.append(cells % ring.size + ring.low)
        values = [v[cells] for v in self.values]
        for v in self.values:
            v[cells] = 0
        self.seen[cells] = 0
        for r in slots:
            self.ring_count[r] = 0
            self.ring_start[r] = EMPTY
        return keys, values

    def min_end(self, size_ms: int) -> int | None:
        live = self.ring_start[self.ring_start != EMPTY]
        return int(live.min()) + size_ms if len(live) else None
