"""Casts to and from strings on Spark, as ``darwin.plan.casts`` defines them (Flink's rules).

Spark's own casts differ: a boolean's text is ``true``, a string ``' true '`` or ``'1e3'`` parses where
Flink's does not (its integer cast trims every white space and takes exponents), text that does not parse
is NULL (ANSI off) where Flink's CAST fails, and its float text is Java's ``Double.toString`` of the
driver's JVM, which before Java 19 writes some values with more digits than they need (1e23 as
``9.999999999999999E22``). So each rule is spelled out: text is checked against the grammar Flink reads
(Java regular expressions over the whole value, ``\\A...\\z``) before Spark converts it, a CAST that meets
text that does not parse fails the job through ``raise_error`` (the engine turns it into a ``CastError``),
and a float's text is the shortest of Java's ``%.Ne`` renderings that reads back as the value, laid out as
``Double.toString`` lays it out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from darwin.plan import exprs as ex
from darwin.plan.casts import FALSE_WORDS, FLOAT_TEXT, INTEGER_TEXT, TIMESTAMP_TEXT, TRUE_WORDS, cast_name
from darwin.types import DType

if TYPE_CHECKING:
    from pyspark.sql import Column

FAILED = "DARWIN_CAST_FAILED"  # marks a failing CAST's message in Spark's error: <<message>>
FAILURE = re.compile(FAILED + "<<(.*?)>>", re.DOTALL)
BEYOND = "DARWIN_TIME_BEYOND"  # marks a window's time beyond the supported ones (a SourceError): <<message>>
BEYOND_FAILURE = re.compile(BEYOND + "<<(.*?)>>", re.DOTALL)
MAX_DIGITS = 17  # a double reads back from its 17 significant digits


def _whole(pattern: re.Pattern[str]) -> str:
    """The grammar as a Java regular expression over the whole value (``$`` would match before a last
    line end)."""
    return r"\A(?:" + pattern.pattern + r")\z"


def text(x: Column, src: DType) -> Column:
    """``x`` of type ``src`` as Flink's CAST(... AS STRING) writes it (``darwin.plan.casts.to_text``)."""
    from pyspark.sql import functions as F

    if src is DType.BOOL:
        return F.when(x, F.lit("TRUE")).when(~x, F.lit("FALSE"))
    if src is DType.TIMESTAMP:
        from darwin.spark.exprs import strftime

        millis = F.lpad(F.pmod(x, F.lit(1000)).cast("string"), 3, "0")
        return F.concat(strftime("%Y-%m-%d %H:%M:%S", x), F.lit("."), millis)
    if src is DType.FLOAT64:
        return _java_double(x)
    return x.cast("string")


def _java_double(x: Column) -> Column:
    """Java's ``Double.toString`` with the shortest digits that read back (``darwin.io.java_floats``)."""
    from pyspark.sql import functions as F

    # Java's %e rounds the double's Double.toString digits, which for whole values from 2^53 to 2^63 are the
    # value's own digits cut to 17 or 18: rounded twice, a candidate of 16 or 17 digits (two of which may read
    # back as the value) could be the farther one; there the exact integer is rounded instead. Fewer digits are
    # spaced wider than the values that read back as one double, so rounding twice cannot pick a wrong one
    whole = F.when((F.abs(x) >= F.lit(2.0**53)) & (F.abs(x) < F.lit(2.0**63)), F.abs(x).cast("bigint"))
    sign = F.when(x < 0, F.lit("-")).otherwise(F.lit(""))
    candidates = [F.format_string(f"%.{k}e", x) if k < 15 else
                  F.coalesce(_rounded(whole, sign, k + 1), F.format_string(f"%.{k}e", x)) for k in range(MAX_DIGITS)]
    shortest = F.coalesce(*[F.when(c.cast("double") == x, c) for c in candidates])
    mantissa = F.regexp_extract(shortest, r"^-?([0-9.]+)e", 1)
    digits = F.regexp_replace(F.regexp_replace(mantissa, r"\.", ""), "0+$", "")
    digits = F.when(digits == "", F.lit("0")).otherwise(digits)
    power = F.regexp_extract(shortest, r"e([+-][0-9]+)$", 1).cast("int")
    rest = F.call_function("substring", digits, F.lit(2))
    scientific = F.concat(F.substring(digits, 1, 1), F.lit("."), F.when(rest == "", F.lit("0")).otherwise(rest),
                          F.lit("E"), power.cast("string"))
    whole = F.rpad(F.call_function("substring", digits, F.lit(1), power + 1), power + 1, "0")
    fraction = F.call_function("substring", digits, power + 2)
    plain = F.when(power >= 0, F.concat(whole, F.lit("."), F.when(fraction == "", F.lit("0")).otherwise(fraction))) \
        .otherwise(F.concat(F.lit("0."), F.call_function("repeat", F.lit("0"), -power - 1), digits))
    body = F.when((power >= -3) & (power < 7), plain).otherwise(scientific)
    signed = F.concat(F.when(F.substring(shortest, 1, 1) == "-", F.lit("-")).otherwise(F.lit("")), body)
    return F.when(F.isnan(x), F.lit("NaN")).when(x == float("inf"), F.lit("Infinity")) \
        .when(x == float("-inf"), F.lit("-Infinity")).otherwise(signed)


