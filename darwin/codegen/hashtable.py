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

from collections.abc import Callable

import numpy as np
from numba import njit

EMPTY = -1
MULTIPLIERS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93)
SHIFT = 29
FINAL = 0xFF51AFD7ED558CCD


def multiplier(j: int) -> int:
    """Odd multiplier for key component ``j`` (distinct per component)."""
    return MULTIPLIERS[j % len(MULTIPLIERS)] ^ (j // len(MULTIPLIERS)) * 0x10001 | 1


REHASH_CHUNK = 1 << 20  # entries hashed at a time: rebuilding never needs memory in proportion to the table


def hash_columns(keys: list[np.ndarray], count: int, start: int = 0) -> np.ndarray:
    """The hash of entries start..count-1, as the generated probe computes it."""
    h = np.zeros(count - start, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j, k in enumerate(keys):
            h ^= k[start:count].view(np.uint64) * np.uint64(multiplier(j))
        h ^= h >> np.uint64(SHIFT)
        h *= np.uint64(FINAL)
        h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def insert_hashes(index: np.ndarray, hashes: np.ndarray, first: int) -> None:
    """Add entries first..first+len(hashes)-1 to the index."""
    mask = index.shape[0] - 1
    for i in range(hashes.shape[0]):
        slot = np.int64(hashes[i] & np.uint64(mask))
        while index[slot] != EMPTY:
            slot = (slot + 1) & mask
        index[slot] = first + i


def rebuild_index(index: np.ndarray, keys: list[np.ndarray], count: int) -> None:
    index[:] = EMPTY
    for start in range(0, count, REHASH_CHUNK):
        insert_hashes(index, hash_columns(keys, min(count, start + REHASH_CHUNK), start), start)


@njit(cache=True, nogil=True)
def upsert(index: np.ndarray, keys: tuple, count: int, hashes: np.ndarray, new_keys: tuple, entry: np.ndarray,
           columns: tuple, meta: np.ndarray, logged: np.ndarray, undo_slot: np.ndarray, undo_columns: tuple) -> int:
    """Find or insert each row of ``new_keys`` (hashed as ``hashes``), its entry id into ``entry``; the
    new count. Entries are probed as the generated kernels probe them; the table has room for every
    row. Each entry about to change is first logged, as ``compact`` logs (``columns``: the table's
    arrays as int64; with ``meta[2]`` = 0 nothing is logged)."""
    mask = index.shape[0] - 1
    for i in range(hashes.shape[0]):
        slot = np.int64(hashes[i] & np.uint64(mask))
        while True:
            e = int(index[slot])
            if e < 0:
                e = count
                count += 1
                _save(e, columns, meta, logged, undo_slot, undo_columns)
                for j in range(len(keys)):
                    keys[j][e] = new_keys[j][i]
                index[slot] = e
                break
            same = True
            for j in range(len(keys)):
                if keys[j][e] != new_keys[j][i]:
                    same = False
                    break
            if same:
                _save(e, columns, meta, logged, undo_slot, undo_columns)
                break
            slot = (slot + 1) & mask
        entry[i] = e
    return count


@njit(cache=True, nogil=True)
def compact(keep: np.ndarray, columns: tuple, count: int, meta: np.ndarray, logged: np.ndarray,
            undo_slot: np.ndarray, undo_columns: tuple) -> int:
    """Move the entries whose ``keep`` is set to the front, in order, and zero the rest; the new count.

    ``columns`` are the table's arrays viewed as int64. One pass, no index arrays: compaction
    needs no memory in proportion to the table, which may be larger than memory (mmap).

    Each slot it changes that lies below ``meta[2]`` and is not logged yet is first appended
    to an undo log at row ``meta[1]`` (``darwin.state.mmap``; with ``meta[2]`` = 0 nothing is
    logged). The row count is stored after the row, so a crash in between leaves no half
    row. The log has room for ``count`` rows.
    """
    m = 0
    for i in range(count):
        if keep[i]:
            if m != i:
                _save(m, columns, meta, logged, undo_slot, undo_columns)
                for c in columns:
                    c[m] = c[i]
            m += 1
    for s in range(m, count):
        _save(s, columns, meta, logged, undo_slot, undo_columns)
        for c in columns:
            c[s] = 0
    return m


@njit(cache=True, nogil=True, inline="always")
def _save(s: int, columns: tuple, meta: np.ndarray, logged: np.ndarray, undo_slot: np.ndarray,
          undo_columns: tuple) -> None:
    if s < meta[2] and logged[s] == 0:
        u = meta[1]
        undo_slot[u] = s
        for j in range(len(columns)):
            undo_columns[j][u] = columns[j][s]
        meta[1] = u + 1
        logged[s] = 1


@njit(cache=True, nogil=True)
def checksum(columns: tuple, count: int) -> np.int64:
    """A 64-bit fingerprint of entries 0..count-1 of ``columns`` (int64 views).

    Each value is mixed with its row and column before summing, so a changed, moved or
    missing entry changes it. For damage, not for adversaries; it runs at memory speed.
    """
    h = np.uint64(0)
    for j in range(len(columns)):
        c = columns[j]
        salt = np.uint64(j + 1) * np.uint64(0xBF58476D1CE4E5B9)
        for i in range(count):
            x = np.uint64(c[i]) ^ (np.uint64(i) * np.uint64(0x9E3779B97F4A7C15)) ^ salt
            x ^= x >> np.uint64(31)
            x *= np.uint64(0xFF51AFD7ED558CCD)
            x ^= x >> np.uint64(29)
            h += x
    return np.int64(h)


def index_size_for(capacity: int) -> int:
    """Power of two at least four times ``capacity``: short probe sequences."""
    size = 16
    while size < 4 * capacity:
        size *= 2
    return size


def emit_probe(line: Callable[[str, int], None], values: list[str], arrays: list[str]) -> None:
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


NO_WINDOW = np.iinfo(np.int64).min


@njit(cache=True, nogil=True)
def next_window(starts: np.ndarray, count: int, after: int, last: int) -> int:
    """The smallest window start in (after, last] among entries 0..count-1, or ``NO_WINDOW``."""
    best = NO_WINDOW
    for e in range(count):
        s = starts[e]
        if after < s <= last and (best == NO_WINDOW or s < best):
            best = s
    return best


@njit(cache=True, nogil=True)
def select_window(starts: np.ndarray, count: int, window: int, pos: int, out: np.ndarray) -> tuple[int, int]:
    """Entries of ``window`` from ``pos`` on, in order, into ``out`` until it is full: (how many, next pos)."""
    n = 0
    while pos < count and n < out.shape[0]:
        if starts[pos] == window:
            out[n] = pos
            n += 1
        pos += 1
    return n, pos
