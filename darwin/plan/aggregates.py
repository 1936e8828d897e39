"""The aggregate-function registry: each aggregate defined once, for every translation.

An ``AggregateFunction`` holds everything any layer needs of one aggregate:

- its type rule (``result_type``), used when the plan is built;
- its state layout: the dtype of its value slot (``value_dtype``, None for none) and whether it
  needs a count of the values it saw (``needs_count``);
- its generated update (``update``): source lines over generated names only, which the code
  generator wraps in the argument's null test and follows with the count update; and its
  generated retraction (``retract``), for an updating input, or None where retracting needs the
  values kept (min/max keep a multiset of them);
- ``merge`` of two partial states of one group (RocksDB's cache merges into stored entries);
- ``finalize`` of drained state into output columns;
- the reference interpreter's accumulator (``accumulator``).

A filter (``AggCall.filter``) is no concern of the functions: every engine folds ``AggCall.input``,
the argument where the filter holds and NULL elsewhere. ``count_distinct`` (``distinct``) keeps the
set of its values per group, not a slot: the updating aggregation keeps a multiplicity per (group,
value) pair (``darwin.runtime.distinct``); windowed aggregations refuse it (``windowed``).

Adding an aggregate is one class here and one entry in ``REGISTRY``; ``function(name)`` fails
loudly for a name that has none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from darwin.errors import DarwinTypeError, PlanError
from darwin.plan import exprs as ex
from darwin.plan.evaluate import wrap64
from darwin.types import DType, Schema

NUMERIC = (DType.INT64, DType.FLOAT64)
ORDERED = (DType.INT64, DType.FLOAT64, DType.TIMESTAMP)


class Accumulator:
    """The reference interpreter's running state of one aggregate in one group (nulls never reach it)."""

    def __init__(self) -> None:
        self.n = 0
        self.value: Any = None

    def add(self, v: Any) -> None:
        self.n += 1

    def retract(self, v: Any) -> None:
        """Take back a value added before (a -U or -D row of an updating input)."""
        self.n -= 1

    def result(self) -> Any:
        return self.value


