"""Lookup tables of string functions, grown as the string pool grows; tables of formatted
timestamps' strings, grown as kernels ask for them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.codegen.functions import format_insert_all, formats_lacking, pair_insert_all, pairs_lacking
from darwin.plan.strings import FUNCTIONS, VECTORIZED, apply_all, apply_arrow
from darwin.plan.timeformat import strftime, unit_ms
from darwin.runtime.encoding import StringPool
from darwin.runtime.number_texts import number_texts
from darwin.types import DType


class LookupTable:
    """Results of one string function for every code of the pool, computed once per value."""

    def __init__(self, func: str, args: tuple[Any, ...]) -> None:
        self.func, self.args = func, args
        self.result = FUNCTIONS[func].result
        self.values = np.zeros(0, dtype=self.result.numpy)
        self.valid = np.zeros(0, dtype=np.bool_)

    def cover(self, pool: StringPool) -> None:
        """Extend to every code the pool holds now; the strings its results add are covered by the next call
        (``PipelineRunner._bind_lookups`` calls as often as the kernel needs). Results that are strings are
        interned at once (a million new strings, a concatenation's or a cast's, in one call).

        Codes appended uninterned get no result: no function is ever applied to them
        (``darwin.plan.inspected``), so computing one per row would be wasted.
        """
        if len(self.values) >= len(pool):
            return
        start, end = len(self.values), len(pool)
        interned = np.flatnonzero(pool.interned(start, end))
        values = np.zeros(end - start, dtype=self.result.numpy)
        valid = np.zeros(end - start, dtype=np.bool_)
        strings = pool.decode(interned + start, None)
        if self.func in VECTORIZED:  # never NULL
            values[interned] = apply_arrow(self.func, self.args, strings).to_numpy(zero_copy_only=False)
            valid[interned] = True
        else:
            results = apply_all(self.func, self.args, strings.to_pylist())
            if self.result is DType.STRING:
                made = pa.array(results, pa.large_string())
                values[interned] = pool.encode(made)
                valid[interned] = made.is_valid().to_numpy(zero_copy_only=False)
            else:
                values[interned] = [0 if r is None else r for r in results]
                valid[interned] = [r is not None for r in results]
        self.values = np.concatenate([self.values, values])
        self.valid = np.concatenate([self.valid, valid])


class FormatTable:
    """The dictionary codes of one strftime format's strings by time unit (``ms // unit_ms``), an
    open-addressing table kernels read (``format_code``). A kernel that meets a unit the table lacks
    stops (``NEEDS_STRING``) and the runtime adds it (``add``), so each unit is formatted once per run;
    many units are formatted at once, those a scout found a batch's rows lack (``PipelineRunner._make_strings``)."""

    def __init__(self, fmt: str) -> None:
        self.fmt, self.unit = fmt, unit_ms(fmt)
        self.count = 0
        self.keys = np.zeros(64, dtype=np.int64)
        self.codes = np.full(64, -1, dtype=np.int64)

    def add(self, units: np.ndarray, pool: StringPool) -> None:
        """The strings of the time units ``units`` (int64) the table lacks, formatted and interned at once."""
        units = np.unique(units)
        units = units[formats_lacking(self.keys, self.codes, units)]
        if not len(units):
            return
        while 2 * (self.count + len(units)) > len(self.keys):
            self._grow()
        texts = [strftime(self.fmt, u * self.unit) for u in units.tolist()]
        format_insert_all(self.keys, self.codes, units, pool.encode(pa.array(texts, pa.large_string())))
        self.count += len(units)

    def _grow(self) -> None:
        keys, codes = self.keys[self.codes >= 0], self.codes[self.codes >= 0]
        self.keys = np.zeros(2 * len(self.keys), dtype=np.int64)
        self.codes = np.full(len(self.keys), -1, dtype=np.int64)
        format_insert_all(self.keys, self.codes, keys, codes)


class PairTable:
    """The dictionary codes of strings made of two codes: joined with a separator between them (CONCAT,
    CONCAT_WS; ``spec`` ("join", separator)), or a string function that expands strings applied to the first
    (``spec`` ("call", function, arguments); the second is 0), or a number's text (``spec`` ("text", type); the
    first is the value, a float's bits, the second 0). An open-addressing table kernels read (``pair_code``); a
    kernel that meets a pair the table lacks stops (``NEEDS_PAIR``) and the runtime makes and interns its string:
    once per distinct pair in a run. Many pairs are made at once (``add``): the runtime finds the pairs a batch's
    rows lack before it goes on (``PipelineRunner._make_strings``), so a stream of distinct values does not stop
    the kernel once a value."""

    def __init__(self, spec: tuple[Any, ...]) -> None:
        self.spec = spec
        self.count = 0
        self.left = np.zeros(64, dtype=np.int64)
        self.right = np.zeros(64, dtype=np.int64)
        self.codes = np.full(64, -1, dtype=np.int64)

    def add(self, a: np.ndarray, b: np.ndarray, pool: StringPool) -> None:
        """Entries for the pairs (``a[j]``, ``b[j]``) (int64) the table lacks, their strings made and interned
        at once; pairs it holds already, or twice here, are made once."""
        a, b = _distinct_pairs(a, b)
        lacking = pairs_lacking(self.left, self.right, self.codes, a, b)
        a, b = a[lacking], b[lacking]
        if not len(a):
            return
        if 2 * (self.count + len(a)) > len(self.codes):
            self._grow(self.count + len(a))
        codes = pool.encode(self._made(a, b, pool))
        self.count += pair_insert_all(self.left, self.right, self.codes, a, b, codes)

    def _made(self, a: np.ndarray, b: np.ndarray, pool: StringPool) -> pa.Array:
        """The strings of the pairs, by the table's kind."""
        kind = self.spec[0]
        if kind == "text":  # a value's text: the value itself (a float's bits) is the key
            dtype = DType(self.spec[1])
            return number_texts(dtype, a.view(np.float64) if dtype is DType.FLOAT64 else a)
        left = pool.decode(a, None).cast(pa.large_string())
        if kind == "join":
            right = pool.decode(b, None).cast(pa.large_string())
            return pc.binary_join_element_wise(left, right, pa.scalar(self.spec[1], pa.large_string()))
        return pa.array(apply_all(self.spec[1], self.spec[2], left.to_pylist()), pa.large_string())

    def _grow(self, entries: int) -> None:
        """Room for ``entries`` pairs, the table at most half full."""
        used = self.codes >= 0
        left, right, codes = self.left[used], self.right[used], self.codes[used]
        size = 2 * len(self.codes)
        while size < 2 * entries:
            size *= 2
        self.left, self.right = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        self.codes = np.full(size, -1, dtype=np.int64)
        pair_insert_all(self.left, self.right, self.codes, left, right, codes)


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair (``a[j]``, ``b[j]``) once, sorted (a scout records a pair at every row that lacks it)."""
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    first = np.ones(len(a), dtype=np.bool_)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[first], b[first]
