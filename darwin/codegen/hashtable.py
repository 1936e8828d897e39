"""Open-addressing hash table over numpy struct-of-arrays: building blocks.

Layout: entries are dense, in insertion order (draining keeps first-seen order),
with key component j of entry e in ``keys[j][e]`` (int64; float keys as bit
patterns). ``index`` is a power-of-two int32 array of entry ids (-1 empty),
probed linearly and kept at most a quarter full. The probe itself is emitted
inline by the code generator (``emit_probe``), specialised to the key width;
re-hashing after growth or compaction happens here, vectorised, with the same
hash function.
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = -1
MULTIPLIERS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93)
SHIFT = 29
FINAL = 0xFF51AFD7ED558CCD


def multiplier(j: int) -> int:
    """Odd multiplier for key component ``j`` (distinct per component)."""
    return MULTIPLIERS[j % len(MULTIPLIERS)] ^ (j // len(MULTIPLIERS)) * 0x10001 | 1


def hash_columns(keys: list[np.ndarray], count: int) -> np.ndarray:
    """The hash of entries 0..count-1, as the generated probe computes it."""
    h = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, k in enumerate(keys):
            h ^= k[:count].view(np.uint64) * np.uint64(multiplier(j))
        h ^= h >> np.uint64(SHIFT)
        h *= np.uint64(FINAL)
        h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def insert_hashes(index: np.ndarray, hashes: np.ndarray) -> None:
    """Fill an emptied index with entries 0..len(hashes)-1."""
    mask = index.shape[0] - 1
    for e in range(hashes.shape[0]):
        slot = np.int64(hashes[e] & np.uint64(mask))
        while index[slot] != EMPTY:
            slot = (slot + 1) & mask
        index[slot] = e


def rebuild_index(index: np.ndarray, keys: list[np.ndarray], count: int) -> None:
    index[:] = EMPTY
    insert_hashes(index, hash_columns(keys, count))


def index_size_for(capacity: int) -> int:
    """Power of two at least four times ``capacity``: short probe sequences."""
    size = 16
    while size < 4 * capacity:
        size *= 2
    return size


def emit_probe(line, values: list[str], arrays: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Emit the lookup-or-insert of key ``values`` (source expressions) into ``arrays``.

    Leaves the entry id in ``e`` and whether it was inserted in ``fresh``; uses the
    kernel's locals ``index``, ``imask`` and ``count``. ``line(text, depth)`` writes.
    """
    terms = " ^ ".join(f"(np.uint64({v}) * np.uint64({multiplier(j)}))" for j, v in enumerate(values))
    line(f"h = {terms}", 0)
    line(f"h ^= h >> np.uint64({SHIFT})", 0)
    line(f"h *= np.uint64({FINAL})", 0)
    line("h ^= h >> np.uint64(32)", 0)
    line("slot = np.int64(h & np.uint64(imask))", 0)
    line("while True:", 0)
    line("e = np.int64(index[slot])", 1)
    line("if e < 0:", 1)
    line("e = count", 2)
    line("count += 1", 2)
    for a, v in zip(arrays, values):
        line(f"{a}[e] = {v}", 2)
    line("index[slot] = e", 2)
    line("fresh = True", 2)
    line("break", 2)
    same = " and ".join(f"{a}[e] == {v}" for a, v in zip(arrays, values))
    line(f"if {same}:", 1)
    line("fresh = False", 2)
    line("break", 2)
    line("slot = (slot + 1) & imask", 1)
