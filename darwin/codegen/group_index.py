"""Compiled building blocks of updating aggregations: dense group ids for key rows, and the
distinct groups a batch touches (the fold itself is generated: ``darwin.codegen.group_fold``).

Groups are numbered in the order their keys first arrive (0, 1, ...); ``keys[g]`` holds group
g's key components (int64: floats as normalised bit patterns, strings as dictionary codes, a
NULL as a validity component). ``slots`` is an open-addressing table of group ids that grows
with the groups.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.codegen.join_index import EMPTY, _same, hash_keys, key_bits
from darwin.codegen.prefetch import AHEAD, prefetch

__all__ = ["EMPTY", "assign", "hash_keys", "key_bits", "rehash", "touched"]

REHASH_CHUNK = 1 << 16  # keys hashed at a time when re-indexing


@njit(cache=True, nogil=True)
def assign(slots: np.ndarray, keys: np.ndarray, count: int, batch_keys: np.ndarray, hashes: np.ndarray,
           ids: np.ndarray) -> int:
    """The group id of every batch row into ``ids``, adding new groups at ``count``, ``count + 1``,
    ...; returns the new count. ``slots`` must have room: more slots than groups after the batch.

    Large tables miss the caches twice a row (its slot, then its group's key): the slot of the row
    ``AHEAD`` rows on is prefetched, and the key of the group in the slot of the row half as far on."""
    mask = slots.shape[0] - 1
    n = batch_keys.shape[0]
    slot_base, key_base, key_bytes = slots.ctypes.data, keys.ctypes.data, keys.shape[1] * 8
    for i in range(n):
        if i + AHEAD < n:
            prefetch(slot_base + np.int64(hashes[i + AHEAD] & np.uint64(mask)) * 8)
        if i + AHEAD // 2 < n:
            g = slots[np.int64(hashes[i + AHEAD // 2] & np.uint64(mask))]
            if g >= 0:
                prefetch(key_base + g * key_bytes)
        s = np.int64(hashes[i] & np.uint64(mask))
        while True:
            g = slots[s]
            if g == EMPTY:
                slots[s] = count
                keys[count] = batch_keys[i]
                ids[i] = count
                count += 1
                break
            if _same(batch_keys, i, keys, g):
                ids[i] = g
                break
            s = (s + 1) & mask
    return count


@njit(cache=True, nogil=True)
def rehash(slots: np.ndarray, keys: np.ndarray, count: int) -> None:
    """Index groups 0..count-1 into the empty table ``slots``. Keys are hashed a chunk at a time,
    never all at once (the groups may exceed memory), each chunk in a loop of its own: hashing in
    the insert loop ran twice as slow."""
    for start in range(0, count, REHASH_CHUNK):
        _insert_groups(slots, hash_keys(keys[start:min(count, start + REHASH_CHUNK)]), start)


@njit(cache=True, nogil=True)
def _insert_groups(slots: np.ndarray, hashes: np.ndarray, first: int) -> None:
    """Put groups ``first``, ``first + 1``, ... with ``hashes`` into the free slots of ``slots``."""
    mask = slots.shape[0] - 1
    for j in range(hashes.shape[0]):
        s = np.int64(hashes[j] & np.uint64(mask))
        while slots[s] != EMPTY:
            s = (s + 1) & mask
        slots[s] = first + j


@njit(cache=True, nogil=True)
def touched(ids: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The distinct ids of a batch in the order they first appear (``seen``: all False, left so)."""
    out = np.empty(ids.shape[0], dtype=np.int64)
    m = 0
    for i in range(ids.shape[0]):
        g = ids[i]
        if not seen[g]:
            seen[g] = True
            out[m] = g
            m += 1
    for k in range(m):
        seen[out[k]] = False
    return out[:m]
