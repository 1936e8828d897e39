"""Compiled building blocks of ``count_distinct`` in updating aggregations: exact sets of values
per group, kept as multiplicities of (group id, value) pairs.

Pairs get dense ids in a ``group_index`` table keyed by two int64 components (the group id and
the value's key bits: a float's normalised bit pattern, a string's dictionary code). Several
distinct counts over the same value with different filters (Nexmark q15's total and ranked
bidders) share one pair table: ``mult[p, j]`` is pair p's multiplicity for member j, and
``distinct[g, j]`` the number of values of group g with a non-zero multiplicity for member j.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def pair_keys(ids: np.ndarray, values: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows where some member sees a value, and their (group id, value) keys.

    ``values`` and ``present`` are members x rows; members share the value where they see one, so
    a row's value is taken from the first member that sees it.
    """
    n, m = ids.shape[0], present.shape[0]
    rows = np.empty(n, dtype=np.int64)
    keys = np.empty((n, 2), dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(m):
            if present[j, i]:
                rows[k] = i
                keys[k, 0] = ids[i]
                keys[k, 1] = values[j, i]
                k += 1
                break
    return rows[:k], keys[:k]


@njit(cache=True, nogil=True)
def fold_pairs(ids: np.ndarray, rows: np.ndarray, pairs: np.ndarray, sign: np.ndarray, present: np.ndarray,
               mult: np.ndarray, distinct: np.ndarray) -> None:
    """Add (``sign`` > 0) or take back each row's value in every member that sees it: a group's
    distinct count moves when a pair's multiplicity leaves or comes back to zero."""
    for k in range(rows.shape[0]):
        i = rows[k]
        p, g, s = pairs[k], ids[i], sign[i]
        for j in range(present.shape[0]):
            if present[j, i]:
                before = mult[p, j]
                after = before + s
                mult[p, j] = after
                if before == 0:
                    distinct[g, j] += 1
                elif after == 0:
                    distinct[g, j] -= 1
