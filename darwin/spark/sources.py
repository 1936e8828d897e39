"""Darwin sources as Spark DataFrames, each row with hidden columns saying when it arrived.

Spark has no arrival order and no watermark, yet Darwin's answers depend on them: ties in a
top-N or a deduplication are broken by arrival, and a row is late by the watermark its source
had reached. So the driver reads every source of the plan as the reference interpreter does
(the next batch comes from the unfinished source with the smallest watermark) and gives each
row, before it becomes a DataFrame:

- ``SEQ``: its position in that one order of arrival over all sources;
- ``MARK``: its source's watermark just after it (what a windowed aggregation reading straight
  from the source judges it by);
- ``BEFORE``: its source's watermark before its batch (what top-N, session and join operators
  judge it by: their watermark moves after each batch).

Timestamps become int64 milliseconds (as Darwin holds them) and dictionaries are decoded.

A source may read itself in Spark instead (``SparkReadable``): its rows are then produced on the
executors, in parallel, rather than read through the driver (the Nexmark generator does this, as a
``pyspark.sql.datasource`` data source split by event-id ranges). It gives the same hidden columns,
by its own knowledge of the order its rows arrive in. For Structured Streaming, a source gives a
streaming DataFrame of its visible columns (``SparkStreamable``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from darwin.config import Config
from darwin.io.paced import Paced
from darwin.io.source import Source
from darwin.plan import nodes as pn
from darwin.runtime.encoding import to_int64
from darwin.runtime.progress import WatermarkClock, latest_event_time
from darwin.timestamps import END_OF_INPUT, NO_WATERMARK
from darwin.types import DType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SEQ, MARK, BEFORE = "__dw_seq", "__dw_mark", "__dw_before"
HIDDEN = (SEQ, MARK, BEFORE)


@runtime_checkable
class SparkReadable(Protocol):
    """A source that reads itself in Spark: ``spark_frame`` is its rows as a DataFrame of ``columns``
    (timestamps as int64 ms, strings decoded) followed by the hidden columns ``HIDDEN``, exactly as
    ``read_scans`` would give them for ``batch_size`` and a watermark ``delay_ms`` behind the largest
    event time, and how many rows that is."""

    def spark_frame(self, spark: Any, columns: tuple[str, ...], batch_size: int, delay_ms: int) \
            -> tuple[DataFrame, int]: ...


def time_ordered(source: Any) -> str | None:
    """The column a source's rows never decrease on in arrival order, if it says so (``ordered_by``:
    the Nexmark generator's event times grow with the event id): Spark then needs no check of it."""
    return getattr(source, "ordered_by", None)


@runtime_checkable
class SparkStreamable(Protocol):
    """A source Structured Streaming can read: ``spark_stream`` is a streaming DataFrame of ``columns``
    (timestamps as int64 ms) released at ``rate`` rows per second of wall-clock time (None: as fast as
    Spark reads), a micro-batch taking at most about ``batch_size`` rows; ``stream_end`` is the offset
    Spark reports once every row is read (None: never)."""

    def spark_stream(self, spark: Any, columns: tuple[str, ...], rate: float | None, batch_size: int) \
            -> DataFrame: ...

    def stream_end(self, rate: float | None) -> Any: ...


def unwrapped(source: Source) -> tuple[Source, float | None]:
    """The source under a pacing wrapper, and the wrapper's rate (None if not paced)."""
    if isinstance(source, Paced):
        return source.source, source.rate
    return source, None


def own_reader(node: pn.Scan) -> SparkReadable | None:
    """The scan's source if it reads itself in Spark and the scan asks nothing it cannot honour (a paced
    source is read through the driver: its batches, and so its rows' watermarks, are cut by the pace)."""
    source = node.source
    if isinstance(source, SparkReadable) and node.max_future_ms is None:
        return source
    return None


def delay_of(node: pn.Scan, config: Config) -> int:
    return node.max_delay_ms if node.max_delay_ms is not None else config.max_delay_ms


