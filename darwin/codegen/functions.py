"""Scalar njit helpers that generated code calls where plain operators are not enough."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import cast

import llvmlite.binding as llvm
import numpy as np
from numba import njit, objmode, types
from numba.extending import intrinsic

from darwin.plan.numeric import round_float, truncate_float

INT64_MIN = np.int64(-(2**63))
DAY_MS = np.int64(86_400_000)

# C's pow under a name LLVM does not know: it rewrites a call of its pow intrinsic with a literal operand
# (x to the 2 as x * x, 2 to the x as exp2, x to the 0.5 as sqrt), rounding otherwise than C's pow that
# the interpreter's math.pow calls; an unknown function is called as it is
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
llvm.add_symbol("darwin_c_pow", ctypes.cast(_LIBM.pow, ctypes.c_void_p).value)
c_pow = cast(Callable[[float, float], float],  # what compiled code calls it as
             types.ExternalFunction("darwin_c_pow", types.float64(types.float64, types.float64)))


# Numba marks int64 +, - and * "nsw" (no signed wrap), which lets LLVM assume they never overflow and fold
# what follows on that: (n * 1000) // 86400000 became n // 86400, a wrapped product's day taken unwrapped. Darwin's
# int64 arithmetic wraps (Java's long), so expressions compute it on the same bits as uint64, which has no such flag.
@njit(inline="always", cache=True, nogil=True)
def add_int(a: np.int64, b: np.int64) -> np.int64:
    """a + b, wrapping around int64."""
    return np.int64(np.uint64(a) + np.uint64(b))


@njit(inline="always", cache=True, nogil=True)
def sub_int(a: np.int64, b: np.int64) -> np.int64:
    """a - b, wrapping around int64."""
    return np.int64(np.uint64(a) - np.uint64(b))


@njit(inline="always", cache=True, nogil=True)
def mul_int(a: np.int64, b: np.int64) -> np.int64:
    """a * b, wrapping around int64."""
    return np.int64(np.uint64(a) * np.uint64(b))


@njit(inline="always", cache=True, nogil=True)
def floordiv_int(a: np.int64, b: np.int64) -> np.int64:
    """Python floor division with int64 wrap-around; the caller masks b == 0 as NULL."""
    if b == 0:
        return np.int64(0)
    if b == -1:
        return -a  # INT64_MIN // -1 wraps instead of trapping
    return a // b


@njit(inline="always", cache=True, nogil=True)
def mod_int(a: np.int64, b: np.int64) -> np.int64:
    if b == 0 or b == -1:
        return np.int64(0)
    return a % b


@njit(inline="always", cache=True, nogil=True)
def float_to_int_ok(x: float) -> bool:
    return np.isfinite(x) and -9.223372036854775808e18 <= x < 9.223372036854775808e18


@njit(inline="always", cache=True, nogil=True)
def float_to_int(x: float) -> np.int64:
    """Truncation toward zero; out-of-range values give 0 and are masked NULL by the caller."""
    if float_to_int_ok(x):
        return np.int64(x)
    return np.int64(0)


@intrinsic
def float_bits(typingctx, x):  # type: ignore[no-untyped-def]
    """The bits of a float64 as an int64 (a float's key in a table of values met: NaNs and zeros by their bits)."""
    signature = types.int64(types.float64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return signature, codegen


@njit(inline="always", cache=True, nogil=True)
def _floor_div(a: np.int64, b: int) -> np.int64:
    return a // b


@njit(inline="always", cache=True, nogil=True)
def _civil(ms: np.int64) -> tuple:
    """(year, month, day) of a UTC millisecond timestamp."""
    return _civil_days(_floor_div(ms, 86_400_000))


@njit(inline="always", cache=True, nogil=True)
def _civil_days(days: np.int64) -> tuple:
    """(year, month, day) of a day counted from 1970-01-01 (H. Hinnant's days_from_civil inverse), taken
    as a day, not as its milliseconds, which int64 does not hold for every day it holds."""
    z = days + 719_468
    era = _floor_div(z, 146_097)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


@njit(inline="always", cache=True, nogil=True)
def dt_year(ms: np.int64) -> np.int64:
    return np.int64(_civil(ms)[0])


@njit(inline="always", cache=True, nogil=True)
def dt_month(ms: np.int64) -> np.int64:
    return np.int64(_civil(ms)[1])


@njit(inline="always", cache=True, nogil=True)
def dt_day(ms: np.int64) -> np.int64:
    return np.int64(_civil(ms)[2])


@njit(inline="always", cache=True, nogil=True)
def dt_hour(ms: np.int64) -> np.int64:
    return (ms % 86_400_000) // 3_600_000


@njit(inline="always", cache=True, nogil=True)
def dt_minute(ms: np.int64) -> np.int64:
    return (ms % 86_400_000) // 60_000 % 60


@njit(inline="always", cache=True, nogil=True)
def dt_second(ms: np.int64) -> np.int64:
    return (ms % 86_400_000) // 1000 % 60


@njit(inline="always", cache=True, nogil=True)
def dt_millisecond(ms: np.int64) -> np.int64:
    return ms % 1000


@njit(inline="always", cache=True, nogil=True)
def dt_day_of_week(ms: np.int64) -> np.int64:
    return (_floor_div(ms, 86_400_000) + 3) % 7 + 1


@njit(inline="always", cache=True, nogil=True)
def _january_first(year: np.int64) -> np.int64:
    """Days from 1970-01-01 to January 1st of ``year`` (H. Hinnant's days_from_civil, March-based years)."""
    y = year - 1
    era = _floor_div(y, 400)
    yoe = y - era * 400
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + 306 - 719_468


@njit(inline="always", cache=True, nogil=True)
def dt_day_of_year(ms: np.int64) -> np.int64:
    return _floor_div(ms, 86_400_000) - _january_first(np.int64(_civil(ms)[0])) + 1


@njit(inline="always", cache=True, nogil=True)
def dt_week(ms: np.int64) -> np.int64:
    """ISO 8601 week of the year (1 to 53): the week, Monday to Sunday, counted in the year its Thursday is in."""
    days = _floor_div(ms, 86_400_000)
    thursday = days - (days + 3) % 7 + 3
    return (thursday - _january_first(np.int64(_civil_days(thursday)[0]))) // 7 + 1


@njit(inline="always", cache=True, nogil=True)
def _days_from_civil(year: np.int64, month: np.int64, day: np.int64) -> np.int64:
    """Days from 1970-01-01 to a date (H. Hinnant's days_from_civil), as ``darwin.plan.casts.days_from_civil``."""
    y = year - 1 if month <= 2 else year
    era = _floor_div(y, 400)
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


# A floor's milliseconds wrap (mul_int) as the interpreter's do, where a unit's start is past int64: multiplied
# as int64, LLVM folded a floor of the floor into one of the timestamp itself (FLOOR(FLOOR(ts TO DAY) TO YEAR)
# near -2^63 gave the year of ts, not of the wrapped day), as in ae06e80's expressions.
@njit(inline="always", cache=True, nogil=True)
def dt_floor_length(ms: np.int64, length: int) -> np.int64:
    """The start of the unit of ``length`` milliseconds holding ``ms`` (``ex.FIXED_UNITS_MS``), before 1970 too."""
    return mul_int(_floor_div(ms, length), np.int64(length))


@njit(inline="always", cache=True, nogil=True)
def dt_floor_week(ms: np.int64) -> np.int64:
    """Midnight of the week's Sunday, as Flink's FLOOR(ts TO WEEK): 1970-01-01 was a Thursday."""
    days = _floor_div(ms, 86_400_000)
    return mul_int(days - (days + 4) % 7, DAY_MS)


@njit(inline="always", cache=True, nogil=True)
def dt_floor_month(ms: np.int64) -> np.int64:
    return mul_int(_floor_div(ms, 86_400_000) - _civil(ms)[2] + 1, DAY_MS)


@njit(inline="always", cache=True, nogil=True)
def dt_floor_quarter(ms: np.int64) -> np.int64:
    year, month, _ = _civil(ms)
    return mul_int(_days_from_civil(np.int64(year), np.int64(month - (month - 1) % 3), np.int64(1)), DAY_MS)


@njit(inline="always", cache=True, nogil=True)
def dt_floor_year(ms: np.int64) -> np.int64:
    return mul_int(_january_first(np.int64(_civil(ms)[0])), DAY_MS)


# numeric functions, as darwin.plan.numeric defines them (Java's Math; ROUND as BigDecimal's HALF_UP)
POWERS_OF_TEN = np.array([10.0 ** i for i in range(23)])  # exact doubles up to 10^22


@njit(inline="always", cache=True, nogil=True)
def math_floor_float(x: float) -> float:
    return np.floor(x)


@njit(inline="always", cache=True, nogil=True)
def math_ceil_float(x: float) -> float:
    return np.ceil(x)


@njit(inline="always", cache=True, nogil=True)
def math_sign_float(x: float) -> float:
    return 1.0 if x > 0 else -1.0 if x < 0 else x


@njit(inline="always", cache=True, nogil=True)
def math_sign_int(n: np.int64) -> np.int64:
    return np.int64(1) if n > 0 else np.int64(-1) if n < 0 else np.int64(0)


@njit(inline="always", cache=True, nogil=True)
def _decimal_units(x: float, places: np.int64) -> float:
    """|x| in units of 10^-places, as a double (maybe one unit off)."""
    scale = POWERS_OF_TEN[abs(places)]
    return abs(x) * scale if places >= 0 else abs(x) / scale


@njit(inline="always", cache=True, nogil=True)
def _units_as_double(units: float, places: np.int64) -> float:
    """``units`` of 10^-places as the double nearest that decimal (10^|places| is exact as a double)."""
    scale = POWERS_OF_TEN[abs(places)]
    return units / scale if places >= 0 else units * scale


@njit(inline="always", cache=True, nogil=True)
def _signed_as(x: float, magnitude: float) -> float:
    """``magnitude`` with x's sign, never -0.0 (BigDecimal has none)."""
    return -magnitude if x < 0 and magnitude != 0 else magnitude


@njit(cache=True)
def math_round_float(x: float, places: np.int64) -> float:
    """BigDecimal.valueOf(x).setScale(places, HALF_UP).doubleValue() for |places| <= 22. Where |x| holds fewer
    than 2^48 units of 10^-places, without decimals: k, the whole units in |x| (maybe one off, as |x| * 10^places
    is rounded), goes up where |x| is at or past k + 1/2 units; (k + 1/2) / 10^places of exact doubles is the
    double nearest that decimal, and |x| equal to it means Java writes |x| as that decimal (no other of as few
    digits is as near), a tie, which HALF_UP rounds away from zero. From 2^48 units the place is about x's 16th
    digit, where the decimal Java writes needs finding: Python's repr does it, as for the interpreter (the
    GIL taken for those rows only). From 10^16 units no digit of it is below the place."""
    if not np.isfinite(x):
        return x
    units = _decimal_units(x, places)
    if units >= 1e16:
        return x
    if units >= 281474976710656.0:  # 2^48
        with objmode(rounded="float64"):
            rounded = round_float(x, int(places))
        return rounded
    k = np.floor(units)
    k = k + 1.0 if abs(x) >= _units_as_double(k + 0.5, places) else k
    return _signed_as(x, _units_as_double(k, places))


@njit(cache=True)
def math_truncate_float(x: float, places: np.int64) -> float:
    """Calcite's struncate, BigDecimal.valueOf(x) cut toward zero to ``places`` (|places| <= 22), as a double. As
    ``math_round_float``: below 2^48 units of 10^-places, k, the whole units in |x| (maybe one off), is checked
    against the doubles nearest k and k + 1 units, which |x| reaches exactly where Java writes it at or past those
    decimals; from 2^48 units Python's repr finds the decimal; from 10^16 no digit of it is below the place."""
    if not np.isfinite(x):
        return x
    units = _decimal_units(x, places)
    if units >= 1e16:
        return x
    if units >= 281474976710656.0:  # 2^48
        with objmode(cut="float64"):
            cut = truncate_float(x, int(places))
        return cut
    k = np.floor(units)
    magnitude = abs(x)
    k = (k + 1.0 if magnitude >= _units_as_double(k + 1.0, places)
         else k - 1.0 if magnitude < _units_as_double(k, places) else k)
    return _signed_as(x, _units_as_double(k, places))


@njit(cache=True, nogil=True)
def math_truncate_int(n: np.int64, places: np.int64) -> np.int64:
    """A BIGINT cut toward zero to ``places`` (negative: tens, hundreds...); it never grows, so never wraps."""
    if places >= 0:
        return n
    if places <= -19:  # 10^19 is past int64
        return np.int64(0)
    unit = np.int64(10) ** np.int64(-places)
    cut = n % unit  # Python's, at or above 0
    if n < 0 and cut != 0:
        cut -= unit
    return n - cut


@njit(cache=True, nogil=True)
def math_round_int(n: np.int64, places: np.int64) -> np.int64:
    """A BIGINT rounded HALF_UP to ``places`` (negative: tens, hundreds...), wrapping as Java's longValue()."""
    if places >= 0:
        return n
    if places <= -20:
        return np.int64(0)
    if places == -19:  # 10^19 is past int64: only |n| >= 5 * 10^18 rounds, to 10^19 wrapped
        if n >= 5_000_000_000_000_000_000:
            return np.int64(-8_446_744_073_709_551_616)
        return np.int64(8_446_744_073_709_551_616) if n <= -5_000_000_000_000_000_000 else np.int64(0)
    unit = np.int64(10) ** np.int64(-places)
    rest = n % unit  # the floor remainder, 0 to unit - 1
    if n >= 0:
        return n - rest + unit if 2 * rest >= unit else n - rest
    rest = (unit - rest) % unit  # toward zero
    return n + rest - unit if 2 * rest >= unit else n + rest


@njit(inline="always", cache=True, nogil=True)
def math_power(a: float, b: float) -> float:
    """Java's Math.pow: C's pow, but NaN for a NaN exponent and for 1 or -1 to an infinite power."""
    if np.isnan(b) or (abs(a) == 1.0 and np.isinf(b)):
        return np.nan
    return c_pow(a, b)


@njit(inline="always", cache=True, nogil=True)
def math_sqrt(x: float) -> float:
    return np.sqrt(x)


@njit(inline="always", cache=True, nogil=True)
def math_ln(x: float) -> float:
    return np.log(x)


@njit(inline="always", cache=True, nogil=True)
def math_log10(x: float) -> float:
    return np.log10(x)


@njit(inline="always", cache=True, nogil=True, error_model="numpy")
def math_log(base: float, x: float) -> float:
    """Math.log(x) / Math.log(base): a division by zero gives an infinity or NaN."""
    return np.log(x) / np.log(base)


@njit(inline="always", cache=True, nogil=True)
def math_exp(x: float) -> float:
    return np.exp(x)


@njit(cache=True, nogil=True)
def _month_days(year: np.int64, month: np.int64) -> np.int64:
    if month == 2:
        return np.int64(29) if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else np.int64(28)
    return np.int64(30) if month in (4, 6, 9, 11) else np.int64(31)


@njit(cache=True, nogil=True)
def math_add_months(ms: np.int64, months: np.int64) -> np.int64:
    """Calcite's addMonths, as ``darwin.plan.numeric.add_months``: the day cut to the month's last."""
    of_day = ms % 86_400_000
    year, month, day = _civil(ms)
    total = add_int(np.int64(year) * 12 + month - 1, months)  # wraps, as the interpreter's BIGINT of months
    y, m = _floor_div(total, 12), total % 12 + 1
    days = _days_from_civil(np.int64(y), np.int64(m), np.int64(min(day, _month_days(y, m))))
    return add_int(mul_int(days, DAY_MS), of_day)


@njit(cache=True, nogil=True)
def _day_months(later: np.int64, earlier: np.int64) -> np.int64:
    year_l, month_l, day_l = _civil_days(later)
    year_e, month_e, day_e = _civil_days(earlier)
    months = (np.int64(year_l) - year_e) * 12 + month_l - month_e
    short = day_e > day_l and day_l != _month_days(np.int64(year_l), np.int64(month_l))
    return months - 1 if short else months


@njit(cache=True, nogil=True)
def math_months_between(start: np.int64, end: np.int64) -> np.int64:
    """Calcite's subtractMonths(end, start), as ``darwin.plan.numeric.months_between``."""
    day_end, day_start = _floor_div(end, 86_400_000), _floor_div(start, 86_400_000)
    months = _day_months(day_end, day_start) if day_end >= day_start else -_day_months(day_start, day_end)
    if math_add_months(day_start * 86_400_000, months) == day_end * 86_400_000 \
            and end - day_end * 86_400_000 < start - day_start * 86_400_000:
        months -= 1
    return months


FORMAT_HASH = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always", cache=True, nogil=True)
def _format_slot(key: np.int64, mask: int) -> np.int64:
    h = np.uint64(key) * FORMAT_HASH
    return np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))


