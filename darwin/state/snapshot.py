"""Arrays in and out of a checkpoint directory, as ``.npy`` files named after their table and part."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from darwin.errors import CheckpointError


def save_arrays(directory: Path, table: str, arrays: Mapping[str, np.ndarray]) -> list[str]:
    """Write each array to ``<table>.<part>.npy``; the names, for the manifest's checksums."""
    names = []
    for part, a in arrays.items():
        name = f"{table}.{part}.npy"
        np.save(directory / name, np.ascontiguousarray(a), allow_pickle=False)
        names.append(name)
    return names


def load_arrays(directory: Path, table: str, parts: Sequence[str], mmap: bool = False) -> list[np.ndarray]:
    """The arrays ``save_arrays`` wrote; ``mmap``: mapped read-only rather than read into memory."""
    out = []
    for part in parts:
        path = directory / f"{table}.{part}.npy"
        try:
            out.append(np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None))
        except (OSError, ValueError) as e:
            raise CheckpointError(f"checkpoint {str(directory)!r}: cannot read state array {path.name}: {e}") \
                from None
    return out
