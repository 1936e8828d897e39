"""The compiled engine: one scheduler over the operator graph's pipelines and joins.

It follows the reference interpreter's schedule exactly (``darwin.reference.interpreter``): the
next batch comes from the unfinished source with the smallest watermark (ties: plan order); it
runs through every pipeline and join it reaches; then every stateful operator, inputs first,
takes its new watermark (the minimum of its inputs') and fires windows or frees join rows.
A source that has sent nothing for ``idle_timeout`` stops holding the others back.

Every result is stamped with the ingestion time of the input batch whose processing emitted it
(for windows: the batch that moved the watermark past their end), which latency is measured from.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from darwin.codegen.target import ensure_target
from darwin.config import Config
from darwin.graph import operators as op
from darwin.io import source as sources
from darwin.io.paced import arrival
from darwin.runtime.adaptive import ThreadBudget
from darwin.runtime.dictionary import load_dictionary, save_dictionary
from darwin.runtime.encoding import EncodedBatch, StringPool, decode, encode, to_int64
from darwin.runtime.output import BARRIER, Output
from darwin.runtime.prefetch import in_order, prefetched
from darwin.runtime.progress import Metrics, WatermarkClock, latest_event_time
from darwin.timestamps import END_OF_INPUT, NO_WATERMARK

if TYPE_CHECKING:
    from darwin.runtime.join import JoinRunner
    from darwin.runtime.stream_operators import StreamRunner

# rows, batch, encoded, ingested, event times for the watermark clock
Read = tuple[int, pa.RecordBatch | None, list[EncodedBatch], float, np.ndarray | None]
SPLIT_ROWS = 1 << 18  # rows a split of a source holds, about (at least a batch): what a thread reads at a time
SPLITS_AHEAD = 2  # splits in flight per thread


def read_from(source: sources.Source, columns: tuple[str, ...], batch_size: int, offset: int = 0,
              threads: int = 1) -> Iterator[pa.RecordBatch]:
    """The source's batches from row ``offset`` on, in order; on several ``threads`` a source that has
    splits is read in splits side by side, giving the same batches (``darwin.io.source.SplitSource``)."""
    if threads <= 1 or not sources.splittable(source):
        yield from sources.read_from(source, columns, batch_size, offset)
        return
    split: sources.SplitSource = source  # type: ignore[assignment]
    reads = in_order(((lambda s=s: (s, split.read_split(s, columns, batch_size)))  # type: ignore[misc]
                      for s in split.splits(columns, batch_size, offset, max(batch_size, SPLIT_ROWS))),
                     threads, SPLITS_AHEAD * threads)
    yield from sources.joined(reads)


class ReadTiming:
    """How one source's reads went: the seconds spent in them (the source's own work and a paced
    source's waiting), and how late the last and the latest paced batch was read after it was due."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.lag_ms = 0.0
        self.max_lag_ms = 0.0


def read_timed(batches: Iterator[pa.RecordBatch], timing: ReadTiming) -> Iterator[tuple[pa.RecordBatch, float]]:
    """Each batch with its ingestion time (``time.perf_counter()``): when a paced source made its newest
    row available, else when the read returned it."""
    while True:
        asked = time.perf_counter()
        batch = next(batches, None)
        now = time.perf_counter()
        timing.seconds += now - asked
        if batch is None:
            return
        due = arrival(batch)
        if due is None:
            yield batch, now
            continue
        timing.lag_ms = (now - due) * 1000.0  # a reader keeping up reads each chunk when it is due
        timing.max_lag_ms = max(timing.max_lag_ms, timing.lag_ms)
        yield batch, due


