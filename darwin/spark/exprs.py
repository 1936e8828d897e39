"""Darwin expressions as PySpark columns, with Darwin's semantics (``darwin.plan.evaluate``).

Timestamps travel through Spark as int64 milliseconds (as in Darwin), so comparisons, window
arithmetic and ``timestamp - timestamp`` need no conversion; the engine turns them back into
timestamps at the end. Where Spark's own operators differ from Darwin's, the translation spells
Darwin's rule out:

- ``//`` and ``%`` follow Python (floor division, the sign of the divisor), not Java;
- division and modulo by zero give NULL (also for floats, where Spark would give NULL too);
- comparisons with NaN are false (``!=`` true), where Spark orders NaN above every number (with a
  NULL they stay NULL);
- casts of NaN, infinities or out-of-range floats to integers give NULL, not a saturated value;
- ``isin`` never matches NaN; int64 arithmetic wraps around (Spark with ANSI mode off does too);
- ``regexp_extract`` gives NULL where nothing matches (Spark gives ""), and for a group the
  pattern does not have; patterns go to Java as written (Darwin's engines read them as Java does,
  ``darwin.plan.javaregex``);
- float ``%`` gives a zero remainder the divisor's sign, as Python does (Java: the dividend's);
- ``strftime``'s ``%Y`` and ``%y`` of years before 0 or after 9999 are Darwin's, not Java's, and two
  fields side by side (``%m%m``) stay two fields.

Literals are Spark literals (values, never spliced into SQL text).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial, reduce
from typing import TYPE_CHECKING

from darwin.errors import UnsupportedError
from darwin.plan import exprs as ex
from darwin.plan import numeric
from darwin.plan.javaregex import translate
from darwin.plan.strings import FUNCTIONS
from darwin.plan.timeformat import parse
from darwin.types import DType, Schema

if TYPE_CHECKING:
    from pyspark.sql import Column

DAY_MS = 86_400_000
JAVA_INT_MAX = 2**31 - 1
YEAR_0_MS, YEAR_10000_MS = -62_167_219_200_000, 253_402_300_800_000  # 0000-01-01 and 10000-01-01, UTC
SPARK_TYPES = {DType.INT64: "bigint", DType.TIMESTAMP: "bigint", DType.FLOAT64: "double", DType.BOOL: "boolean",
               DType.STRING: "string"}
# True while translating an outer join's condition, where Spark refuses a Python UDF (``strict_math``)
_STRICT_MATH: ContextVar[bool] = ContextVar("strict_math", default=False)
_PATTERNS = {"Y": "yyyy", "y": "yy", "m": "MM", "d": "dd", "j": "DDD", "H": "HH", "M": "mm", "S": "ss"}


def quoted(name: str) -> str:
    """A column name as Spark reads it literally, whatever characters it holds."""
    return "`" + name.replace("`", "``") + "`"


def column(name: str) -> Column:
    """A column by name, whatever characters the name holds."""
    from pyspark.sql import functions as F

    return F.col(quoted(name))


def spark_type(dtype: DType | None) -> str:
    return SPARK_TYPES[dtype or DType.INT64]


def to_spark(e: ex.ExprNode, schema: Schema) -> Column:
    """``e`` over a DataFrame whose columns are ``schema``'s (timestamps as int64 ms)."""
    from pyspark.sql import functions as F

    t = ex.type_of(e, schema)
    if isinstance(e, ex.Column):
        return column(e.name)
    if isinstance(e, ex.Literal):
        return F.lit(e.value).cast(spark_type(e.dtype))
    if isinstance(e, ex.Binary):
        return _binary(e, schema, t.dtype)
    if isinstance(e, ex.Unary):
        x = to_spark(e.operand, schema)
        return {"neg": lambda: -x, "abs": lambda: F.abs(x), "not": lambda: ~x, "is_null": lambda: x.isNull(),
                "is_not_null": lambda: x.isNotNull()}[e.op]()
    if isinstance(e, ex.IsIn):
        return _isin(e, schema)
    if isinstance(e, ex.Cast):
        return _cast(to_spark(e.operand, schema), ex.type_of(e.operand, schema).dtype, e)
    if isinstance(e, ex.Case):
        target = spark_type(t.dtype)
        out = None
        for cond, value in e.whens:
            v = to_spark(value, schema).cast(target)
            out = F.when(to_spark(cond, schema), v) if out is None else out.when(to_spark(cond, schema), v)
        assert out is not None
        return out.otherwise(to_spark(e.otherwise, schema).cast(target))
    if isinstance(e, ex.DatePart):
        return date_part(e.part, to_spark(e.operand, schema))
    if isinstance(e, ex.TimeFloor):
        return time_floor(e.unit, to_spark(e.operand, schema))
    if isinstance(e, ex.MathCall):
        return _math(e, schema)
    if isinstance(e, ex.Strftime):
        return strftime(e.format, to_spark(e.operand, schema))
    if isinstance(e, ex.StringCall):
        return _string(e, to_spark(e.operand, schema))
    if isinstance(e, ex.Concat):  # Spark's concat is NULL where a part is; its concat_ws skips NULLs, as Flink's
        parts = [to_spark(p, schema) for p in e.parts]
        return F.concat(*parts) if e.separator is None else F.concat_ws(e.separator, *parts)
    raise UnsupportedError(f"the Spark engine has no translation of expression {e}")