class AggregateFunction:
    """One aggregate; subclasses override what differs. The defaults suit a value that needs no count."""

    name = ""
    arguments: tuple[DType, ...] | None = NUMERIC  # accepted argument types; None: any, even an untyped NULL
    distinct = False  # keeps the set of its values per group (count_distinct), not a value slot
    windowed = True  # supported in windowed aggregations

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        assert arg.dtype is not None  # one of ``arguments``: agg_type rejects an untyped NULL before
        return arg.dtype, arg.nullable

    def value_dtype(self, arg: DType | None) -> np.dtype | None:
        """The accumulator's value slot: float64 for float arguments, else int64 (timestamps too)."""
        return np.dtype(np.float64 if arg is DType.FLOAT64 else np.int64)

    def merges_exactly(self, arg: DType | None) -> bool:
        """Whether merging partial states gives, bit for bit, what one fold over the values gives: an
        integer slot does (wrap-around addition is associative); a float sum rounds by how values are
        grouped, so pre-aggregating it would make the result depend on the number of workers."""
        dtype = self.value_dtype(arg)
        return dtype is None or dtype == np.int64

    def needs_count(self, arg_nullable: bool) -> bool:
        """A count tells a group that saw only nulls (the result is NULL) from one that saw values."""
        return arg_nullable

    def update(self, value: str, x: str, first: str) -> list[str]:
        """Generated lines that fold argument ``x`` into ``value``; ``first``: no value seen yet."""
        raise NotImplementedError

    def retract(self, value: str, x: str) -> list[str] | None:
        """Generated lines that take argument ``x`` back out of ``value``; None if the value alone
        cannot (the aggregate then keeps every value of the group)."""
        return None

    def merge(self, old: np.ndarray, new: np.ndarray, old_count: np.ndarray | None,
              new_count: np.ndarray | None) -> np.ndarray:
        """Values of ``old`` (seen first) merged with ``new``, entry by entry."""
        return old + new

    def finalize(self, value: np.ndarray | None, count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Output (values, validity) of drained entries."""
        assert value is not None
        return value, None if count is None else count > 0

    def accumulator(self, retracting: bool = False) -> Accumulator:
        """A fresh accumulator; ``retracting``: its input may take values back."""
        raise NotImplementedError


class _CountAcc(Accumulator):
    def result(self) -> Any:
        return self.n


class Count(AggregateFunction):
    """Rows in the group; with an argument, rows where it is not NULL."""

    name = "count"
    arguments = None

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        return DType.INT64, False

    def value_dtype(self, arg: DType | None) -> np.dtype | None:
        return None  # the count is all it keeps

    def needs_count(self, arg_nullable: bool) -> bool:
        return True

    def update(self, value: str, x: str, first: str) -> list[str]:
        return []  # the count update the generator adds is the whole of it

    def retract(self, value: str, x: str) -> list[str] | None:
        return []

    def finalize(self, value: np.ndarray | None, count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        assert count is not None
        return count, None

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _CountAcc()


class _SumAcc(Accumulator):
    def add(self, v: Any) -> None:
        self.n += 1
        self.value = v if self.value is None else self.value + v
        if isinstance(self.value, int):
            self.value = wrap64(self.value)  # int64 sums wrap around, as in the kernels

    def retract(self, v: Any) -> None:
        self.n -= 1
        self.value = None if self.n == 0 else self.value - v
        if isinstance(self.value, int):
            self.value = wrap64(self.value)


class Sum(AggregateFunction):
    name = "sum"

    def update(self, value: str, x: str, first: str) -> list[str]:
        return [f"{value} += {x}"]

    def retract(self, value: str, x: str) -> list[str] | None:
        return [f"{value} -= {x}"]

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _SumAcc()


class _AvgAcc(_SumAcc):
    def add(self, v: Any) -> None:
        super().add(float(v))

    def retract(self, v: Any) -> None:
        super().retract(float(v))

    def result(self) -> Any:
        return None if self.n == 0 else self.value / self.n


class Avg(AggregateFunction):
    """A float sum and a count; NULL for a group without values."""

    name = "avg"

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        return DType.FLOAT64, arg.nullable

    def value_dtype(self, arg: DType | None) -> np.dtype | None:
        return np.dtype(np.float64)

    def needs_count(self, arg_nullable: bool) -> bool:
        return True

    def update(self, value: str, x: str, first: str) -> list[str]:
        return [f"{value} += np.float64({x})"]

    def retract(self, value: str, x: str) -> list[str] | None:
        return [f"{value} -= np.float64({x})"]

    def finalize(self, value: np.ndarray | None, count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        assert value is not None and count is not None
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, value / np.maximum(count, 1), 0.0), count > 0

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _AvgAcc()


class _ExtremeAcc(Accumulator):
    """Over an append-only input, the running extreme. Over an updating one (``retracting``), the
    extreme of the values kept, NaN above every number as Spark orders doubles."""

    def __init__(self, smaller: bool, retracting: bool) -> None:
        super().__init__()
        self.smaller, self.retracting = smaller, retracting
        self.kept: dict[Any, int] = {}

    def add(self, v: Any) -> None:
        self.n += 1
        if self.retracting:
            keep(self.kept, v, 1)
        elif self.value is None or (v < self.value if self.smaller else v > self.value):
            self.value = v

    def retract(self, v: Any) -> None:
        self.n -= 1
        keep(self.kept, v, -1)

    def result(self) -> Any:
        if not self.retracting:
            return self.value
        return kept_extreme(self.kept, self.smaller) if self.kept else None


NAN_KEY = object()  # NaN as a key of kept values (NaN != NaN)


def keep(kept: dict[Any, int], v: Any, times: int) -> None:
    """Add ``v`` to (``times`` < 0: take it from) a multiset of values kept for min/max."""
    k = NAN_KEY if v != v else v
    left = kept.get(k, 0) + times
    if left:
        kept[k] = left
    else:
        del kept[k]


def kept_extreme(kept: dict[Any, int], smaller: bool) -> Any:
    """The min (``smaller``) or max of a non-empty multiset, NaN above every number as Spark orders doubles."""
    pick = (min if smaller else max)(kept, key=lambda k: (k is NAN_KEY, 0 if k is NAN_KEY else k))
    return float("nan") if pick is NAN_KEY else pick


class Extreme(AggregateFunction):
    """``min`` or ``max``: a later value replaces the kept one only if strictly smaller (larger), so a
    NaN seen first stays, as in every engine's kernels."""

    arguments = ORDERED

    def __init__(self, name: str, smaller: bool) -> None:
        self.name, self.smaller = name, smaller

    def update(self, value: str, x: str, first: str) -> list[str]:
        return [f"if {first} or {x} {'<' if self.smaller else '>'} {value}:", f"    {value} = {x}"]

    def merge(self, old: np.ndarray, new: np.ndarray, old_count: np.ndarray | None,
              new_count: np.ndarray | None) -> np.ndarray:
        merged = np.where(new < old if self.smaller else new > old, new, old)
        if old_count is not None and new_count is not None:  # a side that saw no value does not count
            merged = np.where(old_count == 0, new, np.where(new_count == 0, old, merged))
        return merged

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _ExtremeAcc(self.smaller, retracting)


class _DistinctAcc(Accumulator):
    """The values of the group with their multiplicities; a value leaves when its count drops to 0."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[Any, int] = {}

    def add(self, v: Any) -> None:
        keep(self.kept, v, 1)

    def retract(self, v: Any) -> None:
        keep(self.kept, v, -1)

    def result(self) -> Any:
        return len(self.kept)


class CountDistinct(Count):
    """Distinct non-NULL values in the group, exactly (0.0 and -0.0 are one value, all NaNs one, as
    for group keys). Its count slot holds the number of distinct values; the runtime keeps the sets."""

    name = "count_distinct"
    distinct = True
    windowed = False

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _DistinctAcc()


REGISTRY: dict[str, AggregateFunction] = {
    f.name: f for f in (Count(), Sum(), Avg(), Extreme("min", smaller=True), Extreme("max", smaller=False),
                        CountDistinct())}


def function(name: str) -> AggregateFunction:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PlanError(f"unknown aggregate function {name!r}; known: {sorted(REGISTRY)}") from None


def agg_type(call: ex.AggCall, schema: Schema, name: str) -> tuple[DType, bool]:
    """Result type and nullability of an aggregate over ``schema``."""
    where = f"agg {name}={call}"
    f = function(call.func)
    if call.filter is not None:
        p = ex.type_of(call.filter, schema, f"{where}: filter")
        if p.dtype not in (DType.BOOL, None):
            raise DarwinTypeError(f"{where}: the filter {call.filter} is {p.dtype.value}, not bool")
    if call.arg is None:
        if f.name != "count":
            raise PlanError(f"{where}: {call.func}() needs a column")
        return f.result_type(ex.Typed(DType.INT64, False))
    assert call.input is not None  # the argument, NULL where a filter is false (so nullable then)
    t = ex.type_of(call.input, schema, where)
    if f.arguments is not None and t.dtype not in f.arguments:
        got = "null" if t.dtype is None else t.dtype.value
        raise DarwinTypeError(f"{where}: {call.func} needs {' or '.join(a.value for a in f.arguments)}, got {got}")
    return f.result_type(t)
