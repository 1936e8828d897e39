"""Connectors of ``CREATE TABLE ... WITH ('connector' = '...')``: a registry of named factories.

Darwin registers ``filesystem`` (Parquet or CSV files) and ``blackhole``; other packages
register theirs with ``register_connector`` or the ``darwin.connectors`` entry point group
(Nexmark's generator is ``nexmark``), so ``darwin`` never imports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol

import pyarrow as pa

import darwin.api as api
from darwin.errors import SqlError
from darwin.io.sinks import CSV, Blackhole, Parquet, Sink
from darwin.io.source import Source, column_bounds, read_from
from darwin.types import DType, Field, Schema

ARROW = {DType.INT64: pa.int64(), DType.FLOAT64: pa.float64(), DType.BOOL: pa.bool_(), DType.STRING: pa.string(),
         DType.TIMESTAMP: pa.timestamp("ms")}


@dataclass(frozen=True)
class TableSpec:
    """A table of CREATE TABLE: its columns as declared, event time, and connector options."""

    name: str
    columns: tuple[tuple[str, DType], ...]
    options: Mapping[str, str]
    time_column: str | None = None
    max_delay_ms: int | None = None
    partition_by: tuple[str, ...] = ()
    proctime: tuple[str, ...] = ()  # `p AS PROCTIME()`: lookup times, not columns (no processing time)
    # PRIMARY KEY (...) NOT ENFORCED: a source's rows never share it (trusted, lets joins keep less)
    primary_key: tuple[str, ...] | None = None
    # `ts TIMESTAMP(3) METADATA FROM 'timestamp'`: (column, the connector's metadata key), columns of `columns`
    metadata: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    def option(self, key: str, default: str | None = None) -> str:
        value = self.options.get(key, default)
        if value is None:
            raise SqlError(f"table {self.name}: connector '{self.options.get('connector')}' needs the option "
                           f"'{key}'")
        return value


class Connector(Protocol):
    """Builds the source table and the sink of a declared table."""

    def source(self, spec: TableSpec) -> api.Table:
        ...

    def sink(self, spec: TableSpec) -> Sink:
        ...


_REGISTRY: dict[str, Connector] = {}
_OPTIONS: dict[str, frozenset[str]] = {}  # by connector: the option keys it reads, where it says
_METADATA: dict[str, tuple[str, ...]] = {}  # by connector: the metadata keys its tables may declare columns of


def register_connector(name: str, connector: Connector, options: Iterable[str] | None = None,
                       metadata: Iterable[str] = ()) -> None:
    """Make ``'connector' = name`` build tables with ``connector``. ``options`` are the keys its
    tables may set beside 'connector' (a table setting another is refused, as Flink's factories
    refuse an option they do not know; ``'properties.*'`` takes every key starting ``properties.``);
    None lets the connector take any. ``metadata`` are the keys of ``METADATA FROM '...'`` columns
    it fills (``TableSpec.metadata``); a table declaring another is refused."""
    _REGISTRY[name] = connector
    if options is None:
        _OPTIONS.pop(name, None)
    else:
        _OPTIONS[name] = frozenset(options)
    _METADATA[name] = tuple(metadata)


def _reads(known: frozenset[str], key: str) -> bool:
    return key in known or any(k.endswith(".*") and key.startswith(k[:-1]) for k in known)


def unknown_option(connector_name: str, keys: Iterable[str]) -> str | None:
    """A message naming the first of ``keys`` the connector does not read; None where it reads them all."""
    known = _OPTIONS.get(connector_name)
    for key in keys:
        if known is not None and key != "connector" and not _reads(known, key):
            takes = ", ".join(f"'{k}'" for k in sorted(known - _IGNORED.get(connector_name, {}).keys())) or "none"
            return f"connector '{connector_name}' has no option '{key}' (it takes {takes})"
    return None


_IGNORED: dict[str, Mapping[str, str]] = {}  # by connector: options it takes and ignores, each with why


def ignore_options(name: str, reasons: Mapping[str, str]) -> None:
    """Let the tables of connector ``name`` (registered with its ``options``) set the keys of ``reasons``,
    which it takes and ignores: Flink options that tune how files are written or when, never which rows
    (a DDL written for Flink carries them). Each maps to why ignoring it changes no row."""
    _IGNORED[name] = {**_IGNORED.get(name, {}), **reasons}
    _OPTIONS[name] = _OPTIONS.get(name, frozenset()) | frozenset(reasons)


def check_options(spec: TableSpec) -> None:
    """Refuse an option of ``spec`` its connector does not read: ignored, it would change nothing
    where the user asked for a change (a CSV delimiter, a start position); and a metadata column
    it cannot fill."""
    name = spec.options.get("connector", "")
    problem = unknown_option(name, spec.options)
    if problem is not None:
        raise SqlError(f"table {spec.name}: {problem}")
    has = _METADATA.get(name, ())
    for column, key in spec.metadata:
        if key not in has:
            offers = f"its metadata keys are {', '.join(repr(k) for k in has)}" if has else "it has no metadata columns"
            raise SqlError(f"table {spec.name}: column {column} METADATA FROM '{key}': connector '{name}' cannot "
                           f"fill it ({offers})")


def connector(name: str, table: str) -> Connector:
    if name not in _REGISTRY:
        for ep in entry_points(group="darwin.connectors", name=name):
            loaded = ep.load()  # its module may register it itself, with its options
            if name not in _REGISTRY:
                register_connector(name, loaded)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise SqlError(f"table {table}: unknown connector {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def check_columns(spec: TableSpec, schema: Schema, mapping: Mapping[str, str] | None = None) -> None:
    """Every declared column exists in ``schema`` (under ``mapping``'s name) with the declared type."""
    for name, dtype in spec.columns:
        source_name = (mapping or {}).get(name, name)
        if source_name not in schema:
            raise SqlError(f"table {spec.name}: column {name!r} is not in the source; it has "
                           f"{', '.join(schema.names)}")
        actual = schema.field(source_name).dtype
        if actual is not dtype:
            raise SqlError(f"table {spec.name}: column {name!r} is declared {dtype.value} but the source "
                           f"has {actual.value}")


_PASSED_ON = ("position_at", "resume", "checkpointed", "lag", "close", "stop")


class RenamedSource:
    """A source whose columns are known by other names (``dateTime`` for ``date_time``)."""

    def __init__(self, source: Source, names: Mapping[str, str]) -> None:
        self.inner, self.names = source, dict(names)  # new name -> the source's name
        self.name = source.name
        fields = source.schema.fields
        by_name = {f.name: f for f in fields}
        self.schema = Schema(tuple(Field(new, by_name[old].dtype, by_name[old].nullable)
                                   for new, old in self.names.items()), source.schema.unsupported)

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        return self._renamed(self.inner.batches(tuple(self.names[c] for c in columns), batch_size), columns)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """Seeks if the source does (a restart resumes at its checkpoint's offset)."""
        return self._renamed(read_from(self.inner, tuple(self.names[c] for c in columns), batch_size, offset),
                             columns)

    def bounds(self, column: str) -> tuple[int, int] | None:
        """The source's cheap bounds of an integer column, if it knows them."""
        return column_bounds(self.inner, self.names[column])

    def __getattr__(self, name: str) -> Any:
        """The inner source's positions, checkpoint reports, lag and close (what the runtime asks a source
        for where it has them), which do not depend on column names."""
        if name in _PASSED_ON:
            return getattr(self.inner, name)
        raise AttributeError(name)

    @staticmethod
    def _renamed(batches: Iterable[pa.RecordBatch], columns: tuple[str, ...]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns, names=list(columns))


class Filesystem:
    """``'connector' = 'filesystem', 'path' = ..., 'format' = 'parquet' | 'csv'``, and for CSV Flink's
    ``'csv.field-delimiter'``."""

    def source(self, spec: TableSpec) -> api.Table:
        path, fmt = spec.option("path").removeprefix("file://"), self._format(spec)
        if fmt == "parquet":
            table = api.read_parquet(path, time=spec.time_column, max_delay=spec.max_delay_ms,
                                     primary_key=spec.primary_key)
        else:  # Flink's CSV: no header row, the declared columns in order
            schema = pa.schema([(n, ARROW[t]) for n, t in spec.columns])
            table = api.read_csv(path, schema, header=False, delimiter=field_delimiter(spec), time=spec.time_column,
                                 max_delay=spec.max_delay_ms, primary_key=spec.primary_key)
        check_columns(spec, table.plan.schema)
        return table.select(*spec.names)

    def sink(self, spec: TableSpec) -> Sink:
        path, fmt = spec.option("path").removeprefix("file://"), self._format(spec)
        partition = list(spec.partition_by) or None
        if fmt == "parquet":
            return Parquet(path, partition_by=partition)
        return CSV(path, partition_by=partition, header=False, delimiter=field_delimiter(spec))

    @staticmethod
    def _format(spec: TableSpec) -> str:
        """The table's format; a format's option on a table of another is refused, as Flink refuses it."""
        fmt = spec.option("format", "parquet")
        if fmt not in ("parquet", "csv"):
            raise SqlError(f"table {spec.name}: format {fmt!r} is not supported; use 'parquet' or 'csv'")
        for key in spec.options:
            if key.startswith("csv.") and fmt != "csv":
                raise SqlError(f"table {spec.name}: '{key}' is an option of the csv format; this table's format "
                               f"is {fmt!r}")
        return fmt


# Flink's spelling of a delimiter that is no printable character: its CSV format unescapes the option
JAVA_ESCAPES = {"\\t": "\t"}


def field_delimiter(spec: TableSpec) -> str:
    """``'csv.field-delimiter'``: one character (',' unless given), or '\\t' for a tab as in Flink."""
    given = spec.option("csv.field-delimiter", ",")
    delimiter = JAVA_ESCAPES.get(given, given)
    if len(delimiter) != 1 or delimiter in "\"\r\n":
        raise SqlError(f"table {spec.name}: 'csv.field-delimiter' = {given!r}: a delimiter is one character other "
                       "than a quote or a line break ('\\t' for a tab)")
    return delimiter


# Flink filesystem options that say how part files are rolled, compacted and committed and by how many
# writers, or feed the planner: never which rows are read or written. Darwin takes and ignores them: its
# sink writes a part file per checkpoint, committed with the checkpoint, and marks no partition complete.
FILESYSTEM_TUNING = {
    "sink.rolling-policy.file-size": "the size at which a part file is closed and another begun",
    "sink.rolling-policy.rollover-interval": "how long a part file stays open",
    "sink.rolling-policy.inactivity-interval": "how long an idle part file stays open",
    "sink.rolling-policy.check-interval": "how often the rolling policy is checked",
    "auto-compaction": "merging small part files into larger ones",
    "compaction.file-size": "the size compaction merges part files to",
    "compaction.parallelism": "how many tasks compact",
    "sink.parallelism": "how many tasks write",
    "sink.shuffle-by-partition.enable": "which task writes a partition",
    "sink.partition-commit.trigger": "when a partition counts as complete",
    "sink.partition-commit.delay": "when a partition counts as complete",
    "sink.partition-commit.watermark-time-zone": "when a partition counts as complete",
    "sink.partition-commit.policy.kind": "what marks a complete partition (a _SUCCESS file, a metastore entry)",
    "sink.partition-commit.policy.class": "what marks a complete partition",
    "sink.partition-commit.policy.class.parameters": "what marks a complete partition",
    "sink.partition-commit.success-file.name": "the name of the file marking a complete partition",
    "partition.time-extractor.kind": "a partition's time, read by the partition-time commit trigger only",
    "partition.time-extractor.class": "a partition's time, read by the partition-time commit trigger only",
    "partition.time-extractor.timestamp-pattern": "a partition's time, read by the partition-time commit trigger only",
    "partition.time-extractor.timestamp-formatter": "a partition's time, read by the partition-time commit trigger "
                                                    "only",
    "source.report-statistics": "statistics for Flink's planner",
}


class BlackholeConnector:
    """``'connector' = 'blackhole'``: a sink that discards its rows (for benchmarks)."""

    def source(self, spec: TableSpec) -> api.Table:
        raise SqlError(f"table {spec.name}: a blackhole table can only be written to")

    def sink(self, spec: TableSpec) -> Sink:
        return Blackhole()


register_connector("filesystem", Filesystem(), options=("path", "format", "csv.field-delimiter"))
ignore_options("filesystem", FILESYSTEM_TUNING)
register_connector("blackhole", BlackholeConnector(), options=())

from darwin.sql.kafka import (  # noqa: E402 - builds on the above
    METADATA_KEYS,
    OPTIONS,
    UPSERT_OPTIONS,
    KafkaConnector,
    UpsertKafkaConnector,
)

register_connector("kafka", KafkaConnector(), options=OPTIONS, metadata=METADATA_KEYS)
ignore_options("kafka", {"sink.parallelism": "how many tasks write: a keyed record's partition is its key's, "
                                            "whichever task writes it (Flink's default partitioner)"})
register_connector("upsert-kafka", UpsertKafkaConnector(), options=UPSERT_OPTIONS)
ignore_options("upsert-kafka", {"sink.parallelism": "how many tasks write: a key's partition is its key's, "
                                                   "whichever task writes it"})
