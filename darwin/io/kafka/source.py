"""A Kafka topic as a Darwin source: partitions read side by side, each with its own offset and event time.

Darwin's runtime reads one batch at a time from a source and judges lateness by the largest
event time it has seen. A topic's partitions run at their own pace, so reading them as they
arrive would let a fast partition make a slow one's rows late. The source therefore merges
its partitions itself: the next batch always comes from the partition furthest behind in
event time (its *watermark*: the largest event time it has delivered), as Darwin's scheduler
does across sources. A partition that has received nothing for ``idle_timeout`` stops
holding the others back (unbounded mode).

Where a run is, is a *position*: per partition, the next offset and its watermark. The
runtime saves the position of the rows it has consumed in each checkpoint
(``position_at``), hands it back on restart (``resume``), and reports completed checkpoints
(``checkpointed``), whose offsets are then committed to the consumer group, for monitoring
only: Darwin never starts from the group's offsets unless asked (``start='group'``).

Bounded mode (the default) stops at the end offsets seen when the source is first read;
unbounded mode reads until the job is stopped, sending an empty batch when nothing arrives
so the job can checkpoint and notice idleness.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from darwin.durations import to_millis
from darwin.errors import SourceError
from darwin.io.kafka import codecs
from darwin.io.source import skip_rows
from darwin.types import Schema

if TYPE_CHECKING:  # its Numba kernels load only for jobs that use Avro (Numba fixes its CPU target
    # at the first compiled function: importing darwin must not)
    from darwin.io.kafka import avro

log = logging.getLogger(__name__)

NO_TIME = -(2**63)
METADATA = {"key": pa.string(), "timestamp": pa.timestamp("ms"), "partition": pa.int64(), "offset": pa.int64(),
            "headers": pa.string()}  # headers: a JSON object of name -> text
STARTS = ("earliest", "latest", "group")
_KEPT_POSITIONS = 256  # positions remembered for batches handed out but not yet checkpointed


@dataclass
class _Partition:
    """One partition during a read: its decoded rows not yet delivered, how far it is read and delivered."""

    id: int
    next_offset: int  # after the last delivered message: where a resumed run starts
    max_time: int  # the partition's watermark: the largest event time it has delivered
    end: int | None  # bounded mode: stop before this offset
    read_to: int = 0  # after the last received message
    last_seen: float = field(default_factory=time.monotonic)
    paused: bool = False
    rows: pa.Table | None = None  # decoded, not yet delivered
    offsets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    progress: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # running max of event time

    def buffered(self) -> int:
        return len(self.offsets)

    def at_end(self) -> bool:
        return self.end is not None and self.read_to >= self.end

    def finished(self) -> bool:
        return self.at_end() and not self.buffered()

    def reached(self) -> int:
        """The largest event time received so far (delivered or buffered)."""
        return int(self.progress[-1]) if self.buffered() else self.max_time

    def add(self, rows: pa.Table, offsets: np.ndarray, times: np.ndarray) -> None:
        start = self.reached()
        self.progress = np.concatenate([self.progress, np.maximum.accumulate(np.maximum(times, start))])
        self.offsets = np.concatenate([self.offsets, offsets])
        self.rows = rows if self.rows is None else pa.concat_tables([self.rows, rows])

    def take(self, n: int) -> pa.Table:
        assert self.rows is not None
        taken, self.rows = self.rows.slice(0, n), self.rows.slice(n)
        self.max_time, self.next_offset = max(self.max_time, int(self.progress[n - 1])), int(self.offsets[n - 1]) + 1
        self.offsets, self.progress = self.offsets[n:], self.progress[n:]
        return taken


class KafkaSource:
    """Messages of ``topic`` as rows: the value's columns (``format`` 'json', 'csv' with ``schema``, 'avro'
    with ``avro_schema``, or 'raw' text in column ``value``), then ``key``, ``timestamp`` (the record's, ms),
    ``partition``, ``offset`` and ``headers`` (``metadata`` picks which).

    Avro: ``avro_schema`` is the writer's record schema (JSON text or a dict); the columns are its fields
    (``schema``, if given, picks and casts some of them). ``avro_wire='confluent'`` expects magic byte 0 and
    the 4-byte schema id ``avro_schema_id`` before each value.

    ``time_column`` is the event time the partitions are merged by (None: the record timestamps, for a
    table without event time).

    ``config`` passes librdkafka settings (security, timeouts...); ``group`` names the consumer group
    that checkpointed offsets are committed to.

    Examples
    --------
    >>> import pyarrow as pa
    >>> s = KafkaSource("bids", "127.0.0.1:9092", schema=pa.schema([("auction", pa.int64())]))
    >>> s.schema.names
    ('auction', 'key', 'timestamp', 'partition', 'offset', 'headers')
    """

    def __init__(self, topic: str, bootstrap_servers: str, *, schema: pa.Schema | None = None, format: str = "json",
                 metadata: tuple[str, ...] = tuple(METADATA), bounded: bool = True, start: str = "earliest",
                 group: str | None = None, partitions: tuple[int, ...] | None = None,
                 idle_timeout: str | int = "5s", poll_timeout: str | int = "100ms",
                 config: dict[str, Any] | None = None, time_column: str | None = "timestamp", name: str | None = None,
                 avro_schema: str | dict[str, Any] | None = None, avro_wire: str = "plain",
                 avro_schema_id: int | None = None) -> None:
        where = f"KafkaSource({topic!r})"
        if not isinstance(topic, str) or not topic:
            raise SourceError(f"KafkaSource: topic must be a topic name, got {topic!r}")
        codecs.check_format(format, where, SourceError)
        if start not in STARTS:
            raise SourceError(f"{where}(start={start!r}): use one of {list(STARTS)}")
        unknown = [m for m in metadata if m not in METADATA]
        if unknown:
            raise SourceError(f"{where}(metadata=...): unknown column(s) {unknown}; the metadata columns are "
                              f"{list(METADATA)}")
        self._avro: avro.AvroLayout | None = None
        if format == "avro":
            from darwin.io.kafka import avro  # noqa: F811 - loaded only for Avro (see above)
            self._avro = avro.layout(avro_schema, avro_wire, avro_schema_id, where, SourceError)
            values = _avro_columns(self._avro.schema, schema, where)
        elif avro_schema is not None:
            raise SourceError(f"{where}(avro_schema=...) is for format='avro', not format={format!r}")
        else:
            values = codecs.value_schema(format, schema, where)
        clash = [n for n in values.names if n in metadata]
        if clash:
            raise SourceError(f"{where}: the value's column(s) {clash} have the names of metadata columns; leave "
                              f"them out with metadata=(...) or rename them in the schema")
        self.topic, self.bootstrap_servers, self.format = topic, bootstrap_servers, format
        self.values, self.metadata, self.bounded, self.start = values, tuple(metadata), bounded, start
        self.group = group or f"darwin-{topic}"
        self.partitions = partitions
        self.idle_timeout_ms = to_millis(idle_timeout, "idle_timeout", SourceError)
        self.poll_timeout_s = to_millis(poll_timeout, "poll_timeout", SourceError) / 1000
        self.config = dict(config or {})
        self.time_column = time_column
        self.name = name or topic
        self.arrow_schema = pa.schema(list(values) + [pa.field(m, METADATA[m], m in ("key", "headers"))
                                                      for m in self.metadata])
        self.schema = Schema.from_arrow(self.arrow_schema, frozenset(
            m for m in self.metadata if m not in ("key", "headers")))
        self._where = where
        self._starts: dict[int, int] | None = None  # the offsets a fresh run starts at, fixed at first read
        self._ends: dict[int, int] | None = None
        self._resumed: tuple[int, dict[str, Any]] | None = None
        self._positions: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._committer: Any = None
        self._stop = threading.Event()
        self._decoders: ThreadPoolExecutor | None = None  # partitions' messages decoded side by side
        self._reader: Any = None  # the consumer of the read under way, for lag()
        self._reader_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KafkaSource({self.topic!r}, {self.format}, {'bounded' if self.bounded else 'unbounded'})"

    # -- the Source protocol ------------------------------------------------------------------
    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.batches_from(columns, batch_size, 0)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset``: at the position ``resume`` gave for it, else re-read and skipped."""
        if self._resumed is not None and self._resumed[0] == offset:
            yield from self._read(columns, batch_size, self._resumed[1], offset)
        else:
            yield from skip_rows(self._read(columns, batch_size, None, 0), offset)

    # -- positions, for checkpoints -----------------------------------------------------------
    def position_at(self, rows: int) -> dict[str, Any]:
        """Where the run is once it has consumed ``rows`` rows: the offset and watermark of each partition."""
        with self._lock:
            if rows not in self._positions:
                raise SourceError(f"{self._where}: internal error: no position recorded after {rows} rows")
            for old in [r for r in self._positions if r < rows]:
                del self._positions[old]
            return self._positions[rows]

    def resume(self, position: dict[str, Any], rows: int) -> None:
        """The next run continues from ``position``, reached after ``rows`` rows (what a checkpoint saved)."""
        self._resumed = (rows, position)

    def checkpointed(self, position: dict[str, Any]) -> None:
        """A checkpoint holding ``position`` is durable: commit its offsets to the group (monitoring only)."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        if self._committer is None:
            self._committer = Consumer(self._settings(enable_auto_commit=False))
        offsets = [TopicPartition(self.topic, int(p), int(v["offset"])) for p, v in position["partitions"].items()]
        try:
            self._committer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as e:  # monitoring only: the job's position is the checkpoint's
            log.warning("%s: committing offsets to group %r failed: %s", self._where, self.group, e)

    def lag(self, fresh: bool = False) -> dict[int, int]:
        """Per partition being read, how many messages the run has not yet handed to the job: the high watermark
        minus the next offset to deliver. The watermark is librdkafka's cached one, from the latest fetch (no
        request; it trails the broker by up to a fetch), or with ``fresh`` asked of the broker. Rows received
        but still buffered in the source count as lag. Empty when no read is under way; a partition whose
        watermark is not known yet is left out. Callable from any thread (for monitoring)."""
        from confluent_kafka import TopicPartition

        with self._lock:
            latest = self._positions[max(self._positions)] if self._positions else None
        if latest is None:
            return {}
        out = {}
        with self._reader_lock:
            if self._reader is None:
                return {}
            for p, at in latest["partitions"].items():
                part = TopicPartition(self.topic, int(p))
                low, high = self._reader.get_watermark_offsets(part, timeout=5, cached=False) if fresh \
                    else self._reader.get_watermark_offsets(part, cached=True)
                if high >= 0:
                    out[int(p)] = max(0, high - int(at["offset"]))
        return out

    def stop(self) -> None:
        """End an unbounded read once what has arrived is delivered: the job then finishes as at the end of a
        bounded input (its final checkpoint included). Callable from any thread."""
        self._stop.set()

    def close(self) -> None:
        if self._committer is not None:
            self._committer.close()
            self._committer = None
        if self._decoders is not None:
            self._decoders.shutdown()
            self._decoders = None

    # -- reading ------------------------------------------------------------------------------
    def _settings(self, **extra: Any) -> dict[str, Any]:
        settings = {"bootstrap.servers": self.bootstrap_servers, "group.id": self.group,
                    "enable.auto.commit": False, "enable.auto.offset.store": False,
                    "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                    "session.timeout.ms": 6000}
        settings.update({k.replace("_", "."): v for k, v in extra.items()})
        settings.update(self.config)
        settings["enable.partition.eof"] = True  # where a partition's records end: see _poll
        return settings

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer, KafkaException

        try:
            return Consumer(self._settings())
        except KafkaException as e:
            raise SourceError(f"{self._where}: cannot create a consumer: {e}") from None

    def _partition_ids(self, consumer: Any) -> list[int]:
        from confluent_kafka import KafkaException

        try:
            meta = consumer.list_topics(self.topic, timeout=10).topics.get(self.topic)
        except KafkaException as e:
            raise SourceError(f"{self._where}: cannot reach the brokers at {self.bootstrap_servers!r}: {e}") \
                from None
        if meta is None or meta.error is not None or not meta.partitions:
            raise SourceError(f"{self._where}: topic {self.topic!r} does not exist at {self.bootstrap_servers!r}")
        ids = sorted(meta.partitions)
        if self.partitions is not None:
            missing = sorted(set(self.partitions) - set(ids))
            if missing:
                raise SourceError(f"{self._where}(partitions=...): the topic has no partition(s) {missing}; it has "
                                  f"{ids}")
            ids = sorted(self.partitions)
        return ids

    def _offsets(self, consumer: Any) -> tuple[dict[int, int], dict[int, int] | None]:
        """Start offsets of a fresh run and, when bounded, the end offsets: both fixed at the first read, so every
        replay reads the same rows."""
        if self._starts is None:
            from confluent_kafka import TopicPartition

            ids = self._partition_ids(consumer)
            marks = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10, cached=False)
                     for p in ids}
            ends = _true_ends(self._settings(), self.topic, marks)
            if self.start == "earliest":
                starts = {p: low for p, (low, _) in marks.items()}
            elif self.start == "latest":
                starts = dict(ends)
            else:
                committed = consumer.committed([TopicPartition(self.topic, p) for p in ids], timeout=10)
                starts = {tp.partition: tp.offset if tp.offset >= 0 else marks[tp.partition][0] for tp in committed}
            self._starts, self._ends = starts, ends if self.bounded else None
        return self._starts, self._ends

    def _read(self, columns: tuple[str, ...], batch_size: int, position: dict[str, Any] | None, rows: int) \
            -> Iterator[pa.RecordBatch]:
        from confluent_kafka import TopicPartition

        consumer = self._consumer()
        try:
            starts, ends = self._offsets(consumer)
            saved = {} if position is None else {int(p): v for p, v in position["partitions"].items()}
            parts = {}
            for p, start in starts.items():
                at = saved.get(p, {"offset": start, "max_time": NO_TIME})
                parts[p] = _Partition(p, int(at["offset"]), int(at["max_time"]), None if ends is None else ends[p],
                                      read_to=int(at["offset"]))
            with self._lock:
                self._positions = {rows: self._position(parts)}
            consumer.assign([TopicPartition(self.topic, p, s.next_offset) for p, s in parts.items()
                             if not s.at_end()])
            with self._reader_lock:
                self._reader = consumer
            yield from self._merged(consumer, parts, columns, batch_size, rows)
        finally:
            with self._reader_lock:
                self._reader = None
            consumer.close()

    def _merged(self, consumer: Any, parts: dict[int, _Partition], columns: tuple[str, ...], batch_size: int,
                rows: int) -> Iterator[pa.RecordBatch]:
        """Batches merged from every partition in the order of each partition's event-time progress, never past
        the point every partition still being read has reached: the job's watermark is then the partitions'
        minimum, as if each partition were a source of its own."""
        limit = 4 * batch_size  # rows buffered per partition before it is paused
        while True:
            live = [s for s in parts.values() if not s.finished()]
            if not live:
                return
            now = time.monotonic()
            holding = [s for s in live if not s.at_end() and (
                self.bounded or s.buffered() or (now - s.last_seen) * 1000 < self.idle_timeout_ms)]
            if all(s.buffered() for s in holding) and any(s.buffered() for s in live):
                frontier = min((s.reached() for s in holding), default=None)
                batch = self._deliver(live, frontier, batch_size, columns)
                if batch is not None:
                    rows += batch.num_rows
                    with self._lock:
                        self._positions[rows] = self._position(parts)
                        for old in sorted(self._positions)[:-_KEPT_POSITIONS]:
                            del self._positions[old]
                    yield batch
                    continue
            got = self._poll(consumer, parts, columns, batch_size, limit)
            if not got and self._stop.is_set():
                for s in parts.values():  # what is buffered goes out, whatever the partitions still hold back
                    s.end = s.read_to
                continue
            if not got and not self.bounded:
                yield pa.RecordBatch.from_pylist([], self._schema_of(columns))  # a tick: checkpoints, idleness

    def _poll(self, consumer: Any, parts: dict[int, _Partition], columns: tuple[str, ...], batch_size: int,
              limit: int) -> int:
        """Receive what the brokers have, decoded in bulk per partition; pause partitions with enough buffered."""
        from confluent_kafka import KafkaError, TopicPartition

        got = consumer.consume(num_messages=max(batch_size, 1000), timeout=self.poll_timeout_s)
        failed = [m for m in got if m.error() is not None]
        for m in failed:
            if m.error().code() != KafkaError._PARTITION_EOF:
                raise SourceError(f"{self._where}: reading partition {m.partition()} failed: {m.error()}")
        if failed:
            got = [m for m in got if m.error() is None]
        eofs = [(m.partition(), m.offset()) for m in failed]
        n = len(got)
        owners = np.fromiter((m.partition() for m in got), np.int64, n)
        offsets = np.fromiter((m.offset() for m in got), np.int64, n)
        received = []
        for p in np.unique(owners).tolist():
            s = parts.get(p)
            if s is None:
                continue
            rows = np.flatnonzero(owners == p)
            if s.end is not None:
                rows = rows[offsets[rows] < s.end]
            if not len(rows):
                continue
            messages = got if len(rows) == n else [got[i] for i in rows.tolist()]
            received.append((s, messages, offsets[rows]))
            s.read_to, s.last_seen = int(offsets[rows[-1]]) + 1, time.monotonic()
        self._decode(received, columns)
        for p, offset in eofs:  # the partition holds nothing to read below ``offset``: the offsets between its last
            s = parts.get(p)    # record and there are transaction markers (or aborted records), never delivered
            if s is not None and offset is not None and offset >= 0:
                s.read_to = max(s.read_to, offset if s.end is None else min(offset, s.end))
        for s in parts.values():
            stop = s.buffered() >= limit or s.at_end()
            if stop != s.paused:
                (consumer.pause if stop else consumer.resume)([TopicPartition(self.topic, s.id)])
                s.paused = stop
        return len(got)

    def _decode(self, received: list[tuple[_Partition, list[Any], np.ndarray]], columns: tuple[str, ...]) -> None:
        """Each partition's messages decoded into its buffer; several partitions side by side (the parsers
        and the Avro decoder release the GIL), each partition's rows still in offset order."""
        if len(received) < 2:
            for part, messages, offsets in received:
                self._receive(part, messages, offsets, columns)
            return
        if self._decoders is None:
            self._decoders = ThreadPoolExecutor(max_workers=min(len(received), os.cpu_count() or 1),
                                                thread_name_prefix="darwin-kafka-decode")
        for done in [self._decoders.submit(self._receive, part, messages, offsets, columns)
                     for part, messages, offsets in received]:
            done.result()  # a partition's decoding error surfaces here, naming its partition and offsets

    def _receive(self, part: _Partition, messages: list[Any], offsets: np.ndarray, columns: tuple[str, ...]) -> None:
        """``messages`` of one partition as rows of ``columns``, the value decoded in one parser call."""
        where = f"{self._where} partition {part.id} offsets {offsets[0]}-{offsets[-1]}"
        arrays: dict[str, pa.Array] = {}

        def where_of(i: int) -> str:
            return f"{self._where} partition {part.id} offset {offsets[i]}"

        if any(c in self.values.names for c in (*columns, self.time_column)):
            payloads = [m.value() for m in messages]
            if self._avro is not None:
                from darwin.io.kafka import avro  # noqa: F811 - loaded only for Avro (see above)
                decoded = avro.decode(self._avro, payloads, where_of)
                decoded = _cast_values(decoded, self.values, where)
            else:
                decoded = codecs.decode(self.format, payloads, self.values, where_of)
            for n in self.values.names:
                arrays[n] = decoded.column(n)
        stamps = pa.array([m.timestamp()[1] for m in messages], pa.int64())
        wanted = (set(columns) | {self.time_column}) & set(self.metadata)  # the value's columns are set above
        if "timestamp" in wanted:
            arrays["timestamp"] = stamps.cast(pa.timestamp("ms"))
        if "partition" in wanted:
            arrays["partition"] = pa.array(np.full(len(messages), part.id, np.int64))
        if "offset" in wanted:
            arrays["offset"] = pa.array(offsets)
        if "key" in wanted:
            try:
                arrays["key"] = pa.array([m.key() for m in messages], pa.binary()).cast(pa.string())
            except pa.ArrowInvalid:
                raise SourceError(f"{where}: a message's key is not UTF-8 text") from None
        if "headers" in wanted:
            arrays["headers"] = pa.array([_headers(m.headers()) for m in messages], pa.string())
        timed = arrays.get(self.time_column, stamps) if self.time_column is not None else stamps
        times = timed.cast(pa.int64()).fill_null(NO_TIME)
        part.add(pa.table([arrays[c] for c in columns], schema=self._schema_of(columns)), offsets,
                 times.to_numpy(zero_copy_only=False))

    def _deliver(self, live: list[_Partition], frontier: int | None, batch_size: int,
                 columns: tuple[str, ...]) -> pa.RecordBatch | None:
        """Up to ``batch_size`` buffered rows whose partition's progress is at most ``frontier`` (None: any), in
        order of that progress (ties: partition, then offset), so each partition gives a prefix of its rows."""
        cuts = [(s, s.buffered() if frontier is None else int(np.searchsorted(s.progress, frontier, "right")))
                for s in live if s.buffered()]
        cuts = [(s, n) for s, n in cuts if n]
        if not cuts:
            return None
        progress = np.concatenate([s.progress[:n] for s, n in cuts])
        owner = np.concatenate([np.full(n, i, np.int64) for i, (_, n) in enumerate(cuts)])
        order = np.argsort(progress, kind="stable")[:batch_size]
        counts = np.bincount(owner[order], minlength=len(cuts))
        taken = [s.take(int(k)) if k else None for (s, _), k in zip(cuts, counts)]
        table = pa.concat_tables([t if t is not None else s.rows.slice(0, 0)  # type: ignore[union-attr]
                                  for t, (s, _) in zip(taken, cuts)])
        rank = np.empty(len(order), np.int64)  # the row of ``table`` (partition by partition) each position takes
        rank[np.argsort(owner[order], kind="stable")] = np.arange(len(order))
        return table.take(pa.array(rank)).combine_chunks().to_batches(max_chunksize=batch_size)[0] \
            if len(rank) else None

    def _schema_of(self, columns: tuple[str, ...]) -> pa.Schema:
        return pa.schema([self.arrow_schema.field(c) for c in columns])

    @staticmethod
    def _position(parts: dict[int, _Partition]) -> dict[str, Any]:
        return {"partitions": {str(p): {"offset": s.next_offset, "max_time": s.max_time} for p, s in parts.items()}}

    def watermarks(self, position: dict[str, Any]) -> dict[int, int]:
        """The largest event time each partition had delivered at ``position`` (its watermark before the delay)."""
        return {int(p): int(v["max_time"]) for p, v in position["partitions"].items()}


