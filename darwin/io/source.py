"""The source protocol: a replayable producer of Arrow record batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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


def on_grid(batches: Iterable[pa.RecordBatch], first_row: int, batch_size: int) -> Iterator[pa.RecordBatch]:
    """``batches``, whose first row is row ``first_row`` of the source, cut into the batches of
    ``batch_size`` rows counted from its row 0 (the first may be shorter). Batches already on that
    grid pass as they are."""
    held: list[pa.RecordBatch] = []
    at = first_row  # the source's row the next row read is
    for batch in batches:
        done = 0
        while done < batch.num_rows:
            take = min(batch.num_rows - done, (at // batch_size + 1) * batch_size - at)
            held.append(batch if take == batch.num_rows else batch.slice(done, take))
            done += take
            at += take
            if at % batch_size == 0:
                yield held[0] if len(held) == 1 else pa.concat_batches(held)
                held = []
    if held:
        yield held[0] if len(held) == 1 else pa.concat_batches(held)


@dataclass(frozen=True)
class Split:
    """A stretch of a source that can be read on its own, on any thread: rows [start, start + rows).

    ``where`` is the source's own locator (row groups, an event-id range, a file and its row groups).
    ``continues`` says its first batch is the rest of the previous split's last batch: a batch of the
    in-order read that spans the boundary (Parquet batches span row groups), glued back by ``joined``.
    """

    start: int
    rows: int
    where: tuple[int, ...]
    continues: bool = False


@runtime_checkable
class SplitSource(Protocol):
    """A source whose rows can be read in splits side by side (optional, beside ``Source``).

    Reading ``splits(columns, batch_size, offset, split_rows)`` one after another with
    ``read_split`` and gluing them (``joined``) gives exactly the batches of
    ``read_from(source, columns, batch_size, offset)``: same rows, same batch boundaries.
    ``split_rows`` is about how many rows a split should hold; the source rounds it to what
    it can read on its own (whole row groups, whole batches).
    """

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        ...

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        ...


def joined(reads: Iterable[tuple[Split, list[pa.RecordBatch]]]) -> Iterator[pa.RecordBatch]:
    """The batches of splits read in order, a batch spanning two splits glued back into one.

    The last batch of a split is held until the next split says whether it continues it.
    """
    held: pa.RecordBatch | None = None
    for split, batches in reads:
        if not batches:
            continue
        if held is not None:
            if split.continues:  # a batch may span several short splits: it stays held until complete
                batches = [pa.concat_batches([held, batches[0]]), *batches[1:]]
            else:
                yield held
        yield from batches[:-1]
        held = batches[-1]
    if held is not None:
        yield held


def splittable(source: object) -> bool:
    """Whether ``source`` can be read in splits (a source of several files can only if every file can)."""
    return isinstance(source, SplitSource) and bool(getattr(source, "splittable", True))


def read_splits(source: SplitSource, columns: tuple[str, ...], batch_size: int, offset: int,
                split_rows: int) -> Iterator[pa.RecordBatch]:
    """A split source's batches read split by split on this thread (what the threads' read must equal)."""
    yield from joined((s, source.read_split(s, columns, batch_size))
                      for s in source.splits(columns, batch_size, offset, split_rows))
