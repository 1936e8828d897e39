"""Window-ring state: one slot per open window, each a dense array over the key domain.

Slot r holds the window whose start / slide is r modulo the slot count; within a
slot, entry d is key - low. ``order`` lists each slot's entries in first-seen order
so a fired window drains in the same order as the hash table's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.layout import EMPTY_SLOT
from darwin.graph.operators import Ring
from darwin.state.snapshot import load_arrays, save_arrays

EMPTY = EMPTY_SLOT


class RingState:
    """Held in DRAM on the ``memory`` backend only; the translator bounds its size (``RING_CELLS``)."""

    def __init__(self, name: str, ring: Ring, value_dtypes: Sequence[np.dtype], slide_ms: int) -> None:
        self.name, self.ring, self.slide_ms = name, ring, slide_ms
        cells = ring.slots * ring.size
        self.ring_start = np.full(ring.slots, EMPTY, dtype=np.int64)
        self.ring_count = np.zeros(ring.slots, dtype=np.int64)
        self.order = np.zeros(cells, dtype=np.int64)
        self.seen = np.zeros(cells, dtype=np.uint8)
        self.values = [np.zeros(cells, dtype=d) for d in value_dtypes]

    def array(self, name: str) -> np.ndarray:
        if name.startswith("v") and name[1:].isdigit():
            return self.values[int(name[1:])]
        return getattr(self, name)

    @property
    def count(self) -> int:
        return int(self.ring_count.sum())

    def is_empty(self) -> bool:
        return self.count == 0

    def _parts(self) -> dict[str, np.ndarray]:
        parts: dict[str, np.ndarray] = {"ring_start": self.ring_start, "ring_count": self.ring_count,
                                        "order": self.order, "seen": self.seen}
        return parts | {f"value{j}": v for j, v in enumerate(self.values)}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        return {}, save_arrays(directory, self.name, self._parts())

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        parts = self._parts()
        for a, saved in zip(parts.values(), load_arrays(directory, self.name, list(parts))):
            a[:] = saved

    def end_batch(self) -> None:
        pass

    def after_checkpoint(self, checkpoint_id: int) -> None:
        pass

    def close(self) -> None:
        pass

    def fire(self, watermark: int, size_ms: int, final: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """Remove the windows with end <= watermark (all if ``final``): their key columns and values.

        One chunk: the translator bounds a ring's size, so its windows fit in memory.
        """
        ring = self.ring
        slots = [r for r in range(ring.slots) if self.ring_start[r] != EMPTY
                 and (final or self.ring_start[r] + size_ms <= watermark)]
        slots.sort(key=lambda r: self.ring_start[r])
        keys, cells = self._cells(slots)
        values = [v[cells] for v in self.values]
        for v in self.values:
            v[cells] = 0
        self.seen[cells] = 0
        for r in slots:
            self.ring_count[r] = 0
            self.ring_start[r] = EMPTY
        if len(cells):
            yield keys, values

    def entries(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Every entry's key columns (window start[, key]) and values, without taking them out."""
        keys, cells = self._cells([r for r in range(self.ring.slots) if self.ring_start[r] != EMPTY])
        return keys, [v[cells] for v in self.values]

    def _cells(self, slots: Sequence[int]) -> tuple[list[np.ndarray], np.ndarray]:
        """The entries of ``slots``, slot by slot in first-seen order: their key columns (window
        start[, key]) and their cells."""
        ring = self.ring
        starts, cells = [], []
        for r in slots:
            d = self.order[r * ring.size: r * ring.size + self.ring_count[r]]
            starts.append(np.full(len(d), self.ring_start[r], dtype=np.int64))
            cells.append(r * ring.size + d)
        cell = np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64)
        keys = [np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)]
        if ring.keyed:
            keys.append(cell % ring.size + ring.low)
        return keys, cell

    def add_entries(self, keys: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Put entries the ring does not hold into their cells (state moving between workers); each
        window's go to the end of its first-seen order, in the order given."""
        ring, n = self.ring, len(keys[0])
        if not n:
            return
        starts = np.asarray(keys[0], dtype=np.int64)
        r = (starts // self.slide_ms) % ring.slots
        d = np.asarray(keys[1], dtype=np.int64) - ring.low if ring.keyed else np.zeros(n, np.int64)
        e = r * ring.size + d
        self.ring_start[r] = starts
        self.seen[e] = 1
        by_slot = np.argsort(r, kind="stable")
        slot = r[by_slot]
        place = np.arange(n) - np.searchsorted(slot, slot)  # each entry's place among its slot's, in order
        self.order[slot * ring.size + self.ring_count[slot] + place] = d[by_slot]
        self.ring_count += np.bincount(r, minlength=ring.slots)
        for v, added in zip(self.values, values):
            v[e] = added

    def min_start(self) -> int | None:
        live = self.ring_start[self.ring_start != EMPTY]
        return int(live.min()) if len(live) else None

    def max_start(self) -> int | None:
        live = self.ring_start[self.ring_start != EMPTY]
        return int(live.max()) if len(live) else None

    # -- panes (``darwin.state.panes``): windows combine them, so they are read before they leave ----
    def panes_through(self, last: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Copies of the entries of the slots whose start (a pane's) is at most ``last``."""
        keys, cells = self._cells([r for r in range(self.ring.slots)
                                   if self.ring_start[r] != EMPTY and self.ring_start[r] <= last])
        return keys, [v[cells] for v in self.values]

    def drop_through(self, last: int) -> None:
        """Empty the slots whose start is at most ``last``."""
        for _ in self.fire(last, 0, final=False):
            pass
