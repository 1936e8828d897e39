"""Unbounded runs on Spark: a plan as a Structured Streaming query (DESIGN §7).

A plan streams when one of its sources is unbounded (``bounded = False``) or paced in wall-clock
time (``rate_limit``, a live producer) and Spark can read it as a stream (``SparkStreamable``).
The translation is its own visitor, smaller than the batch one: Spark's streaming state decides
lateness by its own watermark, so the hidden arrival columns of ``darwin.spark.sources`` play no
part. Each source's event time gets Spark's watermark from the scan's ``max_delay``
(``withWatermark``); a windowed aggregation appends (a window is emitted once Spark's watermark
passes its end), an aggregation without a window updates (each micro-batch gives the new rows of the
groups it changed, written as upserts, ``+U``). What Structured Streaming cannot express the way
Darwin means it raises ``UnsupportedError`` naming the node and why.

Output goes through Darwin's own sinks from ``foreachBatch``: micro-batch ``b`` is one epoch of the
sink, staged, recorded in ``checkpoint_dir/darwin-spark-sink.json`` and then committed, so a restart
with the same ``checkpoint_dir`` (Spark's ``checkpointLocation`` is ``checkpoint_dir/spark``) skips a
micro-batch Spark replays that the sink already committed: every micro-batch is written exactly once.
"""

from __future__ import annotations

import json
import logging
import queue
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.files import write_atomically
from darwin.io.paced import Paced
from darwin.io.sinks import CHANGE_COLUMN, ResultSpec, Sink
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.visitor import SharedNodeVisitor
from darwin.runtime.output import Output
from darwin.runtime.progress import Metrics
from darwin.spark.exprs import column, spark_type, to_spark
from darwin.spark.sources import SparkStreamable, delay_of, unwrapped
from darwin.types import Schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

EVENT_TIME = "__dw_event_time"  # a source's event time as a Spark timestamp: what the watermark is on
RECORD = "darwin-spark-sink.json"  # the last micro-batch the sink committed, and how to resume it
IDLE_S = 1.5  # a query whose finite sources are all read is done once idle this long
UPSERT = "+U"


def streams(plan: pn.PlanNode) -> bool:
    """Whether ``plan`` runs as a Structured Streaming query: a source of it is unbounded or paced."""
    return any(_is_stream(s.source) for s in pn.scans(plan))


def _is_stream(source: Any) -> bool:
    return getattr(source, "bounded", True) is False or isinstance(source, Paced)


@dataclass(frozen=True)
class Stream:
    """A node's rows in a streaming DataFrame; ``time`` is the visible column the hidden
    ``EVENT_TIME`` (watermarked) mirrors, or None once no column does."""

    df: DataFrame
    schema: Schema
    time: str | None


