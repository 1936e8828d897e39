"""Compiled work on a string pool laid out as Arrow offsets and bytes: interning and gathering.

The pool's hash table holds codes (-1 marks a free slot); ``hashes`` holds each code's hash, so
growing the table never rereads the strings. Interned strings have odd hashes; a hash of 0 marks
a code appended without interning (``StringPool.append``), which the table never holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True)
def string_hash(data: np.ndarray, start: int, end: int) -> np.uint64:
    """FNV-1a of ``data[start:end]``, made odd (an interned string's hash is never 0)."""
    h = FNV_OFFSET
    for j in range(start, end):
        h = (h ^ np.uint64(data[j])) * FNV_PRIME
    return h | np.uint64(1)


@njit(cache=True, nogil=True)
def hash_strings(offsets: np.ndarray, data: np.ndarray, interned: np.ndarray) -> np.ndarray:
    """Each string's hash where ``interned``, else 0: the ``hashes`` of a pool read back from its layout."""
    hashes = np.zeros(interned.shape[0], dtype=np.uint64)
    for c in range(interned.shape[0]):
        if interned[c]:
            hashes[c] = string_hash(data, offsets[c], offsets[c + 1])
    return hashes


@njit(cache=True, nogil=True)
def intern_strings(in_offsets: np.ndarray, in_data: np.ndarray, present: np.ndarray, codes: np.ndarray,
                   slots: np.ndarray, hashes: np.ndarray, offsets: np.ndarray, data: np.ndarray,
                   count: int) -> int:
    """Write into ``codes`` the pool code of each present input string, adding the new ones.

    The caller makes room first: ``slots`` at least twice the strings the pool may hold after this
    call, ``offsets``/``hashes``/``data`` for every input string being new. Returns the new count.
    """
    mask = slots.shape[0] - 1
    for i in range(codes.shape[0]):
        if not present[i]:
            codes[i] = 0
            continue
        start, end = in_offsets[i], in_offsets[i + 1]
        h = string_hash(in_data, start, end)
        s = np.int64(h & np.uint64(mask))
        while True:
            c = slots[s]
            if c < 0:
                at = offsets[count]
                data[at:at + end - start] = in_data[start:end]
                offsets[count + 1] = at + end - start
                hashes[count] = h
                slots[s] = count
                codes[i] = count
                count += 1
                break
            if hashes[c] == h and offsets[c + 1] - offsets[c] == end - start:
                first = offsets[c]
                same = True
                for j in range(end - start):
                    if data[first + j] != in_data[start + j]:
                        same = False
                        break
                if same:
                    codes[i] = c
                    break
            s = (s + 1) & mask
    return count


@njit(cache=True, nogil=True)
def rehash_strings(hashes: np.ndarray, count: int, size: int) -> np.ndarray:
    """A hash table of ``size`` slots (a power of two) holding the interned codes below ``count``."""
    slots = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for c in range(count):
        if hashes[c] == 0:
            continue
        s = np.int64(hashes[c] & mask)
        while slots[s] >= 0:
            s = (s + 1) & (size - 1)
        slots[s] = c
    return slots


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
            out_data[out_offsets[i]:out_offsets[i + 1]] = data[offsets[c]:offsets[c + 1]]
    return out_offsets, out_data
