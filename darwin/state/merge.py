"""Combining two partial accumulators of the same group, as the kernel's updates would have."""

from __future__ import annotations

import numpy as np

from darwin.codegen.aggregates import AggLayout


def combine(lay: AggLayout, old: list[np.ndarray], new: list[np.ndarray]) -> list[np.ndarray]:
    """Value columns of ``old`` (seen first) merged with ``new``, entry by entry.

    Counts and sums add; min/max keep the earlier value unless the later one is
    strictly smaller/larger (so a NaN seen first stays, as in the kernel), and a side
    whose count is 0 saw no value at all.
    """
    out = [n.copy() for n in new]
    for a in lay.accs:
        if a.count is not None:
            out[a.count] = old[a.count] + new[a.count]
        if a.value is None:
            continue
        o, n = old[a.value], new[a.value]
        if a.func in ("sum", "avg"):
            out[a.value] = o + n
            continue
        better = n < o if a.func == "min" else n > o
        merged = np.where(better, n, o)
        if a.count is not None:
            merged = np.where(old[a.count] == 0, n, np.where(new[a.count] == 0, o, merged))
        out[a.value] = merged
    return out
