"""The source protocol: a replayable producer of Arrow record batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import pyarrow as pa

from darwin.types import Schema


@runtime_checkable
class Source(Protocol):
    """Where a table's rows come from.

    ``batches`` may be called more than once and must yield the same rows each
    time, so a query can be re-run or replayed.
    """

    name: str
    schema: Schema

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        """Record batches holding exactly ``columns``, in order, of at most ``batch_size`` rows."""
        ...


def column_bounds(source: Source, column: str) -> tuple[int, int] | None:
    """Exact (min, max) of an integer column of ``source`` if it knows them cheaply, else None."""
    bounds = getattr(source, "bounds", None)
    return bounds(column) if bounds is not None and column in source.schema else None
