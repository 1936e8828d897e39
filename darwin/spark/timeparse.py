"""Flink's TO_TIMESTAMP(s, pattern) and UNIX_TIMESTAMP(s, pattern) on Spark, as ``darwin.plan.javatime``
defines them.

Spark's ``to_timestamp`` and ``unix_timestamp`` read other patterns (its own DateTimeFormatter rules, no
fallback to ``Timestamp.valueOf``, no lenient roll-over) and give NULL where Flink's UNIX_TIMESTAMP gives
Long.MIN_VALUE, so neither is used: the pattern's regular expression (the same text the other engines
match) picks the fields out, and the arithmetic of ``javatime`` is spelled out over them. Timestamps are
milliseconds since the epoch in a bigint, as everywhere in the Spark translation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from darwin.plan import javatime
from darwin.plan.javatime import TimePattern

if TYPE_CHECKING:
    from pyspark.sql import Column


def _fields(x: Column, p: TimePattern, regex: str) -> dict[str, Column]:
    """Each field's number (its default where the pattern lacks it)."""
    from pyspark.sql import functions as F

    values = {letter: F.lit(value).cast("bigint") for letter, value in javatime.DEFAULTS.items()}
    for group, letter in enumerate(p.fields, start=1):
        values[letter] = F.regexp_extract(x, regex, group).cast("bigint")
    return values


def days_from_civil(year: Column, month: Column, day: Column) -> Column:
    """Days from 1970-01-01 to a date of the proleptic Gregorian calendar, any year (``darwin.plan.casts``)."""
    from pyspark.sql import functions as F

    y = year - F.when(month <= 2, F.lit(1)).otherwise(F.lit(0))
    era = F.floor(y / F.lit(400)).cast("bigint")
    yoe = y - era * 400
    doy = F.floor((F.lit(153) * (month + F.when(month > 2, F.lit(-3)).otherwise(F.lit(9))) + 2) / 5) + day - 1
    doe = yoe * 365 + F.floor(yoe / 4) - F.floor(yoe / 100) + doy
    return (era * 146_097 + doe - 719_468).cast("bigint")


def _millis(days: Column, hour: Column, minute: Column, second: Column, millis: Column) -> Column:
    return days * javatime.DAY_MS + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis


def to_timestamp(x: Column, pattern: str) -> Column:
    """``javatime.to_timestamp``: the pattern over the whole text, resolved as DateTimeFormatter's SMART
    resolver does, else ``Timestamp.valueOf``/``Date.valueOf`` of the trimmed text, else NULL."""
    from pyspark.sql import functions as F

    p = javatime.compile_pattern(pattern, False, "TO_TIMESTAMP")
    regex = r"\A(?:" + p.regex + r")\z"
    v = _fields(x, p, regex)
    year, month, day, hour = v["y"] + p.century, v["M"], v["d"], v["H"]
    fraction = F.regexp_extract(x, regex, p.fields.index("S") + 1) if "S" in p.fields else F.lit("")
    millis = F.substring(F.rpad(fraction, 3, "0"), 1, 3).cast("bigint")
    month_end = F.dayofmonth(F.last_day(F.make_date(year.cast("int"), month.cast("int"), F.lit(1))))
    midnight_after = (hour == 24) & (v["m"] == 0) & (v["s"] == 0) & (v["S"] == 0)
    valid = x.rlike(regex) & (year >= 1) & month.between(1, 12) & day.between(1, 31) & (v["m"] <= 59) \
        & (v["s"] <= 59) & ((hour <= 23) | midnight_after)
    whole_date = p.has("y", "M", "d")
    if whole_date:
        day = F.least(day, month_end)
    else:
        valid = valid & (day <= month_end)
    days = days_from_civil(year, month, day)
    if whole_date:
        days = days + F.when(midnight_after, F.lit(1)).otherwise(F.lit(0))
    hour = F.when(midnight_after, F.lit(0)).otherwise(hour)
    return F.when(valid, _millis(days, hour, v["m"], v["s"], millis)).otherwise(_fallback(x))


def _fallback(x: Column) -> Column:
    """``javatime.fallback``: Timestamp.valueOf (with a space) or Date.valueOf of the trimmed text."""
    from pyspark.sql import functions as F

    trimmed = F.regexp_replace(x, r"\A[\x00-\x20]+|[\x00-\x20]+\z", "")
    stamp, date = r"\A(?:" + javatime.FALLBACK_TIMESTAMP + r")\z", r"\A(?:" + javatime.FALLBACK_DATE + r")\z"
    parts = [F.regexp_extract(trimmed, stamp, i).cast("bigint") for i in range(1, 7)]
    millis = F.substring(F.rpad(F.regexp_extract(trimmed, stamp, 7), 3, "0"), 1, 3).cast("bigint")
    dated = [F.regexp_extract(trimmed, date, i).cast("bigint") for i in range(1, 4)]
    with_time = _millis(_rolled_days(*parts[:3]), parts[3], parts[4], parts[5], millis)
    day_only = _rolled_days(*dated) * javatime.DAY_MS
    return F.when(F.instr(trimmed, " ") > 0, F.when(trimmed.rlike(stamp), with_time)) \
        .otherwise(F.when(trimmed.rlike(date), day_only))


def _rolled_days(year: Column, month: Column, day: Column) -> Column:
    """A month 1 to 12 and a day 1 to 31, days past the month's end rolled into the next (NULL otherwise)."""
    from pyspark.sql import functions as F

    return F.when(month.between(1, 12) & day.between(1, 31), days_from_civil(year, month, F.lit(1)) + day - 1)


def unix_timestamp(x: Column, pattern: str) -> Column:
    """``javatime.unix_timestamp``: a prefix of the text read leniently, every field rolled over into the
    next, in seconds (toward zero); Long.MIN_VALUE where the pattern does not read it."""
    from pyspark.sql import functions as F

    p = javatime.compile_pattern(pattern, True, "UNIX_TIMESTAMP")
    regex = r"\A(?:" + p.regex + ")"
    v = _fields(x, p, regex)
    months = v["y"] * 12 + v["M"] - 1
    year = F.floor(months / F.lit(12)).cast("bigint")
    days = days_from_civil(year, months - year * 12 + 1, F.lit(1)) + v["d"] - 1
    ms = _millis(days, v["H"], v["m"], v["s"], v["S"])
    seconds = F.call_function("div", ms, F.lit(1000))  # Spark's div truncates toward zero, as Java's /
    return F.when(x.isNull(), F.lit(None).cast("bigint")).when(x.rlike(regex), seconds) \
        .otherwise(F.lit(javatime.INT64_MIN).cast("bigint"))