def _binary(e: ex.Binary, schema: Schema, result: DType | None) -> Column:
    from pyspark.sql import functions as F

    a, b = to_spark(e.left, schema), to_spark(e.right, schema)
    lt, rt = ex.type_of(e.left, schema).dtype, ex.type_of(e.right, schema).dtype
    floats = DType.FLOAT64 in (lt, rt)
    op = e.op
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op in ex.COMPARISON:
        cmp = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]
        if floats:  # Python: NaN compares false with everything, != true; Spark orders NaN above all numbers.
            # Not beside a NULL, which leaves the comparison NULL (isnan(NULL) is false, so NULL = NaN was false)
            nan = F.isnan(a.cast("double")) | F.isnan(b.cast("double"))
            return F.when(nan & cmp.isNotNull(), F.lit(op == "ne")).otherwise(cmp)
        return cmp
    if floats or op == "truediv":
        a, b = a.cast("double"), b.cast("double")
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    zero = b == 0
    if op == "truediv":
        return F.when(zero, F.lit(None)).otherwise(a / b)
    if op == "floordiv":
        if floats:
            # Python's (CPython's float_divmod): floor(a / b) is wrong where the quotient rounds to a
            # whole number or underflows (-5e-324 // 3 is -1.0, -5.0 // inf too). The remainder
            # (Java's %, fmod), what is left divided exactly, one less where the remainder's sign is
            # not the divisor's, then floored (rounding to the nearer whole number where the division
            # left it just below); a zero quotient takes the sign of a / b
            mod = a % b
            div = (a - mod) / b
            div = F.when((mod != 0) & ((b < 0) != (mod < 0)), div - 1).otherwise(div)
            floored = F.floor(div).cast("double")  # a bigint: only below 2**52 (past it every double is whole)
            whole = F.when(F.abs(div) >= F.lit(2.0**52), div).when(div - floored > 0.5, floored + 1).otherwise(floored)
            return F.when(zero, F.lit(None)).otherwise(F.when(div == 0, (a / b) * F.lit(0.0)).otherwise(whole))
        q, r = F.call_function("div", a, b), a % b  # ``div`` truncates toward zero; Python floors
        return F.when(zero, F.lit(None)).otherwise(
            F.when((r != 0) & ((r < 0) != (b < 0)), q - 1).otherwise(q))
    # mod: the sign of the divisor, as in Python
    r = a % b
    if floats:
        # Java's remainder has the dividend's sign, a zero one too (-3.0 % 3.0 is -0.0); Python's zero
        # takes the divisor's (2.0 % -2.0 is -0.0). abs(r) * -1.0 and not a choice of the literals
        # -0.0 and 0.0: Spark's optimizer holds those equal and folds such a CASE to 0.0
        signed_zero = F.abs(r) * F.when(b < 0, F.lit(-1.0)).otherwise(F.lit(1.0))
        return F.when(zero, F.lit(None)).otherwise(
            F.when(r == 0, signed_zero).when((r < 0) != (b < 0), r + b).otherwise(r))
    return F.when(zero, F.lit(None)).otherwise(F.when((r != 0) & ((r < 0) != (b < 0)), r + b).otherwise(r))


