"""Compiled building blocks of joins: a multimap from key to the rows kept for it, in arrival order.

Rows are dense (row r's key components in ``keys[r]``); ``slots`` is an open-addressing table of
distinct keys, each slot (a row of ``slots``) holding its newest row then its key, and ``next``
chains a key's rows from the newest back. Rows are only appended; freed rows are marked dead and dropped by ``rebuild``.
The table grows with the distinct keys, not with the rows (``move_slots``).
Keys are int64 components (floats as normalised bit patterns, strings as dictionary codes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.codegen.hashtable import FINAL, SHIFT, multiplier
from darwin.codegen.prefetch import AHEAD, prefetch

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


@njit(cache=True, nogil=True, inline="always")
def _slot_holds(slots: np.ndarray, s: int | np.int64, probe: np.ndarray, i: int) -> bool:
    for j in range(probe.shape[1]):
        if slots[s, 1 + j] != probe[i, j]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def find_slot(slots: np.ndarray, probe: np.ndarray, i: int, h: np.uint64) -> np.int64:
    """The slot of ``probe[i]``'s key, or of the empty slot where it would go. A slot holds its
    key beside its newest row, so finding it reads one slot, not a kept row's key."""
    mask = slots.shape[0] - 1
    s = np.int64(h & np.uint64(mask))
    while True:
        if slots[s, 0] == EMPTY or _slot_holds(slots, s, probe, i):
            return s
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def append_rows(slots: np.ndarray, nxt: np.ndarray, new_keys: np.ndarray, hashes: np.ndarray, rows: np.ndarray,
                first: int, start: int, room: int) -> tuple[int, int]:
    """Index new rows first+start, first+start+1, ... for the batch rows ``rows[start:]`` of
    ``new_keys``. A new row becomes its key's newest (``slots[s, 0]``) and links to the one before,
    so appending writes no older row. Stops before a key that would be the ``room``-th new one (the
    caller grows the index and goes on from there): the index grows with the distinct keys, not the
    rows. Returns where it stopped (``len(rows)`` when done) and how many keys were added. The slot
    of the row ``AHEAD`` rows on is prefetched (a large index misses the caches)."""
    added = 0
    mask, slot_base, slot_bytes = slots.shape[0] - 1, slots.ctypes.data, slots.shape[1] * 8
    for n in range(start, rows.shape[0]):
        if n + AHEAD < rows.shape[0]:
            prefetch(slot_base + np.int64(hashes[rows[n + AHEAD]] & np.uint64(mask)) * slot_bytes)
        i = rows[n]
        r = first + n
        s = find_slot(slots, new_keys, i, hashes[i])
        if slots[s, 0] == EMPTY:
            if added == room:
                return n, added
            for j in range(new_keys.shape[1]):
                slots[s, 1 + j] = new_keys[i, j]
            added += 1
        nxt[r] = slots[s, 0]
        slots[s, 0] = r
    return rows.shape[0], added


