"""Key routing: a row's key hashes into one of ``KEY_GROUPS`` groups, and each worker owns a
contiguous range of groups (as Flink assigns key groups), so any thread routes any row with no
coordinator, and state kept per group can move to another number of workers.

The hash reads a key as its state stores it (``darwin.codegen.aggregates``): int64 values (a
float's bits, a bool as 0/1, a null as 0 with a 0/1 validity column), so a state entry routes
to the same group as the rows that made it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import literal_unroll, njit

from darwin.graph.operators import KEY_GROUPS
from darwin.runtime.encoding import Column

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def owners(workers: int) -> np.ndarray:
    """The worker owning each key group: contiguous ranges of groups."""
    return (np.arange(KEY_GROUPS, dtype=np.int64) * workers // KEY_GROUPS).astype(np.int64)


def key_columns(columns: Sequence[Column], nullable: Sequence[bool]) -> list[np.ndarray]:
    """Key columns as int64 arrays the way state stores them: a key ``nullable`` in the schema adds
    its validity, whether or not this batch's column carries one (a union's inputs may differ), so a
    key routes alike from every input."""
    out = []
    for c, maybe_null in zip(columns, nullable, strict=True):
        v = c.values
        if v.dtype == np.float64:  # one group for 0.0/-0.0 and one for all NaNs, as the state's hash
            v = np.where(np.isnan(v), np.nan, v + 0.0).view(np.int64)
        elif v.dtype != np.int64:
            v = v.astype(np.int64)
        if c.valid is not None:
            out += [np.where(c.valid, v, 0), c.valid.astype(np.int64)]
        elif maybe_null:
            out += [v, np.ones(len(v), np.int64)]
        else:
            out.append(v)
    return out


def key_groups(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Each row's key group, from its key columns (int64, as ``key_columns`` gives them)."""
    h = np.zeros(len(keys[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in keys:
            h = _mix(h ^ k.view(np.uint64))
    return (h % np.uint64(KEY_GROUPS)).astype(np.int64)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def row_group(keys: tuple[np.ndarray, ...], i: int) -> np.uint64:
    """Row ``i``'s key group, as ``key_groups`` hashes it, in the compiled routing loops."""
    h = np.uint64(0)
    for k in literal_unroll(keys):  # the columns' array types may differ (read-only ones from Arrow)
        z = h ^ np.uint64(k[i])
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        h = z ^ (z >> np.uint64(31))
    return h % np.uint64(KEY_GROUPS)  # a constant power of two: a mask, not a division


@njit(cache=True, nogil=True)
def owned_rows(keys: tuple[np.ndarray, ...], owner: np.ndarray, worker: int, times: np.ndarray, valid: np.ndarray,
               start: int, progress: np.ndarray, rows: np.ndarray) -> tuple[int, int]:
    """How many rows of a batch have a key group ``worker`` owns, and the batch's event-time progress
    at its end; the rows' numbers, in row order, go to the start of ``rows`` (as long as the batch:
    kept by the worker, as fresh memory costs more than this loop). A worker routes the batch to
    itself, reading every row, so no thread routes for all of them. ``keys`` are the key columns as
    ``key_columns`` gives them (the hash is ``key_groups``'). With event ``times`` (not empty), each
    row's ``progress`` is written: ``start`` and the times of every row up to it, their running
    maximum (rows not ``valid``, when that is not empty, move nothing), as one thread would see it.
    ``progress`` is the worker's own: workers writing one array at rows next to each other's would
    fight over its cache lines."""
    n = keys[0].shape[0]
    count = 0
    timed = times.shape[0] > 0
    checked = valid.shape[0] > 0
    top = start
    for i in range(n):
        if timed and times[i] > top and (not checked or valid[i]):
            top = times[i]
        # written whether owned or not (the next owned row overwrites it): no branch to mispredict
        rows[count] = i
        if timed:
            progress[i] = top
        count += owner[row_group(keys, i)] == worker
    return count, top


@njit(cache=True, nogil=True)
def rows_by_owner(keys: tuple[np.ndarray, ...], owner: np.ndarray, workers: int, times: np.ndarray,
                  valid: np.ndarray, start: int, progress: np.ndarray, owners_of: np.ndarray,
                  rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Every worker's rows of a batch at once, for one thread running all of them in turn: the row
    numbers grouped by owner, each group in row order, into ``rows``; how many each owns; the batch's
    event-time progress at its end. Each row is hashed once (``owned_rows`` would read the batch once
    per worker), ``owners_of`` holds each row's owner between the two passes, and with event
    ``times`` the one ``progress`` column is written as ``owned_rows`` writes each worker's."""
    n = keys[0].shape[0]
    counts = np.zeros(workers, np.int64)
    timed = times.shape[0] > 0
    checked = valid.shape[0] > 0
    top = start
    for i in range(n):
        if timed and times[i] > top and (not checked or valid[i]):
            top = times[i]
        if timed:
            progress[i] = top
        w = owner[row_group(keys, i)]
        owners_of[i] = w
        counts[w] += 1
    place = np.zeros(workers, np.int64)
    for w in range(1, workers):
        place[w] = place[w - 1] + counts[w - 1]
    for i in range(n):
        w = owners_of[i]
        rows[place[w]] = i
        place[w] += 1
    return counts, top


def split_rows(groups: np.ndarray, owner: np.ndarray, workers: int) -> list[np.ndarray]:
    """The row numbers each worker owns, in row order."""
    rows, counts = order_by_bucket(owner[groups], workers)
    ends = np.cumsum(counts)
    return [rows[e - c:e] for e, c in zip(ends, counts)]


@njit(cache=True, nogil=True)
def order_by_bucket(buckets: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable counting sort of row numbers by their bucket (0..count-1), and each bucket's rows."""
    n = buckets.shape[0]
    counts = np.zeros(count, dtype=np.int64)
    for i in range(n):
        counts[buckets[i]] += 1
    place = np.zeros(count, dtype=np.int64)
    for b in range(1, count):
        place[b] = place[b - 1] + counts[b - 1]
    rows = np.empty(n, dtype=np.int64)
    for i in range(n):
        b = buckets[i]
        rows[place[b]] = i
        place[b] += 1
    return rows, counts