def _isin(e: ex.IsIn, schema: Schema) -> Column:
    from pyspark.sql import functions as F

    x = to_spark(e.operand, schema)
    values = [v.value for v in e.values if v.value is not None and v.value == v.value]
    has_null = any(v.value is None for v in e.values)
    otherwise = F.lit(None).cast("boolean") if has_null else F.lit(False)
    if not values:
        return F.when(x.isNull(), F.lit(None).cast("boolean")).otherwise(otherwise)
    return F.when(x.isNull(), F.lit(None).cast("boolean")).when(x.isin(values), F.lit(True)).otherwise(otherwise)


def _cast(x: Column, src: DType | None, cast: ex.Cast) -> Column:
    from pyspark.sql import functions as F

    from darwin.spark.casts import parsed, text

    dst = cast.dtype
    if src is DType.STRING and dst is not DType.STRING:
        return parsed(x, cast)
    if dst is DType.STRING and src not in (DType.STRING, None):
        return text(x, src)
    if src is None or src == dst or (src, dst) in ((DType.INT64, DType.TIMESTAMP), (DType.TIMESTAMP, DType.INT64)):
        return x.cast(spark_type(dst))
    if dst in (DType.INT64, DType.TIMESTAMP):
        if src is DType.FLOAT64:  # NaN, infinities and values past int64 give NULL (Spark would saturate)
            bad = F.isnan(x) | (x >= F.lit(2.0**63)) | (x < F.lit(-(2.0**63)))
            return F.when(bad, F.lit(None).cast("bigint")).otherwise(x.cast("bigint"))
        return x.cast("bigint")
    if dst is DType.BOOL:
        return x != 0
    if dst is DType.FLOAT64:
        return x.cast("double")
    raise UnsupportedError(f"the Spark engine has no cast from {src} to {dst.value}")


def date_part(part: str, ms: Column) -> Column:
    """A part of a timestamp in int64 ms, in UTC, as ``darwin.plan.evaluate.date_part`` defines it."""
    from pyspark.sql import functions as F

    of_day = F.pmod(ms, F.lit(DAY_MS))
    if part == "hour":
        return _div(of_day, 3_600_000)
    if part == "minute":
        return F.pmod(_div(of_day, 60_000), F.lit(60))
    if part == "second":
        return F.pmod(_div(of_day, 1000), F.lit(60))
    if part == "millisecond":
        return F.pmod(of_day, F.lit(1000))
    if part == "day_of_week":
        days = _div(ms - of_day, DAY_MS)
        return F.pmod(days + 3, F.lit(7)) + 1
    ts = F.timestamp_millis(ms)
    parts = {"year": F.year, "month": F.month, "day": F.dayofmonth, "day_of_year": F.dayofyear,
             "week": F.weekofyear}  # Spark's week of the year is ISO 8601's, as Flink's
    return parts[part](ts).cast("bigint")