def _avro_columns(record: pa.Schema, schema: pa.Schema | None, where: str) -> pa.Schema:
    """The value's columns: the Avro record's fields, or those ``schema`` names, of its types (which a cast from
    the record's types must reach)."""
    if schema is None:
        return record
    for f in schema:
        if f.name not in record.names:
            raise SourceError(f"{where}(schema=...): column {f.name!r} is not a field of the Avro record; its "
                              f"fields are {record.names}")
        try:
            pa.array([], record.field(f.name).type).cast(f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise SourceError(f"{where}(schema=...): column {f.name!r} is Avro {record.field(f.name).type}, which "
                              f"does not convert to {f.type}") from None
    return pa.schema([pa.field(f.name, f.type, f.nullable and record.field(f.name).nullable) for f in schema])


def _cast_values(batch: pa.RecordBatch, values: pa.Schema, where: str) -> pa.RecordBatch:
    if batch.schema == values:
        return batch
    try:
        return pa.record_batch([batch.column(f.name).cast(f.type) for f in values], schema=values)
    except pa.ArrowInvalid as e:
        raise SourceError(f"{where}: an Avro value does not convert to the given schema: {e}") from None


def _headers(headers: list[tuple[str, bytes | None]] | None) -> str | None:
    if not headers:
        return None
    return json.dumps({k: None if v is None else v.decode("utf-8", "replace") for k, v in headers})


def _true_ends(settings: dict[str, Any], topic: str, marks: dict[int, tuple[int, int]]) -> dict[int, int]:
    """End offsets: the high watermarks, checked by reading the last batch.

    Tansu reports the base offset of the last record batch + 1 as the high watermark, not the
    offset after its last record; reading from there finds the true end (on Apache Kafka the
    read finds the one last record, and the end is the high watermark). A partition whose last
    offset is a transaction marker, which no consumer is handed, ends where its end-of-partition
    event says.
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    ends = {p: high for p, (low, high) in marks.items()}
    probe = {p: high - 1 for p, (low, high) in marks.items() if high > low}
    if not probe:
        return ends
    consumer = Consumer({**settings, "group.id": f"{settings['group.id']}-probe"})
    seen: dict[int, int] = {}
    try:
        consumer.assign([TopicPartition(topic, p, at) for p, at in probe.items()])
        deadline, extra = time.monotonic() + 10, 1  # once every partition answered: one more poll for the rest
        while time.monotonic() < deadline and extra >= 0:
            for m in consumer.consume(num_messages=100_000, timeout=0.2 if extra else 0.02):
                p, offset = m.partition(), m.offset()
                error = m.error()
                if p is None or offset is None:
                    continue
                if error is None:
                    seen[p] = max(seen.get(p, 0), offset + 1)
                elif error.code() == KafkaError._PARTITION_EOF:
                    seen[p] = max(seen.get(p, 0), offset)
            if set(probe) <= set(seen):
                extra -= 1
    finally:
        consumer.close()
    for p, end in seen.items():
        ends[p] = max(ends[p], end)
    return ends
