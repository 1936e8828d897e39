"""The state backend protocol: where the arrays of operator state live."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from darwin.config import Config
from darwin.errors import ConfigError


class StateBackend(Protocol):
    """Allocates the arrays compiled kernels read and write.

    A backend decides placement (DRAM, a memory-mapped file, a RocksDB-backed
    delta); kernels only ever see numpy arrays.
    """

    name: str

    def allocate(self, table: str, part: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A zeroed array for ``part`` of ``table``; called again with a larger shape on growth."""
        ...

    def close(self) -> None:
        ...


def backend_for(config: Config) -> StateBackend:
    if config.state == "memory":
        from darwin.state.memory import MemoryBackend

        return MemoryBackend()
    raise ConfigError(f"state backend {config.state!r} is not available in this build")
