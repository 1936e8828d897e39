"""Compiled building blocks of joins: a multimap from key to the rows kept for it, in arrival order.

Rows are dense (row r's key components in ``keys[r]``); ``slots`` is an open-addressing table of
distinct keys, each slot holding its first and last row, and ``next`` chains a key's rows in
arrival order. Rows are only appended; freed rows are marked dead and dropped by ``rebuild``.
The table grows with the distinct keys, not with the rows (``move_slots``).
Keys are int64 components (floats as normalised bit patterns, strings as dictionary codes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.codegen.hashtable import FINAL, SHIFT, multiplier

EMPTY = -1
MAX_KEY_WIDTH = 16
_MULTIPLIERS = np.array([multiplier(j) for j in range(MAX_KEY_WIDTH)], dtype=np.uint64)


def key_bits(values: np.ndarray) -> np.ndarray:
    """A key column as int64 components: a float as the bits of its normalised value (one NaN,
    0.0 for -0.0), so equal keys have equal bits; other types unchanged."""
    if values.dtype != np.float64:
        return values
    return np.where(np.isnan(values), np.nan, values + 0.0).view(np.int64)


@njit(cache=True, nogil=True, inline="always")
def _hash_row(keys: np.ndarray, i: int) -> np.uint64:
    h = np.uint64(0)
    for j in range(keys.shape[1]):
        h ^= np.uint64(keys[i, j]) * _MULTIPLIERS[j]
    h ^= h >> np.uint64(SHIFT)
    h *= np.uint64(FINAL)
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def hash_keys(keys: np.ndarray) -> np.ndarray:
    """One hash per row of ``keys`` (rows x components)."""
    out = np.empty(keys.shape[0], dtype=np.uint64)
    for i in range(keys.shape[0]):
        out[i] = _hash_row(keys, i)
    return out


@njit(cache=True, nogil=True, inline="always")
def _same(a: np.ndarray, i: int, b: np.ndarray, r: int) -> bool:
    for j in range(a.shape[1]):
        if a[i, j] != b[r, j]:
            return False
    return True


@njit(cache=True, nogil=True)
def find_slot(slot_first: np.ndarray, keys: np.ndarray, probe: np.ndarray, i: int, h: np.uint64) -> np.int64:
    """The slot of ``probe[i]``'s key, or of the empty slot where it would go."""
    mask = slot_first.shape[0] - 1
    s = np.int64(h & np.uint64(mask))
    while True:
        r = slot_first[s]
        if r == EMPTY or _same(probe, i, keys, r):
            return s
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def append_rows(slot_first: np.ndarray, slot_last: np.ndarray, keys: np.ndarray, nxt: np.ndarray,
                new_keys: np.ndarray, hashes: np.ndarray, rows: np.ndarray, first: int) -> int:
    """Index new rows first, first+1, ... (their keys already copied to ``keys``), for the
    batch rows ``rows`` of ``new_keys``; returns how many distinct keys were added."""
    added = 0
    for n in range(rows.shape[0]):
        i = rows[n]
        r = first + n
        s = find_slot(slot_first, keys, new_keys, i, hashes[i])
        nxt[r] = EMPTY
        if slot_first[s] == EMPTY:
            slot_first[s] = r
            added += 1
        else:
            nxt[slot_last[s]] = r
        slot_last[s] = r
    return added


@njit(cache=True, nogil=True)
def probe_rows(slot_first: np.ndarray, keys: np.ndarray, nxt: np.ndarray, alive: np.ndarray,
               probe: np.ndarray, hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (batch row, kept row) of equal keys: batch rows in order, each one's kept rows in
    arrival order; dead rows are skipped."""
    cap = max(16, rows.shape[0])
    out_probe = np.empty(cap, dtype=np.int64)
    out_kept = np.empty(cap, dtype=np.int64)
    m = 0
    for n in range(rows.shape[0]):
        i = rows[n]
        s = find_slot(slot_first, keys, probe, i, hashes[i])
        r = slot_first[s]
        while r != EMPTY:
            if alive[r]:
                if m == out_probe.shape[0]:
                    out_probe = np.concatenate((out_probe, np.empty(m, dtype=np.int64)))
                    out_kept = np.concatenate((out_kept, np.empty(m, dtype=np.int64)))
                out_probe[m] = i
                out_kept[m] = r
                m += 1
            r = nxt[r]
    return out_probe[:m], out_kept[:m]


@njit(cache=True, nogil=True)
def plan_output(n: int, probe_rows_: np.ndarray, pair_probe: np.ndarray, pair_kept: np.ndarray,
                kept_matches: np.ndarray, pad_probe: np.ndarray, retract_kept: bool) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The output of one batch, in order: for each batch row in ``probe_rows_``, per matching
    pair a retraction of the kept row's padded row if it had no match yet (``retract_kept``),
    then the joined row; a padded row if it matched nothing and ``pad_probe`` says so.

    Returns (batch row or -1, kept row or -1, change kind, matches per batch row); updates
    ``kept_matches``.
    """
    cap = pair_probe.shape[0] * 2 + probe_rows_.shape[0]
    out_probe = np.empty(cap, dtype=np.int64)
    out_kept = np.empty(cap, dtype=np.int64)
    kind = np.zeros(cap, dtype=np.int64)
    matches = np.zeros(n, dtype=np.int64)
    m = 0
    p = 0
    for q in range(probe_rows_.shape[0]):
        i = probe_rows_[q]
        while p < pair_probe.shape[0] and pair_probe[p] == i:
            r = pair_kept[p]
            if retract_kept and kept_matches[r] == 0:
                out_probe[m] = -1
                out_kept[m] = r
                kind[m] = 3  # -D
                m += 1
            kept_matches[r] += 1
            matches[i] += 1
            out_probe[m] = i
            out_kept[m] = r
            m += 1
            p += 1
        if pad_probe[i] and matches[i] == 0:
            out_probe[m] = i
            out_kept[m] = -1
            m += 1
    return out_probe[:m], out_kept[:m], kind[:m], matches


@njit(cache=True, nogil=True)
def rebuild(slot_first: np.ndarray, slot_last: np.ndarray, keys: np.ndarray, nxt: np.ndarray, count: int) -> int:
    """Index rows 0..count-1 again (after dead rows were dropped); the number of distinct keys."""
    slot_first[:] = EMPTY
    hashes = hash_keys(keys[:count])
    rows = np.arange(count)
    return append_rows(slot_first, slot_last, keys, nxt, keys, hashes, rows, 0)


@njit(cache=True, nogil=True)
def move_slots(old_first: np.ndarray, old_last: np.ndarray, keys: np.ndarray, slot_first: np.ndarray,
               slot_last: np.ndarray) -> None:
    """Move every key of a full table into a larger empty one: its first and last rows go along,
    so the rows' ``next`` chains stay as they are and no row is read but each key's first."""
    mask = slot_first.shape[0] - 1
    for old in range(old_first.shape[0]):
        r = old_first[old]
        if r == EMPTY:
            continue
        s = np.int64(_hash_row(keys, r) & np.uint64(mask))
        while slot_first[s] != EMPTY:
            s = (s + 1) & mask
        slot_first[s] = r
        slot_last[s] = old_last[old]