def _math(e: ex.MathCall, schema: Schema) -> Column:
    """A numeric function as ``darwin.plan.numeric`` defines it (Java's Math). Spark's round is Flink's (HALF_UP of
    the number as Java writes it) and its sqrt is Java's; its floor and ceil give a BIGINT, so those are spelled
    out, and the rest are the other engines' own (``_libm``)."""
    from pyspark.sql import functions as F

    x = to_spark(e.args[0], schema)
    integer = ex.type_of(e.args[0], schema).dtype is DType.INT64
    if e.func in ("floor", "ceil"):
        if integer:
            return x
        whole = (F.abs(x) >= 2.0**52) | F.isnan(x)  # nothing below the point (and the infinities)
        rounded = getattr(F, e.func)(x).cast("double")
        # Java's zero keeps the argument's sign (FLOOR(-0.0) and CEIL(-0.5) are -0.0); Spark's BIGINT 0 has none
        return F.when(whole, x).when(rounded == 0, x * F.lit(0.0)).otherwise(rounded)
    if e.func == "sign":
        return F.signum(x).cast("bigint") if integer else F.signum(x)
    if e.func == "round":
        places = e.args[1]
        assert isinstance(places, ex.Literal)
        if places.value < 0 and not integer and not _STRICT_MATH.get():
            return _libm("round", [x, F.lit(places.value)])  # Java 17 writes a whole double as its long's digits
        return F.round(x, places.value)
    if e.func == "truncate":  # Spark has no TRUNCATE of numbers
        places = e.args[1]
        assert isinstance(places, ex.Literal)
        if not integer:
            if _STRICT_MATH.get():  # no Spark function cuts the shortest decimal: Java 17's toString is not it
                raise UnsupportedError("the Spark engine cannot TRUNCATE a DOUBLE in an outer join's condition, "
                                       "where Spark runs no Python UDF; compute it in a projection before the join")
            return _libm("truncate", [x, F.lit(places.value)])
        if places.value >= 0:
            return x
        if places.value <= -19:  # 10^19 is past BIGINT
            return x * F.lit(0)
        return x - x % F.lit(10 ** -places.value)  # Spark's % keeps the dividend's sign, as Java's
    if e.func == "sqrt":  # correctly rounded in Java as in C
        return F.sqrt(x)
    args = [to_spark(a, schema) for a in e.args]
    if e.func in ("add_months", "months_between"):
        return _calendar(e.func, *args)
    return _strict_math(e.func, args) if _STRICT_MATH.get() else _libm(e.func, args)


def _calendar(func: str, first: Column, second: Column) -> Column:
    """Calcite's addMonths and subtractMonths over int64 ms (``darwin.plan.numeric``), by Spark's dates: its
    add_months cuts the day to the month's last, as Calcite's does."""
    from pyspark.sql import functions as F

    def day_of(ms: Column) -> tuple[Column, Column, Column]:  # the day number, its date, the ms into it
        of_day = F.pmod(ms, F.lit(DAY_MS))
        days = _div(ms - of_day, DAY_MS)
        return days, F.date_from_unix_date(days.cast("int")), of_day

    if func == "add_months":
        _, date, of_day = day_of(first)
        return F.unix_date(F.add_months(date, second.cast("int"))).cast("bigint") * DAY_MS + of_day
    day_s, date_s, of_s = day_of(first)
    day_e, date_e, of_e = day_of(second)
    month_s, month_e = F.year(date_s) * 12 + F.month(date_s), F.year(date_e) * 12 + F.month(date_e)
    d_s, d_e = F.dayofmonth(date_s), F.dayofmonth(date_e)
    last_s, last_e = F.last_day(date_s) == date_s, F.last_day(date_e) == date_e
    forward = month_e - month_s - F.when((d_s > d_e) & ~last_e, 1).otherwise(0)
    backward = -(month_s - month_e - F.when((d_e > d_s) & ~last_s, 1).otherwise(0))
    months = F.when(day_e >= day_s, forward).otherwise(backward)
    lands = F.add_months(date_s, months.cast("int")) == date_e
    return (months - F.when(lands & (of_e < of_s), 1).otherwise(0)).cast("bigint")


def _libm(func: str, args: list[Column]) -> Column:
    """POWER, EXP and the logarithms as the other engines compute them (C's libm, ``darwin.plan.numeric``), in a
    Python UDF: Spark's are Java's StrictMath (fdlibm), which differs from C's in the last bit of about one EXP
    in ten and one LN in a hundred. NULL where an argument is, as every function of a NULL."""
    from pyspark.sql import functions as F

    apply = F.udf(partial(_evaluate, func), "double", useArrow=True)
    return F.when(reduce(lambda a, b: a & b, [a.isNotNull() for a in args]), apply(*args))


def _evaluate(func: str, *args: float) -> float | None:
    """The UDF's body, a module's function so that Spark's workers import it rather than unpickle its code."""
    return None if None in args else numeric.evaluate(func, args)


@contextmanager
def strict_math() -> Iterator[None]:
    """Inside, POWER, EXP and the logarithms are Spark's own (StrictMath's last bit), for an outer join's
    condition, where Spark cannot run the UDF of ``_libm``."""
    token = _STRICT_MATH.set(True)
    try:
        yield
    finally:
        _STRICT_MATH.reset(token)


