"""File sinks (Parquet, CSV) that commit output only when a checkpoint covers it.

Output is staged per epoch (the stretch of input between two checkpoints) in
``<dir>/_darwin_staging/``. When a checkpoint is taken the epoch's file is closed and
listed, with its checksum, in the checkpoint's manifest; once the manifest is
durable the file is renamed to ``<dir>/part-<epoch>.<ext>``. A crash before that
loses only staged files, which the restarted run writes again; a crash after it
finds the rename in the manifest and completes it. Readers see complete files
only, and the parts in name order are the output in order.

A fresh run writes only into an empty (or new) directory, which it marks with its job
id (``.darwin-sink.json``); a resumed run only into the directory its job marked. Darwin
deletes nothing there but its own part files. Arrow and Spark readers skip the marker
and the staging directory (names starting with ``.`` and ``_``).

Examples
--------
>>> import darwin as dw
>>> dw.sinks.Parquet("out/").describe()
'parquet out'
"""

from __future__ import annotations

import json
import logging
import os
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from darwin.errors import RESET_HINT, SinkError
from darwin.files import crc32_of, ensure_directory, fsync_path, read_job_record, write_atomically

log = logging.getLogger(__name__)

STAGING = "_darwin_staging"
MARKER = ".darwin-sink.json"
PART = re.compile(r"part-\d{6}\.([a-z]+)")  # part-<epoch>.<extension>


@runtime_checkable
class Sink(Protocol):
    """Where a query's output goes, with two-phase commit around checkpoints."""

    def open(self, schema: pa.Schema, late_schema: pa.Schema | None, resume: dict[str, Any] | None,
             job: str) -> None:
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


class _Target:
    """One output directory: staged and committed parts of one kind of rows."""

    def __init__(self, directory: Path, extension: str) -> None:
        self.directory, self.extension = directory, extension
        self.staging = directory / STAGING

    def part(self, epoch: int, staged: bool) -> Path:
        return (self.staging if staged else self.directory) / f"part-{epoch:06d}.{self.extension}"

    def is_part(self, name: str) -> bool:
        m = PART.fullmatch(name)
        return m is not None and m.group(1) == self.extension

    def committed(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.iterdir() if self.is_part(p.name))

    def start(self, resume: list[dict[str, Any]] | None, last_epoch: int, job: str) -> None:
        ensure_directory(self.directory, "output directory", SinkError)
        owner = read_marker(self.directory)
        if resume is None:
            self._claim(job)
        elif owner != job:
            raise SinkError(f"output directory {str(self.directory)!r} was not written by the job these checkpoints "
                            f"belong to; resume with the output directory the job ran with ({RESET_HINT})")
        for entry in resume or []:
            self.commit_file(entry)
        for stale in self.committed():  # committed after a checkpoint that turned out damaged
            if int(stale.stem.split("-")[1]) > last_epoch:
                log.warning("removing %s: the checkpoint that committed it is not usable; it is written again",
                            stale)
                stale.unlink()
        self.staging.mkdir(exist_ok=True)
        for staged in self.staging.iterdir():  # staged by a run that did not reach its checkpoint
            if self.is_part(staged.name):
                staged.unlink()

    def _claim(self, job: str) -> None:
        """A fresh run: the directory must be empty, or hold only what a run that committed nothing left."""
        if self.committed():
            raise SinkError(f"output directory {str(self.directory)!r} already holds part files of another run; "
                            "give an empty directory, or resume that run with its checkpoint_dir "
                            f"({RESET_HINT})")
        ours = {MARKER, STAGING} if read_marker(self.directory) is not None else set()
        others = sorted(p.name for p in self.directory.iterdir() if p.name not in ours)
        if others:
            raise SinkError(f"output directory {str(self.directory)!r} is not empty (it holds "
                            f"{', '.join(map(repr, others[:5]))}{', ...' if len(others) > 5 else ''}); Darwin "
                            "writes into an empty directory, so its output is never mixed with other files")
        write_atomically(self.directory / MARKER, json.dumps({"job": job}).encode())

    def commit_file(self, entry: dict[str, Any]) -> None:
        staged, final = self.staging / entry["name"], self.directory / entry["name"]
        if staged.exists():
            if crc32_of(staged) != entry["crc32"]:
                raise SinkError(f"staged output {str(staged)!r} does not match the checksum its checkpoint "
                                "recorded; it was changed or damaged")
            os.replace(staged, final)
            fsync_path(self.directory)
        elif not final.exists():
            raise SinkError(f"output {str(final)!r}, which a checkpoint recorded, is missing from both the "
                            "staging and the output directory")


