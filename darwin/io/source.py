"""The source protocol: a replayable producer of Arrow record batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


def read_from(source: Source, columns: tuple[str, ...], batch_size: int, offset: int = 0) \
        -> Iterator[pa.RecordBatch]:
    """The source's rows from row ``offset`` on: where a checkpoint says a restarted run resumes.

    A source with ``batches_from(columns, batch_size, offset)`` seeks; any other is read
    from the start and the first ``offset`` rows are skipped (replayable sources give the
    same rows every time).
    """
    seek = getattr(source, "batches_from", None)
    if seek is not None:
        yield from seek(columns, batch_size, offset)
        return
    yield from skip_rows(source.batches(columns, batch_size), offset)


def skip_rows(batches: Iterable[pa.RecordBatch], skip: int) -> Iterator[pa.RecordBatch]:
    """``batches`` without their first ``skip`` rows."""
    for batch in batches:
        if skip >= batch.num_rows:
            skip -= batch.num_rows
            continue
        yield batch.slice(skip) if skip else batch
        skip = 0
