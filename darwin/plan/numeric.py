"""Flink's numeric functions, as Java computes them: what each means for every engine.

FLOOR, CEIL, ROUND and SIGN keep their argument's type (BIGINT or DOUBLE); the others take and give DOUBLE
(``Math.sqrt``, ``Math.log``...), NaN or an infinity where Java gives one, never an error. ROUND is BigDecimal's
HALF_UP of the number as Java writes it (``BigDecimal.valueOf``: the shortest decimal that reads back as the
double), so ROUND(2.675, 2) is 2.68 although the double is 2.67499999999999982236431605997495353221893310546875.
The reference interpreter calls ``evaluate``; the compiled engine's ``darwin.codegen.functions`` and Spark's
translation are tested against it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, localcontext
from typing import Any

import numpy as np

from darwin.plan.casts import days_from_civil, month_days
from darwin.timestamps import civil

MAX_DECIMALS = 22  # ROUND's places either side of the point: 10^22 is the largest power of ten a double holds


@dataclass(frozen=True)
class MathFunction:
    """A numeric function: how many arguments it takes, and whether it takes and gives DOUBLE (else it gives
    its first argument's type, and takes an integer literal after it, ROUND's or TRUNCATE's places), or BIGINTs only
    (``integers``: calendar months over milliseconds since the epoch)."""

    arity: int
    floats: bool
    integers: bool = False


FUNCTIONS = {
    "floor": MathFunction(1, False), "ceil": MathFunction(1, False), "sign": MathFunction(1, False),
    "round": MathFunction(2, False), "truncate": MathFunction(2, False), "power": MathFunction(2, True),
    "sqrt": MathFunction(1, True),
    "ln": MathFunction(1, True), "log10": MathFunction(1, True), "log": MathFunction(2, True),
    "exp": MathFunction(1, True),
    # Calcite's DateTimeUtils over milliseconds since the epoch: TIMESTAMPDIFF's months, + INTERVAL 'n' MONTH
    "months_between": MathFunction(2, False, integers=True), "add_months": MathFunction(2, False, integers=True),
}
DAY_MS = 86_400_000


def evaluate(func: str, args: tuple[Any, ...]) -> Any:
    """``func`` of values that are not NULL."""
    if func in _CALENDAR:
        return _CALENDAR[func](*args)
    if func in _INTEGER and isinstance(args[0], int):
        return _INTEGER[func](*args)
    places = func in ("round", "truncate")  # an integer after the number
    with np.errstate(all="ignore"):  # NaN and infinities, as Java's Math
        return float(_FLOAT[func](*(float(a) if i == 0 or not places else a for i, a in enumerate(args))))


def java_pow(a: float, b: float) -> float:
    """Java's Math.pow: C's pow (which Python's math raises for where C gives an infinity or NaN), but NaN for a
    NaN exponent and for 1 or -1 to an infinite power."""
    if math.isnan(b) or (abs(a) == 1.0 and math.isinf(b)):
        return math.nan
    odd = math.isfinite(b) and b == int(b) and int(b) % 2 == 1
    try:
        return math.pow(a, b)
    except OverflowError:
        return -math.inf if a < 0 and odd else math.inf
    except ValueError:  # 0 to a negative power, or a negative number to a fraction
        if a == 0:
            return -math.inf if math.copysign(1.0, a) < 0 and odd else math.inf
        return math.nan


def round_float(x: float, decimals: int) -> float:
    """BigDecimal.valueOf(x).setScale(decimals, HALF_UP).doubleValue(); NaN and infinities stay."""
    return _decimal_places(x, decimals, ROUND_HALF_UP)


def truncate_float(x: float, decimals: int) -> float:
    """Flink's TRUNCATE of a DOUBLE (Calcite's struncate): BigDecimal.valueOf(x) cut toward zero to ``decimals``
    places, then doubleValue(); NaN and infinities stay (Flink fails the job, as for ROUND)."""
    return _decimal_places(x, decimals, ROUND_DOWN)


def _decimal_places(x: float, decimals: int, rounding: str) -> float:
    """The number as Java writes it (the shortest decimal, Python's repr) to ``decimals`` places, as a double."""
    if not math.isfinite(x):
        return x
    with localcontext() as context:
        context.prec = 800
        rounded = Decimal(repr(x)).scaleb(decimals).to_integral_value(rounding).scaleb(-decimals)
    return float(rounded) + 0.0  # BigDecimal has no -0


def round_int(n: int, decimals: int) -> int:
    """A BIGINT rounded HALF_UP to ``decimals`` places (only negative ones change it), wrapping as longValue()."""
    if decimals >= 0:
        return n
    unit = 10 ** -decimals
    magnitude = (abs(n) + unit // 2) // unit * unit
    return wrap_long(magnitude if n >= 0 else -magnitude)


def wrap_long(n: int) -> int:
    """``n`` wrapped into a BIGINT, as Java's long arithmetic (and the compiled code's int64) leaves it."""
    return (n + 2**63) % 2**64 - 2**63


def truncate_int(n: int, decimals: int) -> int:
    """A BIGINT cut toward zero to ``decimals`` places (only negative ones change it); it never grows, so never
    wraps."""
    if decimals >= 0:
        return n
    unit = 10 ** -decimals
    magnitude = abs(n) // unit * unit
    return magnitude if n >= 0 else -magnitude


def sign_float(x: float) -> float:
    """Math.signum: 1.0 or -1.0, a zero or NaN as it is."""
    return 1.0 if x > 0 else -1.0 if x < 0 else x


def ln(x: float) -> float:
    """Math.log: minus infinity at 0, NaN below (C's log, which Python's math raises for)."""
    return math.log(x) if x > 0 or math.isnan(x) else -math.inf if x == 0 else math.nan


def log10(x: float) -> float:
    return math.log10(x) if x > 0 or math.isnan(x) else -math.inf if x == 0 else math.nan


def sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 or math.isnan(x) else math.nan


def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def log(base: float, x: float) -> float:
    """Flink's LOG(base, x): Math.log(x) / Math.log(base), a division by zero giving an infinity or NaN."""
    return float(np.divide(ln(x), ln(base)))


def add_months(ms: int, months: int) -> int:
    """Calcite's addMonths: the same day and time ``months`` later, the day cut to the month's last (Jan 31 plus a
    month is Feb 28 or 29)."""
    days, of_day = divmod(ms, DAY_MS)
    year, month, day = civil(days)
    total = wrap_long(year * 12 + month - 1 + months)  # a BIGINT of months, as the compiled code counts it
    year, month = total // 12, total % 12 + 1
    return days_from_civil(year, month, min(day, month_days(year, month))) * DAY_MS + of_day


def months_between(start: int, end: int) -> int:
    """Calcite's subtractMonths(end, start): the most whole months from ``start``'s day that stay at or before
    ``end``'s (negated where ``end`` is the earlier day), one less where that lands on ``end``'s day and ``end``'s
    time of day is earlier."""
    day_end, of_end = divmod(end, DAY_MS)
    day_start, of_start = divmod(start, DAY_MS)
    months = _day_months(day_end, day_start) if day_end >= day_start else -_day_months(day_start, day_end)
    if add_months(day_start * DAY_MS, months) == day_end * DAY_MS and of_end < of_start:
        months -= 1
    return months


def _day_months(later: int, earlier: int) -> int:
    """Calcite's subtractMonths of two days, ``later`` not before ``earlier``: the most months from ``earlier`` whose
    day (cut to its month's last) is not after ``later``."""
    year_l, month_l, day_l = civil(later)
    year_e, month_e, day_e = civil(earlier)
    months = (year_l - year_e) * 12 + month_l - month_e
    short = day_e > day_l and day_l != month_days(year_l, month_l)
    return months - short


_CALENDAR: dict[str, Callable[..., int]] = {"add_months": add_months, "months_between": months_between}
_INTEGER: dict[str, Callable[..., int]] = {
    "floor": lambda n: n, "ceil": lambda n: n, "sign": lambda n: (n > 0) - (n < 0), "round": round_int,
    "truncate": truncate_int}
_FLOAT: dict[str, Callable[..., float]] = {
    "floor": np.floor, "ceil": np.ceil, "sign": sign_float, "round": round_float, "truncate": truncate_float,
    "power": java_pow,
    "sqrt": sqrt, "ln": ln, "log10": log10, "log": log, "exp": exp}
