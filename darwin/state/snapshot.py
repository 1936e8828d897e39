"""Arrays in and out of a checkpoint directory, as ``.npy`` files named after their table and part."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


def save_chunks(directory: Path, table: str, part: str, shape: tuple[int, ...], dtype: np.dtype,
                chunks: Iterable[np.ndarray]) -> str:
    """Write an array given as consecutive chunks of rows (each of ``dtype``, ``shape[0]`` rows in all)
    to ``<table>.<part>.npy`` as ``save_arrays`` would, never holding it whole; its name."""
    name = f"{table}.{part}.npy"
    rows = 0
    with open(directory / name, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                 "fortran_order": False, "shape": shape})
        for chunk in chunks:
            f.write(np.ascontiguousarray(chunk, dtype=dtype).tobytes())
            rows += len(chunk)
    assert rows == shape[0], f"{name}: {rows} rows written, {shape[0]} announced"
    return name
