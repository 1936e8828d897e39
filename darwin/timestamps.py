"""Darwin's timestamps (int64 milliseconds of UTC): the two watermarks outside time, and the
calendar for any year.

Python's ``datetime`` holds years 1 to 9999 only; Darwin's timestamps reach far beyond (DESIGN's
limits: |t| <= 2^62 ms), so dates come from this arithmetic everywhere outside compiled code (which
has its own njit copy, ``darwin.codegen.functions._civil``): the proleptic Gregorian calendar with a
year 0, as Spark's ``year()`` counts.

>>> civil(0), civil(-719_528)
((1970, 1, 1), (0, 1, 1))
"""

from __future__ import annotations

NO_WATERMARK = -(2**63)  # before any event: nothing is late, nothing fires
END_OF_INPUT = 2**63 - 1  # the watermark of a source that has ended: every window fires


def civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day counted from 1970-01-01 (H. Hinnant's civil_from_days), any year."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (m <= 2), m, d
