"""The Nexmark generator as a PySpark data source (Spark 4's ``pyspark.sql.datasource``).

Spark generates the events itself, in parallel: a batch read is split into partitions by ranges
of event ids (each a whole number of Darwin's batches, so every row's watermark columns are those
Darwin's driver-side read would give), and a streaming read releases event ids at a pace in
wall-clock time, each micro-batch's range split the same way. Every event is a function of its id
(``nexmark.generator``), so any split gives the same rows.

``spark.read.format("nexmark").option("stream", "bid").option("events", "1000000").load()`` reads
one stream; ``NexmarkStream`` (``nexmark.source``) uses it for Darwin-on-Spark.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from darwin.spark.sources import HIDDEN
from darwin.timestamps import NO_WATERMARK
from nexmark import _kernels as k
from nexmark import ysb
from nexmark.generator import SCHEMAS, STREAMS, GeneratorConfig, generate

NAME = "nexmark"
ADS = "ads"  # YSB's ad events (nexmark.ysb) of the same size, seed and rate: one per event id


def schema_of(stream: str) -> pa.Schema:
    return ysb.SCHEMA if stream == ADS else SCHEMAS[stream]


def time_column(stream: str) -> str:
    return "event_time" if stream == ADS else "date_time"


def options(config: GeneratorConfig, stream: str, columns: Sequence[str], batch_size: int = 65_536,
            delay_ms: int | None = None, partitions: int = 2, rate: float | None = None,
            max_events: int | None = None) -> dict[str, str]:
    """The reader options for one stream: with ``delay_ms`` the rows carry Darwin's hidden arrival
    columns (a batch read), with ``rate`` a stream releases that many rows per second, and a
    micro-batch takes at most ``max_events`` event ids."""
    out = {"config": json.dumps(asdict(config)), "stream": stream, "columns": json.dumps(list(columns)),
           "batch_size": str(batch_size), "partitions": str(partitions)}
    if delay_ms is not None:
        out["delay_ms"] = str(delay_ms)
    if rate is not None:
        out["rate"] = repr(float(rate))
    if max_events is not None:
        out["max_events"] = str(max_events)
    return out


class _Options:
    """The options parsed once: what to generate and how."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = GeneratorConfig(**json.loads(options["config"]))
        self.stream = options.get("stream", "bid")
        if self.stream not in (*STREAMS, ADS):
            raise ValueError(f"nexmark data source: unknown stream {self.stream!r}; streams are "
                             f"{[*STREAMS, ADS]}")
        names = schema_of(self.stream).names
        self.columns = tuple(json.loads(options["columns"])) if "columns" in options else tuple(names)
        unknown = [c for c in self.columns if c not in names]
        if unknown:
            raise ValueError(f"nexmark data source: stream {self.stream!r} has no column(s) {unknown}")
        self.batch_size = int(options.get("batch_size", 65_536))
        self.partitions = max(1, int(options.get("partitions", 2)))
        self.delay_ms = int(options["delay_ms"]) if "delay_ms" in options else None
        self.rate = float(options["rate"]) if "rate" in options else None
        self.max_events = int(options["max_events"]) if "max_events" in options else None

    def arrow_schema(self) -> pa.Schema:
        source = schema_of(self.stream)
        fields = []
        for c in self.columns:
            t = source.field(c).type
            t = pa.int64() if pa.types.is_timestamp(t) else pa.string() if pa.types.is_dictionary(t) else t
            fields.append(pa.field(c, t))
        if self.delay_ms is not None:
            fields += [pa.field(h, pa.int64()) for h in HIDDEN]
        return pa.schema(fields)


class NexmarkDataSource(DataSource):
    """``format("nexmark")``: one stream of the generator, as a batch or a streaming read."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return from_arrow_schema(_Options(dict(self.options)).arrow_schema())

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BatchReader(_Options(dict(self.options)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _StreamReader(_Options(dict(self.options)))


class _Range(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start, self.end = start, end


def split(start: int, end: int, parts: int, align: int) -> list[_Range]:
    """[start, end) in at most ``parts`` contiguous ranges whose inner bounds are multiples of ``align``."""
    if end <= start:
        return []
    first, last = start // align, (end - 1) // align + 1  # the batches touched
    n = last - first
    parts = min(parts, n)
    bounds = [max(start, min(end, (first + n * i // parts) * align)) for i in range(parts + 1)]
    bounds[0], bounds[-1] = start, end
    return [_Range(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _visible(o: _Options, batch: pa.RecordBatch) -> list[pa.Array]:
    out = []
    for c in o.columns:
        a = batch.column(c)
        if pa.types.is_timestamp(a.type):
            a = a.cast(pa.int64())
        elif pa.types.is_dictionary(a.type):
            a = a.dictionary_decode()
        out.append(a)
    return out


def _last_time_before(config: GeneratorConfig, kind: int, event: int) -> int:
    """The event time of the last event of ``kind`` before event id ``event`` (NO_WATERMARK if none)."""
    lo = event
    while lo > 0:
        lo = max(0, lo - config.total_proportion)
        ids = config.ids_of_kind(kind, lo, event)
        if len(ids):
            return int(k.timestamp(config.as_array(), np.int64(ids[-1])))
    return NO_WATERMARK


def _generated(o: _Options, start: int, end: int, columns: frozenset[str]) -> Iterator[pa.RecordBatch]:
    """The stream's events [start, end) in the batches Darwin reads: one per ``_align(o)`` event ids
    from ``start``, or for YSB's ads ``YsbAds``'s (chunks of ``YSB_CHUNK`` events cut into batches)."""
    if o.stream == ADS:
        from nexmark.source import YsbAds

        yield from YsbAds(o.config).chunks(tuple(ysb.SCHEMA.names), o.batch_size, start, end)
    else:
        yield from generate(o.config, o.stream, _align(o), start, end, columns)


def _ids(o: _Options, start: int, end: int) -> np.ndarray:
    """The ids of the stream's events among event ids [start, end)."""
    if o.stream == ADS:
        return np.arange(start, end, dtype=np.int64)
    return o.config.ids_of_kind(STREAMS.index(o.stream), start, end)


