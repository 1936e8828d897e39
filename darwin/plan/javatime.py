"""Strings parsed to times with Java's patterns, as Flink's TO_TIMESTAMP and UNIX_TIMESTAMP parse them.

Flink parses TO_TIMESTAMP(s, pattern) with ``DateTimeFormatter.ofPattern`` (the whole text, strict widths,
SMART resolving), then, where that fails, the trimmed text as ``java.sql.Timestamp.valueOf`` or
``Date.valueOf`` reads it; UNIX_TIMESTAMP(s, pattern) with a lenient ``SimpleDateFormat``, which reads a
prefix, skips blanks before numbers, takes any count of digits and rolls values over (month 13 is next
January). A pattern compiles to one regular expression, valid in Python's ``re`` and in Java's (possessive
quantifiers do what Java's parsers do: they never give digits back), with one group per field, so the
Spark translation (``darwin.spark.timeparse``) reads the same fields with the same expression; the
arithmetic after it is spelled out twice, here and there. Patterns take ``yyyy``, ``yy`` (TO_TIMESTAMP
only), ``M``, ``MM``, ``d``, ``dd``, ``H``, ``HH``, ``m``, ``mm``, ``s``, ``ss``, ``S``... and literal text,
quoted (``'T'``, ``''``) or not; other letters are refused when the query is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from darwin.errors import DarwinTypeError
from darwin.plan.casts import days_from_civil, month_days

DAY_MS = 86_400_000
INT64_MIN = -(2**63)
DEFAULT_PATTERN = "yyyy-MM-dd HH:mm:ss"
FIELDS = "yMdHmsS"  # year, month, day, hour, minute, second, fraction (a count of ms for SimpleDateFormat)
DEFAULTS = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
# a run of one pattern letter, quoted text ('' inside it is a quote), a quote not closed, or other text
_RUN = re.compile(r"([A-Za-z])\1*|'((?:[^']|'')*)'|'|[^A-Za-z']+")
# java.sql.Timestamp.valueOf and Date.valueOf, Flink's fallback when the pattern does not parse the text
FALLBACK_TIMESTAMP = r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2}) ([0-9]{1,9}):([0-9]{1,9}):([0-9]{1,9})(?:\.([0-9]{1,9}))?"
FALLBACK_DATE = r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"


@dataclass(frozen=True)
class TimePattern:
    """A Java pattern compiled: ``regex`` (anchored at the start; at the end too where ``whole``) and the
    field letter each of its groups reads."""

    regex: str
    fields: tuple[str, ...]
    lenient: bool  # SimpleDateFormat's reading (UNIX_TIMESTAMP), else DateTimeFormatter's (TO_TIMESTAMP)
    century: int = 0  # added to the year: 2000 for DateTimeFormatter's yy

    def has(self, *letters: str) -> bool:
        return all(letter in self.fields for letter in letters)


def _literal(text: str) -> str:
    """Text matched as it is, in a regular expression Python and Java read alike."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() else c for c in text)


def _tokens(pattern: str, function: str) -> list[tuple[str, str]]:
    """The pattern's ('field', letters) and ('text', literal) tokens."""
    tokens: list[tuple[str, str]] = []
    for run in _RUN.finditer(pattern):
        text, quoted = run.group(0), run.group(2)
        if quoted is not None:
            tokens.append(("text", quoted.replace("''", "'") or "'"))
        elif text == "'":
            raise DarwinTypeError(f"{function}: the quote at position {run.start() + 1} of {pattern!r} is not "
                                  "closed; text in quotes is literal, and '' is a quote")
        elif text[0].isalpha():
            tokens.append(("field", text))
        elif set(text) & set("[]{}#"):
            raise DarwinTypeError(f"{function}: [ ] {{ }} # in {pattern!r} are not literal text in Java's "
                                  "patterns; put them in quotes")
        else:
            tokens.append(("text", text))
    return tokens


def _check_field(letters: str, lenient: bool, function: str) -> None:
    letter, count = letters[0], len(letters)
    supported = "yyyy, yy, M, MM, d, dd, H, HH, m, mm, s, ss, S (1 to 9)"
    if letter == "y" and count <= 2 and lenient:
        raise DarwinTypeError(f"{function}: pattern letters {letters!r}: SimpleDateFormat reads a two-digit year "
                              "as one within 80 years before and 20 after the clock's time, so the result would "
                              "depend on when the job runs; write yyyy")
    valid = (letter == "y" and count in (2, 4)) or (letter in "MdHms" and count <= 2) or (letter == "S" and count <= 9)
    if not valid:
        raise DarwinTypeError(f"{function}: pattern letters {letters!r} are not supported; use {supported}")


def _field_regex(letters: str, next_is_field: bool, next_is_fixed: bool, lenient: bool) -> str:
    letter, count = letters[0], len(letters)
    if lenient:  # SimpleDateFormat: blanks skipped, any digits; exactly the letters' count before a field
        if next_is_field:
            return f"[ \\t]*+(?=[\\s\\S]{{{count}}})([0-9]{{1,{count}}}+)"
        return "[ \\t]*+([0-9]{1,9}+)(?![0-9])"
    if letter == "y":
        return f"([0-9]{{{count}}})"
    if letter == "S" or count == 2:
        return f"([0-9]{{{count}}})"
    # one letter: any width up to 19; digits are given back only to fixed-width fields right after it
    return "([0-9]{1,19})" if next_is_fixed else "([0-9]{1,19}+)"