def _strict_math(func: str, args: list[Column]) -> Column:
    """POWER, EXP and the logarithms by Spark's functions, Java's Math but for the last bit: its logarithms give
    NULL at and below 0, so Java's are spelled out."""
    from pyspark.sql import functions as F

    if func == "power":
        return F.pow(*args)
    if func == "exp":
        return F.exp(args[0])
    if func == "log":
        base, value = _java_log(args[0], F.log), _java_log(args[1], F.log)
        # Spark's division by zero gives NULL, Java's an infinity or NaN (NaN equals NaN in Spark, and is above 0)
        infinite = F.when(F.isnan(value), F.lit(math.nan)).when(value > 0, F.lit(math.inf)) \
            .when(value < 0, F.lit(-math.inf)).when(value == 0, F.lit(math.nan))
        return F.when(base != 0, value / base).when(base == 0, infinite)
    return _java_log(args[0], F.log if func == "ln" else F.log10)


def _java_log(x: Column, log: Callable[[Column], Column]) -> Column:
    """Java's Math.log or log10: minus infinity at 0, NaN below (Spark's give NULL there); NaN, which Spark orders
    above every number, passes ``x > 0``."""
    from pyspark.sql import functions as F

    return F.when(x > 0, log(x)).when(x == 0, F.lit(-math.inf)).when(x < 0, F.lit(math.nan))


def time_floor(unit: str, ms: Column) -> Column:
    """``ms`` floored to its ``unit`` in UTC, as ``darwin.plan.evaluate.time_floor``: Spark's date_trunc for the
    month, quarter and year; the week spelled out, as Spark's starts on Monday and Flink's FLOOR on Sunday."""
    from pyspark.sql import functions as F

    if unit in ex.FIXED_UNITS_MS:
        return ms - F.pmod(ms, F.lit(ex.FIXED_UNITS_MS[unit]))
    day = ms - F.pmod(ms, F.lit(DAY_MS))
    if unit == "week":  # 1970-01-01 was a Thursday, 4 days after a Sunday
        return day - F.pmod(_div(day, DAY_MS) + 4, F.lit(7)) * DAY_MS
    return F.unix_millis(F.date_trunc(unit, F.timestamp_millis(ms)))


def _div(a: Column, n: int) -> Column:
    from pyspark.sql import functions as F

    return F.call_function("div", a, F.lit(n))


def strftime(fmt: str, ms: Column) -> Column:
    """``dt.strftime(fmt)`` of a timestamp in int64 ms, as ``darwin.plan.timeformat.strftime`` formats it:
    one Spark pattern where that gives Darwin's text, else field by field. Spark's year fields differ
    outside the years 0 to 9999 (``yyyy`` of 10000 is ``+10000``, ``yy`` of -1 is ``01`` where Python's
    ``-1 % 100`` is 99), so there the year is computed; and two fields of one pattern letter with no text
    between them would run together (``%m%m`` is ``MMMM``, the month's name; ``%y%y`` is ``yyyy``), so
    such a format is always formatted field by field (``%Y%m%d``, ``yyyyMMdd``, is one pattern)."""
    from pyspark.sql import functions as F

    ts = F.timestamp_millis(ms)
    whole = F.date_format(ts, _pattern(fmt))
    tokens = parse(fmt)
    adjacent = any(a[0] == b[0] == "field" and _PATTERNS[a[1]][-1] == _PATTERNS[b[1]][0]
                   for a, b in zip(tokens, tokens[1:]))
    years = any(kind == "field" and value in "Yy" for kind, value in tokens)
    if not adjacent and not years:
        return whole
    year = F.year(ts)
    fields = {"Y": F.when(year >= 0, F.format_string("%04d", year)).otherwise(
                  F.concat(F.lit("-"), F.format_string("%04d", -year))),
              "y": F.format_string("%02d", F.pmod(year, F.lit(100)))}
    pieces = F.when(ms.isNotNull(), F.concat(*[
        F.lit(value) if kind == "text" else fields[value] if value in fields else F.date_format(ts, _PATTERNS[value])
        for kind, value in tokens]))
    if adjacent:
        return pieces
    return F.when(ms.isNull() | ((ms >= YEAR_0_MS) & (ms < YEAR_10000_MS)), whole).otherwise(pieces)


