"""Combining two partial accumulators of the same group, as the kernel's updates would have."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from numba import njit

from darwin.codegen.aggregates import AggLayout
from darwin.codegen.hashtable import hash_columns, upsert
from darwin.graph.operators import Ring
from darwin.state.backend import KeyedState
from darwin.state.hash_table import NO_LOGGED, NO_SLOTS


def combine(lay: AggLayout, old: list[np.ndarray], new: list[np.ndarray]) -> list[np.ndarray]:
    """Value columns of ``old`` (seen first) merged with ``new``, entry by entry.

    Counts add; each aggregate merges its values as its registry entry says; the first-seen row
    (a keyed-parallel worker's) is the older part's.
    """
    out = [n.copy() for n in new]
    for a in lay.accs:
        old_count = None if a.count is None else old[a.count]
        new_count = None if a.count is None else new[a.count]
        if a.value is not None:
            out[a.value] = a.function.merge(old[a.value], new[a.value], old_count, new_count)
        if a.count is not None:
            out[a.count] = old[a.count] + new[a.count]
    if lay.first_seen is not None:  # the entry was made by the older part's row
        out[lay.first_seen] = old[lay.first_seen]
    return out


def merge_partials(state: KeyedState, lay: AggLayout, keys: Sequence[np.ndarray], values: Sequence[np.ndarray],
                   undo_log: bool) -> None:
    """Fold partial entries (distinct keys; another table's ``entries()``) into ``state``: a key it
    lacks becomes a new entry, a key it holds is ``combine``d with it, older part first.

    It goes through the arrays the kernels see, so it works on every backend alike: an mmap table
    (``undo_log``) logs each entry before changing it, a RocksDB cache merges what is stored later.
    """
    n = len(keys[0])
    if not n:
        return
    state.grow(n)
    meta = state.array("meta")
    table_keys = tuple(state.array(f"k{j}") for j in range(lay.key_width))
    table_values = [state.array(f"v{j}") for j in range(len(lay.value_dtypes))]
    columns = tuple(a.view(np.int64) for a in (*table_keys, *table_values))
    if undo_log:
        logged, undo_slot = state.array("logged"), state.array("uslot")
        undo = tuple(state.array(name).view(np.int64) for name in
                     [*(f"uk{j}" for j in range(lay.key_width)), *(f"uv{j}" for j in range(len(lay.value_dtypes)))])
    else:
        logged, undo_slot, undo = NO_LOGGED, NO_SLOTS, columns
    before = int(meta[0])
    entry = np.empty(n, dtype=np.int64)
    new_keys = tuple(np.ascontiguousarray(k, dtype=np.int64) for k in keys)
    meta[0] = upsert(state.array("index"), table_keys, before, hash_columns(list(new_keys), n), new_keys, entry,
                     columns, meta, logged, undo_slot, undo)
    fresh = entry >= before
    made, held = entry[fresh], entry[~fresh]
    merged = combine(lay, [v[held] for v in table_values], [v[~fresh] for v in values])
    for table, part, combined in zip(table_values, values, merged):
        table[made] = part[fresh]
        table[held] = combined


Entries = tuple[list[np.ndarray], list[np.ndarray]]  # key columns (window start first), value slots


def merge_ring_entries(lay: AggLayout, ring: Ring, parts: Sequence[Entries]) -> Entries:
    """Entries of several window rings over the same key domain (each holding a key of a window at
    most once) as one ring's: entries of the same window and key are ``combine``d, oldest first by
    first-seen row, and the result is in one ring's firing order -- by window, then first-seen row.

    One compiled pass merges the parts (a ring fires in that order; a part not in it, as
    ``entries()`` walks slots, is put in it first) and groups entries by their cell in the key
    domain, so nothing is sorted as a whole. It runs on the coordinating thread while the workers
    wait, so it is one call, not a numpy step per sort, run and group (two rings of 15,000 entries:
    about 0.85 -> 0.5 ms a firing, the aggregates' ``combine`` most of what is left).
    """
    parts = [p for p in parts if len(p[0][0])]
    if not parts:
        return [np.zeros(0, np.int64)] * (1 + ring.keyed), [np.zeros(0, d) for d in lay.value_dtypes]
    if len(parts) == 1:
        return _in_firing_order(parts[0], lay)
    assert lay.first_seen is not None  # entries from several workers carry the row that made them
    keys = [np.concatenate(c) for c in zip(*(k for k, _ in parts))]
    values = [np.concatenate(c) for c in zip(*(v for _, v in parts))]
    cells = keys[1] - ring.low if ring.keyed else np.zeros(len(keys[0]), np.int64)
    bounds = np.cumsum([0] + [len(k[0]) for k, _ in parts])
    in_order, oldest, later, later_group, later_rank = _merged_groups(
        keys[0], np.ascontiguousarray(values[lay.first_seen], np.int64), np.ascontiguousarray(cells, np.int64),
        bounds, ring.size)
    if not in_order:  # a part out of firing order: put each in it, then merge
        return merge_ring_entries(lay, ring, [_in_firing_order(p, lay) for p in parts])
    merged = [v[oldest] for v in values]
    combine_by_rank(lay, merged, values, later, later_group, later_rank)
    return [k[oldest] for k in keys], merged


@njit(nogil=True, cache=True)
def _merged_groups(starts: np.ndarray, seen: np.ndarray, cells: np.ndarray, bounds: np.ndarray, size: int) \
        -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The parts (entries ``bounds[p]:bounds[p + 1]``, each part in (window start, first-seen row)
    order) merged in that order, their entries grouped by window and cell, each group's entries
    oldest first: the oldest entry of each group in firing order, and every later one with its
    group and rank (1 for a group's second entry, ...). First, False if a part is not in that order
    (then the rest means nothing). Selects, not branches, choose the next entry and its group:
    workers' entries interleave about at random, so branches would be mispredicted every other entry."""
    parts = bounds.shape[0] - 1
    total = bounds[parts]
    spent = np.iinfo(np.int64).max
    at = bounds[:parts].copy()  # each part's next entry
    head_start = np.empty(parts, np.int64)  # and its start and serial, spent when it has none
    head_seen = np.empty(parts, np.int64)
    for p in range(parts):
        head_start[p], head_seen[p] = starts[at[p]], seen[at[p]]  # parts are not empty
    oldest = np.empty(total, np.int64)
    later = np.empty(total, np.int64)
    later_group = np.empty(total, np.int64)
    later_rank = np.empty(total, np.int64)
    group_of = np.zeros(size, np.int64)
    window_of = np.full(size, -1, np.int64)  # the window (run of equal starts) group_of[c] is of
    members = np.zeros(total, np.int64)
    groups, extra, window, last_start = 0, 0, -1, 0
    for i in range(total):
        best = 0
        for p in range(1, parts):
            earlier = (head_start[p] < head_start[best]) | ((head_start[p] == head_start[best])
                                                           & (head_seen[p] < head_seen[best]))
            best = p if earlier else best
        start, first_seen, e = head_start[best], head_seen[best], at[best]
        more = e + 1 < bounds[best + 1]
        k = min(e + 1, total - 1)
        head_start[best] = starts[k] if more else spent
        head_seen[best] = seen[k] if more else spent
        if more and (starts[k] < start or (starts[k] == start and seen[k] < first_seen)):
            return False, oldest[:0], later[:0], later_group[:0], later_rank[:0]
        at[best] = e + 1
        window += (i == 0) | (start != last_start)
        last_start = start
        c = cells[e]
        fresh = window_of[c] != window
        g = groups if fresh else group_of[c]
        window_of[c], group_of[c] = window, g
        oldest[groups] = e  # kept only if fresh
        members[g] += 1 - fresh
        later[extra], later_group[extra], later_rank[extra] = e, g, members[g]  # kept only if not
        groups += fresh
        extra += 1 - fresh
    return True, oldest[:groups], later[:extra], later_group[:extra], later_rank[:extra]


def combine_by_rank(lay: AggLayout, merged: list[np.ndarray], values: Sequence[np.ndarray], members: np.ndarray,
                    group: np.ndarray, rank: np.ndarray) -> None:
    """Combine each entry ``members[i]`` of ``values`` into its group's entry of ``merged``
    (``group[i]``), every group's second entry first, then its third, ...: ``rank[i]`` is an entry's
    place in its group, oldest first (0: the entry ``merged`` starts from, skipped)."""
    for level in range(1, int(rank.max(initial=0)) + 1):
        at = np.flatnonzero(rank == level)
        into = group[at]
        combined = combine(lay, [m[into] for m in merged], [v[members[at]] for v in values])
        for m, c in zip(merged, combined):
            m[into] = c


def _in_firing_order(part: Entries, lay: AggLayout) -> Entries:
    """A ring's entries by window start, then first-seen row (``entries()`` walks slots, not starts)."""
    keys, values = part
    starts = keys[0]
    seen = values[lay.first_seen] if lay.first_seen is not None else np.arange(len(starts))
    order = window_order([starts], [seen])
    if order is None:
        return part
    return [k[order] for k in keys], [v[order] for v in values]


MERGED_RUNS = 16  # more runs in order than this: the rows are sorted instead of merged


def window_order(starts: Sequence[np.ndarray], seen: Sequence[np.ndarray]) -> np.ndarray | None:
    """The order of the parts' rows, taken one part after another, by window start, then first-seen
    row (unique); None if they are in it already. Rows in a few runs in that order (a ring's entries
    walked slot by slot, several rings' entries) are merged (``merged_runs``), many runs sorted."""
    runs = merged_runs(starts, seen)
    if runs is None:
        return np.lexsort((np.concatenate(seen), np.concatenate(starts)))
    if np.all(runs.source[1:] >= runs.source[:-1]):  # runs are numbered in the parts' order
        return None
    which, rows = runs.rows(0, len(runs.source))
    bounds = np.cumsum([0] + [len(s) for s in starts[:-1]])
    return bounds[which] + rows


@dataclasses.dataclass(frozen=True)
class WindowRuns:
    """Rows of several parts merged by (window start, first-seen row), told without moving them:
    merged row ``i`` is the next unread row of run ``source[i]``, which is rows ``first[r]`` on of
    part ``part[r]`` (each run's rows keep their order in the merge)."""

    source: np.ndarray
    part: np.ndarray
    first: np.ndarray
    windows: int  # distinct window starts among all rows

    def rows(self, start: int, stop: int, next_row: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For merged rows ``start:stop``: the part each is from and its row there. ``next_row`` (per
        run, moved on) is where ``start`` finds each run; without it, the merge is read from its beginning."""
        if next_row is None:
            assert start == 0
            next_row = self.first.copy()
        source = self.source[start:stop]
        which = np.empty(len(source), np.int64)
        rows = np.empty(len(source), np.int64)
        _run_rows(source, self.part, next_row, which, rows)
        return which, rows


def merged_runs(starts: Sequence[np.ndarray], seen: Sequence[np.ndarray]) -> WindowRuns | None:
    """The merge of parts whose rows each come in a few runs ordered by (window start, first-seen
    row; several workers' fired windows), or None if they make more than ``MERGED_RUNS`` runs (a sort
    is cheaper then). No column is concatenated: on several workers' millions of fired rows, fresh
    memory for a copy costs more than the merge itself."""
    starts = tuple(np.ascontiguousarray(s, np.int64) for s in starts)
    seen = tuple(np.ascontiguousarray(s, np.int64) for s in seen)
    part, first = [], []
    for p, (s, n) in enumerate(zip(starts, seen)):
        bounds = _run_starts(s, n)
        part += [p] * len(bounds)
        first += bounds.tolist()
        if len(part) > MERGED_RUNS:
            return None
    run_part, run_first = np.array(part, np.int64), np.array(first, np.int64)
    run_end = np.append(run_first[1:], 0)
    last = np.append(run_part[1:] != run_part[:-1], True)
    run_end[last] = [len(starts[p]) for p in run_part[last]]
    source, windows = _merge_runs(starts, seen, run_part, run_first, run_end)
    return WindowRuns(source, run_part, run_first, windows)


def take_rows(which: np.ndarray, rows: np.ndarray, columns: Sequence[np.ndarray]) -> np.ndarray:
    """``out[i]`` = ``columns[which[i]][rows[i]]``: merged rows gathered from the parts' column (all
    of one dtype)."""
    out = np.empty(len(which), columns[0].dtype)
    view = np.int64 if out.dtype.itemsize == 8 else np.uint8  # int64, float64 as int64; bools as bytes
    readable = (np.ascontiguousarray(c) if len(c) else np.zeros(1, c.dtype) for c in columns)  # never taken
    _take_rows(which, rows, tuple(c.view(view) for c in readable), out.view(view))
    return out


@njit(nogil=True, cache=True)
def _run_rows(source: np.ndarray, part: np.ndarray, next_row: np.ndarray, which: np.ndarray,
              rows: np.ndarray) -> None:
    """``merged_runs``' rows told as (part, row): the next unread row of run ``source[i]``."""
    for i in range(source.shape[0]):
        r = source[i]
        which[i] = part[r]
        rows[i] = next_row[r]
        next_row[r] += 1


@njit(nogil=True, cache=True)
def _take_rows(which: np.ndarray, rows: np.ndarray, columns: tuple[np.ndarray, ...], out: np.ndarray) -> None:
    """``take_rows`` without a branch: every part is read at the row (its last row if it has fewer)
    and a mask keeps the one asked for. Workers' rows interleave about at random, and a branch on
    the part was mispredicted every other row (6.6 against 1.8 ns a value, two parts)."""
    for i in range(which.shape[0]):
        w, r = which[i], rows[i]
        value = np.int64(0)
        k = 0
        for column in columns:
            keep = np.int64(0) - np.int64(w == k)  # all ones for the part asked for
            value |= np.int64(column[min(r, column.shape[0] - 1)]) & keep
            k += 1
        out[i] = value


@njit(nogil=True, cache=True)
def _run_starts(starts: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The first row of each run ordered by (start, seen) in these rows (0 first)."""
    bounds = [0]
    for i in range(1, starts.shape[0]):
        if starts[i] < starts[i - 1] or (starts[i] == starts[i - 1] and seen[i] <= seen[i - 1]):
            bounds.append(i)
    return np.array(bounds, np.int64)


@njit(nogil=True, cache=True)
def _merge_runs(starts: tuple[np.ndarray, ...], seen: tuple[np.ndarray, ...], part: np.ndarray, first: np.ndarray,
                end: np.ndarray) -> tuple[np.ndarray, int]:
    """``merged_runs``' k-way merge: the run each merged row comes from, and the windows met."""
    runs = part.shape[0]
    total = 0
    for r in range(runs):
        total += end[r] - first[r]
    source = np.empty(total, np.int16)
    if runs == 2:
        return source, _merge_two_runs(starts[part[0]][first[0]:end[0]], seen[part[0]][first[0]:end[0]],
                                       starts[part[1]][first[1]:end[1]], seen[part[1]][first[1]:end[1]], source)
    at = first.copy()
    windows, window = 0, 0
    for i in range(total):
        best, best_start, best_seen = -1, 0, 0
        for r in range(runs):
            k = at[r]
            if k < end[r]:
                s, n = starts[part[r]][k], seen[part[r]][k]
                if best < 0 or s < best_start or (s == best_start and n < best_seen):
                    best, best_start, best_seen = r, s, n
        at[best] += 1
        source[i] = best
        if i == 0 or best_start != window:
            windows += 1
            window = best_start
    return source, windows


@njit(nogil=True, cache=True)
def _merge_two_runs(first_starts: np.ndarray, first_seen: np.ndarray, second_starts: np.ndarray,
                    second_seen: np.ndarray, source: np.ndarray) -> int:
    """Two runs (two workers' fired rows, the usual case) merged with both heads in registers and
    selects instead of branches: the rows interleave about at random, so a branch was mispredicted
    every other row (13 against 3.8 ns a row). The windows met."""
    i = j = 0
    length_first, length_second = first_starts.shape[0], second_starts.shape[0]
    spent = np.iinfo(np.int64).max
    windows, window = 0, 0
    for out in range(length_first + length_second):
        more_first, more_second = i < length_first, j < length_second
        a_start = first_starts[min(i, length_first - 1)] if more_first else spent
        a_seen = first_seen[min(i, length_first - 1)] if more_first else spent
        b_start = second_starts[min(j, length_second - 1)] if more_second else spent
        b_seen = second_seen[min(j, length_second - 1)] if more_second else spent
        second = (b_start < a_start) | ((b_start == a_start) & (b_seen < a_seen))
        source[out] = second
        i += 1 - second
        j += second
        start = b_start if second else a_start
        windows += (out == 0) | (start != window)
        window = start
    return windows
