"""Row-at-a-time expression evaluation: plain Python, obviously right, slow.

It defines what an expression means: the reference interpreter evaluates rows with it,
the optimizer folds constants with it, and compiled code is tested against it.

Semantics the compiled code must match: SQL nulls (Kleene logic), int64 wrap-around,
division or modulo by zero giving NULL, Python's floor semantics for // and %.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from darwin.errors import CastError
from darwin.plan import exprs as ex
from darwin.plan.casts import days_from_civil, failure, from_text, to_text
from darwin.plan.numeric import evaluate as numeric
from darwin.plan.strings import apply
from darwin.plan.timeformat import strftime
from darwin.timestamps import civil
from darwin.types import DType, Schema

Row = dict[str, Any]


def wrap64(v: int) -> int:
    return ((v + 2**63) % 2**64) - 2**63


def compile_expr(e: ex.ExprNode, schema: Schema) -> Callable[[Row], Any]:
    """A Python closure computing ``e`` for a row dict (the type checks already passed)."""
    t = ex.type_of(e, schema)
    if isinstance(e, ex.Column):
        name = e.name
        return lambda row: row[name]
    if isinstance(e, ex.Literal):
        value = e.value
        return lambda row: value
    if isinstance(e, ex.Binary):
        return _binary(e, schema, t.dtype)
    if isinstance(e, ex.Unary):
        f = compile_expr(e.operand, schema)
        return _UNARY[e.op](f)
    if isinstance(e, ex.IsIn):
        f = compile_expr(e.operand, schema)
        # compared as == compares: in float64 when the operand or any value is a float
        as_float = ex.type_of(e.operand, schema).dtype is DType.FLOAT64 or any(
            v.dtype is DType.FLOAT64 and v.value is not None for v in e.values)
        # NaN equals nothing; left out, because ``in`` would match a NaN object by identity
        values = frozenset(float(v.value) if as_float else v.value
                           for v in e.values if v.value is not None and v.value == v.value)
        has_null = any(v.value is None for v in e.values)

        def isin(row: Row) -> Any:
            x = f(row)
            if x is None:
                return None
            if (float(x) if as_float else x) in values:
                return True
            return None if has_null else False
        return isin
    if isinstance(e, ex.Cast):
        return _cast(compile_expr(e.operand, schema), ex.type_of(e.operand, schema).dtype, e)
    if isinstance(e, ex.Case):
        arms = [(compile_expr(c, schema), compile_expr(v, schema)) for c, v in e.whens]
        other = compile_expr(e.otherwise, schema)
        as_float = t.dtype is DType.FLOAT64

        def case(row: Row) -> Any:
            for cond, value in arms:
                if cond(row) is True:
                    return _maybe_float(value(row), as_float)
            return _maybe_float(other(row), as_float)
        return case
    if isinstance(e, ex.DatePart):
        f = compile_expr(e.operand, schema)
        part = e.part
        return lambda row: None if (v := f(row)) is None else date_part(part, v)
    if isinstance(e, ex.TimeFloor):
        f = compile_expr(e.operand, schema)
        unit = e.unit
        return lambda row: None if (v := f(row)) is None else wrap64(time_floor(unit, v))
    if isinstance(e, ex.MathCall):
        operands = [compile_expr(a, schema) for a in e.args]
        name = e.func
        return lambda row: None if None in (values := tuple(a(row) for a in operands)) else numeric(name, values)
    if isinstance(e, ex.StringCall):
        f = compile_expr(e.operand, schema)
        func, args = e.func, e.args
        return lambda row: apply(func, args, f(row))
    if isinstance(e, ex.Strftime):
        f = compile_expr(e.operand, schema)
        fmt = e.format
        return lambda row: None if (v := f(row)) is None else strftime(fmt, v)
    if isinstance(e, ex.Concat):
        return _concat([compile_expr(p, schema) for p in e.parts], e.separator)
    raise TypeError(f"not an expression: {e!r}")


def _concat(parts: list[Callable[[Row], Any]], separator: str | None) -> Callable[[Row], Any]:
    """CONCAT: NULL where a part is; CONCAT_WS (a separator): the parts that are not NULL."""
    def concat(row: Row) -> Any:
        values = [p(row) for p in parts]
        if separator is not None:
            return separator.join(v for v in values if v is not None)
        return None if any(v is None for v in values) else "".join(values)
    return concat


def _maybe_float(v: Any, as_float: bool) -> Any:
    return float(v) if as_float and v is not None else v


def _binary(e: ex.Binary, schema: Schema, result: DType | None) -> Callable[[Row], Any]:
    lf, rf = compile_expr(e.left, schema), compile_expr(e.right, schema)
    lt, rt = ex.type_of(e.left, schema).dtype, ex.type_of(e.right, schema).dtype
    floats = DType.FLOAT64 in (lt, rt)
    op = e.op
    if op in ("and", "or"):  # SQL's three-valued logic: False decides an and, True an or, even beside NULL
        deciding = op == "or"

        def logical(row: Row) -> Any:
            a = lf(row)
            if a is deciding:  # the right side is not evaluated (as in Flink: a CAST there does not fail)
                return deciding
            b = rf(row)
            if b is deciding:
                return deciding
            return None if a is None or b is None else not deciding
        return logical
    fn = _OPS[op]

    def binary(row: Row) -> Any:
        a, b = lf(row), rf(row)
        if a is None or b is None:
            return None
        if floats or op == "truediv":
            a, b = float(a), float(b)
        if op in ("truediv", "floordiv", "mod") and b == 0:
            return None
        v = fn(a, b)
        return wrap64(v) if isinstance(v, int) and not isinstance(v, bool) else v
    return binary


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


def _lift(fn: Callable[[Any], Any]) -> Callable[[Callable[[Row], Any]], Callable[[Row], Any]]:
    return lambda f: (lambda row: None if (v := f(row)) is None else fn(v))


def _neg(v: Any) -> Any:
    return wrap64(-v) if isinstance(v, int) else -v


def _abs(v: Any) -> Any:
    return wrap64(abs(v)) if isinstance(v, int) else abs(v)


_UNARY = {
    "neg": _lift(_neg), "abs": _lift(_abs), "not": _lift(lambda v: not v),
    "is_null": lambda f: (lambda row: f(row) is None),
    "is_not_null": lambda f: (lambda row: f(row) is not None),
}


def _cast(f: Callable[[Row], Any], src: DType | None, cast: ex.Cast) -> Callable[[Row], Any]:
    dst = cast.dtype
    if src is DType.STRING and dst is not DType.STRING:
        return _parsed(f, cast)
    if dst is DType.STRING and src not in (DType.STRING, None):
        return lambda row: None if (v := f(row)) is None else to_text(src, v)

    def to_int(v: Any) -> Any:
        if isinstance(v, float):
            if not math.isfinite(v) or not -(2.0**63) <= v < 2.0**63:
                return None
            return int(v)  # truncates toward zero
        return int(v)

    convs: dict[DType, Callable[[Any], Any]] = {DType.INT64: to_int, DType.TIMESTAMP: to_int, DType.FLOAT64: float,
                                                DType.BOOL: lambda v: v != 0, DType.STRING: lambda v: v}
    conv = convs[dst]
    return lambda row: None if (v := f(row)) is None else conv(v)


def _parsed(f: Callable[[Row], Any], cast: ex.Cast) -> Callable[[Row], Any]:
    """A string cast to ``cast.dtype`` as Flink parses it: text that does not parse is NULL (TRY_CAST) or
    fails the query, as Flink's CAST does since 1.15."""
    dtype, bits, safe = cast.dtype, cast.bits, cast.safe

    def parsed(row: Row) -> Any:
        text = f(row)
        if text is None:
            return None
        value = from_text(dtype, text, bits)
        if value is None and not safe:
            raise CastError(failure(text, dtype, bits))
        return value
    return parsed


