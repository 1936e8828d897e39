"""Compiled building blocks of ``count_distinct`` in updating aggregations: exact sets of values
per group, kept as multiplicities of (group id, value) pairs.

Several distinct counts over the same value with different filters (Nexmark q15's total and
ranked bidders) are the *members* of one table. Its entries are rows ``[group + 1, value, mult_0,
..., mult_m-1]`` of an open-addressing table (0 first: a free entry, so a new table is zeros), so
finding a pair and updating its multiplicities touches one entry. The value is its key bits (a
float's normalised bit pattern, a string's dictionary code). ``distinct[g, j]`` is the number of values of group g whose
multiplicity for member j is not zero. Over an input that never retracts, an entry keeps a bit
per member instead (``fold_seen``): half the memory for q15's four members.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.codegen.hashtable import FINAL, SHIFT, multiplier

FREE = 0  # the first component of a free entry (it holds group id + 1)
_M0, _M1 = np.uint64(multiplier(0)), np.uint64(multiplier(1))


@njit(cache=True, nogil=True, inline="always")
def pair_entry(table: np.ndarray, g: np.int64, v: np.int64) -> np.int64:
    """The entry of pair (g, v) (``g``: the group id + 1), or the free entry where it would go."""
    h = (np.uint64(g) * _M0) ^ (np.uint64(v) * _M1)
    h ^= h >> np.uint64(SHIFT)
    h *= np.uint64(FINAL)
    h ^= h >> np.uint64(32)
    mask = table.shape[0] - 1
    s = np.int64(h & np.uint64(mask))
    while table[s, 0] != FREE and (table[s, 0] != g or table[s, 1] != v):
        s = (s + 1) & mask
    return s


@njit(cache=True, nogil=True)
def fold_distinct(table: np.ndarray, used: int, distinct: np.ndarray, ids: np.ndarray, sign: np.ndarray,
                  values: tuple, present: tuple, start: int) -> tuple[int, int]:
    """Add (``sign`` > 0) or take back each row's value, from row ``start`` on, in every member that
    sees it; returns the row it stopped at (the number of rows when done) and the entries in use.

    ``values[j]`` and ``present[j]`` are member j's values (key bits) and where it sees one; members
    see the same value where they see one. A group's distinct count for a member moves when a
    pair's multiplicity leaves or comes back to zero. It stops before a new pair would fill more
    than half of the table: the caller makes room and calls again from that row.
    """
    m = len(present)
    limit = table.shape[0] // 2
    for i in range(start, ids.shape[0]):
        first = -1
        for j in range(m):
            if present[j][i]:
                first = j
                break
        if first < 0:
            continue
        g = ids[i]
        s = pair_entry(table, g + 1, values[first][i])
        if table[s, 0] == FREE:
            if used == limit:
                return i, used
            table[s, 0] = g + 1
            table[s, 1] = values[first][i]
            used += 1
        step = sign[i]
        for j in range(first, m):
            if present[j][i]:
                before = table[s, 2 + j]
                after = before + step
                table[s, 2 + j] = after
                if before == 0:
                    distinct[g, j] += 1
                elif after == 0:
                    distinct[g, j] -= 1
    return ids.shape[0], used


@njit(cache=True, nogil=True)
def fold_seen(table: np.ndarray, used: int, distinct: np.ndarray, ids: np.ndarray, values: tuple, present: tuple,
              start: int) -> tuple[int, int]:
    """``fold_distinct`` for an input that never retracts: an entry ``[group + 1, value, seen]``
    keeps one bit per member that has seen the pair instead of a multiplicity each, so it is 24
    bytes whatever the members (a multiplicity only matters when it can come back to zero).

    Its first lines repeat ``fold_distinct``'s on purpose: finding or claiming the entry in a shared
    inlined helper, or one loop with a branch per layout, ran 2.7x slower under Numba (q15 at 10M:
    1.42-1.48 s against 0.55 s in this loop)."""
    m = len(present)
    limit = table.shape[0] // 2
    for i in range(start, ids.shape[0]):
        first = -1
        for j in range(m):
            if present[j][i]:
                first = j
                break
        if first < 0:
            continue
        g = ids[i]
        s = pair_entry(table, g + 1, values[first][i])
        if table[s, 0] == FREE:
            if used == limit:
                return i, used
            table[s, 0] = g + 1
            table[s, 1] = values[first][i]
            used += 1
        seen = table[s, 2]
        for j in range(first, m):
            bit = np.int64(1) << j
            if present[j][i] and not seen & bit:
                seen |= bit
                distinct[g, j] += 1
        table[s, 2] = seen
    return ids.shape[0], used


@njit(cache=True, nogil=True, inline="always")
def _live(table: np.ndarray, s: int) -> bool:
    """Whether entry ``s`` is in use and some member still holds its pair."""
    if table[s, 0] == FREE:
        return False
    for j in range(2, table.shape[1]):
        if table[s, j] != 0:
            return True
    return False


@njit(cache=True, nogil=True)
def live_entries(table: np.ndarray) -> np.ndarray:
    """The entries in use whose pair some member still holds (dead ones are dropped on rebuilds)."""
    keep = np.zeros(table.shape[0], dtype=np.bool_)
    for s in range(table.shape[0]):
        keep[s] = _live(table, s)
    return table[keep]


@njit(cache=True, nogil=True)
def count_live(table: np.ndarray) -> int:
    """How many entries ``live_entries`` would give, without copying them."""
    n = 0
    for s in range(table.shape[0]):
        n += _live(table, s)
    return n


@njit(cache=True, nogil=True)
def insert_entries(table: np.ndarray, entries: np.ndarray) -> None:
    """Put entries of other pairs into a table with room for them."""
    for k in range(entries.shape[0]):
        s = pair_entry(table, entries[k, 0], entries[k, 1])
        for c in range(entries.shape[1]):
            table[s, c] = entries[k, c]