@njit(cache=True, nogil=True)
def probe_rows(slots: np.ndarray, nxt: np.ndarray, alive: np.ndarray, probe: np.ndarray, hashes: np.ndarray,
               rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (batch row, kept row) of equal keys: batch rows in order, each one's kept rows in
    arrival order (a key's chain runs newest first: each batch row's run is reversed); dead rows
    are skipped. The pairs are written by ``_probe_into`` into arrays it never replaces (growing
    them in its loop costs more than the probe itself); they grow here when full."""
    out_probe = np.empty(max(16, rows.shape[0]), dtype=np.int64)
    out_kept = np.empty(out_probe.shape[0], dtype=np.int64)
    n, m = 0, 0
    while True:
        n, m = _probe_into(slots, nxt, alive, probe, hashes, rows, n, out_probe, out_kept, m)
        if n == rows.shape[0]:
            return out_probe[:m], out_kept[:m]
        out_probe = np.concatenate((out_probe, np.empty(out_probe.shape[0], dtype=np.int64)))
        out_kept = np.concatenate((out_kept, np.empty(out_kept.shape[0], dtype=np.int64)))


@njit(cache=True, nogil=True)
def _probe_into(slots: np.ndarray, nxt: np.ndarray, alive: np.ndarray, probe: np.ndarray, hashes: np.ndarray,
                rows: np.ndarray, start: int, out_probe: np.ndarray, out_kept: np.ndarray, m: int) -> tuple[int, int]:
    """``probe_rows`` from ``rows[start]`` on, pairs written from ``m`` on; stops at a batch row
    whose pairs do not fit (none of them kept). Returns where it stopped (``len(rows)`` when done)
    and the pairs written. A large index misses the caches twice a row (its slot, then its newest
    kept row's chain link): the slot of the row ``AHEAD`` rows on is prefetched, and the link of the
    row in the slot of the row half as far on."""
    mask, slot_base, slot_bytes = slots.shape[0] - 1, slots.ctypes.data, slots.shape[1] * 8
    next_base = nxt.ctypes.data
    for n in range(start, rows.shape[0]):
        if n + AHEAD < rows.shape[0]:
            prefetch(slot_base + np.int64(hashes[rows[n + AHEAD]] & np.uint64(mask)) * slot_bytes)
        if n + AHEAD // 2 < rows.shape[0]:
            newest = slots[np.int64(hashes[rows[n + AHEAD // 2]] & np.uint64(mask)), 0]
            if newest >= 0:
                prefetch(next_base + newest * 8)
        i = rows[n]
        s = find_slot(slots, probe, i, hashes[i])
        r = slots[s, 0]
        begin = m
        while r != EMPTY:
            if alive[r]:
                if m == out_probe.shape[0]:
                    return n, begin
                out_probe[m] = i
                out_kept[m] = r
                m += 1
            r = nxt[r]
        low, high = begin, m - 1
        while low < high:
            out_kept[low], out_kept[high] = out_kept[high], out_kept[low]
            low += 1
            high -= 1
    return rows.shape[0], m


INSERT, UPDATE_BEFORE, DELETE = 0, 1, 3  # change kinds (darwin.plan.nodes.ChangeKind)


@njit(cache=True, nogil=True)
def plan_output(n: int, probe_rows_: np.ndarray, pair_probe: np.ndarray, pair_kept: np.ndarray,
                kept_matches: np.ndarray, pad_probe: np.ndarray, retract_kept: bool, count_kept: bool,
                row_kind: np.ndarray, forward_adds: bool, forward_retractions: bool) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The output of one batch, in order, as Flink's regular join gives it. For each batch row in
    ``probe_rows_`` that adds a row (``row_kind`` +I/+U), per matching pair a retraction of the
    kept row's padded row if it had no match yet (``retract_kept``), then the joined row (of the
    row's own kind if ``forward_adds``, else +I); a padded row if it matched nothing and
    ``pad_probe`` says so. For a row withdrawn (-U/-D), per pair the joined row taken back (its own
    kind if ``forward_retractions``, else -D), then the kept row's padded row if that was its last
    match (``count_kept``); its padded row taken back (-D) if it matched nothing and ``pad_probe``.

    Returns (batch row or -1, kept row or -1, change kind, matches per batch row); updates
    ``kept_matches`` if ``count_kept`` (the kept side keeps them: ``retract_kept`` needs it).
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
        withdrawn = row_kind[i] == UPDATE_BEFORE or row_kind[i] == DELETE
        while p < pair_probe.shape[0] and pair_probe[p] == i:
            r = pair_kept[p]
            if not withdrawn and retract_kept and kept_matches[r] == 0:
                out_probe[m] = -1
                out_kept[m] = r
                kind[m] = DELETE
                m += 1
            matches[i] += 1
            out_probe[m] = i
            out_kept[m] = r
            if withdrawn:
                kind[m] = row_kind[i] if forward_retractions else DELETE
            else:
                kind[m] = row_kind[i] if forward_adds else INSERT
            m += 1
            p += 1
            if not count_kept:
                continue
            if not withdrawn:
                kept_matches[r] += 1
            elif kept_matches[r] > 0:  # a row whose state_ttl ran out may have had no count of its own
                kept_matches[r] -= 1
                if kept_matches[r] == 0:
                    out_probe[m] = -1
                    out_kept[m] = r
                    kind[m] = INSERT
                    m += 1
        if pad_probe[i] and matches[i] == 0:
            out_probe[m] = i
            out_kept[m] = -1
            kind[m] = DELETE if withdrawn else INSERT
            m += 1
    return out_probe[:m], out_kept[:m], kind[:m], matches


@njit(cache=True, nogil=True)
def take_back(pair_probe: np.ndarray, pair_kept: np.ndarray, same: np.ndarray, alive: np.ndarray, first: int,
              origin: np.ndarray) -> np.ndarray:
    """The kept rows a batch's retractions take back, marked dead: for each retracting batch row
    (its candidate pairs together, in batch order, kept rows in arrival order), the earliest live
    kept row with its values (``same``) that came before it: kept before this batch (below
    ``first``) or from an earlier row of the batch (kept row ``first + j`` is batch row
    ``origin[j]``). One kept row per retraction; none if its state_ttl ran out."""
    out = np.empty(pair_probe.shape[0], dtype=np.int64)
    m = 0
    p = 0
    while p < pair_probe.shape[0]:
        i = pair_probe[p]
        found = False
        while p < pair_probe.shape[0] and pair_probe[p] == i:
            r = pair_kept[p]
            if not found and same[p] and alive[r] and (r < first or origin[r - first] < i):
                alive[r] = False
                out[m] = r
                m += 1
                found = True
            p += 1
    return out[:m]


@njit(cache=True, nogil=True)
def rebuild(slots: np.ndarray, keys: np.ndarray, nxt: np.ndarray, count: int) -> int:
    """Index rows 0..count-1 again (after dead rows were dropped); the number of distinct keys."""
    slots[:, 0] = EMPTY
    hashes = hash_keys(keys[:count])
    rows = np.arange(count)
    return append_rows(slots, nxt, keys, hashes, rows, 0, 0, count)[1]


@njit(cache=True, nogil=True)
def move_slots(old: np.ndarray, slots: np.ndarray) -> None:
    """Move every key of a full table into a larger empty one: each slot goes along whole (its key
    and newest row), so the rows' ``next`` chains stay as they are and no row is read."""
    mask = slots.shape[0] - 1
    for o in range(old.shape[0]):
        if old[o, 0] == EMPTY:
            continue
        s = np.int64(_hash_row(old[:, 1:], o) & np.uint64(mask))
        while slots[s, 0] != EMPTY:
            s = (s + 1) & mask
        slots[s, :] = old[o, :]


@njit(cache=True, nogil=True)
def scan_rows(slots: np.ndarray, nxt: np.ndarray, keys: np.ndarray, hashes: np.ndarray, alive: np.ndarray,
              start: int, out_position: np.ndarray, out_row: np.ndarray, m: int) -> tuple[int, int]:
    """The other way round from ``probe_rows``, for rows kept but not indexed: ``slots``/``nxt`` index
    a probe's rows by position (``append_rows`` with ``first`` 0), and each live row ``j`` of ``keys``
    from ``start`` on is looked up there; pairs (probe position, ``j``) are written from ``m`` on, a
    row's positions newest first. Stops at a row whose pairs do not fit (none of them written).
    Returns where it stopped (``len(keys)`` when done) and the pairs written. A probe's index is small
    (it stays in the caches), so a scan costs a few ns a row: cheaper than indexing rows rarely probed."""
    for j in range(start, keys.shape[0]):
        if not alive[j]:
            continue
        s = find_slot(slots, keys, j, hashes[j])
        p = slots[s, 0]
        begin = m
        while p != EMPTY:
            if m == out_position.shape[0]:
                return j, begin
            out_position[m] = p
            out_row[m] = j
            m += 1
            p = nxt[p]
    return keys.shape[0], m


@njit(cache=True, nogil=True)
def grouped_order(groups: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable order of ``groups`` (each in 0..count-1) by group, and where each group's run
    begins in it (``count`` + 1 bounds): a counting sort, linear where a comparison sort is not."""
    bounds = np.zeros(count + 1, dtype=np.int64)
    for g in groups:
        bounds[g + 1] += 1
    for g in range(count):
        bounds[g + 1] += bounds[g]
    at = bounds[:-1].copy()
    order = np.empty(groups.shape[0], dtype=np.int64)
    for i in range(groups.shape[0]):
        g = groups[i]
        order[at[g]] = i
        at[g] += 1
    return order, bounds