@lru_cache(maxsize=256)
def compile_pattern(pattern: str, lenient: bool, function: str) -> TimePattern:
    """``pattern`` as a ``TimePattern``; a letter not supported, a quote left open or a field twice is refused."""
    if not isinstance(pattern, str):
        raise DarwinTypeError(f"{function}'s pattern is a string, got {pattern!r}")
    tokens = _tokens(pattern, function)
    parts, fields = [], []
    century = 0
    for i, (kind, text) in enumerate(tokens):
        if kind == "text":
            parts.append(_literal(text))
            continue
        _check_field(text, lenient, function)
        if text[0] in fields:
            raise DarwinTypeError(f"{function}: {pattern!r} has the field {text[0]!r} twice")
        after = tokens[i + 1] if i + 1 < len(tokens) else ("text", "")
        fixed = after[0] == "field" and (len(after[1]) == 2 or after[1][0] in "yS")
        parts.append(_field_regex(text, after[0] == "field", fixed, lenient))
        fields.append(text[0])
        century = 2000 if text == "yy" else century
    return TimePattern("".join(parts), tuple(fields), lenient, century)


def _values(p: TimePattern, groups: tuple[str | None, ...]) -> dict[str, int]:
    values = dict(DEFAULTS)
    for letter, digits in zip(p.fields, groups, strict=True):
        values[letter] = int(digits or "0")
    return values


def _fraction_ms(p: TimePattern, groups: tuple[str | None, ...]) -> int:
    """A fraction of a second's digits (``S``...) cut to milliseconds, as Flink's TIMESTAMP(3)."""
    if "S" not in p.fields:
        return 0
    digits = groups[p.fields.index("S")] or ""
    return int((digits + "000")[:3])


def to_timestamp(text: str, pattern: str) -> int | None:
    """Flink's TO_TIMESTAMP(text, pattern) in ms since the epoch, None where Flink gives NULL."""
    p = compile_pattern(pattern, False, "TO_TIMESTAMP")
    m = re.fullmatch(p.regex, text)
    parsed = None if m is None else _resolved(p, _values(p, m.groups()), _fraction_ms(p, m.groups()))
    return parsed if parsed is not None else fallback(text)


def _resolved(p: TimePattern, v: dict[str, int], millis: int) -> int | None:
    """The fields as DateTimeFormatter's SMART resolver takes them: ranges checked, a day past its month's end
    its last day (where the pattern has a year, a month and a day), 24:00:00 the next day's midnight."""
    year, month, day, hour = v["y"] + p.century, v["M"], v["d"], v["H"]
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= 31 or v["m"] > 59 or v["s"] > 59:
        return None
    midnight_after = hour == 24 and v["m"] == v["s"] == v["S"] == 0
    if hour > 23 and not midnight_after:
        return None
    if p.has("y", "M", "d"):
        day = min(day, month_days(year, month))
    elif day > month_days(year, month):
        return None  # Flink fails the job here (LocalDateTime.of); Darwin gives NULL
    days = days_from_civil(year, month, day) + (1 if midnight_after and p.has("y", "M", "d") else 0)
    hour = 0 if midnight_after else hour
    return days * DAY_MS + hour * 3_600_000 + v["m"] * 60_000 + v["s"] * 1000 + millis


def java_trim(text: str) -> str:
    """Java's ``String.trim``: every character up to U+0020 off both ends."""
    return text.strip("".join(chr(c) for c in range(33)))


def fallback(text: str) -> int | None:
    """``java.sql.Timestamp.valueOf`` (with a space) or ``Date.valueOf`` of the trimmed text, as Flink's
    TO_TIMESTAMP tries them after its pattern: a month 1 to 12 and a day 1 to 31, rolled over past the month's
    end (February 30th is March 2nd), and a time of any hours, minutes and seconds, rolled over too."""
    trimmed = java_trim(text)
    m = re.fullmatch(FALLBACK_TIMESTAMP if " " in trimmed else FALLBACK_DATE, trimmed)
    if m is None:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    ms = (days_from_civil(year, month, 1) + day - 1) * DAY_MS
    if m.re.groups == 3:
        return ms
    hour, minute, second = int(m.group(4)), int(m.group(5)), int(m.group(6))
    return ms + hour * 3_600_000 + minute * 60_000 + second * 1000 + int(((m.group(7) or "") + "000")[:3])


def unix_timestamp(text: str, pattern: str) -> int:
    """Flink's UNIX_TIMESTAMP(text, pattern): seconds since the epoch (the milliseconds divided by 1000,
    toward zero, as Java divides), or Long.MIN_VALUE where the text does not parse, as in Flink."""
    p = compile_pattern(pattern, True, "UNIX_TIMESTAMP")
    m = re.match(p.regex, text)
    if m is None:
        return INT64_MIN
    v = _values(p, m.groups())
    months = v["y"] * 12 + v["M"] - 1  # a lenient calendar rolls every field over into the next
    days = days_from_civil(months // 12, months % 12 + 1, 1) + v["d"] - 1
    ms = days * DAY_MS + v["H"] * 3_600_000 + v["m"] * 60_000 + v["s"] * 1000 + v["S"]
    ms = (ms + 2**63) % 2**64 - 2**63  # Java's Calendar counts the milliseconds in a long, which wraps around
    return abs(ms) // 1000 * (1 if ms >= 0 else -1)