class SourceReader:
    """One source: its offset (rows consumed), its event-time clock, and whether it has ended."""

    def __init__(self, scan: Any, delay_ms: int, readers: list[op.Pipeline], config: Config,
                 pool: StringPool, payload: frozenset[str] = frozenset()) -> None:
        self.scan, self.pipelines, self.payload = scan, readers, payload
        self.clock = WatermarkClock(delay_ms, scan.max_future_ms)
        self.config, self.pool = config, pool
        self.offset = 0
        self.finished = False
        self.last_rows = time.monotonic()
        self.idle = False
        self._batches: Iterator[Read] | None = None
        self.timing = ReadTiming()  # of the source's reads (in its reader thread, with prefetch)

    def watermark(self) -> int:
        if self.finished:
            return END_OF_INPUT
        return self.clock.watermark

    def merged_watermark(self) -> int:
        """What it holds the operators reading it back to: nothing while it is idle."""
        return END_OF_INPUT if self.idle else self.watermark()

    def reads(self) -> Iterator[Read]:
        """The source's batches from the offset, each encoded for every pipeline reading it: the reading
        thread's work (``next`` takes them from it, read ahead)."""
        scan, pool = self.scan, self.pool
        batches = read_from(scan.source, scan.columns, self.config.batch_size, self.offset, self.config.workers)
        for batch, ingested in read_timed(iter(batches), self.timing):
            done: dict = {}
            encoded = [encode(batch, p.input_schema, pool, scan.source.name, p.moved_inputs, p.computed_inputs,
                              self.payload, done) for p in self.pipelines]
            yield batch.num_rows, batch, encoded, ingested, self._times(batch)

    def next(self) -> tuple[pa.RecordBatch, list[EncodedBatch], float] | None:
        """The next batch (encoded once for each pipeline reading it) and its ingestion time, or None
        at the end."""
        if self._batches is None:
            self._batches = iter(prefetched(self.reads, self.config.prefetch))
        item = next(self._batches, None)
        if item is None:
            self.finished = True
            return None
        n, batch, encoded, ingested, times = item
        assert batch is not None
        self.offset += n
        idle_ms = self.config.idle_timeout_ms
        now = time.monotonic()
        if n:
            self.last_rows, self.idle = now, False
            for t in [] if times is None else times:
                self.clock.observe(int(t))
        elif idle_ms is not None and (now - self.last_rows) * 1000 >= idle_ms:
            self.idle = True
        return batch, encoded, ingested

    # A source with positions (Kafka: an offset and a watermark per partition) says where it is after
    # a number of rows; the checkpoint keeps it, a restart hands it back, a durable checkpoint is reported.
    def position(self) -> dict[str, Any]:
        at = getattr(self.scan.source, "position_at", None)
        return {} if at is None else {"position": at(self.offset)}

    def resume(self, position: dict[str, Any] | None) -> None:
        if position is not None:
            self.scan.source.resume(position, self.offset)

    def end(self) -> None:
        """End this input here, as if the source had no more rows (a job stopped with drain)."""
        self.finished = True

    def lag(self) -> int | None:
        """Messages the source has and the run has not read yet, where the source tells (Kafka)."""
        lag = getattr(self.scan.source, "lag", None)
        if lag is None:
            return None
        found = lag()
        return int(sum(found.values())) if isinstance(found, dict) else int(found)

    def close(self) -> None:
        """Stop reading ahead, and release what the source holds between reads (a Kafka source's
        group-commit client)."""
        if self._batches is not None:
            close_reads = getattr(self._batches, "close", None)
            if close_reads is not None:  # the read-ahead thread ends with it
                close_reads()
            self._batches = None
        close = getattr(self.scan.source, "close", None)
        if close is not None:
            close()

    def checkpointed(self, position: dict[str, Any] | None) -> None:
        done = getattr(self.scan.source, "checkpointed", None)
        if done is not None and position is not None:
            done(position)

    def _times(self, batch: pa.RecordBatch) -> np.ndarray | None:
        """The event times of ``batch`` the watermark clock observes, found ahead on the reading thread:
        the largest, or with ``max_future`` every one (a row too far ahead does not move the clock)."""
        column = self.scan.time_column
        if column is None or not batch.num_rows:
            return None
        times = to_int64(batch.column(column), self.scan.source.name, column)
        latest = latest_event_time(times, self.scan.source.name, column)
        if self.clock.max_future_ms is None:
            return np.array([] if latest is None else [latest], np.int64)
        return times.to_numpy(zero_copy_only=False) if times.null_count == 0 else \
            times.drop_null().to_numpy(zero_copy_only=False)


