"""Aggregates folded afresh over groups of rows by the generated fold kernel of updating
aggregations (``darwin.codegen.group_fold``): what session windows and OVER windows compute.

Rows are folded in the order given (arrival order for sessions, oldest first for OVER frames),
so every aggregate computes as the reference's accumulators do, float sums included.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from darwin.codegen.compiler import load_kernel
from darwin.codegen.group_fold import NO_ARGUMENT, FoldSlot, FoldSource, generate_fold
from darwin.errors import UnsupportedError
from darwin.plan.aggregates import function
from darwin.plan.exprs import AggCall, type_of
from darwin.runtime.encoding import StringPool
from darwin.types import Schema


def text_arrays(source: FoldSource, pool: StringPool) -> tuple[np.ndarray, ...]:
    """The arguments a fold kernel takes after its slots: the pool's ``text_arrays()`` if it orders
    strings, else none."""
    return pool.text_arrays() if source.compares_text else ()


class Folds:
    """The slots and compiled kernel for ``aggs`` over rows of ``schema``; ``what`` names the
    operator in the error refusing an aggregate that cannot fold from its values."""

    def __init__(self, aggs: tuple[tuple[str, AggCall], ...], schema: Schema, cache_dir: str, what: str,
                 pool: StringPool) -> None:
        self.pool = pool
        self.slots = []
        for name, call in aggs:
            fn = function(call.func)
            if fn.retract("v", "x") is None and fn.name not in ("min", "max"):
                raise UnsupportedError(f"{what}: {name}={call} is not supported yet")
            arg = None if call.input is None else type_of(call.input, schema)
            value_dtype = fn.value_dtype(None if arg is None else arg.dtype)
            self.slots.append(FoldSlot(fn, value_dtype, True, every_row=arg is None,
                                       arg_dtype=None if arg is None else arg.dtype))
        self.source = generate_fold(tuple(self.slots))
        self.kernel: Callable[..., None] = load_kernel(self.source, cache_dir)

    def run(self, ids: np.ndarray, sign: np.ndarray, group_rows: np.ndarray, flat: list[np.ndarray]) -> None:
        """The fold kernel over rows ``ids``: ``flat`` holds each slot's argument, presence, value and count."""
        self.kernel(ids, sign, group_rows, *flat, *text_arrays(self.source, self.pool))

    def fold(self, ids: np.ndarray, groups: int, args: list[tuple[np.ndarray, np.ndarray] | None]) \
            -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Each aggregate over groups 0..groups-1 of rows ``ids``: ``args`` holds, per aggregate,
        its argument's values and presence for those rows (None for a slot that counts every row:
        ``every_row``). (values, validity) per aggregate."""
        values = [np.zeros(groups, s.value_dtype or np.int64) for s in self.slots]
        counts = [np.zeros(groups, np.int64) for _ in self.slots]
        flat: list[np.ndarray] = []
        for slot, arg, v, c in zip(self.slots, args, values, counts):
            assert arg is not None or slot.every_row, "only a slot counting every row goes without its argument"
            x, present = NO_ARGUMENT if arg is None else arg
            flat += [np.ascontiguousarray(x), np.ascontiguousarray(present), v, c]
        self.run(ids, np.ones(len(ids), np.int64), np.zeros(groups, np.int64), flat)
        return [s.function.finalize(None if s.value_dtype is None else v, c)
                for s, v, c in zip(self.slots, values, counts)]
