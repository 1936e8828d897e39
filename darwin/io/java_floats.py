"""Floats as Java writes them (``Double.toString``), which Spark and Flink read back: NaN and the
infinities as ``NaN``, ``Infinity``, ``-Infinity``, and, for partition directories, every digit too.

Arrow spells them ``nan``, ``inf`` and ``-inf``, which Java's ``Double.parseDouble`` (Spark's and
Flink's CSV and JSON readers) does not parse: Spark read them as NULL, Flink refused the row. Every
text Darwin writes for others to read (CSV files, Kafka's CSV, JSON and raw values and keys) takes
these words; JSON, which has no such literals, quotes them, as Jackson (Flink, Spark) does.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def java_text(column: pa.Array) -> pa.Array:
    """Floats as text, NaN and infinities as Java's ``Double.toString`` writes them; NULL stays NULL."""
    text = column.cast(pa.string())
    if not has_specials(column):
        return text
    for mask, word in ((pc.is_nan(column), "NaN"), (pc.equal(column, math.inf), "Infinity"),
                       (pc.equal(column, -math.inf), "-Infinity")):
        text = pc.if_else(mask, pa.scalar(word), text)
    return text


def has_specials(column: pa.Array) -> bool:
    """Whether a float column holds a NaN or an infinity."""
    return bool(pc.any(pc.invert(pc.is_finite(column))).as_py())


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` (Spark's cast to string) writes it: the shortest digits
    that read back as it (Python's ``repr``'s), in scientific notation from 1e7 and below 1e-3
    (``1.0E7``, ``1.0E-4``), with at least one fractional digit (``100.0``); ``NaN``, ``Infinity``.
    (Java before 19 wrote a few values with more digits than needed, e.g. 1e23 as 9.999999999999999E22,
    and Java gives the smallest subnormals two digits: 4.9E-324 where this writes 5.0E-324.)"""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)  # finite
    text = "".join(map(str, digits))
    power = len(digits) + exponent - 1  # of the first digit
    if -3 <= power < 7:
        whole = text[:power + 1].ljust(power + 1, "0") if power >= 0 else "0"
        fraction = text[power + 1:] if power >= 0 else "0" * (-power - 1) + text
        body = f"{whole}.{fraction or '0'}"
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{power}"
    return ("-" if sign else "") + body
