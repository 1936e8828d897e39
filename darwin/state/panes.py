"""Sliding windows from panes: a row folds once, into the pane of one slide it falls in, and a window
that fires combines the entries of its panes (Flink's slice sharing).

A window's entries come out as one fold over its rows would leave them: a key's panes are combined
oldest first (by the serial of the row that made each pane's entry), and the window's keys are in
first-seen order. Which windows fire is kept by the watermark they have fired through: a window
fires once, when the watermark first reaches its end, and only if one of its panes holds an entry.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numba import njit

from darwin.codegen.aggregates import AggLayout
from darwin.codegen.hashtable import hash_columns
from darwin.codegen.layout import EMPTY_SLOT
from darwin.plan.window import Window
from darwin.state.hash_table import HashTableState
from darwin.state.merge import Entries, combine_by_rank
from darwin.state.ring import RingState

NOT_YET = EMPTY_SLOT  # no watermark fired through yet


def fired_windows(state: HashTableState | RingState, lay: AggLayout, window: Window, fired: int, wm: int,
                  final: bool) -> Iterator[Entries]:
    """The windows ending in (``fired``, ``wm``] (every one left if ``final``) that hold an entry, as
    one chunk of their entries (window start first) in window, then first-seen order; then the
    panes no window still open needs are dropped."""
    size, slide = window.size_ms, window.slide_ms
    low = state.min_start()
    if low is None:
        return
    high = state.max_start()
    assert high is not None and lay.first_seen is not None  # a pane layout numbers its rows
    first = low - size + slide  # the first window holding the oldest pane
    if fired != NOT_YET:
        first = max(first, _first_start_after(fired, window))
    last = high if final else min(high, _floor(wm - size, slide))
    if first <= last:
        keys, values = state.panes_through(last + size - slide)
        seen = values[lay.first_seen]
        order = np.argsort(seen, kind="stable") if len(seen) > 1 and (np.diff(seen) < 0).any() \
            else np.arange(len(seen))
        columns = np.stack(keys[1:]) if len(keys) > 1 else np.zeros((0, len(seen)), np.int64)
        oldest, starts, later, later_group, later_rank = _window_groups(
            keys[0], columns, hash_columns(keys[1:], len(seen)), order, first, last, slide, size)
        if len(oldest):
            merged = [v[oldest] for v in values]
            combine_by_rank(lay, merged, values, later, later_group, later_rank)  # a key's later panes
            yield [starts, *(k[oldest] for k in keys[1:])], merged
    state.drop_through(high if final else _floor(wm - size, slide))


def first_end(state: HashTableState | RingState, window: Window, fired: int) -> int | None:
    """The end of the first window still to fire that holds an entry (None: the state is empty)."""
    low = state.min_start()
    if low is None:
        return None
    end = low + window.slide_ms
    if fired != NOT_YET:
        end = max(end, _first_start_after(fired, window) + window.size_ms)
    return end


def _floor(t: int, slide: int) -> int:
    return t // slide * slide


def _first_start_after(fired: int, window: Window) -> int:
    """The start of the first window ending after watermark ``fired``."""
    return _floor(fired - window.size_ms, window.slide_ms) + window.slide_ms


@njit(nogil=True, cache=True)
def _windows_holding(panes: np.ndarray, first: int, last: int, slide: int, size: int) -> np.ndarray:
    """The starts, ascending, of the windows from ``first`` to ``last`` holding one of ``panes``. Only
    those: a watermark that jumps far past sparse panes (a day between events under a 1 ms slide) spans
    far more windows than memory holds, nearly all of them empty."""
    if not len(panes):
        return np.empty(0, np.int64)
    low, high = panes.min(), panes.max()
    span = (high - low) // slide + 1
    if span <= 4 * len(panes) + 1024:  # the panes in order without sorting them
        held = np.zeros(span, np.bool_)
        for p in panes:
            held[(p - low) // slide] = True
        ordered = low + np.flatnonzero(held) * slide
    else:
        ordered = np.unique(panes)
    count, reach = 0, first - slide  # the windows so far, the last one's start
    for p in ordered:
        lo, hi = max(first, p - size + slide, reach + slide), min(last, p)
        if lo <= hi:
            count += (hi - lo) // slide + 1
            reach = hi
    starts = np.empty(count, np.int64)
    count, reach = 0, first - slide
    for p in ordered:
        lo, hi = max(first, p - size + slide, reach + slide), min(last, p)
        if lo <= hi:
            for s in range(lo, hi + 1, slide):
                starts[count] = s
                count += 1
            reach = hi
    return starts


@njit(inline="always", nogil=True, cache=True)
def _window_number(window_start: np.ndarray, start: int, slide: int) -> int:
    """Where window ``start`` (one of them) is in ``window_start``: by arithmetic where no window
    between the first and the last is missing (panes not far apart), else by a binary search."""
    if window_start[-1] - window_start[0] == (len(window_start) - 1) * slide:
        return (start - window_start[0]) // slide
    return int(np.searchsorted(window_start, start))


@njit(nogil=True, cache=True)
def _window_groups(panes: np.ndarray, keys: np.ndarray, hashes: np.ndarray, order: np.ndarray, first: int,
                   last: int, slide: int, size: int) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The groups (a window's keys, in first-seen order) of the windows starting at ``first``,
    ``first + slide``, ... ``last`` that hold a pane, whose members are the entries of their panes taken
    in ``order``: each group's oldest entry and window start; and every other member, with its group
    and its rank there (1: the group's second entry). ``keys``: the key columns stacked (one row per
    column), ``hashes``: each entry's hash of them."""
    window_start = _windows_holding(panes, first, last, slide, size)
    windows = len(window_start)
    bounds = np.zeros(windows + 1, np.int64)
    for j in order:  # how many members each window has
        lo, hi = max(first, panes[j] - size + slide), min(last, panes[j])
        w = _window_number(window_start, lo, slide)
        for _ in range(lo, hi + 1, slide):
            w += 1
            bounds[w] += 1
    for w in range(windows):
        bounds[w + 1] += bounds[w]
    members = np.empty(bounds[windows], np.int64)
    at = bounds[:-1].copy()
    for j in order:  # each window's members in first-seen order
        lo, hi = max(first, panes[j] - size + slide), min(last, panes[j])
        w = _window_number(window_start, lo, slide)
        for _ in range(lo, hi + 1, slide):
            members[at[w]] = j
            at[w] += 1
            w += 1
    n = members.shape[0]
    oldest, starts, sizes = np.empty(n, np.int64), np.empty(n, np.int64), np.zeros(n, np.int64)
    later, later_group, later_rank = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    most = 1
    for w in range(windows):
        most = max(most, bounds[w + 1] - bounds[w])
    table_size = 2
    while table_size < 2 * most:  # at most half full
        table_size *= 2
    table_group = np.empty(table_size, np.int64)
    table_window = np.full(table_size, -1, np.int64)  # which window a slot's group is of: no clearing
    mask = np.uint64(table_size - 1)
    width = keys.shape[0]
    groups, others = 0, 0
    for w in range(windows):
        a, b = bounds[w], bounds[w + 1]
        one_pane = True
        for m in range(a + 1, b):
            if panes[members[m]] != panes[members[a]]:
                one_pane = False
                break
        if one_pane:  # a pane holds each key once: every member is a group of its own
            for m in range(a, b):
                oldest[groups], starts[groups] = members[m], window_start[w]
                groups += 1
            continue
        for m in range(a, b):
            j = members[m]
            slot = hashes[j] & mask
            g = -1
            while table_window[slot] == w:
                other = oldest[table_group[slot]]
                same = True
                for c in range(width):
                    if keys[c, other] != keys[c, j]:
                        same = False
                        break
                if same:
                    g = table_group[slot]
                    break
                slot = (slot + np.uint64(1)) & mask
            if g < 0:
                table_window[slot], table_group[slot] = w, groups
                oldest[groups], starts[groups] = j, window_start[w]
                sizes[groups] = 1
                groups += 1
            else:
                later[others], later_group[others], later_rank[others] = j, g, sizes[g]
                sizes[g] += 1
                others += 1
    return oldest[:groups], starts[:groups], later[:others], later_group[:others], later_rank[:others]