class StreamTranslator(SharedNodeVisitor[Stream]):
    """The streaming DataFrame of each node; ``ends`` holds each source's last offset (None: unbounded)."""

    translation = "Spark Structured Streaming"

    def __init__(self, spark: SparkSession, config: Config) -> None:
        super().__init__()
        self.spark, self.config = spark, config
        self.ends: list[Any] = []
        self.updating = False

    def visit_Scan(self, node: pn.Scan) -> Stream:
        from pyspark.sql import functions as F

        source, rate = unwrapped(node.source)
        if not _is_stream(node.source):
            raise UnsupportedError(f"{_name(node)} over {node.source.name!r} is bounded, and the query's other "
                                   "sources stream: Structured Streaming joins of a stream with a static table "
                                   "are not translated; run the bounded parts apart")
        if not isinstance(source, SparkStreamable):
            raise UnsupportedError(f"{_name(node)}: Spark cannot read source {node.source.name!r} as a stream (it "
                                   "gives no spark_stream reader; Spark's Kafka connector is not bundled with pyspark)")
        df = source.spark_stream(self.spark, node.columns, rate, self.config.batch_size)
        self.ends.append(source.stream_end(rate))
        if node.time_column is None:
            return Stream(df, node.schema, None)
        df = df.withColumn(EVENT_TIME, F.timestamp_millis(column(node.time_column)))
        df = df.withWatermark(EVENT_TIME, f"{delay_of(node, self.config)} milliseconds")
        return Stream(df, node.schema, node.time_column)

    def visit_Filter(self, node: pn.Filter) -> Stream:
        s = self.visit(node.input)
        return Stream(s.df.filter(to_spark(node.predicate, node.input.schema)), node.schema, s.time)

    def visit_Project(self, node: pn.Project) -> Stream:
        s = self.visit(node.input)
        out = [to_spark(e, node.input.schema).cast(spark_type(t.dtype)).alias(name)
               for (name, e), t in zip(node.exprs, node.schema.fields)]
        time_ = next((name for name, e in node.exprs if isinstance(e, ex.Column) and e.name == s.time), None)
        hidden = [column(EVENT_TIME)] if time_ is not None else []
        return Stream(s.df.select(*out, *hidden), node.schema, time_)

    def visit_Aggregate(self, node: pn.Aggregate) -> Stream:
        from pyspark.sql import functions as F

        from darwin.spark.translate import _aggregates

        assign = node.input
        w = assign.window
        s = self.visit(assign.input)
        if w.on != s.time:
            raise UnsupportedError(f"{_name(node)}: its window is on {w.on!r}, not on a source's event time; "
                                   "Structured Streaming fires windows only on a watermarked column")
        if assign.late_output:
            raise UnsupportedError(f"{_name(node)} keeps late rows (late_output=True); Structured Streaming drops "
                                   "late rows and cannot hand them out")
        _refuse_distinct(node)
        window = F.window(column(EVENT_TIME), f"{w.size_ms} milliseconds", f"{w.slide_ms} milliseconds")
        grouped = s.df.groupBy(window.alias("__dw_w"), *(column(k) for k in node.keys))
        df = grouped.agg(*_aggregates(node.aggs, assign.input.schema))
        start, end = F.unix_millis(F.col("__dw_w.start")), F.unix_millis(F.col("__dw_w.end"))
        named = {pn.WINDOW_START: start, pn.WINDOW_END: end}
        return Stream(df.select(*[named.get(n, column(n)).alias(n) for n in node.schema.names]), node.schema, None)

    def visit_GroupAggregate(self, node: pn.GroupAggregate) -> Stream:
        from darwin.spark.translate import _aggregates

        _refuse_distinct(node)
        if node.state_ttl_ms is not None:
            raise UnsupportedError(f"Spark Structured Streaming cannot run {_name(node)} with state_ttl: Spark "
                                   "keeps an aggregation's groups until their watermark, not for a time to live")
        s = self.visit(node.input)
        self.updating = True
        df = s.df.groupBy(*(column(k) for k in node.keys)).agg(*_aggregates(node.aggs, node.input.schema))
        return Stream(df.select(*[column(n) for n in node.schema.names]), node.schema, None)

    def _refuse(self, node: Any) -> Stream:
        why = {
            "TopN": "a top-N ranks (sorts) rows, and Structured Streaming sorts only a complete-mode aggregate",
            "Deduplicate": "Darwin's deduplication keeps the first or the latest row by arrival, which a "
                           "micro-batch does not keep",
            "Over": "an OVER window orders each partition's rows, which streaming DataFrames cannot",
            "Join": "stream-stream joins need watermarks on both sides and time bounds Spark can check, which "
                    "this translation does not derive",
            "LookupJoin": "a stream joined with a static table is not translated",
            "SessionAggregate": "Darwin merges sessions as rows arrive; Spark's session_window merges them per "
                                "micro-batch",
            "Union": "a union of streams holds each input back by its own watermark, which Spark does not do",
            "WindowAssign": "window rows without an aggregation are not translated",
        }.get(type(node).__name__, "it has no streaming translation")
        raise UnsupportedError(f"Spark Structured Streaming cannot run {_name(node)}: {why}")

    def visit_Join(self, node: pn.Join) -> Stream:
        if pn.updating(node.left) or pn.updating(node.right):
            raise UnsupportedError(f"Spark Structured Streaming cannot run {_name(node)}: an input is an updating "
                                   "result, and Spark joins only streams that append (it has no retractions); run "
                                   "the query on Darwin's engine, or on Spark from bounded sources (a batch job "
                                   "joins the inputs' final tables)")
        return self._refuse(node)

    visit_TopN = visit_Deduplicate = visit_Over = visit_LookupJoin = _refuse
    visit_SessionAggregate = visit_Union = visit_WindowAssign = _refuse


def _refuse_distinct(node: pn.Aggregate | pn.GroupAggregate) -> None:
    """Structured Streaming has no distinct aggregations (its unsupported-operation check)."""
    distinct = pn.distinct_calls(node.aggs)
    if distinct:
        name, call = distinct[0]
        raise UnsupportedError(f"{_name(node)}: agg {name}={call}: Structured Streaming does not support distinct "
                               "aggregations; run the query on Darwin's engine, or on Spark from a bounded source")


def _name(node: Any) -> str:
    return f"plan node {type(node).__name__}"


class _Committer:
    """Darwin's sink fed one micro-batch at a time, each an epoch committed exactly once by batch id."""

    def __init__(self, sink: Sink, result: ResultSpec, directory: Path) -> None:
        self.sink, self.result, self.record = sink, result, directory / RECORD
        previous = json.loads(self.record.read_text()) if self.record.exists() else None
        self.job = previous["job"] if previous else uuid.uuid4().hex
        self.last_batch = previous["batch_id"] if previous and previous["sink"] else -1
        resume = previous["sink"] if previous else None
        if previous is None:
            write_atomically(self.record, json.dumps({"job": self.job, "batch_id": -1, "sink": None}).encode())
        sink.open(result, resume, self.job)
        self.epoch = 1 if resume is None else int(resume["epoch"]) + 1

    def write(self, batch_id: int, table: pa.Table) -> bool:
        """Write and commit micro-batch ``batch_id``; False if an earlier run committed it already."""
        if batch_id <= self.last_batch:
            log.info("micro-batch %d was committed before the restart; not written again", batch_id)
            return False
        for batch in table.to_batches():
            if batch.num_rows:
                self.sink.write("result", batch)
        prepared = self.sink.prepare(self.epoch)
        write_atomically(self.record, json.dumps({"job": self.job, "batch_id": batch_id, "sink": prepared}).encode())
        self.sink.commit(prepared)
        self.last_batch, self.epoch = batch_id, self.epoch + 1
        return True


