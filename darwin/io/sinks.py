"""Sinks: where a query's results go. File sinks (Parquet, CSV) commit output only when a
checkpoint covers it, so a crash and restart gives exactly-once output.

A file sink writes in one of three modes:

- ``append``: the rows as they come, for append-only results (windowed aggregations, inner
  joins...). Each epoch (the input between two checkpoints) is a file ``part-<epoch>.<ext>``.
- ``changelog``: every change of the result, its kind (+I, -U, +U, -D) in a column ``op``,
  as parts like ``append``. The default for an updating result; over an append-only one every
  row is +I.
- ``upsert``: the latest row per key (``key=``, or the result's own key: an aggregation's group
  keys), committed with each checkpoint as one file ``snapshot.<ext>`` that is replaced
  atomically, so a reader always sees the whole snapshot of the last checkpoint.

``partition_by=[...]`` writes parts into Hive-style directories, ``dt=2015-07-15/hm=10%3A00/``,
as Spark's ``partitionBy`` does (see ``darwin.io.partitions``); the partition columns are not
repeated inside the files. How files are staged, committed and owned: ``darwin.io.output_dir``.

Examples
--------
>>> import darwin as dw
>>> dw.sinks.Parquet("out/").describe()
'parquet out'
>>> dw.sinks.CSV("out/", partition_by=["dt", "hm"]).describe()
'csv out partitioned by dt, hm'
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from darwin.errors import RESET_HINT, SinkError
from darwin.files import crc32_of, fsync_path
from darwin.io.java_floats import has_specials, java_text
from darwin.io.output_dir import OutputDirectory, read_marker, remove_output
from darwin.io.partitions import split
from darwin.io.upsert import Snapshot

__all__ = ["CSV", "CHANGE_COLUMN", "MODES", "Blackhole", "Collect", "FileSink", "Kafka", "Parquet", "ResultSpec",
           "Sink", "read_marker", "remove_output"]

log = logging.getLogger(__name__)

CHANGE_COLUMN = "op"  # an updating result's change kind (+I, -U, +U, -D), in what sinks are given
MODES = ("append", "changelog", "upsert")
_INSERT = "+I"


def _no_key() -> tuple[str, ...] | None:
    return None


@dataclass(frozen=True)
class ResultSpec:
    """What a sink is given to write: the result's schema (an updating result's ends with the
    change column ``op``), the late rows' schema if the query keeps them, whether the result
    updates, and ``find_key``, which derives the result's unique key from the plan (None if it
    has none; called only by sinks that need one)."""

    schema: pa.Schema
    late_schema: pa.Schema | None = None
    updating: bool = False
    find_key: Callable[[], tuple[str, ...] | None] = _no_key

    @property
    def data_schema(self) -> pa.Schema:
        """The result's own columns, without the change column."""
        return self.schema.remove(self.schema.get_field_index(CHANGE_COLUMN)) if self.updating else self.schema


@runtime_checkable
class Sink(Protocol):
    """Where a query's output goes, with two-phase commit around checkpoints."""

    def check(self, result: ResultSpec) -> None:
        """Refuse (``SinkError``) a result this sink cannot write, before the query runs."""

    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        """Start a run of job ``job``; ``resume`` is what the checkpoint being resumed recorded from ``prepare``."""

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        """``kind`` is 'result' or 'late'."""

    def prepare(self, epoch: int) -> dict[str, Any]:
        """Close the epoch's output; what the checkpoint must record to commit it later."""

    def commit(self, prepared: dict[str, Any]) -> None:
        """Make prepared output visible; must be idempotent (recovery may repeat it)."""

    def close(self) -> None: ...

    def files(self) -> list[Path]:
        """What the sink has committed so far, in order."""

    def directories(self) -> list[Path]:
        """Where the sink writes (recorded with the job, for ``darwin reset``)."""


