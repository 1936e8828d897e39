"""The values min or max keeps per group over an updating input, with their counts, so a retraction
of the current extreme finds the next one (``darwin.codegen.kept_values``).

The table, each group's chain head, extreme and state live where the runner's ``Placement`` puts
them (memory-mapped files on the persistent backends), so they may exceed memory. An entry whose
count is back to 0 keeps its place until the table is half full: it is then rebuilt from the
entries still held, twice as large while they fill more than a quarter of it (as
``darwin.runtime.distinct``'s sets). Checkpoints write the entries held, a chunk of the table at a
time, and a restore inserts them back, which gives each group its extreme again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from darwin.codegen import kept_values as kv
from darwin.state.placement import LOAD_CHUNK, Placement, copy_rows
from darwin.state.snapshot import save_chunks
from darwin.types import DType

INITIAL_ENTRIES = 2048
_NO_TEXT = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


class KeptValues:
    def __init__(self, smaller: bool, arg: DType, groups: int, placement: Placement, name: str) -> None:
        """min (``smaller``) or max of values of type ``arg``; arrays under part names starting with ``name``."""
        self.smaller, self.arg, self.name = smaller, arg, name
        self.by_text = arg is DType.STRING
        self.placement = placement
        self.used = 0  # entries in the table
        self.table = self._empty(INITIAL_ENTRIES)
        self._allocate_groups(groups)

    def _empty(self, size: int) -> np.ndarray:
        assert kv.FREE == 0  # a table of zeros is a table of free entries
        return self.placement.allocate(f"{self.name}.table", (size, kv.WIDTH), np.dtype(np.int64))

    def _allocate_groups(self, groups: int) -> None:
        place = self.placement.allocate
        self.head = place(f"{self.name}.head", (groups,), np.dtype(np.int64))
        self.best = place(f"{self.name}.best", (groups,), np.dtype(np.int64))
        self.state = place(f"{self.name}.state", (groups,), np.dtype(np.uint8))

    def ensure_groups(self, capacity: int) -> None:
        """Room for the runner's groups (ids below ``capacity``)."""
        if capacity > len(self.head):
            n, head, best, state = len(self.head), self.head, self.best, self.state
            self._allocate_groups(capacity)
            for mine, old in zip((self.head, self.best, self.state), (head, best, state)):
                copy_rows(mine, old, n)

    def keys(self, values: np.ndarray) -> np.ndarray:
        """A column's values as the table's keys (``darwin.codegen.kept_values``)."""
        if self.arg is DType.FLOAT64:
            return kv.float_keys(values)
        return np.ascontiguousarray(values).astype(np.int64, copy=False)

    # -- a batch --------------------------------------------------------------------------------
    def push(self, ids: np.ndarray, sign: np.ndarray, values: np.ndarray, present: np.ndarray,
             text: tuple[np.ndarray, ...]) -> None:
        """Fold a batch's values where ``present``; ``text``: the string pool's ``text_arrays()``."""
        keys, present = self.keys(values), np.ascontiguousarray(present)
        starts, ends, bases = self._text(text)
        row, n = 0, len(ids)
        while True:
            row, self.used = kv.fold_kept(self.table, self.used, self.head, self.best, self.state, ids, sign, keys,
                                          present, self.smaller, self.by_text, starts, ends, bases, row)
            if row == n:
                return
            self._rebuild(text)  # half full: make room, go on from the row that needs it

    def settle(self, groups: np.ndarray, text: tuple[np.ndarray, ...]) -> None:
        """After a batch: the extreme of each of ``groups`` whose extreme left."""
        starts, ends, bases = self._text(text)
        kv.settle(self.table, self.head, self.best, self.state, groups, self.smaller, self.by_text, starts, ends, bases)

    def forget(self, groups: np.ndarray) -> None:
        """Groups left without rows start afresh if their key comes again."""
        kv.forget_groups(self.table, self.head, self.state, groups)

    def extremes(self, groups: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """The extreme of each of ``groups`` as a value of ``dtype`` (0 where a group holds none)."""
        held = self.state[groups] != kv.EMPTY
        keys = np.where(held, self.best[groups], 0)
        if self.arg is DType.FLOAT64:
            return np.where(held, kv.float_values(keys), 0.0)
        return keys.astype(dtype, copy=False)

    def _text(self, text: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pool's arrays where the values are strings; empty ones for numbers (one compiled signature)."""
        if not self.by_text:
            return _NO_TEXT
        starts, ends, bases = text
        return starts, ends, bases

    def _rebuild(self, text: tuple[np.ndarray, ...]) -> None:
        """The entries still held, in a table they fill at most a quarter of, chained again."""
        old = self.table
        size = len(old)
        while size < 4 * kv.count_held(old):
            size *= 2
        for start in range(0, len(old), LOAD_CHUNK):
            kv.unlink(old[start:start + LOAD_CHUNK], self.head)
        self._fill(_held_chunks(old), size, text)

    def _fill(self, chunks: Iterator[np.ndarray], size: int, text: tuple[np.ndarray, ...]) -> None:
        """A new table of ``size`` entries holding the entries ``chunks`` give, chained to their groups."""
        starts, ends, bases = self._text(text)
        self.table = self._empty(size)
        self.used = 0
        for entries in chunks:
            kv.insert_held(self.table, self.head, self.best, self.state, entries, self.smaller, self.by_text,
                           starts, ends, bases)
            self.used += len(entries)

    # -- checkpoints ----------------------------------------------------------------------------
    def save(self, directory: Path, table: str, part: str) -> str:
        """Write the entries held (``[group + 1, key, count]``) as part ``part`` of ``table``; the file's name."""
        return save_chunks(directory, table, part, (kv.count_held(self.table), kv.NEXT), self.table.dtype,
                           _held_chunks(self.table))

    def restore(self, entries: np.ndarray, groups: int, text: tuple[np.ndarray, ...]) -> None:
        """The entries ``save`` wrote (an array or a mapped file), for groups below ``groups``."""
        size = INITIAL_ENTRIES
        while size < 4 * len(entries):
            size *= 2
        self._allocate_groups(max(groups, len(self.head)))
        self._fill((np.array(entries[i:i + LOAD_CHUNK]) for i in range(0, len(entries), LOAD_CHUNK)), size, text)

    def restore_kept(self, kept: Mapping[str, list], groups: int, text: tuple[np.ndarray, ...]) -> None:
        """The values a checkpoint from before kept them here held: ``{group: [[value, count], ...]}``
        as JSON read them (a float NaN as ``"NaN"``)."""
        pairs = [(int(g), v, c) for g, values in kept.items() for v, c in values]
        values = [float("nan") if v == "NaN" else v for _, v, _ in pairs]
        keys = self.keys(np.array(values, dtype=np.float64 if self.arg is DType.FLOAT64 else np.int64))
        entries = np.empty((len(pairs), kv.NEXT), np.int64)
        entries[:, 0] = [g + 1 for g, _, _ in pairs]
        entries[:, kv.KEY] = keys
        entries[:, kv.COUNT] = [c for _, _, c in pairs]
        self.restore(entries, groups, text)


def _held_chunks(table: np.ndarray) -> Iterator[np.ndarray]:
    """The entries ``held_entries`` gives, a chunk of the table at a time (a placed table may exceed memory)."""
    for start in range(0, len(table), LOAD_CHUNK):
        yield kv.held_entries(table[start:start + LOAD_CHUNK])
