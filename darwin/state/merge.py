"""Combining two partial accumulators of the same group, as the kernel's updates would have."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from darwin.codegen.aggregates import AggLayout
from darwin.codegen.hashtable import hash_columns, upsert
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


def merge_entries(lay: AggLayout, parts: Sequence[Entries]) -> Entries:
    """Entries of several tables (each holding a key at most once) as one table's: entries of the same
    key are ``combine``d, oldest first by first-seen row, so the result keeps the oldest one's serial."""
    parts = [p for p in parts if len(p[0][0])]
    if not parts:
        return [np.zeros(0, np.int64)], [np.zeros(0, d) for d in lay.value_dtypes]
    keys = [np.concatenate(c) for c in zip(*(k for k, _ in parts))]
    values = [np.concatenate(c) for c in zip(*(v for _, v in parts))]
    if len(parts) == 1:
        return keys, values
    assert lay.first_seen is not None  # entries from several workers carry the row that made them
    order = np.lexsort((values[lay.first_seen], *reversed(keys)))  # by key, then oldest first
    keys, values = [k[order] for k in keys], [v[order] for v in values]
    n = len(keys[0])
    new_group = np.ones(n, dtype=np.bool_)
    new_group[1:] = np.any([k[1:] != k[:-1] for k in keys], axis=0)
    group_start = np.flatnonzero(new_group)
    group = np.cumsum(new_group) - 1
    rank = np.arange(n) - group_start[group]  # 0 for a key's oldest entry
    merged = [v[group_start].copy() for v in values]
    for level in range(1, int(rank.max()) + 1):
        later = np.flatnonzero(rank == level)
        into = group[later]
        combined = combine(lay, [m[into] for m in merged], [v[later] for v in values])
        for m, c in zip(merged, combined):
            m[into] = c
    return [k[group_start] for k in keys], merged