class FileSink(ABC):
    """Parquet or CSV parts in ``path``; late rows (``late_output=True``) in ``late_path``."""

    extension = ""

    def __init__(self, path: str | os.PathLike[str], late_path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.late_path = None if late_path is None else Path(late_path)
        if self.late_path is not None and self.late_path.resolve() == self.path.resolve():
            raise SinkError(f"late rows need a directory of their own, not {str(self.path)!r}")
        self._targets: dict[str, _Target] = {}
        self._schemas: dict[str, pa.Schema] = {}
        self._writers: dict[str, Any] = {}
        self._rows: dict[str, int] = {}
        self._epoch = 1

    def describe(self) -> str:
        return f"{self.extension} {self.path}"

    def open(self, schema: pa.Schema, late_schema: pa.Schema | None, resume: dict[str, Any] | None,
             job: str) -> None:
        targets, schemas = {"result": _Target(self.path, self.extension)}, {"result": schema}
        if late_schema is not None:
            if self.late_path is None:
                raise SinkError(f"the query keeps late rows (late_output=True); give {type(self).__name__}(..., "
                                "late_path=...) a directory for them")
            targets["late"] = _Target(self.late_path, self.extension)
            schemas["late"] = late_schema
        self._targets, self._schemas = targets, schemas
        last = 0 if resume is None else int(resume["epoch"])
        for kind, target in self._targets.items():
            target.start(None if resume is None else resume["files"].get(kind, []), last, job)
        self._epoch = last + 1

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        writer = self._writers.get(kind)
        if writer is None:
            path = self._targets[kind].part(self._epoch, staged=True)
            writer = self._writers[kind] = self._open_writer(path, self._schemas[kind])
            self._rows[kind] = 0
        writer.write_batch(batch)
        self._rows[kind] += batch.num_rows

    @abstractmethod
    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        """A writer with ``write_batch`` and ``close`` for one staged file."""

    def prepare(self, epoch: int) -> dict[str, Any]:
        if epoch != self._epoch:
            raise SinkError(f"internal error: sink is in epoch {self._epoch}, asked to prepare {epoch}")
        files: dict[str, list[dict[str, Any]]] = {}
        for kind, writer in self._writers.items():
            writer.close()
            staged = self._targets[kind].part(epoch, staged=True)
            fsync_path(staged)
            files[kind] = [{"name": staged.name, "rows": self._rows[kind], "crc32": crc32_of(staged)}]
        self._writers.clear()
        self._epoch = epoch + 1
        return {"epoch": epoch, "files": files}

    def commit(self, prepared: dict[str, Any]) -> None:
        for kind, entries in prepared["files"].items():
            for entry in entries:
                self._targets[kind].commit_file(entry)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def files(self) -> list[Path]:
        """Committed parts of the results, in order."""
        return _Target(self.path, self.extension).committed()

    def directories(self) -> list[Path]:
        return [self.path] + ([] if self.late_path is None else [self.late_path])


class Parquet(FileSink):
    """Results as Parquet files ``part-<epoch>.parquet``; read the directory with ``pyarrow.parquet``."""

    extension = "parquet"

    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        return pq.ParquetWriter(path, schema)


class CSV(FileSink):
    """Results as CSV files ``part-<epoch>.csv``, each with a header row."""

    extension = "csv"

    def _open_writer(self, path: Path, schema: pa.Schema) -> Any:
        return pacsv.CSVWriter(path, schema)


def read_marker(directory: Path) -> str | None:
    """The job that marked output ``directory`` as its own, or None."""
    marker = read_job_record(directory / MARKER)
    return None if marker is None else marker["job"]


def remove_output(directory: Path, job: str) -> list[Path]:
    """Delete what job ``job`` wrote in ``directory``: its parts, staged parts and marker; what was deleted."""
    if read_marker(directory) != job:
        return []
    staging = directory / STAGING
    removed = [p for d in (directory, staging) if d.is_dir() for p in sorted(d.iterdir()) if PART.fullmatch(p.name)]
    for p in removed:
        p.unlink()
    if staging.is_dir() and not any(staging.iterdir()):
        staging.rmdir()
        removed.append(staging)
    (directory / MARKER).unlink()
    return [*removed, directory / MARKER]


class _Unstaged:
    """A sink whose output is not durable: it commits nothing, so it takes no part in checkpoints."""

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

    def open(self, schema: pa.Schema, late_schema: pa.Schema | None, resume: dict[str, Any] | None,
             job: str) -> None:
        self._schemas = {"result": schema, "late": late_schema}

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

    def open(self, schema: pa.Schema, late_schema: pa.Schema | None, resume: dict[str, Any] | None,
             job: str) -> None:
        """A new run counts from zero."""
        self.rows = self.late_rows = 0

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        """Counted, then dropped."""
        if kind == "result":
            self.rows += batch.num_rows
        else:
            self.late_rows += batch.num_rows
