"""Many numbers' texts at once, as Flink's CAST(... AS STRING) writes them (``darwin.plan.casts.to_text``).

The compiled engine makes the texts of all the values a batch's kernel lacks in one call, not one Python
call per value: integers by Arrow's cast, timestamps and floats by compiled loops. A float's digits are
Arrow's shortest round-trip digits (those of Python's ``repr``, which ``to_text`` reads), laid out as
Java's ``Double.toString`` lays them out (``darwin.io.float_texts``, which Kafka's CSV values use too).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

from darwin.codegen.functions import dt_day, dt_month, dt_year
from darwin.io.float_texts import MINUS, POINT, built, java_float_texts, put_decimal
from darwin.types import DType

TIMESTAMP_TEXT_BYTES = 32  # '-', a year of up to 9 digits, '-MM-dd HH:mm:ss.SSS'


def number_texts(dtype: DType, values: np.ndarray) -> pa.Array:
    """The texts of ``values`` (int64 integers or milliseconds, or float64) as Flink's CAST writes them."""
    if dtype is DType.INT64:
        return pa.array(values, pa.int64()).cast(pa.string())
    if dtype is DType.FLOAT64:
        return java_float_texts(pa.array(values, pa.float64()))
    if dtype is DType.TIMESTAMP:
        return built(len(values), TIMESTAMP_TEXT_BYTES, lambda o, b: _timestamps(values, o, b))
    raise TypeError(f"no text of {dtype.value} values here")  # a boolean's text is a constant of the kernel


@njit(cache=True, nogil=True)
def _timestamps(values: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """``yyyy-MM-dd HH:mm:ss.SSS`` (a year below 0 with '-', past 9999 with more digits), as ``to_text``."""
    at = 0
    for r in range(values.shape[0]):
        ms = values[r]
        year = dt_year(ms)
        if year < 0:
            out[at] = MINUS
            at += 1
        at = put_decimal(out, at, abs(year), 4)
        out[at] = MINUS
        at = put_decimal(out, at + 1, dt_month(ms), 2)
        out[at] = MINUS
        at = put_decimal(out, at + 1, dt_day(ms), 2)
        secs = ms % 86_400_000 // 1000
        out[at] = ord(" ")
        at = put_decimal(out, at + 1, secs // 3600, 2)
        out[at] = ord(":")
        at = put_decimal(out, at + 1, secs // 60 % 60, 2)
        out[at] = ord(":")
        at = put_decimal(out, at + 1, secs % 60, 2)
        out[at] = POINT
        at = put_decimal(out, at + 1, ms % 1000, 3)
        offsets[r + 1] = at
