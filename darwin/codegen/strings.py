"""Compiled gathering of strings out of a pool laid out as Arrow offsets and bytes."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def gather_strings(offsets: np.ndarray, data: np.ndarray, codes: np.ndarray, present: np.ndarray) \
        -> tuple[np.ndarray, np.ndarray]:
    """The strings ``codes`` (empty where not ``present``) as Arrow large-string offsets and bytes."""
    n = codes.shape[0]
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_offsets[0] = 0
    total = 0
    for i in range(n):
        if present[i]:
            c = codes[i]
            total += offsets[c + 1] - offsets[c]
        out_offsets[i + 1] = total
    out_data = np.empty(total, dtype=np.uint8)
    for i in range(n):
        if present[i]:
            c = codes[i]
            start = offsets[c]
            at = out_offsets[i]
            for j in range(offsets[c + 1] - start):
                out_data[at + j] = data[start + j]
    return out_offsets, out_data