def _time_before(o: _Options, event: int) -> int:
    """The event time of the stream's last event before event id ``event`` (NO_WATERMARK if none)."""
    if o.stream == ADS:
        return NO_WATERMARK if event <= 0 else ysb.event_time_ms(event - 1, o.config.first_event_rate)
    return _last_time_before(o.config, STREAMS.index(o.stream), event)


def _align(o: _Options) -> int:
    """Where a partition may start: where one of Darwin's batches does (YSB's ads: a chunk's start)."""
    if o.stream == ADS:
        from nexmark.source import YSB_CHUNK

        return YSB_CHUNK
    return o.config.batch_events(o.stream, o.batch_size)


def read_range(o: _Options, start: int, end: int) -> Iterator[pa.RecordBatch]:
    """The rows of events [start, end) as Spark gets them. With hidden columns, ``start`` must be
    where one of Darwin's batches starts: ``SEQ`` is the event id, ``MARK`` and ``BEFORE`` the
    watermarks Darwin's read of the same batches gives (largest event time so far, less the delay)."""
    schema = o.arrow_schema()
    if o.delay_ms is None:
        for batch in _generated(o, start, end, frozenset(o.columns)):
            yield pa.RecordBatch.from_arrays(_visible(o, batch), schema=schema)
        return
    time = time_column(o.stream)
    need = frozenset(o.columns) | {time}
    max_time = _time_before(o, start)
    lo, grid = start, _align(o)
    for batch in _generated(o, start, end, need):
        hi = lo + batch.num_rows if o.stream == ADS else min(lo + grid, end)
        seq = _ids(o, lo, hi)
        lo = hi
        n = batch.num_rows
        if not n:
            continue
        before = NO_WATERMARK if max_time == NO_WATERMARK else max_time - o.delay_ms
        times = batch.column(time).cast(pa.int64()).to_numpy()
        seen = np.maximum(np.maximum.accumulate(times), max_time)
        max_time = int(seen[-1])
        hidden = [pa.array(seq, pa.int64()), pa.array(seen - o.delay_ms), pa.array(np.full(n, before, np.int64))]
        yield pa.RecordBatch.from_arrays(_visible(o, batch) + hidden, schema=schema)


class _BatchReader(DataSourceReader):
    def __init__(self, o: _Options) -> None:
        self.o = o

    def partitions(self) -> Sequence[InputPartition]:
        return split(0, self.o.config.events, self.o.partitions, _align(self.o))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Range)
        yield from read_range(self.o, partition.start, partition.end)


class _StreamReader(DataSourceStreamReader):
    """Event ids released at ``rate`` rows of the stream per second of wall-clock time, from when the
    query (or its restart) first asks; offsets are ``{"event": next event id}``."""

    def __init__(self, o: _Options) -> None:
        self.o = o
        self.started: tuple[float, int] | None = None  # (wall-clock time, event id) of the first ask
        self.end = 0  # the offset last reported
        c = o.config
        share = c.total_proportion if o.stream == ADS else \
            (c.person_proportion, c.auction_proportion, c.bid_proportion)[STREAMS.index(o.stream)]
        self.ids_per_second = None if o.rate is None else o.rate * c.total_proportion / share

    def initialOffset(self) -> dict:
        return {"event": 0}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """Every event id due by now, at most ``max_events`` past ``start``."""
        events = self.o.config.events
        first = int((start or {"event": self.end})["event"])
        end = events
        if self.ids_per_second is not None:
            now = time.monotonic()
            if self.started is None:
                self.started = (now, first)
            t0, base = self.started
            end = min(events, base + int((now - t0) * self.ids_per_second))
        if self.o.max_events is not None:
            end = min(end, first + self.o.max_events)
        self.end = max(end, first)
        return {"event": self.end}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return split(int(start["event"]), int(end["event"]), self.o.partitions, _align(self.o))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Range)
        yield from read_range(self.o, partition.start, partition.end)

    def commit(self, end: dict) -> None:
        pass


def register(spark: Any) -> None:
    """Make ``format("nexmark")`` known to ``spark`` (registering again is harmless)."""
    spark.dataSource.register(NexmarkDataSource)
