"""Results into a Kafka topic, at-least-once or exactly-once.

``at_least_once``: rows are produced as they come; each checkpoint waits until the broker has
acknowledged everything produced before it, so a restart from that checkpoint loses nothing
(it may repeat what was produced after it).

``exactly_once``: two-phase commit with Darwin's checkpoints. librdkafka cannot take over
another producer's open transaction, so the epoch's rows cannot wait in an open transaction
across a crash; instead *pre-commit* (``prepare``) stages them durably with the checkpoint, in
an Arrow file under ``staging_dir``, and *commit* (after the checkpoint is durable) publishes
them in one Kafka transaction that also commits a marker offset (the epoch) to the group
``darwin-sink-<transactional id>``. On recovery, ``init_transactions`` aborts whatever a
killed run left open, and the checkpoint's epoch is published again only if the marker
says it was not (re-commit). A ``read_committed`` consumer sees every row once. Brokers that do not
hide aborted transactions (Tansu) are covered too: each message carries its epoch and row number in a
header, and a re-commit skips the rows of its epoch that a killed publish left readable.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.errors import SinkError
from darwin.files import crc32_of, fsync_path, write_atomically
from darwin.io.kafka import codecs
from darwin.io.sinks import CHANGE_COLUMN, ResultSpec

if TYPE_CHECKING:  # its Numba kernels load only for jobs that use Avro (Numba fixes its CPU target
    # at the first compiled function: importing darwin must not)
    from darwin.io.kafka import avro

log = logging.getLogger(__name__)

GUARANTEES = ("at_least_once", "exactly_once")
_ROW_HEADER = "darwin-row"  # exactly-once: '<transactional id>:<epoch>:<row>' of each message
_TIMEOUT_S = 30.0
# A keyed record's partition: Java's default partitioner (murmur2 of the key; random without a key, which sticks
# per batch in Java), as Flink's 'default' sink partitioner and every Java producer choose it. librdkafka's own
# default (CRC32) puts a key in another partition.
JAVA_PARTITIONER = "murmur2_random"


class KafkaSink:
    """Rows as messages of ``topic``: the value in ``format`` ('json', 'csv', 'avro' or 'raw' for one text
    column), the key from column ``key`` and the record timestamp from column ``timestamp`` if given. A keyed
    record goes to the partition Java's producer gives its key (``JAVA_PARTITIONER``, unless ``config`` sets
    librdkafka's ``partitioner``).

    Avro: the value is a record of ``avro_schema`` (JSON text or a dict) whose fields are the result's columns
    (besides ``key`` and ``timestamp``, which may stay out of it); ``avro_wire='confluent'`` puts magic byte 0
    and the 4-byte schema id ``avro_schema_id`` before each value.

    Examples
    --------
    >>> KafkaSink("counts", "127.0.0.1:9092", guarantee="exactly_once", staging_dir="stage/").describe()
    'kafka counts json exactly_once'
    """

    def __init__(self, topic: str, bootstrap_servers: str, *, format: str = "json", key: str | None = None,
                 timestamp: str | None = None, guarantee: str = "at_least_once",
                 staging_dir: str | os.PathLike[str] | None = None, transactional_id: str | None = None,
                 config: dict[str, Any] | None = None, avro_schema: str | dict[str, Any] | None = None,
                 avro_wire: str = "plain", avro_schema_id: int | None = None) -> None:
        where = f"KafkaSink({topic!r})"
        codecs.check_format(format, where, SinkError)
        self._avro: avro.AvroLayout | None = None
        if format == "avro":
            from darwin.io.kafka import avro  # noqa: F811 - loaded only for Avro (see above)
            self._avro = avro.layout(avro_schema, avro_wire, avro_schema_id, where, SinkError)
        elif avro_schema is not None:
            raise SinkError(f"{where}(avro_schema=...) is for format='avro', not format={format!r}")
        if guarantee not in GUARANTEES:
            raise SinkError(f"{where}(guarantee={guarantee!r}): use 'at_least_once' or 'exactly_once'")
        if guarantee == "exactly_once" and staging_dir is None:
            raise SinkError(f"{where}(guarantee='exactly_once') needs staging_dir=...: a directory where each epoch's "
                            "rows wait, durably, until the checkpoint covering them is complete")
        self.topic, self.bootstrap_servers, self.format = topic, bootstrap_servers, format
        self.key, self.timestamp, self.guarantee = key, timestamp, guarantee
        self.staging_dir = None if staging_dir is None else Path(staging_dir)
        self.transactional_id = transactional_id
        self.config = dict(config or {})
        self._where = where
        self._producer: Any = None
        self._marker: Any = None
        self._tid = ""
        self._errors: list[str] = []
        self._writer: Any = None
        self._rows = 0
        self._schema: pa.Schema | None = None
        self.produced = 0

    def describe(self) -> str:
        return f"kafka {self.topic} {self.format} {self.guarantee}"

    # -- the Sink protocol ----------------------------------------------------------------------
    def check(self, result: ResultSpec) -> None:
        names = result.schema.names
        for what, column in (("key", self.key), ("timestamp", self.timestamp)):
            if column is not None and column not in names:
                raise SinkError(f"{self._where}({what}={column!r}): the result has no such column; its columns are "
                                f"{names}")
        if self.timestamp is not None:
            kind = result.schema.field(self.timestamp).type
            if not (pa.types.is_timestamp(kind) or pa.types.is_integer(kind)):
                raise SinkError(f"{self._where}(timestamp={self.timestamp!r}): the record timestamp comes from a "
                                f"timestamp column (or an integer one of epoch milliseconds); {self.timestamp!r} is "
                                f"{kind}")
        if result.late_schema is not None:
            raise SinkError(f"{self._where}: the query keeps late rows (late_output=True), and a Kafka sink writes "
                            "results only; drop late_output, or send the results to a file sink with a late_path")
        if self._avro is not None:
            from darwin.io.kafka import avro  # noqa: F811 - loaded only for Avro (see above)
            avro.check_columns(self._avro, [n for n in names if n not in (self.key, self.timestamp)
                                            or n in self._avro.schema.names], self._where)
        if self.format == "raw" and len(names) != 1:
            raise SinkError(f"{self._where}(format='raw') writes one text column as the message value; the result "
                            f"has {names}. Select one column, or use format='json'")

    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        from confluent_kafka import Consumer, KafkaException, Producer

        self._schema = result.schema
        settings = {"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5, "enable.idempotence": True,
                    "acks": "all", "partitioner": JAVA_PARTITIONER, **self.config}
        try:
            if self.guarantee == "at_least_once":
                self._producer = Producer(settings)
                return
            assert self.staging_dir is not None
            self.staging_dir.mkdir(parents=True, exist_ok=True)
            self._tid = self.transactional_id or (resume or {}).get("transactional_id") or f"darwin-{job}"
            self._producer = Producer({**settings, "transactional.id": self._tid})
            self._producer.init_transactions(_TIMEOUT_S)  # fences a killed run's producer, aborts its open transaction
            secure = {k: v for k, v in self.config.items() if k.startswith(("security", "sasl", "ssl"))}
            self._marker = Consumer({"bootstrap.servers": self.bootstrap_servers, "enable.auto.commit": False,
                                     "group.id": f"darwin-sink-{self._tid}", **secure})
        except KafkaException as e:
            raise SinkError(f"{self._where}: cannot connect to {self.bootstrap_servers!r}: {e}") from None
        last = 0
        if resume is not None:
            last = int(resume["epoch"])
            if resume.get("file") is not None and self._published() < last:
                log.info("%s: re-committing epoch %d after a restart", self._where, last)
                self.commit(resume)
        for f in [*self.staging_dir.glob("epoch-*.arrow"), *self.staging_dir.glob("publishing-*.json")]:
            f.unlink()  # published, or written after the checkpoint resumed

    def write(self, kind: str, batch: pa.RecordBatch) -> None:
        if kind != "result" or batch.num_rows == 0:
            return
        if self.guarantee == "at_least_once":
            self._produce(batch)
            return
        self._check_sizes(batch)  # before it is staged: a checkpoint must not hold an epoch that cannot be published
        if self._writer is None:
            assert self.staging_dir is not None and self._schema is not None
            self._staged = self.staging_dir / f"epoch-{os.getpid()}-pending.arrow"
            self._writer = pa.ipc.new_file(str(self._staged), self._schema)
        self._writer.write_batch(batch)
        self._rows += batch.num_rows

    def prepare(self, epoch: int) -> dict[str, Any]:
        """Pre-commit: everything produced is acknowledged (at-least-once), or the epoch's rows are staged."""
        if self.guarantee == "at_least_once":
            self._flush()
            return {"epoch": epoch}
        prepared: dict[str, Any] = {"epoch": epoch, "transactional_id": self._tid, "file": None, "rows": self._rows}
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            assert self.staging_dir is not None
            final = self.staging_dir / f"epoch-{epoch:06d}.arrow"
            os.replace(self._staged, final)
            fsync_path(final)
            fsync_path(self.staging_dir)
            prepared.update(file=final.name, crc32=crc32_of(final))
        self._rows = 0
        return prepared

    def commit(self, prepared: dict[str, Any]) -> None:
        """Publish a staged epoch in one transaction with its marker (exactly-once); idempotent."""
        if self.guarantee == "at_least_once" or prepared.get("file") is None:
            return
        from confluent_kafka import KafkaException, TopicPartition

        assert self.staging_dir is not None
        path = self.staging_dir / prepared["file"]
        if not path.exists():
            if self._published() >= int(prepared["epoch"]):
                return
            raise SinkError(f"{self._where}: the staged rows of epoch {prepared['epoch']} ({path}) are gone and the "
                            "topic does not hold them; the output cannot be completed")
        if crc32_of(path) != prepared["crc32"]:
            raise SinkError(f"{self._where}: the staged rows of epoch {prepared['epoch']} ({path}) are damaged")
        epoch = int(prepared["epoch"])
        started = self.staging_dir / f"publishing-{epoch:06d}.json"
        done = self._visible(epoch, json.loads(started.read_text())) if started.exists() else set()
        try:
            if not started.exists():
                write_atomically(started, json.dumps(self._ends()).encode())
            self._producer.begin_transaction()
            with pa.memory_map(str(path)) as source:
                reader = pa.ipc.open_file(source)
                row = 0
                for i in range(reader.num_record_batches):
                    batch = reader.get_batch(i)
                    self._produce(batch, (epoch, row), done)
                    row += batch.num_rows
            marker = [TopicPartition(self.topic, 0, epoch)]
            self._producer.send_offsets_to_transaction(marker, self._marker.consumer_group_metadata(), _TIMEOUT_S)
            self._producer.commit_transaction(_TIMEOUT_S)
        except KafkaException as e:
            raise SinkError(f"{self._where}: publishing epoch {prepared['epoch']} failed: {e}") from None
        self._check_errors()
        path.unlink()
        started.unlink()

    def _ends(self) -> dict[str, int]:
        """The topic's partitions and their high watermarks: where a publish starts writing."""
        from confluent_kafka import TopicPartition

        meta = self._marker.list_topics(self.topic, timeout=_TIMEOUT_S).topics[self.topic]
        return {str(p): self._marker.get_watermark_offsets(TopicPartition(self.topic, p), timeout=_TIMEOUT_S,
                                                           cached=False)[1] for p in meta.partitions}

    def _visible(self, epoch: int, starts: dict[str, int], quiet_s: float = 1.0) -> set[int]:
        """Rows of ``epoch`` that a killed publish left readable (by their header): a ``read_committed`` reader
        sees none on Apache Kafka, where the abort hides them; Tansu shows them, so they are not sent again."""
        from confluent_kafka import Consumer, TopicPartition

        tag = f"{self._tid}:{epoch}:".encode()
        reader = Consumer({"bootstrap.servers": self.bootstrap_servers, "group.id": f"darwin-sink-{self._tid}-scan",
                           "enable.auto.commit": False, "isolation.level": "read_committed"})
        seen: set[int] = set()
        try:
            reader.assign([TopicPartition(self.topic, int(p), int(o)) for p, o in starts.items()])
            last = time.monotonic()
            while time.monotonic() - last < quiet_s:
                for m in reader.consume(10_000, timeout=0.2):
                    last = time.monotonic()
                    headers: Any = (m.headers() or []) if m.error() is None else []
                    for name, value in headers:
                        if name == _ROW_HEADER and isinstance(value, bytes) and value.startswith(tag):
                            seen.add(int(value[len(tag):]))
        finally:
            reader.close()
        if seen:
            log.warning("%s: %d rows of epoch %d were left visible by a publish that did not commit (the broker "
                        "does not hide aborted transactions); they are not sent again", self._where, len(seen), epoch)
        return seen

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._producer is not None:
            self._producer.flush(_TIMEOUT_S)
            self._producer = None
        if self._marker is not None:
            self._marker.close()
            self._marker = None

    def files(self) -> list[Path]:
        return []

    def directories(self) -> list[Path]:
        return [] if self.staging_dir is None else [self.staging_dir]

    # -- producing --------------------------------------------------------------------------------
    def _max_bytes(self) -> int:
        """The producer's limit on a message (librdkafka's ``message.max.bytes``, 1000000 by default)."""
        try:
            return int(self.config.get("message.max.bytes", 1_000_000))
        except (TypeError, ValueError):
            return 1_000_000

    def _too_large(self, size: int, row: int, key: Any) -> SinkError:
        limit = self._max_bytes()
        if isinstance(key, bytes):
            key = key.decode("utf-8", "replace")
        which = f"the row with {self.key}={key!r}" if self.key is not None else f"row {row} of a batch"
        return SinkError(f"{self._where}: {which} makes a message of {size} bytes, more than the producer's "
                         f"message.max.bytes ({limit}); raise it with config={{'message.max.bytes': ...}} (and the "
                         "topic's max.message.bytes on the broker), or make the rows smaller")

    def _check_sizes(self, batch: pa.RecordBatch) -> None:
        """Refuse a row whose message would be larger than the producer takes. Only batches whose longest text
        could make such a message are encoded for this (an encoded value is at most 6 bytes per byte of text,
        for JSON's escapes, plus a bounded text per column)."""
        limit = self._max_bytes()
        fixed = sum(len(f.name.encode()) + 64 for f in batch.schema)
        longest = np.zeros(batch.num_rows, np.int64)
        for column in batch.columns:
            t = column.type
            if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) \
                    or pa.types.is_large_binary(t):
                longest += pc.fill_null(pc.binary_length(column), 0).to_numpy(zero_copy_only=False)
        if fixed + 6 * int(longest.max(initial=0)) < limit:
            return
        values, keys, _ = self._messages(batch)
        for i, value in enumerate(values):
            size = len(value or b"") + (len(keys[i] or b"") if keys is not None else 0)
            if size > limit:
                raise self._too_large(size, i, None if keys is None else keys[i])

    def _messages(self, batch: pa.RecordBatch) -> tuple[list[bytes | None], list[bytes | None] | None,
                                                        np.ndarray | None]:
        """Each row's message value (None: a tombstone) and key (None: no keys), and which rows are written
        (None: every one)."""
        return list(self._values(batch)), self._keys(batch), None

    def _values(self, batch: pa.RecordBatch) -> list[bytes]:
        if self._avro is not None:
            from darwin.io.kafka import avro  # noqa: F811 - loaded only for Avro (see above)
            return avro.encode(self._avro, batch.select(self._avro.schema.names), self._where)
        return codecs.encode(self.format, batch)

    def _keys(self, batch: pa.RecordBatch) -> list[bytes | None] | None:
        if self.key is None:
            return None
        texts = codecs.text(batch.column(self.key)).to_pylist()  # as the value writes it
        return [None if k is None else k.encode() for k in texts]

    def _published(self) -> int:
        """The last epoch whose transaction committed, from the marker offset (0: none)."""
        from confluent_kafka import TopicPartition

        committed = self._marker.committed([TopicPartition(self.topic, 0)], timeout=_TIMEOUT_S)
        return max(0, committed[0].offset)

    def _produce(self, batch: pa.RecordBatch, row: tuple[int, int] | None = None, skip: set[int] | None = None) \
            -> None:
        """``row``: (epoch, number of the batch's first row in it), written as a header of each message, so a
        publish repeated after a crash can tell which rows a broker already shows (``skip``)."""
        from confluent_kafka import KafkaError, KafkaException

        values, keys, written = self._messages(batch)
        stamps = batch.column(self.timestamp).cast(pa.int64()).to_pylist() if self.timestamp is not None else None
        produce, poll = self._producer.produce, self._producer.poll
        for i, value in enumerate(values):
            if written is not None and not written[i]:
                continue
            extra: dict[str, Any] = {}
            if row is not None:
                n = row[1] + i
                if skip and n in skip:
                    continue
                extra["headers"] = [(_ROW_HEADER, f"{self._tid}:{row[0]}:{n}".encode())]
            if keys is not None:
                extra["key"] = keys[i]
            if stamps is not None and stamps[i] is not None:
                extra["timestamp"] = stamps[i]
            while True:
                try:
                    produce(self.topic, value, on_delivery=self._delivered, **extra)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    poll(0.05)
                except KafkaException as e:
                    error = e.args[0] if e.args else None
                    if isinstance(error, KafkaError) and error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                        raise self._too_large(len(value or b"") + len(extra.get("key") or b""), i,
                                              None if keys is None else keys[i]) from None
                    raise SinkError(f"{self._where}: producing a message failed: {e}") from None
        poll(0)
        self.produced += len(values) if written is None else int(written.sum())

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(str(error))

    def _flush(self) -> None:
        left = self._producer.flush(_TIMEOUT_S)
        if left:
            raise SinkError(f"{self._where}: {left} messages were not acknowledged within {_TIMEOUT_S:.0f} s")
        self._check_errors()

    def _check_errors(self) -> None:
        if self._errors:
            first, n = self._errors[0], len(self._errors)
            self._errors.clear()
            raise SinkError(f"{self._where}: {n} messages could not be delivered, e.g.: {first}")


