"""Lookup tables of string functions, grown as the string pool grows."""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.plan.strings import FUNCTIONS, apply
from darwin.runtime.encoding import StringPool
from darwin.types import DType


class LookupTable:
    """Results of one string function for every code of the pool, computed once per value."""

    def __init__(self, func: str, args: tuple[Any, ...]) -> None:
        self.func, self.args = func, args
        self.result = FUNCTIONS[func].result
        self.values = np.zeros(0, dtype=self.result.numpy)
        self.valid = np.zeros(0, dtype=np.bool_)

    def cover(self, pool: StringPool) -> None:
        """Extend to every code in the pool (results may add strings; those get entries too).

        Codes appended uninterned get no result: no function is ever applied to them
        (``darwin.plan.inspected``), so computing one per row would be wasted.
        """
        while len(self.values) < len(pool):
            start, end = len(self.values), len(pool)
            interned = np.flatnonzero(pool.interned(start, end)) + start
            strings = pool.decode(interned, None).to_pylist()
            results: list[Any] = [None] * (end - start)
            for code, value in zip(interned, strings):
                results[code - start] = apply(self.func, self.args, value)
            if self.result is DType.STRING:
                fresh = [0 if r is None else pool.code(r) for r in results]
            else:
                fresh = [0 if r is None else r for r in results]
            self.values = np.concatenate([self.values, np.array(fresh, dtype=self.result.numpy)])
            self.valid = np.concatenate([self.valid, np.array([r is not None for r in results], dtype=np.bool_)])
