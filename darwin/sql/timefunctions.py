"""Flink's functions between strings, numbers and timestamps: TO_TIMESTAMP, TO_TIMESTAMP_LTZ, UNIX_TIMESTAMP,
FROM_UNIXTIME, and the refusals of TO_DATE and UNIX_TIMESTAMP().

Each is built from the fluent API (a string function of ``darwin.plan.javatime`` where a pattern reads text,
``when``, arithmetic and ``dt.strftime`` otherwise), so every engine runs it with rules it already has. The
session time zone is UTC (docs/decisions.md), so TIMESTAMP_LTZ is Darwin's one timestamp type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from darwin.expr import Expr, lit, when
from darwin.plan import exprs as ex
from darwin.plan.exprs import FIXED_UNITS_MS, type_of
from darwin.plan.javatime import DEFAULT_PATTERN
from darwin.sql.dialect import Flink
from darwin.types import DType

if TYPE_CHECKING:
    from darwin.sql.expressions import ExpressionTranslator

# Flink's TO_TIMESTAMP_LTZ range: '0000-01-01 00:00:00' to '9999-12-31 23:59:59.999' UTC, NULL outside it
MIN_EPOCH_SECONDS, MAX_EPOCH_SECONDS = -62_167_219_200, 253_402_300_799
MIN_EPOCH_MILLIS, MAX_EPOCH_MILLIS = -62_167_219_200_000, 253_402_300_799_999


def _epoch() -> Expr:
    return lit(0, "timestamp")


def _arity(tr: ExpressionTranslator, node: exp.Anonymous, name: str, counts: tuple[int, ...], form: str) -> None:
    if len(node.expressions) not in counts:
        raise tr.where.error(node, f"{name} takes {form}, as in Flink; got {len(node.expressions)} arguments")


def _pattern(tr: ExpressionTranslator, args: list[exp.Expr], name: str) -> str:
    return DEFAULT_PATTERN if len(args) < 2 else tr._text(args[1], f"{name}'s format")


def to_timestamp(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    """TO_TIMESTAMP(s): the text as CAST reads a TIMESTAMP, NULL where it does not parse; TO_TIMESTAMP(s,
    pattern): read with the Java pattern, then as Timestamp.valueOf/Date.valueOf, NULL where neither reads it."""
    _arity(tr, node, "TO_TIMESTAMP", (1, 2), "a string and an optional format")
    args = node.expressions
    text = tr._string(args[0], "TO_TIMESTAMP")
    if len(args) == 1:
        return text.try_cast(DType.TIMESTAMP)
    pattern = tr._text(args[1], "TO_TIMESTAMP's format")
    return tr._checked(args[1], lambda: text.str.to_timestamp(pattern))


def unix_timestamp(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    """UNIX_TIMESTAMP(s[, pattern]): seconds since the epoch, Long.MIN_VALUE where the text does not parse."""
    args = node.expressions
    if not args:
        raise tr.where.error(node, "UNIX_TIMESTAMP() reads the clock, and a stream job's output must not depend "
                                   "on when it runs; use the rows' event time (ts - TIMESTAMP '1970-01-01 "
                                   "00:00:00' is its milliseconds since the epoch)")
    _arity(tr, node, "UNIX_TIMESTAMP", (1, 2), "a string and an optional format")
    text = tr._string(args[0], "UNIX_TIMESTAMP")
    pattern = _pattern(tr, args, "UNIX_TIMESTAMP")
    return tr._checked(args[-1], lambda: text.str.unix_timestamp(pattern))


def from_unixtime(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    """FROM_UNIXTIME(n[, pattern]): n seconds since the epoch as text, 'yyyy-MM-dd HH:mm:ss' by default (the
    seconds times 1000 wrap as Java's long does)."""
    from darwin.sql.expressions import java_time_format

    _arity(tr, node, "FROM_UNIXTIME", (1, 2), "a BIGINT number of seconds and an optional format")
    args = node.expressions
    seconds = _number(tr, args[0], "FROM_UNIXTIME", (DType.INT64,))
    fmt = java_time_format(_pattern(tr, args, "FROM_UNIXTIME"), args[-1], tr.where, "FROM_UNIXTIME")
    return (_epoch() + seconds * 1000).dt.strftime(fmt)


def to_timestamp_ltz(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    """TO_TIMESTAMP_LTZ(n[, precision]): n seconds (precision 0) or milliseconds (3, the default) since the epoch,
    NULL outside the years 0000 to 9999, as Flink's DateTimeUtils.toTimestampData: a DOUBLE is truncated toward
    zero as Java's (long) cast, which makes NaN milliseconds 0."""
    _arity(tr, node, "TO_TIMESTAMP_LTZ", (1, 2), "a number and a precision, 0 (seconds) or 3 (milliseconds)")
    args = node.expressions
    precision = 3 if len(args) == 1 else tr._integer(args[1], "TO_TIMESTAMP_LTZ's precision")
    if precision not in (0, 3):
        raise tr.where.error(args[1], f"TO_TIMESTAMP_LTZ's precision is 0 (seconds) or 3 (milliseconds), as in "
                                      f"Flink; got {precision}")
    value = _number(tr, args[0], "TO_TIMESTAMP_LTZ", (DType.INT64, DType.FLOAT64))
    whole = type_of(value.node, tr.schema).dtype is DType.INT64
    if precision == 0:
        ms = value * 1000 if whole else (value * 1000.0).cast(DType.INT64)
        return when((value >= MIN_EPOCH_SECONDS) & (value <= MAX_EPOCH_SECONDS), _epoch() + ms).end()
    if whole:
        return when((value >= MIN_EPOCH_MILLIS) & (value <= MAX_EPOCH_MILLIS), _epoch() + value).end()
    inside = (value > float(MIN_EPOCH_MILLIS - 1)) & (value < float(MAX_EPOCH_MILLIS + 1))
    return when(value != value, _epoch()).when(inside, _epoch() + value.cast(DType.INT64)).end()


# TIMESTAMPADD's and TIMESTAMPDIFF's units of a fixed length
UNIT_MS = {unit.upper(): ms for unit, ms in FIXED_UNITS_MS.items()} | {"WEEK": 7 * FIXED_UNITS_MS["day"]}
# their units of calendar months: how many months each is
MONTH_UNITS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def timestampadd(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    """TIMESTAMPADD(unit, n, ts): ``ts`` plus ``n`` units, NULL where either is; the units of a fixed length
    (SECOND to WEEK) are milliseconds added, as in Flink's UTC session, MONTH, QUARTER and YEAR calendar months."""
    _arity(tr, node, "TIMESTAMPADD", (3,), "a unit, an integer and a timestamp")
    unit_node, count, time = node.expressions
    unit = unit_node.name.upper() if isinstance(unit_node, (exp.Column, exp.Var)) else ""
    if unit not in UNIT_MS and unit not in MONTH_UNITS:
        raise tr.where.error(unit_node, f"TIMESTAMPADD's unit: {', '.join([*UNIT_MS, *MONTH_UNITS])}, got "
                                        f"{unit_node.sql(dialect=Flink)}")
    n = _number(tr, count, "TIMESTAMPADD", (DType.INT64,))
    ts = tr(time)
    dtype = type_of(ts.node, tr.schema).dtype
    if dtype is not DType.TIMESTAMP:
        raise tr.where.error(time, f"TIMESTAMPADD adds to a TIMESTAMP; {time.sql(dialect=Flink)} is "
                                   f"{'NULL' if dtype is None else dtype.value}")
    if unit in MONTH_UNITS:  # calendar months, the day cut to the month's last (Calcite's addMonths)
        return add_months(ts, n * MONTH_UNITS[unit])
    return ts + n * UNIT_MS[unit]


def timestampdiff(tr: ExpressionTranslator, node: exp.TimestampDiff) -> Expr:
    """TIMESTAMPDIFF(unit, t1, t2): whole units from ``t1`` to ``t2``, as Flink's (Calcite's convertlet): the
    milliseconds between divided by the unit's, or for MONTH, QUARTER and YEAR the calendar months between
    (DateTimeUtils.subtractMonths) divided by 1, 3 or 12, truncated toward zero and cast to INT (wrapping as
    Java's cast does); NULL where either is NULL."""
    unit_node = node.args.get("unit")
    unit = unit_node.name.upper() if isinstance(unit_node, exp.Var) else ""
    if unit not in UNIT_MS and unit not in MONTH_UNITS:
        raise tr.where.error(unit_node or node, f"TIMESTAMPDIFF's unit: {', '.join([*UNIT_MS, *MONTH_UNITS])}, as in "
                                                f"Flink; got {unit_node.sql(dialect=Flink) if unit_node else 'none'}")
    start, end = (_timestamp(tr, n, "TIMESTAMPDIFF") for n in (node.expression, node.this))
    if unit in UNIT_MS:
        return tr._narrowed(tr._truncating(end - start, lit(UNIT_MS[unit]), "div"), 32)
    months = months_between(start, end)
    return months if unit == "MONTH" else tr._truncating(months, lit(MONTH_UNITS[unit]), "div")


def months_between(start: Expr, end: Expr) -> Expr:
    """The whole calendar months from ``start`` to ``end``, as Calcite's subtractMonths (``darwin.plan.numeric``)."""
    return Expr(ex.MathCall("months_between", ((start - _epoch()).node, (end - _epoch()).node)))


def add_months(ts: Expr, months: Expr) -> Expr:
    """``ts`` plus ``months`` calendar months, the day cut to the month's last, as Calcite's addMonths."""
    return _epoch() + Expr(ex.MathCall("add_months", ((ts - _epoch()).node, months.node)))


def _timestamp(tr: ExpressionTranslator, node: exp.Expr, name: str) -> Expr:
    value = tr(node)
    dtype = type_of(value.node, tr.schema).dtype
    if dtype not in (None, DType.TIMESTAMP):
        raise tr.where.error(node, f"{name} takes TIMESTAMPs; {node.sql(dialect=Flink)} is {dtype.value}")
    return value if dtype is not None else lit(None, DType.TIMESTAMP)


def to_date(tr: ExpressionTranslator, node: exp.Anonymous) -> Expr:
    raise tr.where.error(node, "TO_DATE: Darwin has no DATE type; TO_TIMESTAMP(s, 'yyyy-MM-dd') gives the day's "
                               "first millisecond, and DATE_FORMAT(ts, 'yyyy-MM-dd') a timestamp's day as text")


def _number(tr: ExpressionTranslator, node: exp.Expr, name: str, allowed: tuple[DType, ...]) -> Expr:
    value = tr(node)
    dtype = type_of(value.node, tr.schema).dtype
    if dtype is not None and dtype not in allowed:
        wanted = " or ".join("BIGINT" if t is DType.INT64 else "DOUBLE" for t in allowed)
        raise tr.where.error(node, f"{name} takes a {wanted}; {node.sql(dialect=Flink)} is {dtype.value}")
    return value


TIME_FUNCTIONS: dict[str, Callable[[ExpressionTranslator, exp.Anonymous], Expr]] = {
    "TO_TIMESTAMP": to_timestamp, "UNIX_TIMESTAMP": unix_timestamp, "FROM_UNIXTIME": from_unixtime,
    "TO_TIMESTAMP_LTZ": to_timestamp_ltz, "TO_DATE": to_date, "TIMESTAMPADD": timestampadd}