def _pattern(fmt: str) -> str:
    """A ``dt.strftime`` format as a Spark datetime pattern, literal text quoted."""
    out = []
    for kind, value in parse(fmt):
        out.append(_PATTERNS[value] if kind == "field" else "'" + value.replace("'", "''") + "'")
    return "".join(out)


def _string(e: ex.StringCall, s: Column) -> Column:
    from pyspark.sql import functions as F

    name, args = e.func, e.args
    if name not in FUNCTIONS:
        raise UnsupportedError(f"the Spark engine has no translation of str.{name}()")
    if name == "lower":
        return F.lower(s)
    if name == "upper":
        return F.upper(s)
    if name == "length":
        return F.length(s).cast("bigint")
    if name == "count_char":
        return (F.length(s) - F.length(F.replace(s, F.lit(args[0]), F.lit("")))).cast("bigint")
    if name == "contains":
        return F.contains(s, F.lit(args[0]))
    if name == "starts_with":
        return F.startswith(s, F.lit(args[0]))
    if name == "regexp_extract":
        pattern, group = args
        if not 0 <= group <= translate(pattern).groups:  # NULL, as on Darwin's engines (Spark would fail)
            return F.when(s.isNull(), F.lit(None)).otherwise(F.lit(None)).cast("string")
        return F.when(F.regexp_like(s, F.lit(pattern)), F.regexp_extract(s, pattern, group)).otherwise(
            F.lit(None).cast("string"))
    if name == "regexp_replace":  # the replacement literal, as Flink's quoteReplacement makes it
        pattern, replacement = args
        quoted = replacement.replace("\\", "\\\\").replace("$", "\\$")
        return F.regexp_replace(s, F.lit(pattern), F.lit(quoted))
    if name == "regexp":  # the empty pattern matches nothing, as in Flink
        return F.regexp_like(s, F.lit(args[0])) if args[0] else F.when(s.isNotNull(), F.lit(False))
    if name == "split_index":
        sep, index = args
        if not 0 <= index <= JAVA_INT_MAX:  # no piece has it; Spark's get() would wrap a larger index to an int
            return F.lit(None).cast("string")
        parts = F.split(s, _literal_regex(sep), -1)
        return F.when(s != "", F.get(parts, index))  # '' has no pieces, as in Flink (Spark's split gives [''])
    if name in ("to_timestamp", "unix_timestamp"):  # Flink's, with a Java pattern
        from darwin.spark import timeparse

        return timeparse.to_timestamp(s, args[0]) if name == "to_timestamp" else timeparse.unix_timestamp(s, args[0])
    spelled = _flink_string_functions()
    if name in spelled:
        return spelled[name](s, *args)
    if name == "map":
        pairs = [F.lit(x) for pair in args[0] for x in pair]
        if not pairs:
            return F.lit(None).cast("string")
        return F.element_at(F.create_map(*pairs), s)
    raise UnsupportedError(f"the Spark engine has no translation of str.{name}()")


def _substring(s: Column, start: int, length: int | None) -> Column:
    """Flink's SUBSTRING: Spark's gives '' for a negative length (Flink: NULL) and, for a start before the
    first character, the characters from the first that the length reaches (Flink: '')."""
    from pyspark.sql import functions as F

    if length is not None and length < 0:
        return F.lit(None).cast("string")
    count = JAVA_INT_MAX if length is None else min(length, JAVA_INT_MAX)
    if start > JAVA_INT_MAX:  # past the end of any string
        return F.when(s.isNotNull(), F.lit(""))
    if start >= -JAVA_INT_MAX and start >= 0:
        return F.substring(s, start, count)
    return F.when(F.length(s) + F.lit(start) < 0, F.lit("")).otherwise(
        F.substring(s, max(start, -JAVA_INT_MAX), count))


def _pad(s: Column, length: int, pad: str, left: bool) -> Column:
    """Flink's LPAD/RPAD: NULL for a negative length or an empty pad (Spark: '' and the value cut)."""
    from pyspark.sql import functions as F

    if length < 0 or not pad:
        return F.lit(None).cast("string")
    return (F.lpad if left else F.rpad)(s, length, pad)


