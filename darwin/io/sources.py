"""Built-in sources: in-memory Arrow data, Parquet files, batch factories."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from darwin.errors import SchemaError, SourceError
from darwin.io.source import Split, on_grid, skip_rows
from darwin.types import Schema


def _non_null_columns(table: pa.Table) -> frozenset[str]:
    return frozenset(n for n, c in zip(table.column_names, table.columns) if c.null_count == 0)


class ArrowSource:
    """Rows of an in-memory ``pyarrow.Table``; columns without nulls are typed NOT NULL."""

    def __init__(self, table: pa.Table, name: str = "arrow") -> None:
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if not isinstance(table, pa.Table):
            raise SourceError(f"from_arrow() expects a pyarrow.Table or RecordBatch, got {type(table).__name__}")
        self.table = table
        self.name = name
        self.schema = Schema.from_arrow(table.schema, _non_null_columns(table))
        self._bounds: dict[str, tuple[int, int] | None] = {}  # the table never changes: found once per column

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.batches_from(columns, batch_size, 0)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset``, in batches of ``batch_size`` rows counted from the table's first row,
        whatever its chunks: a table of many small chunks (``pq.read_table``, ``concat_tables``) is
        read in batches of the size configured, not of its chunks'."""
        yield from self._rows(columns, batch_size, offset, self.table.num_rows - offset)

    def _rows(self, columns: tuple[str, ...], batch_size: int, start: int, rows: int) -> Iterator[pa.RecordBatch]:
        """Rows [start, start + rows) cut on the batch grid: zero-copy slices of a chunk, pieces of
        several chunks combined into one batch."""
        if rows <= 0:
            return
        # slice with its length: a table without columns sliced to its end keeps all its rows
        pieces = self.table.select(list(columns)).slice(start, rows).to_batches()
        yield from on_grid(pieces, start, batch_size)

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        """Slices of whole batches of the in-order read (at least ``split_rows`` rows a split)."""
        start, end = offset, self.table.num_rows
        at = start
        while at < end:
            at = min(end, (at // batch_size + 1) * batch_size)  # where the in-order read's batch ends
            if at - start >= split_rows or at == end:
                yield Split(start, at - start, ())
                start = at

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        return list(self._rows(columns, batch_size, split.start, split.rows))

    def bounds(self, column: str) -> tuple[int, int] | None:
        if column not in self._bounds:
            arr = self.table.column(column)
            if not pa.types.is_integer(arr.type) or arr.null_count or len(arr) == 0:
                self._bounds[column] = None
            else:
                mm = pc.min_max(arr)
                self._bounds[column] = int(mm["min"].as_py()), int(mm["max"].as_py())
        return self._bounds[column]

    def __repr__(self) -> str:
        return f"ArrowSource({self.name}, {self.table.num_rows} rows)"


class ParquetSource:
    """A Parquet file read in batches, reading only the columns a query uses.

    INT96 timestamps (Spark's, Hive's and Impala's legacy type) are read in milliseconds: Arrow's
    default, nanoseconds, wraps dates before 1677 or after 2262 around without an error.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.name = self.path.name
        try:
            with pq.ParquetFile(self.path) as opened:  # the footer read once, for both
                meta, arrow_schema = opened.metadata, opened.schema_arrow
        except FileNotFoundError:
            raise SourceError(f"Parquet file {str(self.path)!r} does not exist") from None
        except (OSError, pa.ArrowInvalid) as e:
            raise SourceError(f"cannot read Parquet file {str(self.path)!r}: {e}") from None
        self._meta = meta
        self.arrow_schema = arrow_schema
        self._leaves = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        self.schema = Schema.from_arrow(arrow_schema, frozenset(
            f.name for f in arrow_schema if not f.nullable or self._proves(f.name, _no_nulls)))
        self.num_rows = meta.num_rows

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.batches_from(columns, batch_size, 0)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset``, cut where the read from the file's first row cuts (a run resumed from a
        checkpoint reads the batches the uninterrupted run read); whole row groups before it are
        skipped unread."""
        starts = self._group_starts()
        first = self._group_of(starts, offset)
        if first is None:
            return
        groups = list(range(first, len(starts) - 1))
        try:
            f = self._file()
            if not columns:  # each group's rows are batched on their own
                yield from skip_rows(f.iter_batches(batch_size=batch_size, columns=[], row_groups=groups),
                                     offset - starts[first])
                return
            # batches span row groups, counted from the first group read: cut again from the file's first row
            read = skip_rows(f.iter_batches(batch_size=batch_size, columns=list(columns), row_groups=groups),
                             offset - starts[first])
            yield from on_grid(read, offset, batch_size)
        except (OSError, pa.ArrowInvalid) as e:
            raise SourceError(f"error while reading Parquet file {str(self.path)!r}: {e}") from None

    @staticmethod
    def _group_of(starts: list[int], row: int) -> int | None:
        """The row group holding ``row`` (None past the last row)."""
        return next((g for g in range(len(starts) - 1) if row < starts[g + 1]), None)

    def _file(self) -> pq.ParquetFile:
        """The file opened with the footer already read (a directory of small files is opened file by file)."""
        return pq.ParquetFile(self.path, metadata=self._meta, coerce_int96_timestamp_unit="ms")

    def _group_starts(self) -> list[int]:
        """The first row of each row group, and the number of rows last."""
        return list(accumulate((self._meta.row_group(g).num_rows for g in range(self._meta.num_row_groups)),
                               initial=0))

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        """Whole row groups (at least ``split_rows`` rows a split), from the one holding row ``offset``.

        The in-order read's batches are ``batch_size`` rows counted from the file's first row and span
        row groups (not when no column is read: then each group's rows are batched on their own), so a
        split starting off that grid continues the previous split's last batch.
        """
        starts = self._group_starts()
        first = self._group_of(starts, offset)
        if first is None:
            return
        group = first
        while group < len(starts) - 1:
            last = group + 1
            while last < len(starts) - 1 and starts[last] - starts[group] < split_rows and columns:
                last += 1
            start = max(offset, starts[group])
            continues = bool(columns) and group != first and start % batch_size != 0
            yield Split(start, starts[last] - start, (group, last), continues)
            group = last

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        """The split's row groups decoded on this thread, cut at the in-order read's batch boundaries."""
        group, last = split.where
        try:
            f = self._file()
            if not columns:
                return list(skip_rows(f.iter_batches(batch_size=batch_size, columns=[],
                                                     row_groups=list(range(group, last)), use_threads=False),
                                      split.start - self._group_starts()[group]))
            table = f.read_row_groups(list(range(group, last)), columns=list(columns), use_threads=False)
        except (OSError, pa.ArrowInvalid) as e:
            raise SourceError(f"error while reading Parquet file {str(self.path)!r}: {e}") from None
        base = split.start + split.rows - table.num_rows  # the row the table begins with
        out = []
        at, end = split.start, split.start + split.rows
        while at < end:
            cell_end = min(end, (at // batch_size + 1) * batch_size)
            pieces = table.slice(at - base, cell_end - at).to_batches()
            out.append(pieces[0] if len(pieces) == 1 else pa.concat_batches(pieces))
            at = cell_end
        return out

    def bounds(self, column: str) -> tuple[int, int] | None:
        """From row-group statistics: metadata only, no data read."""
        if not self._proves(column, _has_int_bounds):
            return None
        stats = [s for s in self._stats(column) if s is not None]  # _has_int_bounds: every row group has some
        return min(s.min for s in stats), max(s.max for s in stats)

    def _stats(self, column: str) -> list[pq.Statistics | None]:
        leaf = self._leaves[column]
        return [self._meta.row_group(g).column(leaf).statistics for g in range(self._meta.num_row_groups)]

    def _proves(self, column: str, test: Callable[[pq.Statistics | None], bool]) -> bool:
        """Whether every row group's statistics of ``column`` pass ``test`` (and there are some)."""
        if column not in self._leaves or self._meta.num_row_groups == 0:
            return False
        return all(test(s) for s in self._stats(column))

    def __repr__(self) -> str:
        return f"ParquetSource({str(self.path)!r})"


def _no_nulls(s: pq.Statistics | None) -> bool:
    return s is not None and s.has_null_count and s.null_count == 0


def _has_int_bounds(s: pq.Statistics | None) -> bool:
    return s is not None and s.has_min_max and isinstance(s.min, int)


class BatchSource:
    """Rows produced by a factory of record batches (generators, tests, custom inputs).

    The factory is called once per run, so the rows must be the same each call.
    """

    def __init__(self, schema: pa.Schema, factory: Callable[[], Iterable[pa.RecordBatch]],
                 name: str = "batches", non_null: Iterable[str] = ()) -> None:
        self.arrow_schema = schema
        self.factory = factory
        self.name = name
        self.schema = Schema.from_arrow(schema, frozenset(non_null))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        for batch in self.factory():
            if batch.schema.names != self.arrow_schema.names:
                missing = set(self.arrow_schema.names) - set(batch.schema.names)
                raise SchemaError(f"source {self.name!r} produced a batch with columns "
                                  f"{batch.schema.names}; expected {self.arrow_schema.names}"
                                  + (f" (missing {sorted(missing)})" if missing else ""))
            if batch.num_rows == 0:
                yield batch.select(list(columns))
                continue
            for start in range(0, batch.num_rows, batch_size):
                yield batch.slice(start, batch_size).select(list(columns))

    def __repr__(self) -> str:
        return f"BatchSource({self.name})"
