"""Casts to and from strings, by Flink's rules (its cast rules and ``BinaryStringDataUtil``).

Plain Python over one value, shared by the reference interpreter, the optimizer's constant folding
and the compiled engine's tables (a string's parse is a lookup table by dictionary code; a number's
text is made when a kernel first meets it), so those engines agree by construction. The Spark
translation spells the same rules out (``darwin.spark.exprs``).

To text: an integer in decimal digits, a float as Java's ``Double.toString`` (``1.0E7``, ``NaN``,
``-0.0``), a boolean as ``TRUE``/``FALSE``, a timestamp as ``yyyy-MM-dd HH:mm:ss.SSS`` (Flink's
TIMESTAMP(3)). From text (a value that does not parse gives None: CAST fails, TRY_CAST is NULL):

- an integer: spaces (U+0020 only) trimmed, an optional sign, ASCII digits, and an optional fraction
  that is dropped (``'1.9'`` is 1, ``'.5'`` and even ``'.'`` are 0); nothing else (``'1e3'``, ``''``,
  ``'+'``), and nothing past the target's range (BIGINT, or INT/SMALLINT/TINYINT in SQL);
- a float: Java's ``Double.parseDouble`` (what Flink calls): control characters and spaces trimmed,
  decimal or hexadecimal digits with an optional exponent and an ``f``/``d`` suffix, ``NaN``,
  ``Infinity``; not Python's ``inf``, ``nan`` or ``1_000``;
- a boolean: ``t``, ``true``, ``y``, ``yes``, ``1`` and ``f``, ``false``, ``n``, ``no``, ``0``, in any
  case, untrimmed;
- a timestamp: ``yyyy-M[M]-d[d]``, optionally followed by `` H[H]:m[m]:s[s]`` and a fraction of up to 9
  digits (cut to milliseconds), untrimmed; a day past its month's end is its last day (Java's SMART
  resolver: ``2015-02-30`` is ``2015-02-28``), a day past 31 or a month past 12 does not parse.
"""

from __future__ import annotations

import re
from typing import Any

from darwin.io.java_floats import java_double
from darwin.plan.timeformat import strftime
from darwin.types import DType

INTEGER_BITS = (8, 16, 32, 64)  # TINYINT, SMALLINT, INT, BIGINT
SQL_NAMES = {DType.INT64: "BIGINT", DType.FLOAT64: "DOUBLE", DType.BOOL: "BOOLEAN", DType.TIMESTAMP: "TIMESTAMP(3)",
             DType.STRING: "STRING"}
INTEGER_NAMES = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}
TRUE_WORDS = ("t", "true", "y", "yes", "1")
FALSE_WORDS = ("f", "false", "n", "no", "0")

# Flink's toLong: a sign, digits, and a fraction it checks and drops; '' and a lone sign are refused
INTEGER_TEXT = re.compile(r"([+-]?)([0-9]*)(?:\.[0-9]*)?", re.ASCII)
# Java's Double.parseDouble (FloatingDecimal.readJavaFormatString), after its trim of chars <= ' '
_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEX = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"
FLOAT_TEXT = re.compile(rf"[+-]?(?:NaN|Infinity|(?:{_DECIMAL}|{_HEX})[fFdD]?)", re.ASCII)
# Flink's DEFAULT_TIMESTAMP_FORMATTER: yyyy-[MM][M]-[dd][d][ [HH][H]:[mm][m]:[ss][s][.fffffffff]]
TIMESTAMP_TEXT = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                            r"(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.([0-9]{0,9}))?)?", re.ASCII)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def cast_name(dtype: DType, bits: int = 64) -> str:
    """The SQL name of a cast's target, as an error message says it."""
    return INTEGER_NAMES[bits] if dtype is DType.INT64 else SQL_NAMES[dtype]


def to_text(dtype: DType, value: Any) -> str:
    """``value`` of type ``dtype`` as Flink's CAST(... AS STRING) writes it."""
    if dtype is DType.BOOL:
        return "TRUE" if value else "FALSE"
    if dtype is DType.FLOAT64:
        return java_double(float(value))
    if dtype is DType.TIMESTAMP:
        return strftime("%Y-%m-%d %H:%M:%S", value) + f".{value % 1000:03d}"
    return str(int(value))


def parse_integer(text: str, bits: int = 64) -> int | None:
    """Flink's ``BinaryStringDataUtil.toLong``/``toInt`` (then a range check for SMALLINT and TINYINT) of
    the text with spaces trimmed; None where Flink's cast throws."""
    m = INTEGER_TEXT.fullmatch(text.strip(" "))
    if m is None or m.group(0) in ("", "+", "-"):
        return None
    sign, digits = m.group(1), m.group(2)
    value = -int(digits or "0") if sign == "-" else int(digits or "0")
    half = 2 ** (bits - 1)
    return value if -half <= value < half else None


def _java_trim(text: str) -> str:
    """Java's ``String.trim``: every character up to U+0020 off both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def parse_float(text: str) -> float | None:
    """Java's ``Double.parseDouble`` of the text; None where it throws."""
    body = _java_trim(text)
    if FLOAT_TEXT.fullmatch(body) is None:
        return None
    if body[-1] in "fFdD" and not body.endswith("Infinity"):
        body = body[:-1]
    unsigned = body.lstrip("+-")
    if unsigned[:2] in ("0x", "0X"):
        value = float.fromhex(unsigned)
        return -value if body.startswith("-") else value
    return float(body)


def parse_bool(text: str) -> bool | None:
    """Flink's ``BinaryStringDataUtil.toBoolean``: the words in any case, nothing trimmed."""
    lower = text.lower()
    return True if lower in TRUE_WORDS else False if lower in FALSE_WORDS else None


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def month_days(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _MONTH_DAYS[month - 1]


def parse_timestamp(text: str) -> int | None:
    """Flink's ``DateTimeUtils.parseTimestampData`` of the text, in milliseconds since the epoch, the
    fraction cut to milliseconds; None where it throws."""
    m = TIMESTAMP_TEXT.fullmatch(text)
    if m is None:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour, minute, second = (int(m.group(i) or 0) for i in (4, 5, 6))
    if year == 0 or not 1 <= month <= 12 or not 1 <= day <= 31 or hour > 23 or minute > 59 or second > 59:
        return None
    day = min(day, month_days(year, month))
    millis = int((m.group(7) or "").ljust(3, "0")[:3])
    return (days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second) * 1000 + millis


def from_text(dtype: DType, text: str, bits: int = 64) -> Any:
    """``text`` cast to ``dtype`` as Flink parses it; None where Flink's CAST fails."""
    if dtype is DType.INT64:
        return parse_integer(text, bits)
    if dtype is DType.FLOAT64:
        return parse_float(text)
    if dtype is DType.BOOL:
        return parse_bool(text)
    return parse_timestamp(text)


def failure(text: str, dtype: DType, bits: int = 64) -> str:
    """The message of a CAST that fails: the value, the cast, and the way to get NULL instead."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return (f"CAST of the string {shown!r} to {cast_name(dtype, bits)} failed: it is not a valid "
            f"{cast_name(dtype, bits)} (TRY_CAST, or .try_cast() in the fluent API, gives NULL instead)")
