"""Combining two partial accumulators of the same group, as the kernel's updates would have."""

from __future__ import annotations

import numpy as np

from darwin.codegen.aggregates import AggLayout


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
