"""Parsing of durations ("10s", "2min", 500) into integer milliseconds."""

from __future__ import annotations

import re
from datetime import timedelta

from darwin.errors import ConfigError

_UNITS_MS = {
    "ms": 1, "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")


def to_millis(value: str | int | float | timedelta, what: str = "duration") -> int:
    """Milliseconds of ``value``: a string with a unit, a timedelta, or a number of ms."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a duration such as '10s', got {value!r}")
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{what}: a duration cannot be negative, got {value!r}")
        return int(value)
    if isinstance(value, str):
        m = _PATTERN.match(value.lower())
        if m and m.group(2) in _UNITS_MS:
            return int(float(m.group(1)) * _UNITS_MS[m.group(2)])
    raise ConfigError(f"{what}: cannot read {value!r} as a duration; "
                      f"write a number and a unit such as '500ms', '10s', '2min', '1h'")
