"""``col(ts).dt.strftime(fmt)``: a timestamp formatted as a string, in UTC.

One plain-Python formatter serves the reference interpreter and the compiled engine, whose kernels
look a formatted string's dictionary code up by the timestamp's *unit* (the finest field of the
format: a second, a minute, an hour or a day) and ask the runtime to format a unit they have not
seen (``darwin.runtime.pipeline``), so both engines agree by construction.

Directives are those of Python's ``strftime`` that do not depend on the locale:

``%Y`` year, at least four digits (astronomical: 0 is 1 BC, earlier years get a ``-``);
``%y`` year in the century, two digits; ``%m`` month; ``%d`` day of the month; ``%j`` day of the
year (three digits); ``%H`` hour (00-23); ``%M`` minute; ``%S`` second; ``%F`` is ``%Y-%m-%d``;
``%T`` is ``%H:%M:%S``; ``%%`` a percent sign. Every other character is literal. Flink's
``DATE_FORMAT(ts, 'yyyy-MM-dd')`` is ``%Y-%m-%d``, and ``'HH:mm'`` is ``%H:%M``.
"""

from __future__ import annotations

from functools import lru_cache

from darwin.errors import DarwinTypeError
from darwin.timestamps import civil

DAY_MS = 86_400_000
_UNIT_MS = {"S": 1000, "M": 60_000, "H": 3_600_000}  # every other field changes at most once a day
_EXPANDED = {"F": "%Y-%m-%d", "T": "%H:%M:%S"}
DIRECTIVES = "YymdjHMSFT%"

Token = tuple[str, str]  # ("text", literal) or ("field", directive letter)


@lru_cache(maxsize=256)
def parse(fmt: str) -> tuple[Token, ...]:
    """The format's literal text and fields; an unknown or unfinished directive is refused."""
    if not isinstance(fmt, str):
        raise DarwinTypeError(f"dt.strftime() takes a format string, got {fmt!r}")
    tokens: list[Token] = []
    text = ""
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            text += c
            i += 1
            continue
        if i + 1 == len(fmt):
            raise DarwinTypeError(f"dt.strftime({fmt!r}): the format ends with a lone '%'; write '%%' for a "
                                  "percent sign")
        d = fmt[i + 1]
        if d not in DIRECTIVES:
            raise DarwinTypeError(f"dt.strftime({fmt!r}): unknown directive '%{d}'; supported: "
                                  + " ".join(f"%{x}" for x in DIRECTIVES))
        if d == "%":
            text += "%"
        elif d in _EXPANDED:
            if text:
                tokens.append(("text", text))
                text = ""
            tokens.extend(parse(_EXPANDED[d]))
        else:
            if text:
                tokens.append(("text", text))
                text = ""
            tokens.append(("field", d))
        i += 2
    if text:
        tokens.append(("text", text))
    return tuple(tokens)


def unit_ms(fmt: str) -> int:
    """Milliseconds of the format's finest field: timestamps in one such unit format alike."""
    return min((_UNIT_MS.get(v, DAY_MS) for k, v in parse(fmt) if k == "field"), default=DAY_MS)


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


_DAYS_BEFORE = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)


def strftime(fmt: str, ms: int) -> str:
    """The UTC timestamp ``ms`` (milliseconds since the epoch) formatted by ``fmt``."""
    days, in_day = divmod(ms, DAY_MS)
    y, m, d = civil(days)
    secs = in_day // 1000
    fields = {
        "Y": f"{y:04d}" if y >= 0 else f"-{-y:04d}", "y": f"{y % 100:02d}", "m": f"{m:02d}", "d": f"{d:02d}",
        "j": f"{_DAYS_BEFORE[m - 1] + d + (m > 2 and _leap(y)):03d}",
        "H": f"{secs // 3600:02d}", "M": f"{secs // 60 % 60:02d}", "S": f"{secs % 60:02d}"}
    return "".join(fields[v] if k == "field" else v for k, v in parse(fmt))