class CompiledEngine:
    """One run of a plan: its pipelines and joins, their state, and how far into each source it is.

    ``outputs()`` yields results and late rows, and a barrier after each input batch; between
    batches the state is consistent, so ``snapshot`` can capture it.
    """

    def __init__(self, graph: op.OperatorGraph, config: Config, metrics: Metrics, job: str,
                 fresh: bool = True, saved_graph: op.OperatorGraph | None = None) -> None:
        """``saved_graph``: this query as the run of the checkpoint it resumes from compiled it, at
        another parallelism (tables workers divide differently then start empty, to be filled from it)."""
        ensure_target(config.target)  # before anything compiles: Numba fixes the target then
        from darwin.runtime.parallel import pipeline_runner
        from darwin.runtime.rescale import table_names
        from darwin.runtime.static_index import StaticIndex
        from darwin.runtime.workers import WorkerPool
        from darwin.state.backend import backend_for

        self.config, self.metrics, self.job, self.graph = config, metrics, job, graph
        self.pool = StringPool()
        self.backend = backend_for(config, job, fresh)
        self.static = [StaticIndex(spec, config, self.pool) for spec in graph.lookups]
        self.workers = WorkerPool(config.workers)
        moved = [saved_graph is not None and table_names(saved) != table_names(p)
                 for saved, p in zip((saved_graph or graph).pipelines, graph.pipelines)]
        self.runners = [pipeline_runner(p, config, self.pool, self.backend, self.static, self.workers, new)
                        for p, new in zip(graph.pipelines, moved)]
        if all(p.parallel is None for p in graph.pipelines):  # nothing for the run's budget to give back
            self.workers.budget = ThreadBudget(1)
        self.joins: list[JoinRunner] = []
        if graph.joins:  # its compiled building blocks load only for queries that join
            from darwin.runtime.join import JoinRunner

            self.joins = [JoinRunner(j, config, self.pool, self.backend, graph.columns_read(op.JoinPort(j.id)))
                          for j in graph.joins]
        self.operators: list[StreamRunner] = []
        if graph.operators:
            from darwin.runtime.stream_operators import runner_for

            self.operators = [runner_for(o, config, self.pool, self.backend, self.workers) for o in graph.operators]
        self.readers = []
        self._positions: list[dict[str, Any] | None] = []  # the sources' positions in the last snapshot
        for i, scan in enumerate(graph.scans):
            readers = [p for p in graph.pipelines if isinstance(p.input, op.SourcePort) and p.input.reader == i]
            delay = readers[0].input.delay_ms if readers else config.max_delay_ms  # type: ignore[union-attr]
            payload = graph.payload[i] if graph.payload else frozenset()
            self.readers.append(SourceReader(scan, delay, readers, config, self.pool, payload))
        self.port_readers: dict[Any, list[int]] = {}
        for p in graph.pipelines:
            self.port_readers.setdefault(_port_key(p.input), []).append(p.id)
        self.aggregate_wm = {s.id: NO_WATERMARK for s in graph.advance_order if s.kind == "aggregate"}
        self.union_wm = [NO_WATERMARK] * len(graph.unions)
        self.union_of = {u.producers: u.id for u in graph.unions}
        self.consumers = {p.id: graph.consumers(p.id) for p in graph.pipelines}  # looked up per batch
        self.pipeline_rows = [0] * len(graph.pipelines)  # rows each pipeline was given
        self.pipeline_seconds = [0.0] * len(graph.pipelines)  # wall time running its batches (firing aside)
        self.ingested = time.perf_counter()  # of the last batch read: what results are stamped with
        self.stopping: str | None = None  # "savepoint" or "drain" once the run is asked to stop

    @property
    def offset(self) -> int:
        """Source rows consumed, over every source."""
        return sum(r.offset for r in self.readers)

    @property
    def suspended(self) -> bool:
        """Whether the run ended because it was stopped with its inputs not at their end (its open
        windows kept in the state, for a restart to go on with)."""
        return self.stopping == "savepoint"

    def stop(self, drain: bool = False) -> None:
        """End the run at the next batch boundary; ``drain`` ends every input there first, so open
        windows fire as at the end of a bounded input."""
        self.stopping = "drain" if drain else "savepoint"

    def watermark(self) -> int | None:
        """The smallest watermark of the sources with event time (None before any)."""
        marks = [r.watermark() for r in self.readers if r.scan.time_column is not None]
        marks = [m for m in marks if m not in (NO_WATERMARK, END_OF_INPUT)]
        return min(marks) if marks else None

    def late_rows(self) -> int:
        """Late rows so far, over every stateful operator (read live; the run's metrics add them up at its end)."""
        counted: list[Any] = [*self.runners, *self.joins, *self.operators]
        return sum(int(c.counters().get("late_rows", 0)) for c in counted)

    def consumer_lag(self) -> int | None:
        """Messages not read yet, over the sources that report it."""
        lags = [lag for lag in (r.lag() for r in self.readers) if lag is not None]
        return sum(lags) if lags else None

    # -- running ----------------------------------------------------------------------------------
    def outputs(self) -> Iterator[Output]:
        """Results stamped with the ingestion time of the batch whose processing emitted them (the
        last batch read, for what the end of the input fires)."""
        for out in self._steps():
            yield out if out.kind != "result" else Output(out.kind, out.batch, self.ingested)

    def _steps(self) -> Iterator[Output]:
        started = time.perf_counter()
        waited = 0.0
        while True:
            pending = [r for r in self.readers if not r.finished]
            if not pending:
                break
            if self.stopping is not None:
                if self.stopping == "drain":
                    for r in pending:
                        r.end()
                    yield from self._advance()  # every input at its end: everything fires
                    yield BARRIER
                break
            reader = min(pending, key=lambda r: r.watermark())  # the first of equals: plan order
            asked = time.perf_counter()
            item = reader.next()
            waited += time.perf_counter() - asked
            rows = 0
            if item is not None:
                batch, encoded, self.ingested = item
                rows = batch.num_rows
                self.metrics.add("input_rows", rows)
                for p, e in zip(reader.pipelines, encoded):
                    yield from self._push(p.id, e, NO_WATERMARK)
            yield from self._advance()
            yield BARRIER
            self.workers.budget.observe(rows, time.perf_counter() - asked)  # the batch's whole time, output too
        for runner, p in zip(self.runners, self.graph.pipelines):
            for name, value in runner.counters().items():
                if name != "future_rows" and not (name == "windows_fired" and _second_step(p)):
                    self.metrics.add(name, value)
            if runner.kernel is not None:
                self.metrics.add("kernels_compiled", sum(runner.kernel.stats.cache_misses.values()))
                self.metrics.add("kernels_from_cache", sum(runner.kernel.stats.cache_hits.values()))
        self.metrics.set("pipelines", self.pipeline_metrics())
        counted: list[JoinRunner | StreamRunner] = [*self.joins, *self.operators]
        for stateful in counted:
            for name, value in stateful.counters().items():
                self.metrics.add(name, value)
        timed = [r.clock.watermark for r in self.readers if r.scan.time_column is not None]
        self.metrics.set("watermark", min(timed) if timed else NO_WATERMARK)
        self.metrics.add("future_rows", sum(r.clock.future_rows for r in self.readers))
        self.metrics.set("run_seconds", time.perf_counter() - started)
        self.metrics.set("input_wait_seconds", waited)  # the loop waiting for input: not busy
        self.metrics.set("one_thread_batches", self.workers.budget.one_thread_batches)
        self.metrics.set("source_seconds", sum(r.timing.seconds for r in self.readers))
        self.metrics.set("source_lag_ms", max((r.timing.lag_ms for r in self.readers), default=0.0))
        self.metrics.set("source_lag_max_ms", max((r.timing.max_lag_ms for r in self.readers), default=0.0))

    def _push(self, pipeline: int, batch: EncodedBatch, mark: int) -> Iterator[Output]:
        """Run ``batch`` through a pipeline and everything downstream of it; ``mark`` is the watermark
        its rows are judged by (pipelines reading a source judge per row)."""
        runner = self.runners[pipeline]
        p = runner.p
        started = time.perf_counter()
        out, late, fired_early = runner.process(batch, mark)
        self.pipeline_seconds[pipeline] += time.perf_counter() - started
        self.pipeline_rows[pipeline] += batch.length
        for fired in fired_early:  # windows a full ring had to drain before the batch ended
            yield from self._to_port(("fired", p.id), fired, self.aggregate_wm[p.id])
        if late is not None and late.length:
            yield Output("late", decode(late, p.output_schema, self.pool))
        if out is None or not out.length:
            return
        if pipeline == self.graph.output:
            yield Output("result", decode(out, p.output_schema, self.pool, batch, dict(p.moved_strings)))
            return
        for kind, target, side in self.consumers[pipeline]:
            if kind == "pipeline":
                yield from self._push(target, out, self.union_wm[self._union_reading(target)])
            elif kind == "operator":
                emitted = self.operators[target].push(out)
                if emitted is not None:
                    yield from self._to_port(("operator", target), emitted, self.operators[target].wm)
            else:
                joined = self.joins[target].push(out, side)
                if joined is not None:
                    yield from self._to_port(("join", target), joined, self.joins[target].wm)

    def pipeline_metrics(self) -> list[dict[str, Any]]:
        """Per pipeline: rows in, seconds, and on several workers the workers it uses now (adapted while
        the job runs), each one's busy seconds and the imbalance (the busiest worker's share over the
        mean: 1.0 is even, a hot key shows here)."""
        out = []
        for runner, rows, seconds in zip(self.runners, self.pipeline_rows, self.pipeline_seconds):
            entry: dict[str, Any] = {"pipeline": runner.p.id, "rows_in": rows, "seconds": round(seconds, 6),
                                     "workers": 1 if runner.p.parallel is None else runner.p.parallel.workers}
            share = getattr(runner, "share", None)
            if share is not None:  # on several workers: how many it uses now, of how many, and how often that moved
                entry.update(workers=share.active, workers_most=share.most, worker_changes=share.changes)
            busy = getattr(runner, "worker_busy", None)
            if busy is not None:
                entry["worker_busy_seconds"] = [round(b, 6) for b in busy]
                mean = sum(busy) / len(busy)
                entry["imbalance"] = round(max(busy) / mean, 3) if mean else 1.0
            out.append(entry)
        return out

    def _union_reading(self, pipeline: int) -> int:
        port = self.graph.pipelines[pipeline].input
        assert isinstance(port, op.UnionPort)
        return self.union_of[port.producers]

    def _to_port(self, key: Any, batch: EncodedBatch, mark: int) -> Iterator[Output]:
        for consumer in self.port_readers.get(key, ()):
            yield from self._push(consumer, batch, mark)

    def _advance(self) -> Iterator[Output]:
        """Every stateful operator, inputs first, takes its new watermark and fires or frees."""
        for step in self.graph.advance_order:
            if step.kind == "aggregate":
                runner = self.runners[step.id]
                old = self.aggregate_wm[step.id]
                new = self._port_watermark(runner.p.input)
                self.aggregate_wm[step.id] = new
                for fired in runner.drain(new, final=new == END_OF_INPUT):
                    yield from self._to_port(("fired", step.id), fired, old)
            elif step.kind == "join":
                join = self.joins[step.id]
                old = join.wm
                j = self.graph.joins[step.id]
                padded = join.advance(self._pipeline_watermark(j.left), self._pipeline_watermark(j.right))
                if padded is not None:
                    yield from self._to_port(("join", step.id), padded, old)
            elif step.kind == "operator":
                operator = self.operators[step.id]
                old = operator.wm
                emitted = operator.advance(self._pipeline_watermark(self.graph.operators[step.id].input))
                if emitted is not None:
                    yield from self._to_port(("operator", step.id), emitted, old)
            else:
                union = self.graph.unions[step.id]
                self.union_wm[step.id] = min(self._pipeline_watermark(p) for p in union.producers)

    def _pipeline_watermark(self, pipeline: int) -> int:
        return self._port_watermark(self.graph.pipelines[pipeline].input)

    def _port_watermark(self, port: op.Port) -> int:
        if isinstance(port, op.SourcePort):
            return self.readers[port.reader].merged_watermark()
        if isinstance(port, op.FiredWindowsPort):
            return self.aggregate_wm[port.producer]
        if isinstance(port, op.JoinPort):
            return self.joins[port.join].wm
        if isinstance(port, op.OperatorPort):
            return self.operators[port.operator].wm
        return self.union_wm[self.union_of[port.producers]]

    # -- checkpoints ------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """Everything a restarted run needs, at the barrier the engine is paused at."""
        files = [save_dictionary(self.pool, directory)]
        runners, joins = [], []
        for r in self.runners:
            body, written = r.snapshot(directory)
            runners.append(body)
            files += written
        for j in self.joins:
            body, written = j.snapshot(directory)
            joins.append(body)
            files += written
        operators = []
        for o in self.operators:
            body, written = o.snapshot(directory)
            operators.append(body)
            files += written
        sources = [{"offset": r.offset, "max_time": r.clock.max_time, "future_rows": r.clock.future_rows,
                    "finished": r.finished, **r.position()} for r in self.readers]
        self._positions = [s.get("position") for s in sources]
        return {"offset": sum(r.offset for r in self.readers), "sources": sources, "backend": self.backend.name,
                "runners": runners, "joins": joins, "operators": operators,
                "aggregate_wm": {str(k): v for k, v in self.aggregate_wm.items()},
                "union_wm": self.union_wm}, files

    def restore(self, directory: Path, body: dict[str, Any], checkpoint_id: int,
                saved_graph: op.OperatorGraph | None = None) -> None:
        """The state ``body`` holds. ``saved_graph``: the graph the checkpoint's run had, when it ran at
        another parallelism (the same query over the same input; only how workers share it differs)."""
        load_dictionary(self.pool, directory)
        graph = saved_graph or self.graph
        for r, saved, p in zip(self.runners, body["runners"], graph.pipelines):
            r.restore(directory, saved, checkpoint_id, p)
        for j, saved in zip(self.joins, body["joins"]):
            j.restore(directory, saved)
        for o, saved in zip(self.operators, body.get("operators", [])):
            o.restore(directory, saved)
        for reader, saved in zip(self.readers, body["sources"]):
            reader.offset, reader.finished = int(saved["offset"]), bool(saved["finished"])
            reader.resume(saved.get("position"))
            reader.clock.max_time, reader.clock.future_rows = int(saved["max_time"]), int(saved["future_rows"])
            self.metrics.add("input_rows", reader.offset)
        self.aggregate_wm = {int(k): int(v) for k, v in body["aggregate_wm"].items()}
        self.union_wm = [int(v) for v in body["union_wm"]]

    def after_checkpoint(self, checkpoint_id: int) -> None:
        for r in self.runners:
            r.after_checkpoint(checkpoint_id)
        for reader, position in zip(self.readers, self._positions):
            reader.checkpointed(position)

    def close(self) -> None:
        self.workers.close()
        for r in self.runners:
            r.close()
        for j in self.joins:
            j.close()
        for o in self.operators:
            o.close()
        for reader in self.readers:
            reader.close()
        self.backend.close()


def _port_key(port: op.Port) -> Any:
    if isinstance(port, op.FiredWindowsPort):
        return ("fired", port.producer)
    if isinstance(port, op.JoinPort):
        return ("join", port.join)
    if isinstance(port, op.SourcePort):
        return ("source", port.reader)
    if isinstance(port, op.OperatorPort):
        return ("operator", port.operator)
    return ("union", port.producers)


def has_input_after(graph: op.OperatorGraph, offsets: list[int]) -> bool:
    """Whether any of the graph's sources holds rows past its offset (a finished job's checkpoint covers none)."""
    return any(next(iter(read_from(scan.source, scan.columns, 1, offset)), None) is not None
               for scan, offset in zip(graph.scans, offsets))


def _second_step(p: op.Pipeline) -> bool:
    """Whether ``p`` re-groups a first aggregation's rows one window of it each (a distinct count's
    second step, ``darwin.plan.split_distinct``): the windows it fires were counted by the first."""
    return isinstance(p.sink, op.WindowAggregateSink) and p.sink.aggregate.second_step