class UpsertKafkaSink(KafkaSink):
    """A result as a topic of the latest row per ``key`` (Flink's 'upsert-kafka' sink): each message's key is the
    key columns in ``key_format`` ('json', 'csv', or 'raw' for one text column), its value the row in ``format``;
    a deleted row is a tombstone (its key, no value), so a compacted topic holds the result's final rows.

    An update's withdrawal (-U) is not written when its key's new row follows in the same batch (Flink's planner
    sends no UPDATE_BEFORE to an upsert sink): only the new row is. One that no new row follows is the row
    leaving the result: a tombstone, as Flink writes an UPDATE_BEFORE it is given. Keys go to partitions as
    Java's producer sends them, so each key's changes stay in order.
    """

    def __init__(self, topic: str, bootstrap_servers: str, *, key: Sequence[str], key_format: str = "json",
                 format: str = "json", guarantee: str = "at_least_once", config: dict[str, Any] | None = None) -> None:
        super().__init__(topic, bootstrap_servers, format=format, guarantee=guarantee, config=config)
        if format == "avro" or key_format not in ("json", "csv", "raw"):
            raise SinkError(f"{self._where}: an upsert topic's keys and values are 'json', 'csv' or 'raw'")
        if not key:
            raise SinkError(f"{self._where}(key=...): an upsert topic needs the columns that key its rows")
        self.key_columns, self.key_format = tuple(key), key_format
        self._updating = False

    def describe(self) -> str:
        return f"upsert-kafka {self.topic} key {list(self.key_columns)} {self.format} {self.guarantee}"

    def check(self, result: ResultSpec) -> None:
        data = result.data_schema
        missing = [k for k in self.key_columns if k not in data.names]
        if missing:
            raise SinkError(f"{self._where}(key=...): the result has no column(s) {missing}; its columns are "
                            f"{data.names}")
        if result.late_schema is not None:
            raise SinkError(f"{self._where}: the query keeps late rows (late_output=True), and a Kafka sink writes "
                            "results only; drop late_output")
        for what, fmt, columns in (("key", self.key_format, self.key_columns), ("value", self.format, data.names)):
            if fmt == "raw" and (len(columns) != 1 or not pa.types.is_string(data.field(columns[0]).type)):
                raise SinkError(f"{self._where}: a 'raw' {what} is one text column; the {what} has {list(columns)}")

    def open(self, result: ResultSpec, resume: dict[str, Any] | None, job: str) -> None:
        self._updating = result.updating
        super().open(result, resume, job)

    def _messages(self, batch: pa.RecordBatch) -> tuple[list[bytes | None], list[bytes | None] | None,
                                                        np.ndarray | None]:
        data = batch.drop_columns([CHANGE_COLUMN]) if self._updating else batch
        keys: list[bytes | None] = list(codecs.encode(self.key_format, data.select(list(self.key_columns))))
        values: list[bytes | None] = list(codecs.encode(self.format, data))
        if not self._updating:
            return values, keys, None
        kinds = batch.column(CHANGE_COLUMN).to_pylist()
        written = np.ones(batch.num_rows, np.bool_)
        coming: set[bytes | None] = set()  # keys a later change of the batch writes a row of
        for i in range(batch.num_rows - 1, -1, -1):
            if kinds[i] in ("+I", "+U"):
                coming.add(keys[i])
            elif kinds[i] == "-U" and keys[i] in coming:
                written[i] = False
            else:
                values[i] = None
        return values, keys, written
