"""A float's NaN and infinities as Java writes and parses them: ``NaN``, ``Infinity``, ``-Infinity``.

Arrow spells them ``nan``, ``inf`` and ``-inf``, which Java's ``Double.parseDouble`` (Spark's and
Flink's CSV and JSON readers) does not parse: Spark read them as NULL, Flink refused the row. Every
text Darwin writes for others to read (CSV files, Kafka's CSV, JSON and raw values and keys) takes
these words; JSON, which has no such literals, quotes them, as Jackson (Flink, Spark) does.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def java_text(column: pa.Array) -> pa.Array:
    """Floats as text, NaN and infinities as Java's ``Double.toString`` writes them; NULL stays NULL."""
    text = column.cast(pa.string())
    for mask, word in ((pc.is_nan(column), "NaN"), (pc.equal(column, math.inf), "Infinity"),
                       (pc.equal(column, -math.inf), "-Infinity")):
        text = pc.if_else(mask, pa.scalar(word), text)
    return text


def has_specials(column: pa.Array) -> bool:
    """Whether a float column holds a NaN or an infinity."""
    return bool(pc.any(pc.invert(pc.is_finite(column))).as_py())