@njit(cache=True, nogil=True)
def format_code(keys: np.ndarray, codes: np.ndarray, key: np.int64) -> np.int64:
    """The string code of time unit ``key`` in a strftime format's table, or -1 if it has none yet
    (open addressing; a free slot's code is -1)."""
    mask = keys.shape[0] - 1
    s = _format_slot(key, mask)
    while codes[s] >= 0:
        if keys[s] == key:
            return codes[s]
        s = (s + 1) & mask
    return np.int64(-1)


@njit(cache=True, nogil=True)
def format_insert(keys: np.ndarray, codes: np.ndarray, key: np.int64, code: np.int64) -> None:
    """Add time unit ``key`` with its string code (the table has a free slot and not the key)."""
    mask = keys.shape[0] - 1
    s = _format_slot(key, mask)
    while codes[s] >= 0:
        s = (s + 1) & mask
    keys[s] = key
    codes[s] = code


@njit(cache=True, nogil=True)
def formats_lacking(keys: np.ndarray, codes: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Per time unit: whether a strftime format's table lacks it."""
    lacking = np.empty(units.shape[0], dtype=np.bool_)
    for j in range(units.shape[0]):
        lacking[j] = format_code(keys, codes, units[j]) < 0
    return lacking


@njit(cache=True, nogil=True)
def format_insert_all(keys: np.ndarray, codes: np.ndarray, units: np.ndarray, code: np.ndarray) -> None:
    """Add each time unit (the table has room for all and none of them) with its string code."""
    for j in range(units.shape[0]):
        format_insert(keys, codes, units[j], code[j])


@njit(inline="always", cache=True, nogil=True)
def _pair_slot(a: np.int64, b: np.int64, mask: int) -> np.int64:
    h = (np.uint64(a) * FORMAT_HASH) ^ (np.uint64(b) + np.uint64(0x632BE59BD9B4E019))
    h *= FORMAT_HASH
    return np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))


