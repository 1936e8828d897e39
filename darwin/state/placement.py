"""Where the arrays of a join's rows live: in DRAM, or in memory-mapped files the OS pages."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np


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
    """A join side's arrays as memory-mapped scratch files: the OS pages them, so they may exceed memory.

    Each allocation is a new file (its predecessor is unlinked; a mapping of it stays valid until
    dropped). Nothing here survives a crash on purpose: a join's checkpoint holds a copy of its
    rows, and a restore maps new files and copies them back.
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
