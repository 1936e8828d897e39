"""The aggregate-function registry: each aggregate defined once, for every translation.

An ``AggregateFunction`` holds everything any layer needs of one aggregate:

- its type rule (``result_type``), used when the plan is built;
- its state layout: the dtype of its value slot (``value_dtype``, None for none) and whether it
  needs a count of the values it saw (``needs_count``);
- its generated update (``update``): source lines over generated names only, for a value slot of a
  given dtype, which the code generator wraps in the argument's null test and follows with the
  count update; and its
  generated retraction (``retract``), for an updating input, or None where retracting needs the
  values kept (min/max keep a multiset of them); and whether the value keeps NaN and infinities
  out, counted apart, over an updating input (``keeps_specials``: float sum and avg);
- ``merge`` of two partial states of one group (RocksDB's cache merges into stored entries);
- ``finalize`` of drained state into output columns;
- the reference interpreter's accumulator (``accumulator``).

A filter (``AggCall.filter``) is no concern of the functions: every engine folds ``AggCall.input``,
the argument where the filter holds and NULL elsewhere. ``count_distinct`` (``distinct``) keeps the
set of its values per group, not a slot: the updating aggregation keeps a multiplicity per (group,
value) pair (``darwin.runtime.distinct``); the reference interpreter a set per group, windowed or
not; the compiled engine counts it in tumbling and sliding windows in two steps, per value and
then per window and keys (``darwin.plan.split_distinct``), with each other aggregate of the
aggregation combined from its results per value (``combined_by``).

Adding an aggregate is one class here and one entry in ``REGISTRY``; ``function(name)`` fails
loudly for a name that has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from darwin.errors import DarwinTypeError, PlanError
from darwin.plan import exprs as ex
from darwin.plan.evaluate import wrap64
from darwin.types import DType, Schema

NUMERIC = (DType.INT64, DType.FLOAT64)
ORDERED = (DType.INT64, DType.FLOAT64, DType.TIMESTAMP, DType.STRING, DType.BOOL)
# what generated code compares strings with (``text_less``): the string pool's per-code arrays, bound
# by these names where an aggregate ``compares_text``
TEXT_ARRAYS = ("text_starts", "text_ends", "text_bases")


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
    # the aggregate that, over this one's results for the parts of a group, gives its result for the
    # whole group -- exactly where ``merges_exactly`` (count -> sum); None: none does (avg)
    combined_by: str | None = None

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        assert arg.dtype is not None  # one of ``arguments``: agg_type rejects an untyped NULL before
        return arg.dtype, arg.nullable

    def value_dtype(self, arg: DType | None) -> np.dtype | None:
        """The accumulator's value slot: float64 for float arguments, else int64 (timestamps too)."""
        return np.dtype(np.float64 if arg is DType.FLOAT64 else np.int64)

    def merges_exactly(self, arg: DType | None) -> bool:
        """Whether merging partial states (``merge``) gives, bit for bit, what one fold over the values
        gives: an integer slot does (wrap-around addition is associative); a float sum rounds by how
        values are grouped, so pre-aggregating it would make the result depend on the number of
        workers. (min/max merge exactly but for strings: ``Extreme``.)"""
        dtype = self.value_dtype(arg)
        return dtype is None or dtype == np.int64

    def combines_exactly(self, arg: DType | None) -> bool:
        """Whether ``combined_by`` over this aggregate's results for the parts of a group gives, bit
        for bit, its result for the whole group (as one more aggregation folds them)."""
        return self.merges_exactly(arg)

    def needs_count(self, arg_nullable: bool) -> bool:
        """A count tells a group that saw only nulls (the result is NULL) from one that saw values."""
        return arg_nullable

    def keeps_specials(self, arg: DType | None) -> bool:
        """Over an updating input: whether the value slot holds only the finite values and the NaNs,
        +inf and -inf among the values are counted apart (``special_kinds``, ``with_specials``),
        because subtracting one cannot take it back out (``x - nan`` and ``inf - inf`` are NaN)."""
        return False

    def compares_text(self, arg: DType | None) -> bool:
        """Whether the generated update orders strings (``TEXT_ARRAYS`` must be bound)."""
        return False

    def update(self, value: str, x: str, first: str, arg: DType) -> list[str]:
        """Generated lines that fold argument ``x``, of type ``arg``, into ``value`` (a slot of its
        ``value_dtype``); ``first``: no value seen yet."""
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
    combined_by: str | None = "sum"

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        return DType.INT64, False

    def value_dtype(self, arg: DType | None) -> np.dtype | None:
        return None  # the count is all it keeps

    def needs_count(self, arg_nullable: bool) -> bool:
        return True

    def update(self, value: str, x: str, first: str, arg: DType) -> list[str]:
        return []  # the count update the generator adds is the whole of it

    def retract(self, value: str, x: str) -> list[str] | None:
        return []

    def finalize(self, value: np.ndarray | None, count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        assert count is not None
        return count, None

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _CountAcc()


SPECIALS = 3  # the values a retractable float sum counts apart, in this order: NaN, +inf, -inf


def special_kind(v: Any) -> int:
    """0 for a finite value (or an integer), else 1 + the value's place in NaN, +inf, -inf."""
    if v != v:
        return 1
    return 2 if v == math.inf else 3 if v == -math.inf else 0


def special_kinds(x: np.ndarray) -> np.ndarray:
    """``special_kind`` of each value of a float array."""
    return np.where(np.isnan(x), 1, np.where(x == np.inf, 2, np.where(x == -np.inf, 3, 0)))


def with_special(total: Any, counts: list[int]) -> Any:
    """A sum of finite values ``total`` with the NaNs, +infs and -infs ``counts`` added back, as a
    fresh sum of all of them gives: NaN if there is a NaN or infinities of both signs."""
    nan, pos, neg = counts
    return math.nan if nan or (pos and neg) else math.inf if pos else -math.inf if neg else total


def with_specials(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``with_special`` of each entry: ``counts`` has a row of ``SPECIALS`` counts per entry."""
    nan, pos, neg = counts[:, 0] > 0, counts[:, 1] > 0, counts[:, 2] > 0
    return np.where(nan | (pos & neg), np.nan, np.where(pos, np.inf, np.where(neg, -np.inf, total)))


class _SumAcc(Accumulator):
    def __init__(self, specials: bool = False) -> None:
        super().__init__()
        self.specials = [0] * SPECIALS if specials else None  # ``keeps_specials``: NaN, +inf, -inf held

    def add(self, v: Any) -> None:
        self.n += 1
        v = self._finite(v, 1)
        self.value = 0 + v if self.value is None else self.value + v  # 0 + -0.0 is 0.0, as the kernels' sums
        if isinstance(self.value, int):
            self.value = wrap64(self.value)  # int64 sums wrap around, as in the kernels

    def retract(self, v: Any) -> None:
        self.n -= 1
        v = self._finite(v, -1)
        self.value = None if self.n == 0 else self.value - v
        if isinstance(self.value, int):
            self.value = wrap64(self.value)

    def _finite(self, v: Any, times: int) -> Any:
        """``v``, or 0.0 for a NaN or infinity counted apart."""
        if self.specials is not None and (kind := special_kind(v)):
            self.specials[kind - 1] += times
            return 0.0
        return v

    def result(self) -> Any:
        if self.specials is None or self.value is None:
            return self.value
        return with_special(self.value, self.specials)


class Sum(AggregateFunction):
    name = "sum"
    combined_by = "sum"  # exactly for integers (wrap-around addition); a float sum rounds by grouping

    def update(self, value: str, x: str, first: str, arg: DType) -> list[str]:
        return [f"{value} += {x}"]

    def retract(self, value: str, x: str) -> list[str] | None:
        return [f"{value} -= {x}"]

    def keeps_specials(self, arg: DType | None) -> bool:
        return arg is DType.FLOAT64

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _SumAcc(specials=retracting)


class _AvgAcc(_SumAcc):
    def result(self) -> Any:
        return None if self.n == 0 else float(super().result()) / self.n  # as numpy divides an int64 sum


class Avg(AggregateFunction):
    """A sum and a count; NULL for a group without values. The sum is ``sum``'s: an integer one is
    exact (wrapping as Java's long does; Flink's AVG sums in the argument's type), so taking values
    back restores it exactly. A float sum of integers lost what a large value absorbed, and an
    average over an updating input then depended on where batches ended."""

    name = "avg"

    def result_type(self, arg: ex.Typed) -> tuple[DType, bool]:
        return DType.FLOAT64, arg.nullable

    def needs_count(self, arg_nullable: bool) -> bool:
        return True

    def update(self, value: str, x: str, first: str, arg: DType) -> list[str]:
        return [f"{value} += {x}"]

    def retract(self, value: str, x: str) -> list[str] | None:
        return [f"{value} -= {x}"]

    def keeps_specials(self, arg: DType | None) -> bool:
        return arg is DType.FLOAT64  # an integer is never NaN or infinite

    def finalize(self, value: np.ndarray | None, count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        assert value is not None and count is not None
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, value / np.maximum(count, 1), 0.0), count > 0

    def accumulator(self, retracting: bool = False) -> Accumulator:
        return _AvgAcc(specials=retracting)


def order_key(v: Any) -> tuple:
    """Where ``v`` stands in the total order min and max use, as a sortable key: numbers as they
    compare, then NaN (every NaN equal, above every number, +inf included), with -0.0 below 0.0 --
    Java's ``Double.compare``. Integers and timestamps compare as they are."""
    if isinstance(v, float):
        if v != v:
            return (1, 0.0, 0)
        return (0, v, 0 if v == 0.0 and math.copysign(1.0, v) < 0.0 else 1)
    return (0, v, 1)


class _ExtremeAcc(Accumulator):
    """Over an append-only input, the running extreme; over an updating one (``retracting``), the
    extreme of the values kept. Both in the total order of ``order_key``."""

    def __init__(self, smaller: bool, retracting: bool) -> None:
        super().__init__()
        self.smaller, self.retracting = smaller, retracting
        self.kept: dict[Any, int] = {}

    def add(self, v: Any) -> None:
        self.n += 1
        if self.retracting:
            keep(self.kept, v, 1, extreme_key)
        elif self.value is None or (order_key(v) < order_key(self.value) if self.smaller
                                    else order_key(v) > order_key(self.value)):
            self.value = v

    def retract(self, v: Any) -> None:
        self.n -= 1
        keep(self.kept, v, -1, extreme_key)

    def result(self) -> Any:
        if not self.retracting:
            return self.value
        return kept_extreme(self.kept, self.smaller) if self.kept else None


NAN_KEY = object()  # NaN as a key of kept values (NaN != NaN)
NEG_ZERO_KEY = object()  # -0.0 as a key of the values min/max keep (-0.0 == 0.0, but it is the smaller)


def value_key(v: Any) -> Any:
    """``v`` as a key of a multiset of values: every NaN one value, 0.0 and -0.0 one (count_distinct)."""
    return NAN_KEY if v != v else v


def extreme_key(v: Any) -> Any:
    """``v`` as a key of the values min/max keep: as ``value_key``, but -0.0 apart from 0.0."""
    if v != v:
        return NAN_KEY
    return NEG_ZERO_KEY if isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0.0 else v


def keep(kept: dict[Any, int], v: Any, times: int, key: Callable[[Any], Any] = value_key) -> None:
    """Add ``v`` to (``times`` < 0: take it from) a multiset of values, keyed by ``key``."""
    k = key(v)
    left = kept.get(k, 0) + times
    if left:
        kept[k] = left
    else:
        del kept[k]


def key_value(k: Any) -> Any:
    """The value a key of kept values stands for."""
    return float("nan") if k is NAN_KEY else -0.0 if k is NEG_ZERO_KEY else k


def kept_extreme(kept: dict[Any, int], smaller: bool, text: Callable[[int], str] | None = None) -> Any:
    """The min (``smaller``) or max of a non-empty multiset kept by ``extreme_key``, in the total order
    of ``order_key``; of string codes, given ``text`` (a code's string), in the order of their text."""
    if text is not None:
        return (min if smaller else max)(kept, key=text)
    return key_value((min if smaller else max)(kept, key=lambda k: order_key(key_value(k))))


def total_less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Entry by entry, whether float ``a`` comes before ``b`` in the total order of ``order_key``."""
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    return (a < b) | (b_nan & ~a_nan) | ((a == b) & np.signbit(a) & ~np.signbit(b))


class Extreme(AggregateFunction):
    """``min`` or ``max``. Floats are ordered totally, as Java's ``Double.compare`` (and Spark) order
    them: NaN above every number (so min skips NaN unless every value is one, max is NaN if any
    value is), -0.0 below 0.0. Strings by their UTF-8 bytes, unsigned, a prefix first (Flink's
    ``BinaryStringData.compareTo``, Spark's ``UTF8String``): the order of their code points, as
    Python compares them. Booleans FALSE before TRUE, as Flink and Spark order BOOLEAN (the slot
    holds 0 or 1). The result does not depend on the order of the values, so partial
    states merge exactly (pre-aggregation, panes, merged rings, RocksDB's cache): ``merges_exactly``
    -- except a string's: its slot holds a code of the string pool, whose order is not the text's,
    and generated code compares codes by their bytes in the pool (``compares_text``), which
    ``merge`` does not reach; its entries are folded row by row, as a float sum's are."""

    arguments = ORDERED

    def __init__(self, name: str, smaller: bool) -> None:
        self.name, self.smaller = name, smaller
        self.combined_by = name  # the min of the parts' minima

    def merges_exactly(self, arg: DType | None) -> bool:
        return arg is not DType.STRING

    def combines_exactly(self, arg: DType | None) -> bool:
        return True

    def compares_text(self, arg: DType | None) -> bool:
        return arg is DType.STRING

    def update(self, value: str, x: str, first: str, arg: DType) -> list[str]:
        if arg is DType.STRING:
            smaller, larger = (x, value) if self.smaller else (value, x)
            return [f"if {first} or text_less({smaller}, {larger}, {', '.join(TEXT_ARRAYS)}):", f"    {value} = {x}"]
        if arg is not DType.FLOAT64:  # integers and timestamps: < is a total order already
            return [f"if {first} or {x} {'<' if self.smaller else '>'} {value}:", f"    {value} = {x}"]
        # Once the extreme has settled a row costs one comparison, a subtraction and a sign test, each
        # predictable whatever the data (runs of equal values, zeros of both signs): LLVM evaluates
        # such pure conditions in any order, so none may depend on the sign of x alone. The first
        # test is true for a new extreme and for a NaN on either side. Past it, d = v - x (max) or
        # x - v (min) is >= 0, and -0.0 only for v = -0.0, x = 0.0 (max) or v = 0.0, x = -0.0
        # (min): the zero of the winning sign replaces the other (d is NaN only for v == x == inf).
        if self.smaller:
            return [f"if {first} or not ({x} >= {value}):",
                    f"    if {first} or {x} == {x}:",  # smaller, or a number where the kept value is NaN
                    f"        {value} = {x}",
                    f"elif np.signbit({x} - {value}):",
                    f"    {value} = {x}"]
        return [f"if {first} or not ({x} <= {value}):",
                f"    if {first} or {value} == {value}:",  # larger, or the first NaN
                f"        {value} = {x}",
                f"elif np.signbit({value} - {x}):",
                f"    {value} = {x}"]

    def merge(self, old: np.ndarray, new: np.ndarray, old_count: np.ndarray | None,
              new_count: np.ndarray | None) -> np.ndarray:
        if old.dtype.kind == "f":
            takes = total_less(new, old) if self.smaller else total_less(old, new)
        else:
            takes = new < old if self.smaller else new > old
        merged = np.where(takes, new, old)
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
    combined_by = None  # the parts' distinct values may overlap

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
    """Result type and nullability of an aggregate over ``schema``, named ``name`` in the result."""
    return call_type(call, schema, f"agg {name}={call}")


def call_type(call: ex.AggCall, schema: Schema, where: str) -> tuple[DType, bool]:
    """``agg_type``, each refusal naming the call as ``where`` says (SQL: as the query writes it)."""
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