@dataclass
class _Reader:
    """One scan being read: its batches, its clock, and what it has read so far."""

    node: pn.Scan
    batches: Iterator[pa.RecordBatch]
    clock: WatermarkClock
    finished: bool = False
    parts: list[pa.Table] = field(default_factory=list)

    def watermark(self) -> int:
        return END_OF_INPUT if self.finished else self.clock.watermark


def read_scans(scans: list[pn.Scan], config: Config, next_seq: int = 0) -> dict[int, pa.Table]:
    """Every scan's rows with the hidden columns, by ``id`` of the scan node."""
    readers = []
    for node in scans:
        delay = delay_of(node, config)
        readers.append(_Reader(node, iter(node.source.batches(node.columns, config.batch_size)),
                               WatermarkClock(delay, node.max_future_ms)))
    seq = next_seq
    while True:
        pending = [r for r in readers if not r.finished]
        if not pending:
            break
        reader = min(pending, key=lambda r: r.watermark())  # min() keeps the first of equals: plan order
        batch = next(reader.batches, None)
        if batch is None:
            reader.finished = True
            continue
        reader.parts.append(_with_arrival(reader, batch, seq))
        seq += batch.num_rows
    return {id(r.node): _concat(r) for r in readers}


def _with_arrival(reader: _Reader, batch: pa.RecordBatch, seq: int) -> pa.Table:
    node = reader.node
    before = reader.clock.watermark
    columns = []
    for f in node.schema.fields:
        arr = batch.column(f.name)
        if f.dtype in (DType.INT64, DType.TIMESTAMP):
            arr = to_int64(arr, node.source.name, f.name)
        elif pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        columns.append(arr)
    n = batch.num_rows
    marks = np.empty(n, np.int64)
    if node.time_column is None:
        marks[:] = reader.clock.watermark
    else:
        times = columns[node.schema.names.index(node.time_column)]
        latest_event_time(times, node.source.name, node.time_column)
        valid = times.is_valid().to_numpy(zero_copy_only=False)
        values = times.fill_null(0).to_numpy(zero_copy_only=False)
        clock = reader.clock
        if clock.max_future_ms is None and n:  # max time seen so far, vectorized
            seen = np.maximum.accumulate(np.where(valid, values, NO_WATERMARK).astype(np.int64))
            seen = np.maximum(seen, clock.max_time)
            marks[:] = np.where(seen == NO_WATERMARK, NO_WATERMARK, seen - clock.delay_ms)
            clock.max_time = int(seen[-1])
        else:
            for i in range(n):  # the clock's own rule (max_future), row by row
                if valid[i]:
                    clock.observe(int(values[i]))
                marks[i] = clock.watermark
    names = list(node.schema.names) + list(HIDDEN)
    hidden = [pa.array(np.arange(seq, seq + n, dtype=np.int64)), pa.array(marks),
              pa.array(np.full(n, before, np.int64))]
    return pa.table(columns + hidden, names=names)


def _concat(reader: _Reader) -> pa.Table:
    schema = arrival_schema(reader.node)
    if not any(t.num_rows for t in reader.parts):
        return schema.empty_table()
    # one chunk: Spark's createDataFrame loses rows of an Arrow table that has empty chunks
    return pa.concat_tables([t.cast(schema) for t in reader.parts if t.num_rows]).combine_chunks()


def arrival_schema(node: pn.Scan) -> pa.Schema:
    """The Arrow schema of a scan's rows as Spark gets them: timestamps as int64, the hidden columns."""
    fields = [pa.field(f.name, pa.int64() if f.dtype is DType.TIMESTAMP else f.dtype.arrow)
              for f in node.schema.fields]
    return pa.schema(fields + [pa.field(h, pa.int64()) for h in HIDDEN])


def to_dataframe(spark: SparkSession, table: pa.Table) -> DataFrame:
    """An Arrow table as a DataFrame (an empty one keeps its schema)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(table.schema)
    return spark.createDataFrame(table, schema=schema)


def no_watermark() -> int:
    return NO_WATERMARK
