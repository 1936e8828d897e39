"""How a windowed aggregation lays out its state, and how a drained entry becomes a row.

The generator and the runtime both read this layout, so the kernel's writes and
the drain's reads cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.aggregates import AggregateFunction, function
from darwin.types import DType, Schema


@dataclass(frozen=True)
class KeySlot:
    name: str
    dtype: DType
    position: int  # column of the int64 key row holding the value (bit pattern for floats)
    valid_position: int | None  # column holding 1/0 validity, for nullable keys


@dataclass(frozen=True)
class AccSlot:
    """Value arrays of one aggregate: ``value`` (None for count-only) and ``count`` (None if not needed)."""

    name: str
    func: str
    arg: ex.ExprNode | None
    arg_nullable: bool
    arg_dtype: DType | None  # None: count() has no argument
    value: int | None
    value_dtype: np.dtype | None
    count: int | None

    @property
    def function(self) -> AggregateFunction:
        return function(self.func)


@dataclass(frozen=True)
class AggLayout:
    keys: tuple[KeySlot, ...]  # position 0 of the key row is the window start
    accs: tuple[AccSlot, ...]
    value_dtypes: tuple[np.dtype, ...]
    # value column holding the serial number of the row that created the entry: workers' fired
    # windows merge by it into the order one thread fires them in (by window, then first seen)
    first_seen: int | None = None
    # whether partial accumulators merge, bit for bit, into what one fold gives (not float sums
    # and averages, which round by how rows were grouped): else every entry is folded row by row
    merges_exactly: bool = True

    @property
    def compares_text(self) -> bool:
        """Whether an update orders strings: the kernel reads the string pool (``TEXT_ARRAYS``)."""
        return any(a.function.compares_text(a.arg_dtype) for a in self.accs)

    @property
    def key_width(self) -> int:
        return 1 + sum(1 + (k.valid_position is not None) for k in self.keys)


def layout(agg: pn.Aggregate, first_seen: bool = False) -> AggLayout:
    schema: Schema = agg.input.input.schema
    keys, pos = [], 1
    for name in agg.keys:
        f = schema.field(name)
        keys.append(KeySlot(name, f.dtype, pos, pos + 1 if f.nullable else None))
        pos += 2 if f.nullable else 1
    dtypes: list[np.dtype] = []

    def slot(dtype: npt.DTypeLike) -> int:
        dtypes.append(np.dtype(dtype))
        return len(dtypes) - 1

    accs = []
    exact = True
    for name, call in agg.aggs:
        t = ex.type_of(call.input, schema) if call.input is not None else None
        nullable = bool(t and t.nullable)
        fn = function(call.func)
        exact = exact and fn.merges_exactly(None if t is None else t.dtype)
        vdt = fn.value_dtype(None if t is None else t.dtype)
        value = None if vdt is None else slot(vdt)
        count = slot(np.int64) if fn.needs_count(nullable) else None
        accs.append(AccSlot(name, call.func, call.input, nullable, None if t is None else t.dtype, value, vdt, count))
    seen = slot(np.int64) if first_seen else None
    return AggLayout(tuple(keys), tuple(accs), tuple(dtypes), seen, exact)


def finalize(lay: AggLayout, keys: list[np.ndarray], values: list[np.ndarray], size_ms: int) \
        -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Output columns (values, validity) of drained entries, in the Aggregate's schema order."""
    out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    start = keys[0]
    out[pn.WINDOW_START] = (start, None)
    out[pn.WINDOW_END] = (start + size_ms, None)
    for k in lay.keys:
        raw = keys[k.position]
        v = raw.view(np.float64) if k.dtype is DType.FLOAT64 else raw.astype(np.bool_) if k.dtype is DType.BOOL \
            else raw
        valid = None if k.valid_position is None else keys[k.valid_position].astype(np.bool_)
        out[k.name] = (v, valid)
    for a in lay.accs:
        out[a.name] = a.function.finalize(None if a.value is None else values[a.value],
                                          None if a.count is None else values[a.count])
    return out
