"""The ``memory`` backend: state arrays in DRAM."""

from __future__ import annotations

import numpy as np


class MemoryBackend:
    name = "memory"

    def allocate(self, table: str, part: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.zeros(shape, dtype=dtype)

    def close(self) -> None:
        pass