def run(plan: pn.PlanNode, sink: Sink, result: ResultSpec, config: Config, metrics: Metrics,
        stopping: Callable[[], bool] = lambda: False) -> Iterator[Output]:
    """Run ``plan`` as a streaming query into ``sink``, yielding each micro-batch's rows once committed;
    returns once every source reached its end (never, for an unbounded one), or once ``stopping()``
    (a ``JobControl``'s stop) and no micro-batch is running. Closing the iterator stops the query
    too; a later run with the same ``checkpoint_dir`` goes on where it stopped."""
    from darwin.spark.engine import _darwin_table, arrow, check
    from darwin.spark.session import spark_session

    check(config, streaming=True)
    spark = spark_session("darwin", config.spark_master, config.spark_conf)
    t = StreamTranslator(spark, config)
    frame = t.visit(plan)
    temporary = None
    if config.checkpoint_dir:
        directory = Path(config.checkpoint_dir)
        directory.mkdir(parents=True, exist_ok=True)
    else:
        temporary = tempfile.TemporaryDirectory(prefix="darwin-spark-")
        directory = Path(temporary.name)
    committer = _Committer(sink, result, directory)
    done: queue.Queue[pa.Table] = queue.Queue()

    def each_batch(df: DataFrame, batch_id: int) -> None:
        table = _darwin_table(arrow(df), plan.schema)
        if t.updating:
            table = table.append_column(pa.field(CHANGE_COLUMN, pa.string(), nullable=False),
                                        pa.array([UPSERT] * table.num_rows, pa.string()))
        if committer.write(batch_id, table):
            done.put(table)

    query = (frame.df.writeStream.outputMode("update" if t.updating else "append")
             .option("checkpointLocation", str(directory / "spark")).foreachBatch(each_batch).start())
    try:
        yield from _outputs(query, done, t.ends, metrics, stopping)
    finally:
        query.stop()
        deadline = time.monotonic() + 30
        while query.isActive and time.monotonic() < deadline:  # its thread gone: a restart may use the checkpoint
            time.sleep(0.05)
        sink.close()
        if temporary is not None:
            temporary.cleanup()


def _outputs(query: StreamingQuery, done: queue.Queue[pa.Table], ends: list[Any], metrics: Metrics,
             stopping: Callable[[], bool]) -> Iterator[Output]:
    counted: set[int] = set()  # micro-batches whose input rows are in the metrics
    try:
        yield from _poll(query, done, ends, metrics, counted, stopping)
    finally:
        _count_input(query, metrics, counted)


def _count_input(query: StreamingQuery, metrics: Metrics, counted: set[int]) -> None:
    """Add the input rows of the micro-batches Spark reported since the last call."""
    for p in query.recentProgress:
        if p["batchId"] not in counted:
            counted.add(p["batchId"])
            metrics.add("input_rows", int(p["numInputRows"]))


def _poll(query: StreamingQuery, done: queue.Queue[pa.Table], ends: list[Any], metrics: Metrics,
          counted: set[int], stopping: Callable[[], bool]) -> Iterator[Output]:
    idle_since: float | None = None
    while True:
        try:
            table = done.get(timeout=0.1)
        except queue.Empty:
            table = None
        if table is not None:
            metrics.add("output_rows", table.num_rows)
            _count_input(query, metrics, counted)
            for batch in table.to_batches():
                if batch.num_rows:
                    yield Output("result", batch)
            if stopping():
                return  # its micro-batch is committed: the caller stops the query (finally), a restart replays none
            idle_since = None
            continue
        error = query.exception()
        if error is not None:
            raise error
        if not query.isActive:
            return
        status = query.status
        if stopping() and not status["isTriggerActive"] and done.empty():
            return  # between micro-batches, every one committed: the caller stops the query (finally)
        if _at_end(query, ends) and not status["isTriggerActive"] and not status["isDataAvailable"]:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= IDLE_S and done.empty():
                return
        else:
            idle_since = None


def _at_end(query: StreamingQuery, ends: list[Any]) -> bool:
    """Whether the query has read every source to its end (never, if one is unbounded)."""
    if any(e is None for e in ends):
        return False
    progress = query.lastProgress
    if not progress:
        return False
    offsets = [json.loads(s["endOffset"]) if isinstance(s["endOffset"], str) else s["endOffset"]
               for s in progress["sources"]]
    return sorted(map(json.dumps, offsets)) == sorted(map(json.dumps, ends))
