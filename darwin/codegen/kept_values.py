"""Compiled building blocks of min/max over an updating input: per group, every value seen with its
count, so a retraction of the current extreme finds the next one (Flink's ``MinWithRetractAggFunction``
keeps a ``MapView`` for this).

Entries are rows ``[group + 1, key, count, next]`` of an open-addressing table (``pair_entry``: 0
first is a free entry, so a new table is zeros). A group's entries are chained through ``next``
(an entry's index + 1, 0 at the end) from ``head[group]``, so finding the next extreme walks only
that group's values. An entry whose count is back to 0 stays (in its chain too) until the table is
rebuilt. ``best[group]`` is the key of the extreme of the entries whose count is not 0, valid where
``state[group]`` is ``HELD``; ``STALE`` where the extreme left and the chain is to be walked.

A key orders as its value: an integer, timestamp or boolean itself; a float's ``float_keys`` (one
NaN above every number, -0.0 below 0.0: Java's ``Double.compare``); a string's pool code, ordered by
its text (``text_less``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from darwin.codegen.distinct import FREE, pair_entry
from darwin.codegen.strings import text_less

EMPTY, HELD, STALE = 0, 1, 2  # a group's state: no value held, best is its extreme, best left
KEY, COUNT, NEXT = 1, 2, 3  # an entry's columns after its group + 1
WIDTH = 4
_SIGN_FREE = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def float_keys(values: np.ndarray) -> np.ndarray:
    """float64 values as int64 keys in the order min/max take: every NaN one key above +inf, -0.0
    just below 0.0 (the bits, negatives' magnitude bits flipped so they sort as integers)."""
    bits = np.where(np.isnan(values), np.nan, values).view(np.int64)
    return bits ^ ((bits >> 63) & _SIGN_FREE)


def float_values(keys: np.ndarray) -> np.ndarray:
    """The floats ``float_keys`` made ``keys`` of (the mapping is its own inverse on the bits)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys ^ ((keys >> 63) & _SIGN_FREE)).view(np.float64)


@njit(cache=True, nogil=True, inline="always")
def _before(a: np.int64, b: np.int64, smaller: bool, by_text: bool, starts: np.ndarray, ends: np.ndarray,
            bases: np.ndarray) -> bool:
    """Whether key ``a`` is a better extreme than ``b``: smaller for min, larger for max."""
    if not smaller:
        a, b = b, a
    if by_text:
        return text_less(a, b, starts, ends, bases)
    return bool(a < b)


@njit(cache=True, nogil=True)
def fold_kept(table: np.ndarray, used: int, head: np.ndarray, best: np.ndarray, state: np.ndarray,
              ids: np.ndarray, sign: np.ndarray, keys: np.ndarray, present: np.ndarray, smaller: bool,
              by_text: bool, starts: np.ndarray, ends: np.ndarray, bases: np.ndarray,
              start: int) -> tuple[int, int]:
    """Add (``sign`` > 0) or take back each present row's key in its group, from row ``start`` on;
    returns the row it stopped at (the number of rows when done) and the entries in use.

    A key joining its group's values (its count leaves 0) may become the extreme; the extreme
    leaving them (its count back to 0) makes the group ``STALE`` (``settle`` walks it once, after
    the batch). It stops before a new entry would fill more than half of the table: the caller
    makes room and calls again from that row."""
    limit = table.shape[0] // 2
    for i in range(start, ids.shape[0]):
        if not present[i]:
            continue
        g, k = ids[i], keys[i]
        s = pair_entry(table, g + 1, k)
        if table[s, 0] == FREE:
            if used == limit:
                return i, used
            table[s, 0] = g + 1
            table[s, KEY] = k
            table[s, NEXT] = head[g]
            head[g] = s + 1
            used += 1
        before = table[s, COUNT]
        after = before + (1 if sign[i] > 0 else -1)
        table[s, COUNT] = after
        if before == 0:  # k joins the group's values
            if state[g] == EMPTY:
                best[g] = k
                state[g] = HELD
            elif state[g] == HELD and _before(k, best[g], smaller, by_text, starts, ends, bases):
                best[g] = k
        elif after == 0 and state[g] == HELD and best[g] == k:
            state[g] = STALE
    return ids.shape[0], used


@njit(cache=True, nogil=True)
def settle(table: np.ndarray, head: np.ndarray, best: np.ndarray, state: np.ndarray, groups: np.ndarray,
           smaller: bool, by_text: bool, starts: np.ndarray, ends: np.ndarray, bases: np.ndarray) -> None:
    """The extreme of each ``STALE`` group of ``groups``, from a walk of its chain (``EMPTY`` if no
    value is left)."""
    for g in groups:
        if state[g] != STALE:
            continue
        state[g] = EMPTY
        at = head[g]
        while at != 0:
            s = at - 1
            if table[s, COUNT] != 0:
                k = table[s, KEY]
                if state[g] == EMPTY or _before(k, best[g], smaller, by_text, starts, ends, bases):
                    best[g] = k
                    state[g] = HELD
            at = table[s, NEXT]


@njit(cache=True, nogil=True)
def forget_groups(table: np.ndarray, head: np.ndarray, state: np.ndarray, groups: np.ndarray) -> None:
    """Groups left without rows hold no value (their entries stay, at count 0, till a rebuild)."""
    for g in groups:
        at = head[g]
        while at != 0:
            table[at - 1, COUNT] = 0
            at = table[at - 1, NEXT]
        state[g] = EMPTY


@njit(cache=True, nogil=True)
def unlink(table: np.ndarray, head: np.ndarray) -> None:
    """Empty the chains of every group holding an entry of ``table`` (before a rebuild relinks them)."""
    for s in range(table.shape[0]):
        if table[s, 0] != FREE:
            head[table[s, 0] - 1] = 0


@njit(cache=True, nogil=True)
def held_entries(table: np.ndarray) -> np.ndarray:
    """``[group + 1, key, count]`` of the entries whose count is not 0 (the others go on rebuilds)."""
    keep = np.zeros(table.shape[0], dtype=np.bool_)
    for s in range(table.shape[0]):
        keep[s] = table[s, 0] != FREE and table[s, COUNT] != 0
    return table[keep][:, :NEXT].copy()


@njit(cache=True, nogil=True)
def count_held(table: np.ndarray) -> int:
    """How many entries ``held_entries`` would give, without copying them."""
    n = 0
    for s in range(table.shape[0]):
        n += table[s, 0] != FREE and table[s, COUNT] != 0
    return n


@njit(cache=True, nogil=True)
def insert_held(table: np.ndarray, head: np.ndarray, best: np.ndarray, state: np.ndarray, entries: np.ndarray,
                smaller: bool, by_text: bool, starts: np.ndarray, ends: np.ndarray, bases: np.ndarray) -> None:
    """Put ``[group + 1, key, count]`` entries of other pairs into a table with room for them, each
    chained to its group, which takes it as its extreme where it is better (a restore starts from
    ``EMPTY`` groups; on a rebuild a ``HELD`` group's extreme is among them already, and a ``STALE``
    one is walked after the batch)."""
    for e in range(entries.shape[0]):
        gp, k = entries[e, 0], entries[e, KEY]
        s = pair_entry(table, gp, k)
        g = gp - 1
        table[s, 0] = gp
        table[s, KEY] = k
        table[s, COUNT] = entries[e, COUNT]
        table[s, NEXT] = head[g]
        head[g] = s + 1
        if state[g] == EMPTY:
            best[g] = k
            state[g] = HELD
        elif state[g] == HELD and _before(k, best[g], smaller, by_text, starts, ends, bases):
            best[g] = k
