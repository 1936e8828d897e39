"""Parsing of durations ("10s", "2min", 500) into integer milliseconds.

Every duration is bounded by ``MAX_DURATION_MS`` (100 years): with event times inside
``MAX_EVENT_TIME_MS`` of zero, every window start, end and watermark the engine computes
from a duration then stays far inside int64, and no size derived from one can overflow.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from fractions import Fraction

from darwin.errors import ConfigError, DarwinError

_UNITS_MS = {
    "ms": 1, "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")
MAX_DURATION_MS = 36_500 * 86_400_000  # 100 years (of 365 days)
MAX_EVENT_TIME_MS = 2**62  # |event time| for which window and watermark arithmetic is exact in int64


def to_millis(value: str | int | float | timedelta, what: str = "duration",
              error: type[DarwinError] = ConfigError) -> int:
    """Milliseconds of ``value``: a string with a unit, a timedelta, or a number of ms.

    Raises ``error`` (a config key's ``ConfigError`` by default, ``PlanError`` for query
    parameters) for anything that is not a whole, finite number of ms in [0, 100 years].
    """
    if isinstance(value, bool):
        raise error(f"{what}: expected a duration such as '10s', got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{what}: a duration must be finite, got {value!r}")
    if isinstance(value, timedelta):
        ms = _exact(Fraction(value // timedelta(microseconds=1), 1000), value, what, error)
    elif isinstance(value, (int, float)):
        ms = _exact(Fraction(value), value, what, error)
    elif isinstance(value, str) and (m := _PATTERN.match(value.lower())) and m.group(2) in _UNITS_MS:
        ms = _exact(Fraction(m.group(1)) * _UNITS_MS[m.group(2)], value, what, error)
    else:
        raise error(f"{what}: cannot read {value!r} as a duration; "
                    f"write a number and a unit such as '500ms', '10s', '2min', '1h'")
    if ms > MAX_DURATION_MS:
        raise error(f"{what}: {value!r} is longer than the longest duration Darwin supports, 100 years "
                    f"({MAX_DURATION_MS}ms)")
    return ms


def _exact(ms: Fraction, value: object, what: str, error: type[DarwinError]) -> int:
    """``ms`` as an int, refusing what would be silently truncated or cannot be a duration."""
    if ms < 0:
        raise error(f"{what}: a duration cannot be negative, got {value!r}")
    if ms.denominator != 1:
        raise error(f"{what}: {value!r} is not a whole number of milliseconds; Darwin counts event time in ms")
    return int(ms)