def _names(value: str | Sequence[str] | None, what: str, sink: str) -> tuple[str, ...] | None:
    """Column names given as one name or a list; None if not given."""
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else None
    if names is None or not all(isinstance(n, str) and n for n in names):
        raise SinkError(f"{sink}({what}=...) takes column names, e.g. {what}=['dt', 'hm'], got {value!r}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SinkError(f"{sink}({what}=...): column(s) {twice} given twice")
    return names


@dataclass(frozen=True)
class _Layout:
    """How a sink resolved its settings against a result: what a resumed run must write alike."""

    mode: str
    key: tuple[str, ...] | None
    unique: bool  # the key is the result's own (no two rows share it)
    files: pa.Schema  # of the rows written for results, partition columns included

    def record(self, extension: str, partition_by: tuple[str, ...]) -> dict[str, Any]:
        return {"format": extension, "mode": self.mode, "partition_by": list(partition_by),
                "key": None if self.key is None else list(self.key)}


class FileSink(ABC):
    """Parquet or CSV output in ``path`` (see the module for ``mode``, ``partition_by`` and ``key``);
    late rows (``late_output=True``) as parts in ``late_path``."""

    extension = ""

    def __init__(self, path: str | os.PathLike[str], late_path: str | os.PathLike[str] | None = None, *,
                 mode: str | None = None, partition_by: str | Sequence[str] | None = None,
                 key: str | Sequence[str] | None = None) -> None:
        name = type(self).__name__
        self.path = Path(path)
        self.late_path = None if late_path is None else Path(late_path)
        if self.late_path is not None:
            late, rows = self.late_path.resolve(), self.path.resolve()
            if late == rows:
                raise SinkError(f"late rows need a directory of their own, not {str(self.path)!r}")
            if late.is_relative_to(rows) or rows.is_relative_to(late):  # a reader of one would read the other's parts
                inside = f"late_path {str(late)!r} is inside the result path {str(rows)!r}" \
                    if late.is_relative_to(rows) else f"the result path {str(rows)!r} is inside late_path {str(late)!r}"
                raise SinkError(f"late rows need a directory of their own beside the result's: {inside}, so readers "
                                "of one would read the other's files (e.g. out/x and out/x-late)")
        if mode is not None and mode not in MODES:
            raise SinkError(f"{name}(mode={mode!r}): unknown sink mode; use 'append' (rows as they come, for "
                            "append-only results), 'changelog' (every change, its kind in column 'op') or "
                            "'upsert' (the latest row per key, a snapshot committed with each checkpoint)")
        self.mode = mode
        self.partition_by = _names(partition_by, "partition_by", name) or ()
        for c in self.partition_by:
            if c.startswith(("_", ".")):
                raise SinkError(f"{name}(partition_by=...): column {c!r} starts with {c[0]!r}, and readers (Spark, "
                                "Arrow) skip directories named so; rename it, e.g. with .select(...)")
        self.key = _names(key, "key", name)
        if self.key is not None and mode != "upsert":
            raise SinkError(f"{name}(key=...) names the columns an upsert is keyed by; it goes with mode='upsert'")
        if self.partition_by and mode == "upsert":
            raise SinkError(f"{name}: mode='upsert' writes one snapshot file, replaced at each checkpoint, and "
                            "cannot be partitioned; drop partition_by, or partition a mode='changelog' sink")
        self._layout: _Layout | None = None
        self._dirs: dict[str, OutputDirectory] = {}
        self._schemas: dict[str, pa.Schema] = {}
        self._writers: dict[tuple[str, str], Any] = {}  # (kind, file name) -> the epoch's open staged file
        self._rows: dict[tuple[str, str], int] = {}
        self._snapshot: Snapshot | None = None
        self._updating = self._all_inserts = False
        self._epoch = 1

    def describe(self) -> str:
        mode = "" if self.mode is None else f" {self.mode}"
        by = f" by {', '.join(self.key)}" if self.key else ""
        parts = f" partitioned by {', '.join(self.partition_by)}" if self.partition_by else ""
        return f"{self.extension} {self.path}{mode}{by}{parts}"

    # -- settings against the result ------------------------------------------------------
    def check(self, result: ResultSpec) -> None:
        self._resolve(result)

    def _resolve(self, result: ResultSpec) -> _Layout:
        name = type(self).__name__
        mode = self.mode or ("changelog" if result.updating else "append")
        data = result.data_schema
        if mode == "append" and result.updating:
            raise SinkError(f"{name}(mode='append') cannot write this result: it is updating (its rows change "
                            "as input arrives: +I, -U, +U, -D). Use mode='changelog' for every change, or "
                            "mode='upsert' for the latest row per key")
        files = data if mode == "upsert" else data.append(pa.field(CHANGE_COLUMN, pa.string(), nullable=False)) \
            if mode == "changelog" else data
        for c in self.partition_by:
            if c not in files.names:
                raise SinkError(f"{name}(partition_by=...): the result has no column {c!r}; its columns are "
                                f"{files.names}")
        if self.partition_by and len(self.partition_by) == len(files.names):
            raise SinkError(f"{name}(partition_by=...): every column would be a partition column, leaving the "
                            "files without columns; keep at least one column out of partition_by")
        if result.late_schema is not None and self.late_path is None:
            raise SinkError(f"the query keeps late rows (late_output=True); give {name}(..., late_path=...) a "
                            "directory for them")
        if mode != "upsert":
            return _Layout(mode, None, False, files)
        derived = result.find_key()
        key = self.key if self.key is not None else derived
        if key is None:
            raise SinkError(f"{name}(mode='upsert') needs a key, and this result has none Darwin can derive (an "
                            "aggregation is keyed by its window and group keys; a join's or a union's rows are "
                            "not). Name the columns that identify a row: key=['id', ...]")
        missing = [k for k in key if k not in data.names]
        if missing:
            raise SinkError(f"{name}(key=...): the result has no column(s) {missing}; its columns are "
                            f"{data.names}")
        return _Layout(mode, key, derived is not None and set(derived) <= set(key), files)

    # -- a run -----------------------------------------------------------------------
    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        layout = self._layout = self._resolve(result)
        record = layout.record(self.extension, self.partition_by)
        if resume is not None and resume.get("layout", record) != record:
            raise SinkError(f"the checkpoint being resumed was committed by a sink writing {resume['layout']}; "
                            f"this sink writes {record}. Resume with the sink the job ran with ({RESET_HINT})")
        self._updating = result.updating
        self._all_inserts = layout.mode == "changelog" and not result.updating  # an append-only changelog
        self._dirs = {"result": OutputDirectory(self.path, self.extension, len(self.partition_by))}
        self._schemas = {"result": pa.schema([f for f in layout.files if f.name not in self.partition_by])}
        if result.late_schema is not None:
            assert self.late_path is not None
            self._dirs["late"] = OutputDirectory(self.late_path, self.extension)
            self._schemas["late"] = result.late_schema
        for d in self._dirs.values():  # every directory is checked before any is marked: a refusal leaves nothing
            d.check_claim(resume is not None, job)
        for d in self._dirs.values():
            d.claim(resume is not None, job)
        for kind, entries in ({} if resume is None else resume["files"]).items():
            for entry in entries:
                self._dirs[kind].commit_part(entry)
        if layout.mode == "upsert":
            assert layout.key is not None
            self._snapshot = Snapshot(layout.files, layout.key, layout.unique)
            if resume is not None and "snapshot" in resume:
                out = self._dirs["result"]
                out.commit_snapshot(resume["snapshot"], self._write_file)
                for batch in out.read_version(resume["snapshot"]["version"]).to_batches():
                    self._snapshot.apply(batch)
        last = 0 if resume is None else int(resume["epoch"])
        for d in self._dirs.values():
            d.tidy(last)
        self._epoch = last + 1

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        if kind == "result" and self._snapshot is not None:
            ops = None
            if self._updating:
                ops = batch.column(CHANGE_COLUMN).to_pylist()
                batch = batch.drop_columns([CHANGE_COLUMN])
            self._snapshot.apply(batch, ops)
            return
        if kind == "result" and self._all_inserts:
            batch = batch.append_column(pa.field(CHANGE_COLUMN, pa.string(), nullable=False),
                                        pa.array([_INSERT] * batch.num_rows, pa.string()))
        if kind == "result" and self.partition_by:
            for partition, rows in split(batch, self.partition_by):
                self._write_part(kind, partition, rows)
        else:
            self._write_part(kind, "", batch)

    def _write_part(self, kind: str, partition: str, rows: pa.RecordBatch) -> None:
        name = self._dirs[kind].part_name(self._epoch, partition)
        writer = self._writers.get((kind, name))
        if writer is None:
            writer = self._writers[kind, name] = self._open_writer(self._dirs[kind].staged(name), self._schemas[kind])
            self._rows[kind, name] = 0
        writer.write_batch(rows)
        self._rows[kind, name] += rows.num_rows

    @abstractmethod
    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        """A writer with ``write_batch`` and ``close`` for one staged file."""

    def _write_file(self, path: Path, table: pa.Table) -> None:
        """``table`` as one file of this sink's format."""
        writer = self._open_writer(path, table.schema)
        for batch in table.to_batches():
            writer.write_batch(batch)
        writer.close()

    def prepare(self, epoch: int) -> dict[str, Any]:
        if epoch != self._epoch:
            raise SinkError(f"internal error: sink is in epoch {self._epoch}, asked to prepare {epoch}")
        assert self._layout is not None, "prepare before open"
        files: dict[str, list[dict[str, Any]]] = {}
        for (kind, name), writer in sorted(self._writers.items()):
            writer.close()
            staged = self._dirs[kind].staged(name)
            fsync_path(staged)
            files.setdefault(kind, []).append({"name": name, "rows": self._rows[kind, name],
                                               "crc32": crc32_of(staged)})
        self._writers.clear()
        prepared: dict[str, Any] = {"epoch": epoch, "layout": self._layout.record(self.extension, self.partition_by),
                                    "files": files}
        if self._snapshot is not None:
            prepared["snapshot"] = self._stage_snapshot(epoch, self._snapshot.table())
        self._epoch = epoch + 1
        return prepared

    def _stage_snapshot(self, epoch: int, table: pa.Table) -> dict[str, Any]:
        """The epoch's snapshot staged twice: in the sink's format (to be made visible) and as Arrow
        (kept, so a resume restores it exactly)."""
        out = self._dirs["result"]
        visible = out.staged(f"snapshot-{epoch:06d}.{self.extension}")
        self._write_file(visible, table)
        kept = out.staged(f"snapshot-{epoch:06d}.arrow")
        with pa.OSFile(str(kept), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        for f in (visible, kept):
            fsync_path(f)
        return {"epoch": epoch, "name": visible.name, "rows": table.num_rows, "crc32": crc32_of(visible),
                "version": {"name": kept.name, "crc32": crc32_of(kept)}}

    def commit(self, prepared: dict[str, Any]) -> None:
        for kind, entries in prepared["files"].items():
            for entry in entries:
                self._dirs[kind].commit_part(entry)
        if "snapshot" in prepared:
            self._dirs["result"].commit_snapshot(prepared["snapshot"], self._write_file)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def files(self) -> list[Path]:
        """What readers see of the results: the committed parts in order, or an upsert's snapshot."""
        out = OutputDirectory(self.path, self.extension, len(self.partition_by))
        if self.mode == "upsert":
            return [out.visible] if out.visible.exists() else []
        return out.committed()

    def directories(self) -> list[Path]:
        return [self.path] + ([] if self.late_path is None else [self.late_path])


class Parquet(FileSink):
    """Results as Parquet files; read the directory with ``pyarrow.parquet`` or Spark."""

    extension = "parquet"

    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        return pq.ParquetWriter(path, schema)


class CSV(FileSink):
    """Results as CSV files, each with a header row unless ``header=False`` (Flink's CSV format has none),
    fields separated by ``delimiter``."""

    extension = "csv"

    def __init__(self, path: str | os.PathLike[str], late_path: str | os.PathLike[str] | None = None, *,
                 mode: str | None = None, partition_by: str | Sequence[str] | None = None,
                 key: str | Sequence[str] | None = None, header: bool = True, delimiter: str = ",") -> None:
        super().__init__(path, late_path, mode=mode, partition_by=partition_by, key=key)
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
            raise SinkError(f"CSV(delimiter=...) is one character other than a quote or a line break, got "
                            f"{delimiter!r}")
        self.header, self.delimiter = header, delimiter

    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        return _CsvFile(path, schema, self.header, self.delimiter)


class _CsvFile:
    """One CSV file written batch by batch, a float column's NaN and infinities spelled as Java
    (Spark's and Flink's readers) parses them: ``NaN``, ``Infinity``, ``-Infinity``. Arrow writes
    ``nan``, ``inf`` and ``-inf``, which Spark read as NULL and Flink refused. Such a batch writes
    that column as text (so quoted, as Arrow quotes text); every reader parses a quoted number."""

    def __init__(self, path: Path, schema: pa.Schema, header: bool, delimiter: str = ",") -> None:
        self._out = pa.OSFile(str(path), "wb")
        self._floats = [i for i, f in enumerate(schema) if pa.types.is_floating(f.type)]
        self._options = pacsv.WriteOptions(include_header=False, delimiter=delimiter)
        if header:
            pacsv.write_csv(schema.empty_table(), self._out, pacsv.WriteOptions(delimiter=delimiter))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        for i in self._floats:
            column = batch.column(i)
            if has_specials(column):
                batch = batch.set_column(i, batch.schema.field(i).with_type(pa.string()), java_text(column))
        pacsv.write_csv(batch, self._out, self._options)

    def close(self) -> None:
        self._out.close()


class _Unstaged:
    """A sink whose output is not durable: it commits nothing, so it takes no part in checkpoints."""

    def check(self, result: ResultSpec) -> None:
        """Any result can be kept or dropped."""

    def prepare(self, epoch: int) -> dict[str, Any]:
        return {"epoch": epoch, "files": {}}

    def commit(self, prepared: dict[str, Any]) -> None:
        """Nothing to make visible."""

    def close(self) -> None:
        """Nothing to release."""

    def files(self) -> list[Path]:
        return []

    def directories(self) -> list[Path]:
        return []


class Collect(_Unstaged):
    """Results (and late rows) kept in memory: what ``collect()`` and ``execute()`` return."""

    def __init__(self) -> None:
        self._batches: dict[str, list[pa.RecordBatch]] = {"result": [], "late": []}
        self._schemas: dict[str, pa.Schema | None] = {}

    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        self._schemas = {"result": result.schema, "late": result.late_schema}

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        self._batches[kind].append(batch)

    def table(self, kind: str = "result") -> pa.Table | None:
        """The rows of ``kind`` ('result' or 'late') written so far; None for late rows nobody keeps."""
        schema = self._schemas.get(kind)
        return None if schema is None else pa.Table.from_batches(self._batches[kind], schema=schema)


class Blackhole(_Unstaged):
    """Drops everything but the count of rows it received: for runs whose output is consumed elsewhere
    (``iter_batches``) or only measured (``nexmark run`` times queries into one, as Nexmark's reference
    runners do). An updating result's rows are its changes.

    Examples
    --------
    >>> import pyarrow as pa, darwin as dw
    >>> hole = dw.sinks.Blackhole()
    >>> _ = dw.from_arrow(pa.table({"x": [1, 2, 3]})).sink(hole).run()
    >>> hole.rows
    3
    """

    def __init__(self) -> None:
        self.rows = 0
        self.late_rows = 0

    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        """A new run counts from zero."""
        self.rows = self.late_rows = 0

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        """Counted, then dropped."""
        if kind == "result":
            self.rows += batch.num_rows
        else:
            self.late_rows += batch.num_rows


from darwin.io.kafka.sink import KafkaSink as Kafka  # noqa: E402 - it builds on ResultSpec above
