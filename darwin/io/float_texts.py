"""Java's texts of many floats at once (``Double.toString``), by a compiled loop over Arrow's shortest digits.

Arrow's cast writes a float's shortest round-trip digits (``1``, ``1e+20``, ``0.000025``); Java lays the same
digits out as ``1.0``, ``1.0E20``, ``2.5E-5``. Flink's CAST to STRING (``darwin.runtime.number_texts``) and its
csv format (Kafka's CSV values) write floats so. Numba loads with the first call, not with this module's users'
imports (its CPU target is fixed at the first compiled function).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

FLOAT_TEXT_BYTES = 32  # the longest Java float text: '-', 17 digits, '.', 'E-324' (or '0.00' and 17 digits)

MINUS, POINT, _ZERO, _E = ord("-"), ord("."), ord("0"), ord("e")


def java_float_texts(floats: pa.Array) -> pa.Array:
    """Java's ``Double.toString`` of each value of a float64 column (``Float.toString`` of a float32 one: Arrow's
    shortest digits are those of the column's own width); NULL stays NULL."""
    shortest = floats.cast(pa.large_string())
    _, offsets, data = shortest.buffers()
    n = len(floats)
    arrays = (np.frombuffer(offsets, np.int64, n + 1), np.frombuffer(data, np.uint8)
              if data is not None else np.zeros(0, np.uint8))
    values = floats.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    texts = built(n, FLOAT_TEXT_BYTES, lambda o, b: _java_floats(values, *arrays, o, b))
    return texts if floats.null_count == 0 else pc.if_else(floats.is_valid(), texts, pa.scalar(None, pa.string()))


def built(n: int, most: int, fill: Callable[[np.ndarray, np.ndarray], object]) -> pa.Array:
    """A string array of ``n`` texts of at most ``most`` bytes each, which ``fill(offsets, bytes)`` writes."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    data = np.empty(n * most, dtype=np.uint8)
    fill(offsets, data)
    used = data[:offsets[-1]]
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(used)).cast(pa.string())


@njit(cache=True, nogil=True)
def _put(out: np.ndarray, at: int, text: bytes) -> int:
    for j in range(len(text)):
        out[at + j] = text[j]
    return at + len(text)


@njit(cache=True, nogil=True)
def put_decimal(out: np.ndarray, at: int, value: int | np.int64, width: int) -> int:
    """``value`` (not negative) in decimal, zero-padded to ``width`` digits."""
    count, rest = 1, value // 10
    while rest > 0:
        count += 1
        rest //= 10
    count = max(count, width)
    for j in range(count - 1, -1, -1):
        out[at + j] = _ZERO + value % 10
        value //= 10
    return at + count


@njit(cache=True, nogil=True)
def _java_floats(values: np.ndarray, offsets: np.ndarray, data: np.ndarray, out_offsets: np.ndarray,
                 out: np.ndarray) -> None:
    """Java's ``Double.toString`` of each value, from Arrow's shortest text of it (``1e+20``, ``0.000025``,
    ``-0``): its significant digits, then plain from 1e-3 up to 1e7, with at least one fractional digit,
    else one digit, a fraction and ``E`` with the power of ten; ``NaN``, ``Infinity``, ``-Infinity``."""
    digits = np.empty(FLOAT_TEXT_BYTES, dtype=np.uint8)
    at = 0
    for r in range(values.shape[0]):
        v = values[r]
        if v != v:
            at = _put(out, at, b"NaN")
        elif v == np.inf:
            at = _put(out, at, b"Infinity")
        elif v == -np.inf:
            at = _put(out, at, b"-Infinity")
        else:
            at = _java_float(data, offsets[r], offsets[r + 1], digits, out, at)
        out_offsets[r + 1] = at


@njit(cache=True, nogil=True)
def _java_float(data: np.ndarray, start: int, end: int, digits: np.ndarray, out: np.ndarray, at: int) -> int:
    """One finite float's Java text from its shortest text ``data[start:end]``, written at ``at``."""
    if data[start] == MINUS:
        out[at] = MINUS
        at += 1
        start += 1
    count, point, j = 0, -1, start
    while j < end and data[j] != _E:  # the digits, and where the point stands among them
        if data[j] == POINT:
            point = count
        else:
            digits[count] = data[j]
            count += 1
        j += 1
    if point < 0:
        point = count
    exponent, negative = 0, False
    if j < end:
        j += 1
        if data[j] == MINUS or data[j] == ord("+"):
            negative = data[j] == MINUS
            j += 1
        while j < end:
            exponent = 10 * exponent + data[j] - _ZERO
            j += 1
    first, last = 0, count
    while first < count and digits[first] == _ZERO:
        first += 1
    while last > first and digits[last - 1] == _ZERO:
        last -= 1
    if first == last:
        return _put(out, at, b"0.0")
    power = point - first - 1 + (-exponent if negative else exponent)  # of the first significant digit
    if -3 <= power < 7:
        if power < 0:
            at = _put(out, at, b"0.")
            for _ in range(-power - 1):
                out[at] = _ZERO
                at += 1
            for k in range(first, last):
                out[at] = digits[k]
                at += 1
            return at
        for k in range(power + 1):  # the whole part, padded with zeros
            out[at] = digits[first + k] if first + k < last else _ZERO
            at += 1
        out[at] = POINT
        at += 1
        if first + power + 1 >= last:
            out[at] = _ZERO
            return at + 1
        for k in range(first + power + 1, last):
            out[at] = digits[k]
            at += 1
        return at
    out[at] = digits[first]
    out[at + 1] = POINT
    at += 2
    if first + 1 == last:
        out[at] = _ZERO
        at += 1
    for k in range(first + 1, last):
        out[at] = digits[k]
        at += 1
    out[at] = ord("E")
    if power < 0:
        out[at + 1] = MINUS
        at += 1
    return put_decimal(out, at + 1, abs(power), 1)
