"""Flink SQL's ``'connector' = 'kafka'`` over Darwin's ``KafkaSource`` and ``KafkaSink``.

A Flink job declares its topics as tables: ``CREATE TABLE bids (...) WITH ('connector' = 'kafka',
'topic' = 'bids', 'properties.bootstrap.servers' = '...', 'scan.startup.mode' = 'earliest-offset',
'format' = 'json')``. Each Flink option is read here as the Kafka source or sink takes it; an option
whose Flink meaning Darwin cannot give (a topic pattern, a start at a timestamp, an exactly-once
sink without a staging directory) is refused naming it, never ignored. ``'upsert-kafka'`` writes an
updating result as keyed messages and tombstones (``UpsertKafkaSink``); reading one is refused with what
to use instead (docs/decisions.md, SQL connectors).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

import darwin.api as api
from darwin.errors import SinkError, SqlError
from darwin.io.kafka import KafkaSink, KafkaSource, UpsertKafkaSink
from darwin.io.kafka.codecs import RAW_COLUMN
from darwin.io.sinks import ResultSpec, Sink
from darwin.sql.connectors import ARROW, RenamedSource, TableSpec, check_columns
from darwin.types import DType

STARTUP_MODES = {"earliest-offset": "earliest", "latest-offset": "latest", "group-offsets": "group"}
FLINK_STARTUP_MODES = (*STARTUP_MODES, "timestamp", "specific-offsets")
BOUNDED_MODES = {"unbounded": False, "latest-offset": True}
FLINK_BOUNDED_MODES = (*BOUNDED_MODES, "group-offsets", "timestamp", "specific-offsets")
FORMATS = ("json", "csv", "raw")
GUARANTEES = {"at-least-once": "at_least_once", "none": "at_least_once"}
METADATA_KEYS = ("timestamp", "partition", "offset")  # Flink's metadata the source fills (timestamp: ms)
OPTIONS = ("topic", "topic-pattern", "properties.*", "format", "value.format", "key.format", "key.fields",
           "value.fields-include", "scan.startup.mode", "scan.startup.timestamp-millis",
           "scan.startup.specific-offsets", "scan.bounded.mode", "sink.delivery-guarantee",
           "sink.transactional-id-prefix", "sink.partitioner")
UPSERT_OPTIONS = ("topic", "properties.*", "key.format", "value.format", "value.fields-include",
                  "sink.delivery-guarantee", "sink.transactional-id-prefix")


class KafkaConnector:
    """``'connector' = 'kafka'``: a topic read by ``KafkaSource`` or written by an append-only ``KafkaSink``."""

    def source(self, spec: TableSpec) -> api.Table:
        for key in ("key.format", "key.fields"):
            if key in spec.options:
                raise SqlError(f"table {spec.name}: '{key}' is not supported on a table that is read: Darwin reads "
                               "every column from the message's value (declare the key's column in the value, or "
                               "drop the key options)")
        _refuse_primary_key(spec)
        _check_value_fields(spec)
        metadata = dict(spec.metadata)
        physical = [(n, t) for n, t in spec.columns if n not in metadata]
        fmt = _format(spec)
        if fmt == "raw":
            if len(physical) != 1 or physical[0][1] is not DType.STRING:
                raise SqlError(f"table {spec.name}: 'format' = 'raw' reads a message's value as one STRING column "
                               f"(UTF-8 text); the table has {', '.join(f'{n} {t.value}' for n, t in physical)}")
            schema, value_names = None, {physical[0][0]: RAW_COLUMN}
        else:
            schema, value_names = pa.schema([(n, ARROW[t]) for n, t in physical]), {n: n for n, _ in physical}
        names = {n: metadata.get(n) or value_names[n] for n in spec.names}  # declared name -> the source's
        for column, key in spec.metadata:
            if key in value_names.values():
                raise SqlError(f"table {spec.name}: column {column} METADATA FROM '{key}' beside a value field named "
                               f"'{key}': Darwin's Kafka source names its metadata by key, so it cannot read both")
        time = names[spec.time_column] if spec.time_column is not None else None  # None: the record timestamps
        start, bounded = _startup(spec), _bounded(spec)
        config = _properties(spec)
        if start == "group" and str(config.get("auto.offset.reset", "earliest")).lower() not in ("earliest",
                                                                                                   "smallest"):
            raise SqlError(f"table {spec.name}: 'scan.startup.mode' = 'group-offsets' starts a partition without "
                           "a committed offset at its earliest offset; 'properties.auto.offset.reset' = "
                           f"'{config['auto.offset.reset']}' is not supported (use 'earliest', or "
                           "'scan.startup.mode' = 'latest-offset')")
        source = KafkaSource(_topic(spec), _servers(spec), schema=schema, format=fmt,
                             metadata=tuple(k for _, k in spec.metadata), bounded=bounded, start=start,
                             group=config.pop("group.id", None), config=config, time_column=time, name=spec.name)
        renamed = RenamedSource(source, names)
        check_columns(spec, renamed.schema)
        return api.from_source(renamed, time=spec.time_column, max_delay=spec.max_delay_ms)

    def sink(self, spec: TableSpec) -> Sink:
        _refuse_primary_key(spec)
        _check_value_fields(spec)
        if spec.metadata:
            column, key = spec.metadata[0]
            raise SqlError(f"table {spec.name}: column {column} METADATA FROM '{key}': Darwin's Kafka sink writes no "
                           "metadata columns; declare the table without it to write it")
        fmt = _format(spec)
        if fmt == "raw" and (len(spec.columns) != 1 or spec.columns[0][1] is not DType.STRING):
            raise SqlError(f"table {spec.name}: 'format' = 'raw' writes one STRING column as the message's value "
                           f"(UTF-8 text); the table has {', '.join(f'{n} {t.value}' for n, t in spec.columns)}")
        guarantee = spec.options.get("sink.delivery-guarantee", "at-least-once")
        if guarantee == "exactly-once":
            raise SqlError(f"table {spec.name}: 'sink.delivery-guarantee' = 'exactly-once' is not supported in SQL: "
                           "Darwin's exactly-once Kafka sink stages each epoch's rows in a directory a table cannot "
                           "name; use dw.sinks.Kafka(..., guarantee='exactly_once', staging_dir=...) or a deployment "
                           "file's kafka sink, or 'at-least-once'")
        if guarantee not in GUARANTEES:
            raise SqlError(f"table {spec.name}: 'sink.delivery-guarantee' = {guarantee!r}; use 'at-least-once' or "
                           "'none' (written at least once)")
        partitioner = spec.options.get("sink.partitioner", "default")
        if partitioner != "default":
            raise SqlError(f"table {spec.name}: 'sink.partitioner' = {partitioner!r} is not supported; Darwin writes "
                           "with Kafka's default partitioner ('default': a key's murmur2 hash)")
        config = _properties(spec)
        config.pop("group.id", None)  # a consumer's setting, which Flink's sink ignores too
        return AppendOnlyKafkaSink(_topic(spec), _servers(spec), format=fmt, key=_key_column(spec),
                                   guarantee=GUARANTEES[guarantee], config=config)


class AppendOnlyKafkaSink(KafkaSink):
    """A Kafka sink of an SQL table: appends only, as Flink's 'kafka' connector writes (its sink refuses
    update changes); an updating result would be written with its change kinds as a value field."""

    def check(self, result: ResultSpec) -> None:
        if result.updating:
            raise SinkError(f"{self._where}: the query's result updates (an aggregation without a window, a top-N, an "
                            "outer join...), and a 'kafka' table takes appends only, as in Flink; aggregate in a "
                            "window, or write it to a 'filesystem' table (its changelog, each change's kind in "
                            "column op). 'upsert-kafka' is not supported")
        super().check(result)


class UpsertKafkaConnector:
    """``'connector' = 'upsert-kafka'``: written as Flink writes it; read it is refused, saying what to use."""

    def source(self, spec: TableSpec) -> api.Table:
        raise SqlError(f"table {spec.name}: 'upsert-kafka' is not supported: Darwin reads no changelog topic (a row "
                       "per key, a tombstone for a delete); read the topic's messages as appends with "
                       "'connector' = 'kafka'")

    def sink(self, spec: TableSpec) -> Sink:
        """The latest row per PRIMARY KEY: keyed messages in 'key.format', the row in 'value.format', a tombstone
        for a deleted row (``UpsertKafkaSink``)."""
        if spec.primary_key is None:
            raise SqlError(f"table {spec.name}: an 'upsert-kafka' table needs a PRIMARY KEY (...) NOT ENFORCED, as "
                           "in Flink: its columns are each message's key")
        if spec.metadata:
            column, key = spec.metadata[0]
            raise SqlError(f"table {spec.name}: column {column} METADATA FROM '{key}': Darwin's Kafka sink writes no "
                           "metadata columns; declare the table without it to write it")
        _check_value_fields(spec)
        formats = {}
        for option in ("key.format", "value.format"):
            fmt = spec.option(option)
            if fmt not in FORMATS:
                raise SqlError(f"table {spec.name}: '{option}' = {fmt!r} is not supported; 'upsert-kafka' takes "
                               f"{', '.join(repr(f) for f in FORMATS)}")
            formats[option] = fmt
        key_types = dict(spec.columns)
        for option, columns in (("key.format", spec.primary_key), ("value.format", tuple(n for n, _ in spec.columns))):
            if formats[option] == "raw" and (len(columns) != 1 or key_types[columns[0]] is not DType.STRING):
                raise SqlError(f"table {spec.name}: '{option}' = 'raw' writes one STRING column; the "
                               f"{option.split('.')[0]} has {', '.join(columns)}")
        guarantee = spec.options.get("sink.delivery-guarantee", "at-least-once")
        if guarantee not in GUARANTEES:
            raise SqlError(f"table {spec.name}: 'sink.delivery-guarantee' = {guarantee!r}; use 'at-least-once' or "
                           "'none' (written at least once)")
        config = _properties(spec)
        config.pop("group.id", None)
        return UpsertKafkaSink(_topic(spec), _servers(spec), key=spec.primary_key, key_format=formats["key.format"],
                               format=formats["value.format"], guarantee=GUARANTEES[guarantee], config=config)


def _check_value_fields(spec: TableSpec) -> None:
    include = spec.options.get("value.fields-include", "ALL")
    if include != "ALL":
        raise SqlError(f"table {spec.name}: 'value.fields-include' = {include!r} is not supported; Darwin's Kafka "
                       "source and sink keep every column in the value ('ALL')")


def _refuse_primary_key(spec: TableSpec) -> None:
    if spec.primary_key is not None:
        raise SqlError(f"table {spec.name}: a 'kafka' table takes no PRIMARY KEY, as in Flink: a topic's messages "
                       "may repeat any key ('upsert-kafka', which keys a topic, is not supported)")


def _topic(spec: TableSpec) -> str:
    if "topic-pattern" in spec.options:
        raise SqlError(f"table {spec.name}: 'topic-pattern' is not supported; Darwin's Kafka source reads one topic "
                       "named by 'topic'")
    topic = spec.option("topic")
    if ";" in topic or not topic.strip():
        raise SqlError(f"table {spec.name}: 'topic' = {topic!r}: Darwin's Kafka source and sink take one topic")
    return topic


def _servers(spec: TableSpec) -> str:
    return spec.option("properties.bootstrap.servers")


def _properties(spec: TableSpec) -> dict[str, Any]:
    """The other 'properties.*' options: client settings handed to librdkafka (group.id among them)."""
    return {k.removeprefix("properties."): v for k, v in spec.options.items()
            if k.startswith("properties.") and k != "properties.bootstrap.servers"}


def _format(spec: TableSpec) -> str:
    given = [k for k in ("format", "value.format") if k in spec.options]
    if len(given) == 2:
        raise SqlError(f"table {spec.name}: 'format' and 'value.format' both name the value's format; give one")
    if not given:
        raise SqlError(f"table {spec.name}: connector 'kafka' needs the option 'format' (or 'value.format')")
    fmt = spec.options[given[0]]
    if fmt in FORMATS:
        return fmt
    if fmt in ("avro", "avro-confluent"):
        raise SqlError(f"table {spec.name}: '{given[0]}' = '{fmt}' is not supported in SQL: Darwin's Avro takes the "
                       "writer's record schema (and its registry id) from the caller, which a table does not declare "
                       "(and Darwin has no schema registry client); use dw.read_kafka(..., format='avro', "
                       "avro_schema=...) or a deployment file's kafka source, or 'json', 'csv' or 'raw'")
    raise SqlError(f"table {spec.name}: '{given[0]}' = '{fmt}' is not supported; the Kafka connector takes "
                   f"{', '.join(repr(f) for f in FORMATS)} (changelog formats such as 'debezium-json' are not)")


def _startup(spec: TableSpec) -> str:
    mode = _mode(spec, "scan.startup.mode", "group-offsets", STARTUP_MODES, FLINK_STARTUP_MODES,  # Flink's default
                 "starts at the 'earliest-offset', the 'latest-offset' or the 'group-offsets'")
    for key in ("scan.startup.timestamp-millis", "scan.startup.specific-offsets"):
        if key in spec.options:
            raise SqlError(f"table {spec.name}: '{key}' is for another 'scan.startup.mode' than '{mode}'")
    return STARTUP_MODES[mode]


def _bounded(spec: TableSpec) -> bool:
    mode = _mode(spec, "scan.bounded.mode", "unbounded", BOUNDED_MODES, FLINK_BOUNDED_MODES,  # read until stopped
                 "reads 'unbounded' or up to the 'latest-offset' seen when it starts")
    return BOUNDED_MODES[mode]


def _mode(spec: TableSpec, key: str, default: str, supported: Mapping[str, object], flink: tuple[str, ...],
          darwin_does: str) -> str:
    """The value of the mode option ``key``: one Darwin's Kafka source ``supported``; one of Flink's it is not
    (``darwin_does`` says what it does instead) or none of Flink's is refused."""
    mode = spec.options.get(key, default)
    if mode in supported:
        return mode
    if mode in flink:
        raise SqlError(f"table {spec.name}: '{key}' = '{mode}' is not supported; Darwin's Kafka source {darwin_does}")
    raise SqlError(f"table {spec.name}: '{key}' = {mode!r}; use one of {', '.join(repr(m) for m in flink)}")


def _key_column(spec: TableSpec) -> str | None:
    """'key.fields' with 'key.format' = 'raw': the one STRING column whose text is each message's key."""
    fields, fmt = spec.options.get("key.fields"), spec.options.get("key.format")
    if fields is None and fmt is None:
        return None
    if fields is None or fmt is None:
        missing = "key.fields" if fields is None else "key.format"
        raise SqlError(f"table {spec.name}: a message key needs both 'key.format' and 'key.fields'; '{missing}' is "
                       "missing")
    if fmt != "raw":
        raise SqlError(f"table {spec.name}: 'key.format' = {fmt!r} is not supported; Darwin writes a key as one "
                       "column's text: 'key.format' = 'raw' with one STRING column in 'key.fields'")
    names = [f.strip() for f in fields.split(";")]
    types = dict(spec.columns)
    if len(names) != 1 or types.get(names[0]) is not DType.STRING:
        raise SqlError(f"table {spec.name}: 'key.fields' = {fields!r}: 'key.format' = 'raw' writes one STRING "
                       "column of the table as the key")
    return names[0]