def _replace(s: Column, old: str, new: str) -> Column:
    """Java's String.replace: an empty ``old`` puts ``new`` before every character and at the end (Spark's
    replace leaves the value as it is), which Java's regular expressions do for the empty pattern."""
    from pyspark.sql import functions as F

    if old:
        return F.replace(s, F.lit(old), F.lit(new))
    return F.regexp_replace(s, F.lit("(?s)"), F.lit(new.replace("\\", "\\\\").replace("$", "\\$")))


def _initcap(s: Column) -> Column:
    """Flink's INITCAP (Calcite's): ASCII letters lower case, then upper case where no ASCII letter or digit is
    before them (Spark's initcap starts words only after a space, and cases every letter)."""
    from pyspark.sql import functions as F

    upper, lower = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
    out = F.translate(s, upper, lower)
    for small, capital in zip(lower, upper):
        out = F.regexp_replace(out, F.lit(f"(?<![A-Za-z0-9]){small}"), F.lit(capital))
    return out


def _like(s: Column, pattern: str, escape: str) -> Column:
    """SQL's LIKE as a Java regular expression over the whole value, (?s) so _ and % take line ends too."""
    from pyspark.sql import functions as F

    from darwin.plan.strings import like_tokens

    return F.regexp_like(s, F.lit(_like_regex(like_tokens(pattern, escape))))


def _ilike(s: Column, pattern: str, escape: str) -> Column:
    """ILIKE as Spark's own: LIKE of the value and the pattern in lower case (the pattern's text lowered after
    its escapes are read, as on Darwin's engines)."""
    from pyspark.sql import functions as F

    from darwin.plan.strings import ilike_tokens

    return F.regexp_like(F.lower(s), F.lit(_like_regex(ilike_tokens(pattern, escape))))


def _like_regex(tokens: list[tuple[str, str]]) -> str:
    body = "".join(".*" if kind == "any" else "." if kind == "one" else _literal_regex(c) for kind, c in tokens)
    return "(?s)\\A" + body + "\\z"


def _similar_to(s: Column, pattern: str, escape: str) -> Column:
    """Flink's SIMILAR TO (Spark has none): the regular expression ``similar_regex`` makes, which Java reads as
    Python does, over the whole value."""
    from pyspark.sql import functions as F

    from darwin.plan.similar import similar_regex

    return F.regexp_like(s, F.lit("\\A(?:" + similar_regex(pattern, escape) + ")\\z"))


def _locate(s: Column, sub: str, start: int) -> Column:
    """Flink's LOCATE: a start below 1 searches from the first character (Spark's gives 0)."""
    from pyspark.sql import functions as F

    return F.locate(sub, s, min(max(start, 1), JAVA_INT_MAX)).cast("bigint")


def _flink_string_functions() -> dict[str, Callable[..., Column]]:
    """The string functions whose Spark translation is written out here, by registry name."""
    from pyspark.sql import functions as F

    return {
        "ends_with": lambda s, suffix: F.endswith(s, F.lit(suffix)),
        "substring": _substring,
        "repeat": lambda s, n: F.repeat(s, max(n, 0)),  # '' for a count below 1, as Flink's
        "reverse": F.reverse,
        "trim": lambda s, chars: F.btrim(s, F.lit(chars)) if chars else s,
        "ltrim": lambda s, chars: F.ltrim(s, F.lit(chars)) if chars else s,
        "rtrim": lambda s, chars: F.rtrim(s, F.lit(chars)) if chars else s,
        "replace": _replace,
        "lpad": lambda s, n, pad: _pad(s, n, pad, True),
        "rpad": lambda s, n, pad: _pad(s, n, pad, False),
        "locate": _locate,
        "initcap": _initcap,
        "like": _like,
        "ilike": _ilike,
        "similar_to": _similar_to,
    }



def _literal_regex(text: str) -> str:
    """A Java regular expression matching ``text`` literally."""
    return "".join("\\" + c if not c.isalnum() else c for c in text) if text else "(?!)"
