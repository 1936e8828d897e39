"""Open-addressing hash table over numpy arrays, as njit building blocks.

Layout: entries are dense rows of an int64 key matrix ``keys[capacity, width]`` in
insertion order (so draining a table keeps first-seen order), and ``index`` is a
power-of-two array of entry ids (-1 empty) probed linearly. ``meta[0]`` holds the
entry count. Callers grow the table before ``count`` can exceed ``capacity``; the
index is kept at most half full.
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = -1


@njit(inline="always", cache=True, nogil=True)
def mix64(h: np.uint64) -> np.uint64:
    """The splitmix64 finaliser: spreads key bits over the whole word."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@njit(inline="always", cache=True, nogil=True)
def hash_key(key: np.ndarray) -> np.uint64:
    h = np.uint64(0x9E3779B97F4A7C15)
    for j in range(key.shape[0]):
        h = mix64(h ^ np.uint64(key[j]))
    return h


@njit(inline="always", cache=True, nogil=True)
def _same(keys: np.ndarray, e: int, key: np.ndarray) -> bool:
    for j in range(key.shape[0]):
        if keys[e, j] != key[j]:
            return False
    return True


@njit(inline="always", cache=True, nogil=True)
def find_or_insert(index: np.ndarray, keys: np.ndarray, meta: np.ndarray, key: np.ndarray) -> int:
    """Entry id of ``key``, appending a new entry if absent (the caller ensured room)."""
    mask = index.shape[0] - 1
    slot = np.int64(hash_key(key) & np.uint64(mask))
    while True:
        e = index[slot]
        if e == EMPTY:
            e = meta[0]
            for j in range(key.shape[0]):
                keys[e, j] = key[j]
            index[slot] = e
            meta[0] = e + 1
            return e
        if _same(keys, e, key):
            return e
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def find(index: np.ndarray, keys: np.ndarray, key: np.ndarray) -> int:
    """Entry id of ``key``, or -1."""
    mask = index.shape[0] - 1
    slot = np.int64(hash_key(key) & np.uint64(mask))
    while True:
        e = index[slot]
        if e == EMPTY or _same(keys, e, key):
            return e
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def rebuild_index(index: np.ndarray, keys: np.ndarray, count: int) -> None:
    """Re-insert entries 0..count-1 into an emptied index (after growth or compaction)."""
    index[:] = EMPTY
    mask = index.shape[0] - 1
    for e in range(count):
        slot = np.int64(hash_key(keys[e]) & np.uint64(mask))
        while index[slot] != EMPTY:
            slot = (slot + 1) & mask
        index[slot] = e


def index_size_for(capacity: int) -> int:
    """Power of two at least twice ``capacity``: the index stays at most half full."""
    size = 16
    while size < 2 * capacity:
        size *= 2
    return size
