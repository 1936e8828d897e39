"""CSV and Arrow IPC sources, and a source over several files read one after another (a directory).

They read lazily, batch by batch, and every problem with a file becomes a ``SourceError`` naming
the file, and for a malformed row or a value that is not of its column's declared type also the
line, the column and the text; a file whose columns differ from the first file's names the column.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from darwin.errors import CheckpointError, SourceError
from darwin.io.source import Source, Split, SplitSource, column_bounds, on_grid, read_from, skip_rows
from darwin.types import Field, Schema

_CSV_COLUMN = re.compile(r"In CSV column #(\d+): ")
_CSV_ROW = re.compile(r"Row #(\d+): ")  # in Arrow's errors only when it reads on one thread
_LONGEST = 200  # characters of Arrow's error text quoted in a message
_CHUNK = 1 << 20  # bytes read at a time when counting lines


def csv_problem(text: str, names: Sequence[str]) -> tuple[str | None, str]:
    """Arrow's CSV error in the user's terms: the column it names (if any) and the problem, without
    Arrow's row count and not a whole file's worth of text when an open quote swallowed the rest."""
    column = None
    named = _CSV_COLUMN.search(text)
    if named:
        text = text.replace(named.group(0), "")
        if int(named.group(1)) < len(names):
            column = names[int(named.group(1))]
    text = _CSV_ROW.sub("", text)
    return column, text if len(text) <= _LONGEST else f"{text[:_LONGEST]}... ({len(text)} characters)"


def data_files(path: str | os.PathLike[str], suffixes: tuple[str, ...], kind: str) -> list[Path]:
    """``path`` itself, or the files of directory ``path`` ending in ``suffixes``, sorted by name
    (names starting with '.' or '_', as writers' staging and marker files do, are skipped)."""
    p = Path(path)
    if p.is_dir():
        found = sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(suffixes)
                       and not f.name.startswith((".", "_")))
        if not found:
            raise SourceError(f"directory {str(p)!r} holds no {kind} files (*{', *'.join(suffixes)})"
                              + _only_below(p, suffixes))
        return found
    if not p.exists():
        raise SourceError(f"{kind} file {str(p)!r} does not exist")
    return [p]


def _only_below(directory: Path, suffixes: tuple[str, ...]) -> str:
    """Why a directory without data files of its own may look as if it had some: its directories
    (Hive-style partitions, dt=.../) hold them."""
    holding = sorted(d.name for d in directory.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))
                     and any(f.name.endswith(suffixes) for f in d.rglob("*")))
    if not holding:
        return ""
    shown = holding[:5] + (["..."] if len(holding) > 5 else [])
    return (f" of its own, only in its directories {shown}, which are not read: read each directory as a source "
            "of its own (a partition's values are in its directory's name, not in its files)")