def _rounded(whole: Column, sign: Column, digits: int) -> Column:
    """A whole number (a bigint of 16 to 19 digits) rounded to ``digits`` significant digits, half up, written
    as Java's ``%e`` writes it (``1.2345e+17``); NULL for NULL."""
    from pyspark.sql import functions as F

    text = whole.cast("string")
    cut = F.greatest(F.length(text) - digits, F.lit(0))
    unit = F.pow(F.lit(10), cut).cast("bigint")  # at most 10^18, exact as a double
    kept = F.call_function("div", whole, unit)
    rounded = (kept + F.when(2 * (whole % unit) >= unit, F.lit(1)).otherwise(F.lit(0))).cast("string")
    power = F.length(text) - 1 + F.length(rounded) - F.length(kept.cast("string"))  # a carry adds a digit
    return F.concat(sign, F.substring(rounded, 1, 1), F.lit("."), F.call_function("substring", rounded, F.lit(2)),
                    F.lit("e+"), power.cast("string"))


def parsed(x: Column, cast: ex.Cast) -> Column:
    """A string cast as Flink parses it: NULL where the text does not parse (TRY_CAST), or the job fails."""
    from pyspark.sql import functions as F

    dtype = cast.dtype
    if dtype is DType.INT64:
        value = _integer(x, cast.bits)
    elif dtype is DType.FLOAT64:
        trimmed = F.regexp_replace(x, r"\A[\x00-\x20]+|[\x00-\x20]+\z", "")
        value = F.when(trimmed.rlike(_whole(FLOAT_TEXT)), trimmed.cast("double"))
    elif dtype is DType.BOOL:
        lower = F.lower(x)
        value = F.when(lower.isin(*TRUE_WORDS), F.lit(True)).when(lower.isin(*FALSE_WORDS), F.lit(False))
    else:
        value = _timestamp(x)
    if cast.safe:
        return value
    name = cast_name(dtype, cast.bits)
    message = F.concat(F.lit(f"{FAILED}<<CAST of the string '"), F.substring(x, 1, 80),
                       F.lit(f"' to {name} failed: it is not a valid {name} (TRY_CAST, or .try_cast() in the fluent "
                             "API, gives NULL instead)>>"))
    return F.when(x.isNotNull() & value.isNull(), F.raise_error(message)).otherwise(value)


def _integer(x: Column, bits: int) -> Column:
    """Flink's integer text: spaces trimmed, a sign, ASCII digits, a fraction dropped, within ``bits``."""
    from pyspark.sql import functions as F

    trimmed = F.btrim(x, F.lit(" "))
    valid = trimmed.rlike(_whole(INTEGER_TEXT)) & ~trimmed.isin("", "+", "-")
    digits = F.regexp_replace(F.regexp_extract(trimmed, r"^[+-]?([0-9]*)", 1), "^0+", "")
    signed = F.concat(F.when(F.substring(trimmed, 1, 1) == "-", F.lit("-")).otherwise(F.lit("")),
                      F.when(digits == "", F.lit("0")).otherwise(digits))
    number = F.when(F.length(digits) <= 19, signed.cast("decimal(20,0)"))
    half = 2 ** (bits - 1)
    fits = (number >= F.lit(-half).cast("decimal(20,0)")) & (number <= F.lit(half - 1).cast("decimal(20,0)"))
    return F.when(valid & fits, number.cast("bigint"))


def _timestamp(x: Column) -> Column:
    """Flink's timestamp text, in milliseconds since the epoch (``darwin.plan.casts.parse_timestamp``)."""
    from pyspark.sql import functions as F

    grammar = _whole(TIMESTAMP_TEXT)
    parts = [F.regexp_extract(x, grammar, i) for i in range(1, 8)]
    year, month, day, hour, minute, second = (F.coalesce(p.cast("int"), F.lit(0)) for p in parts[:6])
    millis = F.substring(F.rpad(parts[6], 3, "0"), 1, 3).cast("int")
    valid = x.rlike(grammar) & (year > 0) & month.between(1, 12) & day.between(1, 31) & (hour <= 23) \
        & (minute <= 59) & (second <= 59)
    first = F.make_date(year, month, F.lit(1))
    date = F.make_date(year, month, F.least(day, F.dayofmonth(F.last_day(first))))
    seconds = F.unix_date(date).cast("bigint") * 86_400 + hour * 3600 + minute * 60 + second
    return F.when(valid, seconds * 1000 + millis)