def date_part(part: str, ms: int) -> int:
    """A part of UTC timestamp ``ms`` (milliseconds since the epoch), for any int64: the calendar is
    the proleptic Gregorian one with a year 0 (as the compiled ``dt_year`` and Spark's ``year``), not
    Python's ``datetime``, which stops at years 1 and 9999."""
    days, ms_of_day = divmod(ms, 86_400_000)
    if part == "hour":
        return ms_of_day // 3_600_000
    if part == "minute":
        return ms_of_day // 60_000 % 60
    if part == "second":
        return ms_of_day // 1000 % 60
    if part == "millisecond":
        return ms_of_day % 1000
    if part == "day_of_week":
        return (days + 3) % 7 + 1
    if part == "week":  # ISO 8601: the week, Monday to Sunday, counted in the year its Thursday is in
        thursday = days - (days + 3) % 7 + 3
        return (thursday - days_from_civil(civil(thursday)[0], 1, 1)) // 7 + 1
    year, month, day = civil(days)
    if part == "day_of_year":
        return days - days_from_civil(year, 1, 1) + 1
    return {"year": year, "month": month, "day": day}[part]


def time_floor(unit: str, ms: int) -> int:
    """The start of the ``unit`` holding UTC timestamp ``ms``, in milliseconds (``ex.TimeFloor``): a multiple
    of the unit's length for the units of one, else midnight of the week's Sunday, or of the first day of the
    month, quarter or year, in the calendar of ``date_part``."""
    if unit in ex.FIXED_UNITS_MS:
        return ms - ms % ex.FIXED_UNITS_MS[unit]
    days = ms // 86_400_000
    if unit == "week":
        return (days - (days + 4) % 7) * 86_400_000  # 1970-01-01 was a Thursday, 4 days after a Sunday
    year, month, _ = civil(days)
    first = {"month": month, "quarter": month - (month - 1) % 3, "year": 1}[unit]
    return days_from_civil(year, first, 1) * 86_400_000
