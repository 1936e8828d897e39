"""Hive-style partition directories (``dt=2015-07-15/hm=10%3A00``), as Spark's ``partitionBy`` writes them.

A value is rendered as Spark casts it to a string (``true``, ``2015-07-15 10:00:00``), then
escaped as Hive and Spark escape path names: ``/``, ``:``, ``=``, ``%``, control characters and
a few more become ``%XX``, so Spark, Hive and ``pyarrow.dataset`` read the values back. A NULL or
empty value is ``__HIVE_DEFAULT_PARTITION__`` (Spark reads it as NULL). A directory name is
always ``<column>=<value>`` with no ``/`` or NUL in it, so it can never be ``.`` or ``..`` or
reach outside the output directory, whatever the data holds.

Examples
--------
>>> segment("hm", "10:00")
'hm=10%3A00'
>>> segment("dt", "../../etc")
'dt=..%2F..%2Fetc'
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.io.java_floats import java_double
from darwin.timestamps import civil

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_EPOCH = _dt.datetime(1970, 1, 1)
# Spark's ExternalCatalogUtils.escapePathName set (as Hive's FileUtils), and NUL, which no path may hold
_ESCAPED = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape(text: str) -> str:
    """``text`` with every character a path name must not hold as ``%XX``."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def render_timestamp(value: int, unit: str = "ms") -> str:
    """A timestamp (``value`` ``unit``s since the epoch, UTC) as Spark casts it to a string, for any
    year: ``0001-01-01 00:00:00.005`` (the year zero-padded to four digits: glibc's ``%Y`` does not
    pad), ``0000-...`` and ``-0001-...`` before it, ``+10000-...`` past 9999; a fraction of a second
    in microseconds, without trailing zeros."""
    per_second = _PER_SECOND[unit]
    seconds, fraction = divmod(value, per_second)
    days, in_day = divmod(seconds, 86_400)
    y, m, d = civil(days)
    year = f"{y:04d}" if 0 <= y <= 9999 else f"-{-y:04d}" if y < 0 else f"+{y}"
    text = f"{year}-{m:02d}-{d:02d} {in_day // 3600:02d}:{in_day // 60 % 60:02d}:{in_day % 60:02d}"
    micros = fraction * 1_000_000 // per_second
    return text + f".{micros:06d}".rstrip("0") if micros else text


def render(value: Any) -> str | None:
    """A partition value as Spark casts it to a string; None for NULL."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):  # Spark: 2015-07-15 10:00:00, fractions without trailing zeros
        since = value - (_EPOCH if value.tzinfo is None else _EPOCH.replace(tzinfo=_dt.UTC))
        return render_timestamp((since.days * 86_400 + since.seconds) * 1_000_000 + since.microseconds, "us")
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def segment(column: str, value: str | None) -> str:
    """The directory of one partition column's value."""
    return f"{escape(column)}={DEFAULT_PARTITION if not value else escape(value)}"


def split(batch: pa.RecordBatch, columns: tuple[str, ...]) -> Iterator[tuple[str, pa.RecordBatch]]:
    """``batch`` cut into its partitions: (relative directory, rows without the partition columns),
    rows in their order within each partition. Values are rendered once per distinct value."""
    codes, names = [], []
    for c in columns:
        encoded = pc.dictionary_encode(batch.column(c))
        dirs: dict[str, int] = {}  # values that render alike (NULL and '') share a directory
        values = encoded.dictionary
        if pa.types.is_timestamp(values.type):  # from the integers: Python's datetime stops at years 1 and 9999
            unit = values.type.unit
            texts = [None if v is None else render_timestamp(v, unit) for v in values.cast(pa.int64()).to_pylist()]
        else:
            texts = [render(v) for v in values.to_pylist()]
        code = [dirs.setdefault(segment(c, text), len(dirs)) for text in texts]
        code.append(dirs.setdefault(segment(c, None), len(dirs)))
        indices = encoded.indices.fill_null(len(code) - 1).to_numpy(zero_copy_only=False)
        codes.append(np.asarray(code, np.int64)[indices])
        names.append(list(dirs))
    rest = batch.select([n for n in batch.schema.names if n not in columns])
    combos, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(len(combos) + 1))
    rows = rest.take(pa.array(order)) if len(combos) > 1 else rest
    for i, combo in enumerate(combos):
        path = "/".join(names[j][code] for j, code in enumerate(combo))
        if len(combos) == 1:
            yield path, rows
        else:
            yield path, rows.slice(int(starts[i]), int(starts[i + 1] - starts[i]))