def _on_grid(batches: Iterator[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """A file's batches as ``batch_size`` rows each, across the reader's own batches: Arrow reads CSV
    in blocks of 1 MB (70,000 rows of two numbers) and an IPC file in the batches it was written in,
    which were the batches a job ran in whatever its batch size."""
    return on_grid(batches, 0, batch_size)


# NULL is an empty unquoted field, of any type: what dw.sinks.CSV writes for NULL (and Spark's
# default nullValue). Arrow's default also reads "nan", "NULL", "NA", ... as NULL, so a float NaN or
# the string "NULL" came back as NULL and a NULL string as ''.
CSV_NULLS: dict[str, Any] = {"null_values": [""], "strings_can_be_null": True, "quoted_strings_can_be_null": False}


class CsvSource:
    """A CSV file read in blocks. ``schema`` (Arrow) fixes the columns read and their types; without
    it the header names the columns and Arrow infers their types (``inferred``; a column without
    values, which Arrow types null, is read as text, as Spark infers it). Columns of the file that
    the schema does not name are not read. ``header=False`` needs a schema: its names, in file order."""

    def __init__(self, path: str | os.PathLike[str], schema: pa.Schema | None = None, *, header: bool = True,
                 delimiter: str = ",") -> None:
        self.path = Path(path)
        self.name = self.path.name
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise SourceError(f"CSV file {str(self.path)!r}: the delimiter is one character, got {delimiter!r}")
        if not header and schema is None:
            raise SourceError(f"CSV file {str(self.path)!r}: without a header row, give a schema naming the "
                              "columns in file order")
        if not self.path.is_file():
            raise SourceError(f"CSV file {str(self.path)!r} does not exist")
        # quoted values may hold line breaks (dw.sinks.CSV writes them so); without this, Arrow splits
        # blocks inside them, and a quote left open swallowed the rest of its block without an error
        self._parse = pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
        self._read = pacsv.ReadOptions(column_names=None if header else schema.names)  # type: ignore[union-attr]
        self._header = self._open(pacsv.ConvertOptions(column_types={}), "read the header of").schema.names
        if schema is not None:
            missing = [n for n in schema.names if n not in self._header]
            if missing:
                raise SourceError(f"CSV file {str(self.path)!r} has no column(s) {missing}; its header names "
                                  f"{self._header}")
            self.arrow_schema = schema
        else:
            self.inferred = self._open(pacsv.ConvertOptions(**CSV_NULLS), "read").schema
            self.arrow_schema = _text_for_null(self.inferred)
        self.schema = Schema.from_arrow(self.arrow_schema)

    def _convert(self, columns: Sequence[str]) -> pacsv.ConvertOptions:
        types = {f.name: f.type for f in self.arrow_schema if f.name in columns}
        return pacsv.ConvertOptions(column_types=types, include_columns=list(columns),
                                    timestamp_parsers=[pacsv.ISO8601, "%Y-%m-%d %H:%M:%S"], **CSV_NULLS)

    def _open(self, convert: pacsv.ConvertOptions, doing: str) -> pacsv.CSVStreamingReader:
        try:
            return pacsv.open_csv(self.path, read_options=self._read, parse_options=self._parse,
                                  convert_options=convert)
        except (pa.ArrowInvalid, OSError) as e:
            raise self._error(e, convert, doing) from None

    def _error(self, e: Exception, convert: pacsv.ConvertOptions, doing: str) -> SourceError:
        """``e`` naming the line (and column) of the problem, found by reading the file again: on one
        thread, as only then does Arrow count rows, so the happy path keeps its threads."""
        if not isinstance(e, pa.ArrowInvalid):
            return SourceError(f"cannot {doing} CSV file {str(self.path)!r}: {e}")
        text = self._serial_error(convert) or str(e)
        row = _CSV_ROW.search(text)
        line = self._line_of(int(row.group(1))) if row else self._unparsable_line()
        if line is not None and not row:  # Arrow lost its place: a quoted value it cannot find the end of
            text = "a quoted value starting on this line is malformed or its quote is not closed"
        column, problem = csv_problem(text, getattr(self, "_header", None) or self._read.column_names or ())
        places = [f"line {line}"] if line is not None else [f"row {row.group(1)} (the header counted)"] if row else []
        if column is not None:
            places.append(f"column {column!r}")
        if places:
            return SourceError(f"cannot read CSV file {str(self.path)!r}: {', '.join(places)}: {problem}")
        return SourceError(f"cannot {doing} CSV file {str(self.path)!r}: {problem}")

    def _serial_error(self, convert: pacsv.ConvertOptions) -> str | None:
        """Arrow's error when read on one thread, which carries the row number ("Row #3")."""
        read = pacsv.ReadOptions(use_threads=False, block_size=self._read.block_size,
                                 column_names=self._read.column_names)
        try:
            for _ in pacsv.open_csv(self.path, read_options=read, parse_options=self._parse,
                                    convert_options=convert):
                pass
        except pa.ArrowInvalid as e:
            return str(e)
        except OSError:  # gone since: the first error is all there is
            pass
        return None

    def _records(self, strict: bool = False) -> Iterator[tuple[int, list[str] | None]]:
        """Python's reading of the file: each record with the line it starts on (a quoted value may
        span lines); a record Python cannot read is None, and the last. Nothing if the file is gone."""
        try:
            f = open(self.path, newline="", encoding="utf-8", errors="replace")
        except OSError:
            return
        with f:
            records = csv.reader(f, delimiter=self._parse.delimiter, strict=strict)
            start = 1
            try:
                for record in records:
                    yield start, record
                    start = records.line_num + 1
            except csv.Error:
                yield start, None

    def _line_of(self, row: int) -> int | None:
        """The line record ``row`` starts on (1-based as Arrow counts: the header included, empty
        lines not); None if Python's reader cannot get there."""
        seen = 0
        for start, record in self._records():
            if record is None:
                return None
            seen += bool(record)
            if seen == row:
                return start
        return None

    def _unparsable_line(self) -> int | None:
        """The line of the first record strict CSV quoting refuses (a quote not closed), if any."""
        return next((start for start, record in self._records(strict=True) if record is None), None)

    def _ends_in_a_quote(self, last: pa.RecordBatch) -> SourceError | None:
        """Arrow takes the end of the file for the end of a quote left open in the last column: the
        value swallows the lines after it. Then the file ends in '"' and that value, quotes doubled
        (a closed quote would end it); a read of that tail tells, whatever the value's size."""
        name = (getattr(self, "_header", None) or self.arrow_schema.names)[-1]
        if last.num_rows == 0 or name not in last.schema.names or not pa.types.is_string(last.schema.field(name).type):
            return None
        value = last.column(name)[last.num_rows - 1].as_py()
        if value is None:
            return None
        tail = b'"' + value.replace('"', '""').encode()
        try:
            with open(self.path, "rb") as f:
                start = f.seek(0, os.SEEK_END) - len(tail)
                if start < 0:
                    return None
                f.seek(start)
                if f.read() != tail:
                    return None
                f.seek(0)
                line = 1 + sum(f.read(min(_CHUNK, start - at)).count(b"\n") for at in range(0, start, _CHUNK))
        except OSError:
            return None
        return SourceError(f"cannot read CSV file {str(self.path)!r}: line {line}, column {name!r}: a quote opened "
                           "there is not closed before the end of the file")

    def _held_back(self, reader: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Arrow's batches, the last one only once it is known not to end in a quote left open."""
        held = None
        for batch in reader:
            if held is not None:
                yield held
            held = batch
        if held is not None:
            error = self._ends_in_a_quote(held)
            if error is not None:
                raise error
            yield held

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        if not columns:  # a query reading no column (count(*)) still needs the row count
            columns = (self.arrow_schema.names[0],)
            for batch in self.batches(columns, batch_size):
                yield batch.select([])
            return
        convert = self._convert(columns)
        reader = self._open(convert, "read")
        order = list(columns)
        try:
            for batch in _on_grid(self._held_back(reader), batch_size):
                yield batch.select(order)
        except pa.ArrowInvalid as e:
            raise self._error(e, convert, "read") from None

    def __repr__(self) -> str:
        return f"CsvSource({str(self.path)!r})"


def _text_for_null(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in schema])


def csv_files_schema(files: Sequence[Path], delimiter: str) -> pa.Schema:
    """The types inferred over all of ``files`` (CSV with a header), as Spark infers a directory's:
    each file's types unified (a column empty in one file takes the others' type; whole numbers in
    one and fractions in another are float64). Files with other columns, or a column whose types
    do not unify (int64 in one file, string in the next), are a ``SourceError`` naming the file."""
    inferred = [CsvSource(f, delimiter=delimiter).inferred for f in files]
    unified = inferred[0]
    for path, schema in zip(files[1:], inferred[1:]):
        if schema.names != unified.names:
            raise SourceError(f"file {str(path)!r} does not have the columns of {str(files[0])!r}: "
                              f"{_names_difference(unified.names, schema.names)}")
        for field in schema:
            before = unified.field(field.name)
            try:
                pa.unify_schemas([pa.schema([before]), pa.schema([field])], promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                raise SourceError(f"file {str(path)!r}: column {field.name!r} is inferred as {field.type} there, "
                                  f"as {before.type} in the files before it; give read_csv a schema naming its "
                                  "type") from None
        unified = pa.unify_schemas([unified, schema], promote_options="permissive")
    return _text_for_null(unified)


class IpcSource:
    """An Arrow IPC file (random-access format, ``.arrow``/``.feather``) or stream (``.arrows``),
    memory-mapped; which of the two is told from the file's magic bytes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.name = self.path.name
        if not self.path.is_file():
            raise SourceError(f"Arrow IPC file {str(self.path)!r} does not exist")
        with pa.memory_map(str(self.path)) as f:
            self.is_file_format = f.read(6) == b"ARROW1"
        self.arrow_schema = self._reader().schema
        self.schema = Schema.from_arrow(self.arrow_schema)

    def _reader(self) -> pa.ipc.RecordBatchFileReader | pa.ipc.RecordBatchStreamReader:
        try:
            source = pa.memory_map(str(self.path))
            return pa.ipc.open_file(source) if self.is_file_format else pa.ipc.open_stream(source)
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(f"cannot read Arrow IPC file {str(self.path)!r}: {e}") from None

    def _all(self) -> Iterator[pa.RecordBatch]:
        reader = self._reader()
        try:
            if isinstance(reader, pa.ipc.RecordBatchFileReader):
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i)
            else:
                yield from reader
        except (pa.ArrowInvalid, OSError) as e:
            raise SourceError(f"error while reading Arrow IPC file {str(self.path)!r}: {e}") from None

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from _on_grid((batch.select(list(columns)) for batch in self._all()), batch_size)

    def __repr__(self) -> str:
        return f"IpcSource({str(self.path)!r})"


class FilesSource:
    """The rows of several sources of one schema, one after another: a directory of files."""

    def __init__(self, parts: Sequence[Path], open_part: Callable[[Path], Source], name: str) -> None:
        self.name = name
        self.paths = [Path(p) for p in parts]
        self.parts = [open_part(p) for p in parts]
        first = _typed_by_others(self.parts)
        nullable = {f.name for f in first.fields if f.nullable}
        for part, path in zip(self.parts[1:], parts[1:]):
            own = _typed_as(part, first)
            if [(f.name, f.dtype) for f in own.fields] != [(f.name, f.dtype) for f in first.fields]:
                raise SourceError(f"file {str(path)!r} does not have the columns of {str(parts[0])!r}: "
                                  f"{_difference(first, own)}")
            nullable |= {f.name for f in part.schema.fields if f.nullable}
        self.schema = Schema(tuple(Field(f.name, f.dtype, f.name in nullable) for f in first.fields),
                             first.unsupported)
        self._agreed = _agreed_types(self.parts)

    def _glued(self, columns: tuple[str, ...]) -> pa.Schema | None:
        """The files' agreed Arrow types of ``columns``, under which a batch may span files, or None
        where files store one of them as different Arrow types (int32 in one, int64 in another): each
        file's batches then pass as they are, as the engine converts each batch on its own."""
        if any(self._agreed.get(c) is None for c in columns):
            return None
        return pa.schema([pa.field(c, self._agreed[c]) for c in columns])

    def _parts_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """Each file's batches from row ``offset``, the files before it skipped unread where every file
        knows its size."""
        starts = self._starts()
        if starts is None:
            yield from skip_rows((b for part in self.parts for b in part.batches(columns, batch_size)), offset)
            return
        for i, part in enumerate(self.parts):
            if offset < starts[i + 1]:
                yield from read_from(part, columns, batch_size, max(0, offset - starts[i]))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.batches_from(columns, batch_size, 0)

    def _starts(self) -> list[int] | None:
        """The first row of each file and the number of rows last, when every file knows its size."""
        sizes = [getattr(part, "num_rows", None) for part in self.parts]
        if any(n is None for n in sizes):
            return None
        return list(accumulate((int(n) for n in sizes), initial=0))  # type: ignore[arg-type]  # no None: checked above

    @property
    def splittable(self) -> bool:
        """Whether its rows can be read in splits: every file can be, and knows its size."""
        return self._starts() is not None and all(isinstance(p, SplitSource) for p in self.parts)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset``, in batches of ``batch_size`` rows counted from the first file's first row,
        spanning files as a file's batches span its row groups: a directory of many small files is read
        in whole batches, not a batch or less a file (400 files of 10,000 rows ran 4.7x slower than one
        file of their rows, per-batch costs paid 400 times, and two workers fell back to one)."""
        read = self._parts_from(columns, batch_size, offset)
        target = self._glued(columns)
        yield from read if target is None else on_grid((_as(b, target) for b in read), offset, batch_size)

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        """Each file's splits in turn, the file's index first in ``where``; a split starting off the grid
        of ``batches_from`` continues the one before, across files too."""
        starts = self._starts()
        assert starts is not None, "splits() of files that do not know their sizes"
        glued, first = self._glued(columns) is not None, True
        for i, part in enumerate(self.parts):
            if offset < starts[i + 1]:
                assert isinstance(part, SplitSource)
                for s in part.splits(columns, batch_size, max(0, offset - starts[i]), split_rows):
                    start = starts[i] + s.start
                    continues = (not first and start % batch_size != 0) if glued else s.continues
                    yield Split(start, s.rows, (i, *s.where), continues)
                    first = False

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        """The split's rows from its file, cut on the grid of ``batches_from``."""
        i = split.where[0]
        part = self.parts[i]
        assert isinstance(part, SplitSource)
        start = self._starts()[i]  # type: ignore[index]
        target = self._glued(columns)
        local = Split(split.start - start, split.rows, split.where[1:], split.continues and target is None)
        read = part.read_split(local, columns, batch_size)
        return read if target is None else list(on_grid((_as(b, target) for b in read), split.start, batch_size))

    def bounds(self, column: str) -> tuple[int, int] | None:
        """Exact (min, max) of an integer column over every file, where each file knows its own cheaply
        (Parquet statistics): a window over a directory then takes the dense ring one file takes."""
        found = [column_bounds(part, column) for part in self.parts]
        if not found or any(b is None for b in found):
            return None
        return min(b[0] for b in found if b is not None), max(b[1] for b in found if b is not None)

    # -- checkpoints: a resume counts rows from the first file, so the files read must be as they were
    def position_at(self, offset: int) -> dict[str, Any]:
        """The files the first ``offset`` rows came from (all listed, where files do not know their
        sizes), by name and size in bytes, for ``resume`` to check."""
        starts = self._starts()
        read = self.paths if starts is None else [p for p, first in zip(self.paths, starts) if first < offset]
        return {"files": [[p.name, p.stat().st_size] for p in read]}

    def resume(self, position: dict[str, Any], offset: int) -> None:
        """Refuse to resume where the files the checkpoint read from are gone, changed in size, or have
        others sorting among them: the offset would then count other rows, reading some twice and
        losing others, as Flink's file source, which keeps the files it read, never does."""
        read = [(str(name), int(size)) for name, size in position.get("files", [])]
        now = [(p.name, p.stat().st_size) for p in self.paths[:len(read)]]
        for (name, size), (name_now, size_now) in zip(read, now + [("", -1)] * (len(read) - len(now))):
            if (name, size) == (name_now, size_now):
                continue
            what = (f"{name!r} is gone" if name_now == "" else f"{name_now!r} now comes where {name!r} was"
                    if name_now != name else f"{name!r} changed ({size} -> {size_now} bytes)")
            raise CheckpointError(
                f"source {self.name!r}: the checkpoint read its first {offset} rows from {len(read)} file(s), and "
                f"they changed since: {what}. Resuming would count rows twice or lose them. Add new files under "
                "names that sort after the files read, or start the job afresh (darwin reset, or a new "
                "checkpoint directory)")

    def __repr__(self) -> str:
        return f"FilesSource({self.name!r}, {len(self.parts)} files)"


def _agreed_types(parts: Sequence[Source]) -> dict[str, pa.DataType | None]:
    """Each column's Arrow type in every file that types it (a column of only NULLs, typed null, takes
    the others'), or None where files disagree."""
    agreed: dict[str, pa.DataType | None] = {}
    schemas = [getattr(part, "arrow_schema", None) for part in parts]
    for f in (f for schema in schemas if schema is not None for f in schema):
        known = agreed.setdefault(f.name, f.type)
        if known is not None and known != f.type and not pa.types.is_null(f.type):
            agreed[f.name] = f.type if pa.types.is_null(known) else None
    return {} if any(schema is None for schema in schemas) else agreed


def _as(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch``'s arrays in ``target``'s order, nullable and without metadata, for batches of several
    files to be concatenated; a column of only NULLs, typed null, takes the files' agreed type. Other
    columns keep the type they were read as (a file's INT96 times are read as milliseconds where its
    schema says nanoseconds, alike in every file)."""
    arrays = [batch.column(f.name) for f in target]
    arrays = [pa.nulls(len(a), f.type) if pa.types.is_null(a.type) else a for a, f in zip(arrays, target)]
    schema = pa.schema([pa.field(f.name, a.type) for a, f in zip(arrays, target)])
    return batch if batch.schema.equals(schema) else pa.RecordBatch.from_arrays(arrays, schema=schema)


def _untyped(part: Source) -> set[str]:
    """The columns of a file Arrow types null: they hold only NULLs, so no type was stored."""
    arrow_schema = getattr(part, "arrow_schema", None)
    return set() if arrow_schema is None else {f.name for f in arrow_schema if pa.types.is_null(f.type)}


def _typed_by_others(parts: Sequence[Source]) -> Schema:
    """The first part's schema, where each column of only NULLs has the type the first later part
    that types it gives it (as a directory's column empty in one file is read with the others' type)."""
    first = parts[0].schema
    untyped = _untyped(parts[0])
    fields = []
    for f in first.fields:
        typed = (g for part in parts[1:] if f.name not in _untyped(part)
                 for g in part.schema.fields if g.name == f.name)
        fields.append(Field(f.name, next(typed, f).dtype, f.nullable) if f.name in untyped else f)
    return Schema(tuple(fields), first.unsupported)


def _typed_as(part: Source, unified: Schema) -> Schema:
    """A part's schema, its columns of only NULLs given the directory's type for them."""
    types = {f.name: f.dtype for f in unified.fields}
    untyped = _untyped(part)
    return Schema(tuple(Field(f.name, types.get(f.name, f.dtype), f.nullable) if f.name in untyped else f
                        for f in part.schema.fields), part.schema.unsupported)


def _difference(want: Schema, got: Schema) -> str:
    """The first column that differs, in words."""
    theirs = {f.name: f for f in got.fields}
    for f in want.fields:
        if f.name not in theirs:
            return f"it has no column {f.name!r}"
        if theirs[f.name].dtype is not f.dtype:
            return f"column {f.name!r} is {theirs[f.name].dtype.value} there, {f.dtype.value} in the first"
    return _names_difference(want.names, got.names)


def _names_difference(want: Sequence[str], got: Sequence[str]) -> str:
    missing = [n for n in want if n not in got]
    if missing:
        return f"it has no column {missing[0]!r}"
    extra = [n for n in got if n not in want]
    return f"it has the extra column(s) {extra}" if extra else "its columns are in another order"
