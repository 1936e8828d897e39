"""Compiled steps of a top-N over an appending input (``darwin.runtime.rank``): which partitions a
batch touches, each one's new top ``n`` rows, and the changes between its old top and its new one.

A batch used to be ranked by sorting every candidate row (a lexsort by partition, sort keys and
arrival). Here each candidate goes once through its partition's ``n`` places: a row worse than a
full partition's last costs one comparison, a better one moves the rows below it down a place.
The result is the sort's first ``n`` per partition, since candidates are ordered totally (their
arrival numbers are unique and come last among the sort keys).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.plan.nodes import ChangeKind

UPDATE_BEFORE, UPDATE_AFTER = int(ChangeKind.UPDATE_BEFORE), int(ChangeKind.UPDATE_AFTER)
INSERT, DELETE = int(ChangeKind.INSERT), int(ChangeKind.DELETE)


@njit(nogil=True, cache=True)
def touched_partitions(ids: np.ndarray, mark: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The partitions ``ids`` touch in the order first met, and each row's partition as a place in
    that order. ``mark`` (-1 for every partition, as long as the partitions) is left as it was."""
    touched = np.empty(ids.shape[0], np.int64)
    place = np.empty(ids.shape[0], np.int64)
    count = 0
    for i in range(ids.shape[0]):
        p = ids[i]
        if mark[p] < 0:
            mark[p] = count
            touched[count] = p
            count += 1
        place[i] = mark[p]
    for t in range(count):
        mark[touched[t]] = -1
    return touched[:count], place


@njit(nogil=True, cache=True, inline="always")
def _before(keys: np.ndarray, i: int, j: int) -> bool:
    for c in range(keys.shape[1]):
        if keys[i, c] != keys[j, c]:
            return keys[i, c] < keys[j, c]
    return False


@njit(nogil=True, cache=True)
def top_rows(place: np.ndarray, keys: np.ndarray, n: int, parts: int) -> np.ndarray:
    """Each partition's first ``n`` candidates in rank order (``parts`` x ``n`` indices, -1 where a
    partition has fewer): candidate ``i`` is of partition ``place[i]`` and ranks by ``keys[i]``
    (rows x components, most significant first, unique per row)."""
    top = np.full(parts * n, -1, np.int64)
    filled = np.zeros(parts, np.int64)
    for i in range(place.shape[0]):
        base = place[i] * n
        have = filled[place[i]]
        if have == n and not _before(keys, i, top[base + n - 1]):
            continue
        at = have if have < n else n - 1
        if have < n:
            filled[place[i]] = have + 1
        while at > 0 and _before(keys, i, top[base + at - 1]):
            top[base + at] = top[base + at - 1]
            at -= 1
        top[base + at] = i
    return top


@njit(nogil=True, cache=True)
def _member(seq: np.ndarray, base: int, n: int, value: int) -> bool:
    for k in range(n):
        if seq[base + k] == value:
            return True
    return False


@njit(nogil=True, cache=True)
def top_changes(old_seq: np.ndarray, new_seq: np.ndarray, n: int, by_position: bool) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The changes from each partition's old top to its new one (arrival numbers, ``parts`` x
    ``n``, -1 for none), as ``darwin.plan.ranking`` orders them: the place each change's row is in
    (``old_seq``'s for a row leaving, ``new_seq``'s for one entering), whether it enters, and its
    change kind. Per position (``by_position``): a changed position's old row, then its new one.
    Per row: a partition's i-th row that left, then the i-th that entered."""
    slots = old_seq.shape[0]
    at = np.empty(2 * slots, np.int64)
    enters = np.empty(2 * slots, np.bool_)
    kind = np.empty(2 * slots, np.int64)
    m = 0
    if by_position:
        for s in range(slots):
            old, new = old_seq[s], new_seq[s]
            if old == new:
                continue
            if old >= 0:
                at[m], enters[m], kind[m] = s, False, UPDATE_BEFORE if new >= 0 else DELETE
                m += 1
            if new >= 0:
                at[m], enters[m], kind[m] = s, True, UPDATE_AFTER if old >= 0 else INSERT
                m += 1
        return at[:m], enters[:m], kind[:m]
    left = np.empty(n, np.int64)
    came = np.empty(n, np.int64)
    for base in range(0, slots, n):
        n_left = n_came = 0
        for k in range(n):
            old, new = old_seq[base + k], new_seq[base + k]
            if old >= 0 and not _member(new_seq, base, n, old):
                left[n_left] = base + k
                n_left += 1
            if new >= 0 and not _member(old_seq, base, n, new):
                came[n_came] = base + k
                n_came += 1
        for k in range(max(n_left, n_came)):
            if k < n_left:
                at[m], enters[m], kind[m] = left[k], False, UPDATE_BEFORE if k < n_came else DELETE
                m += 1
            if k < n_came:
                at[m], enters[m], kind[m] = came[k], True, UPDATE_AFTER if k < n_left else INSERT
                m += 1
    return at[:m], enters[:m], kind[:m]