@njit(cache=True, nogil=True)
def pair_code(left: np.ndarray, right: np.ndarray, codes: np.ndarray, a: np.int64, b: np.int64) -> np.int64:
    """The string code of the concatenation of codes ``a`` and ``b`` in a concatenation's table, or -1 if it
    has none yet (open addressing; a free slot's code is -1)."""
    mask = codes.shape[0] - 1
    s = _pair_slot(a, b, mask)
    while codes[s] >= 0:
        if left[s] == a and right[s] == b:
            return codes[s]
        s = (s + 1) & mask
    return np.int64(-1)


@njit(cache=True, nogil=True)
def pair_insert(left: np.ndarray, right: np.ndarray, codes: np.ndarray, a: np.int64, b: np.int64,
                code: np.int64) -> None:
    """Add the pair (``a``, ``b``) with its string code (the table has a free slot and not the pair)."""
    mask = codes.shape[0] - 1
    s = _pair_slot(a, b, mask)
    while codes[s] >= 0:
        s = (s + 1) & mask
    left[s] = a
    right[s] = b
    codes[s] = code


@njit(cache=True, nogil=True)
def pair_insert_all(left: np.ndarray, right: np.ndarray, codes: np.ndarray, a: np.ndarray, b: np.ndarray,
                    code: np.ndarray) -> int:
    """Add each pair (``a[j]``, ``b[j]``) the table lacks with its string code (it has room for all); how many."""
    added = 0
    for j in range(a.shape[0]):
        if pair_code(left, right, codes, a[j], b[j]) < 0:
            pair_insert(left, right, codes, a[j], b[j], code[j])
            added += 1
    return added


@njit(cache=True, nogil=True)
def pairs_lacking(left: np.ndarray, right: np.ndarray, codes: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (``a[j]``, ``b[j]``): whether the table lacks it."""
    lacking = np.empty(a.shape[0], dtype=np.bool_)
    for j in range(a.shape[0]):
        lacking[j] = pair_code(left, right, codes, a[j], b[j]) < 0
    return lacking


@njit(cache=True, nogil=True)
def sorted_contains(values: np.ndarray, x: float) -> bool:
    """Membership in a sorted array: ``isin`` with many values."""
    i = np.searchsorted(values, x)
    return i < values.shape[0] and values[i] == x
