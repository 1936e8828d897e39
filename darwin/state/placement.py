"""Where the arrays of an operator's state live (a join's rows, an updating aggregation's groups): in
DRAM, or in memory-mapped files the OS pages."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

LOAD_CHUNK = 1 << 20  # rows copied at a time from a checkpoint into placed arrays


class Placement(Protocol):
    """Where arrays live: a new zeroed array for ``part`` replaces the previous one of that part."""

    def allocate(self, part: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray: ...
    def close(self) -> None: ...


class InMemory:
    def allocate(self, part: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.zeros(shape, dtype=dtype)

    def close(self) -> None:
        pass


class MappedFiles:
    """An operator's arrays as memory-mapped scratch files: the OS pages them, so they may exceed memory.

    Each allocation is a new file (its predecessor is unlinked; a mapping of it stays valid until
    dropped). Nothing here survives a crash on purpose: the operator's checkpoint holds a copy of
    its arrays, and a restore maps new files and copies them back.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.generation = 0
        self.files: dict[str, Path] = {}
        for stale in directory.glob("*.bin"):  # left by a crashed run: its rows come back from a checkpoint
            stale.unlink()

    def allocate(self, part: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        self.generation += 1
        path = self.directory / f"{part}.{self.generation}.bin"
        array = np.memmap(path, dtype=dtype, mode="w+", shape=shape)  # a sparse file of zeros
        previous = self.files.get(part)
        if previous is not None:
            previous.unlink(missing_ok=True)
        self.files[part] = path
        return array

    def close(self) -> None:
        for path in self.files.values():
            path.unlink(missing_ok=True)
        self.files.clear()


def copy_rows(target: np.ndarray, saved: np.ndarray, count: int) -> None:
    """Rows 0..count-1 of a saved array into a placed one, a chunk at a time (both may exceed memory)."""
    for start in range(0, count, LOAD_CHUNK):
        end = min(count, start + LOAD_CHUNK)
        target[start:end] = saved[start:end]
