"""A query writing to a sink, with periodic checkpoints and recovery: exactly-once output.

Every ``checkpoint_interval`` (batches or time), at a batch boundary, the job
closes the sink's epoch, captures the engine (source offset, event-time progress,
counters, string dictionary, operator state) into a checkpoint, makes it durable,
and only then commits the epoch's output. A restart with the same
``checkpoint_dir`` resumes from the newest complete checkpoint: it completes that
checkpoint's commit, throws away output staged after it, and replays the source
from the recorded offset. If the newest checkpoint cannot be restored, the one before
it is tried; a checkpoint of a finished job is never resumed over more input.

Every run has a job id. A fresh run with checkpoints records it, with where the job
keeps its state and output, in ``checkpoint_dir/JOB.json``; its checkpoints, state
files and output directories carry it, so a resume never adopts another job's files
and ``darwin reset`` removes exactly what the job made.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from darwin.config import Config
from darwin.errors import RESET_HINT, CheckpointError, ConfigError, PlanError
from darwin.graph import operators as op
from darwin.graph.translate import translate
from darwin.io.sinks import CHANGE_COLUMN, ResultSpec, Sink
from darwin.plan import nodes as pn
from darwin.plan.explain import render
from darwin.plan.keys import unique_key
from darwin.plan.rules import optimize
from darwin.runtime.control import JobControl, JobStatus
from darwin.runtime.latency import Latencies
from darwin.runtime.layout_change import fingerprint, first_difference, layout_refusal, layout_settings
from darwin.runtime.output import Output, net_changes
from darwin.runtime.progress import Metrics
from darwin.state.checkpoint import Checkpoint, CheckpointStore

if TYPE_CHECKING:
    from darwin.runtime.compiled import CompiledEngine

log = logging.getLogger(__name__)
__all__ = ["CHANGE_COLUMN", "Driver", "JobResult", "register_engine", "register_streaming", "result_spec", "run_job"]

# An engine other than Darwin's own: the outputs of a plan run to the end of its input
EngineRunner = Callable[[pn.PlanNode, Config, Metrics], Iterator[Output]]
_ENGINES: dict[str, EngineRunner] = {}


# An engine's runs of unbounded plans: it writes (and commits) the sink itself, as it checkpoints, and
# ends after a commit once the last argument (whether a stop was asked, JobControl) says so
StreamRunner = Callable[[pn.PlanNode, Sink, ResultSpec, Config, Metrics, Callable[[], bool]], Iterator[Output]]
_STREAMING: dict[str, tuple[Callable[[pn.PlanNode], bool], StreamRunner]] = {}


def register_engine(name: str, runner: EngineRunner) -> None:
    """Let ``Config(engine=name)`` run plans with ``runner`` (the layers above register theirs, so this
    module never imports them)."""
    _ENGINES[name] = runner


def register_streaming(name: str, applies: Callable[[pn.PlanNode], bool], runner: StreamRunner) -> None:
    """Let engine ``name`` run the plans ``applies`` accepts (unbounded ones) with ``runner``, which owns
    the sink: it opens, writes and commits it by its own checkpoints."""
    _STREAMING[name] = (applies, runner)


@dataclass(frozen=True)
class JobResult:
    """What a sink run did: its metrics, the committed files, and where it resumed from."""

    metrics: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    resumed_from: int | None = None
    stopped: bool = False  # ended by a stop with its inputs not at their end; a restart goes on


def result_spec(plan: pn.PlanNode) -> ResultSpec:
    """What ``plan`` gives a sink: an updating result's rows carry their change kind in column ``op``."""
    updating = pn.updating(plan)
    schema = plan.schema.to_arrow()
    if updating:
        if CHANGE_COLUMN in schema.names:
            raise PlanError(f"the result has a column named {CHANGE_COLUMN!r}, which an updating result's changes "
                            "carry their kind (+I, -U, +U, -D) in; rename it")
        schema = schema.append(pa.field(CHANGE_COLUMN, pa.string(), nullable=False))
    late = pn.late_output_schema(plan)
    return ResultSpec(schema, None if late is None else late.to_arrow(), updating, lambda: unique_key(plan))


def run_job(plan: pn.PlanNode, sink: Sink, config: Config, control: JobControl | None = None) -> JobResult:
    """Run ``plan`` into ``sink`` to the end of its input, or until ``control`` stops it,
    checkpointing as ``config`` says."""
    return Driver(plan, sink, config, control).run()


class Driver:
    """The one loop every run goes through: ``collect``, ``execute``, ``iter_batches`` and
    ``sink(...).run()`` differ only in their sink.

    ``outputs()`` runs the plan on the configured engine, writes every result and late batch to
    the sink, takes checkpoints at barriers when ``checkpoint_dir`` is set, and yields each batch
    after the sink has it, so a caller can consume results as they are produced.
    """

    def __init__(self, plan: pn.PlanNode, sink: Sink, config: Config, control: JobControl | None = None) -> None:
        every = config.checkpoint_every
        if every is not None and config.mode != "compiled" and config.engine == "darwin":
            raise ConfigError("checkpoints are taken by the compiled engine; use mode 'compiled' with checkpoint_dir")
        self.plan, self.sink, self.config, self.every = plan, sink, config, every
        self.metrics = Metrics()
        self.latency = Latencies()  # of the results the sink took (the compiled engine stamps them)
        self.resumed_from: int | None = None
        self.result = result_spec(plan)
        sink.check(self.result)
        self.held = _Held(config.emit == "on_close" and self.result.updating, self.result)
        self.started = time.perf_counter()
        self.control = control
        self.engine: CompiledEngine | None = None  # while the compiled engine runs
        self.stopped = False
        self.last_checkpoint: tuple[float, float] | None = None  # (time.time() at its end, seconds it took)
        if control is not None:
            control.attach(self.status)

    def status(self) -> JobStatus:
        """The job now, for a progress display or a metrics endpoint (called from their threads)."""
        values, engine = self.metrics.values, self.engine
        done, took = self.last_checkpoint if self.last_checkpoint is not None else (None, None)
        return JobStatus(
            input_rows=int(values.get("input_rows", 0)), output_rows=int(values.get("output_rows", 0)),
            late_rows=engine.late_rows() if engine is not None else int(values.get("late_rows", 0)),
            watermark_ms=engine.watermark() if engine is not None else None,
            checkpoints=int(values.get("checkpoints", 0)), last_checkpoint_at=done, last_checkpoint_seconds=took,
            latency_p99_ms=self.latency.recent_percentile(99, seconds=60.0),
            consumer_lag=engine.consumer_lag() if engine is not None else None,
            stopping=self.control is not None and self.control.stop_requested,
            pipelines=engine.pipeline_metrics() if engine is not None else [])

    def outputs(self) -> Iterator[Output]:
        if self.config.engine != "darwin":
            runner = _ENGINES.get(self.config.engine)
            if runner is None:
                raise ConfigError(f"engine {self.config.engine!r} is not available; import darwin to register it")
            applies, stream = _STREAMING.get(self.config.engine, (None, None))
            if applies is not None and stream is not None and applies(self.plan):
                # the engine writes and commits the sink itself, and ends at a commit when asked to stop
                yield from stream(self.plan, self.sink, self.result, self.config, self.metrics, self._stop_asked)
                self.stopped = self._stop_asked()
            else:
                yield from self._external(runner(self.plan, self.config, self.metrics))
        elif self.config.mode == "interpreted":
            from darwin.reference.interpreter import run as interpret

            yield from self._external(interpret(self.plan, self.config, self.metrics))
        else:
            yield from self._compiled()
        self.metrics.set("seconds", time.perf_counter() - self.started)
        for name, value in self.latency.summary().items():
            self.metrics.set(name, value)

    def run(self) -> JobResult:
        """Run to the end of the input: what ran, and what the sink committed."""
        for _ in self.outputs():
            pass
        return JobResult(self.metrics.as_dict(), self.sink.files(), self.resumed_from, self.stopped)

    def _stop_asked(self) -> bool:
        return self.control is not None and self.control.stop_requested

    def _external(self, outputs: Iterator[Output]) -> Iterator[Output]:
        """Outputs of an engine without checkpoints (the reference interpreter, Spark), into the sink,
        committed once at the end."""
        sink = self.sink
        sink.open(self.result, None, uuid.uuid4().hex)
        try:
            kept = (out for out in outputs if not self.held.keeps(out))
            for out in chain(kept, self.held.release()):  # what is held leaves at the end
                out = _labelled(out)
                _write(sink, out, self.metrics, self.latency)
                yield out
                if self._stop_asked():  # no checkpoints here: what was written is committed
                    self.stopped = True
                    break
            sink.commit(sink.prepare(1))
        finally:
            sink.close()

    def _compiled(self) -> Iterator[Output]:
        plan, sink, config, metrics = self.plan, self.sink, self.config, self.metrics
        optimized = optimize(plan)
        graph = translate(optimized, config)
        identity = _identity(plan, graph, config)
        # checkpoints are on (``self.every`` is set) exactly when there is a checkpoint_dir
        store = CheckpointStore(config.checkpoint_dir) if config.checkpoint_dir else None
        with ExitStack() as resources:  # released in reverse: sink, engine (and its state), checkpoint_dir
            if store is not None:
                resources.callback(store.lock().close)
            engine, latest = _start(store, graph, identity, config, metrics,
                                    functools.cache(lambda n, **settings: translate(
                                        optimized, config.replace(parallelism=n, **settings))))
            resources.callback(engine.close)
            self.engine = engine
            resources.callback(sink.close)
            if latest is not None:  # counters continue: the metrics are those of the whole job
                metrics.add("output_rows", latest.body["output_rows"])
                self.resumed_from = latest.id
            sink.open(self.result, None if latest is None else latest.body["sink"], engine.job)
            if store is not None and latest is None:
                store.write_job({"job": engine.job, "state": config.state, "state_path": identity["state_path"],
                                 "outputs": [str(d.resolve()) for d in sink.directories()]})
            epoch = 1 if latest is None else latest.id + 1
            due = _Interval(self.every) if self.every is not None else None
            if latest is not None:  # a stop's checkpoint keeps what is held and where the interval stood
                self.held.restore(latest.path, latest.body.get("held"))
                if due is not None:
                    due.batches = int(latest.body.get("batches_since_checkpoint", 0))

            def checkpoint(finished: bool) -> None:
                nonlocal epoch
                assert store is not None
                t = time.perf_counter()
                prepared = sink.prepare(epoch)
                directory = store.directory(epoch)
                body, files = engine.snapshot(directory)
                held = self.held.save(directory)
                store.commit(epoch, {**identity, "job": engine.job, "finished": finished, "engine": body,
                                     "sink": prepared, "output_rows": metrics.values["output_rows"], "held": held,
                                     "batches_since_checkpoint": 0 if due is None else due.batches},
                             files + ([] if held is None else [held]))
                engine.after_checkpoint(epoch)
                sink.commit(prepared)
                took = time.perf_counter() - t
                metrics.add("checkpoints", 1)
                metrics.add("checkpoint_seconds", took)
                self.last_checkpoint = (time.time(), took)
                if self.control is not None:
                    self.control.checkpointed(took)
                epoch += 1

            def written(outs: Iterator[Output]) -> Iterator[Output]:
                for out in outs:
                    out = _labelled(out)
                    _write(sink, out, metrics, self.latency)
                    yield out

            if not self.held.active:  # held by a run with emit="on_close" before a stop: it leaves now
                yield from written(self.held.release())
            for out in engine.outputs():
                if out.kind != "barrier":
                    if not self.held.keeps(out):
                        yield from written(iter([out]))
                    continue
                if self._stop_asked() and engine.stopping is None:
                    assert self.control is not None
                    engine.stop(drain=self.control.drain)  # it ends at its next step
                    if due is not None and due.tick():  # the checkpoint the run would take here releases
                        yield from written(self.held.release())
                elif due is not None and due.tick():
                    yield from written(self.held.release())  # what is held leaves with the checkpoint
                    checkpoint(finished=False)
            self.stopped = engine.suspended
            if not (self.stopped and store is not None):  # a stop's checkpoint keeps it, released as never stopped
                yield from written(self.held.release())
            if store is not None:
                checkpoint(finished=not self.stopped)  # a stopped job's checkpoint is resumed over more input
            else:
                sink.commit(sink.prepare(epoch))


class _Held:
    """An updating result's changes held back (``Config.emit == "on_close"``): added up
    (``net_changes``) and released at each checkpoint and at the end of the input, so a group
    changed many times between two checkpoints emits one change."""

    def __init__(self, active: bool, result: ResultSpec) -> None:
        self.active, self.result = active, result
        self.batches: list[pa.RecordBatch] = []
        self.ingested: float | None = None  # the latest of the held changes'

    def keeps(self, out: Output) -> bool:
        """Whether ``out`` is held instead of written now."""
        if not self.active or out.kind != "result":
            return False
        self.batches.append(out.rows)
        if out.ingested is not None:
            self.ingested = out.ingested if self.ingested is None else max(self.ingested, out.ingested)
        return True

    HELD_FILE = "held.arrows"

    def save(self, directory: Path) -> str | None:
        """Write the changes held into a checkpoint's ``directory`` (a stop's: a checkpoint the run
        takes on its interval has just released them), so a resumed run adds them up with the rest
        and releases at the checkpoints an uninterrupted run releases at; the file's name, or None."""
        if not self.batches:
            return None
        with pa.OSFile(str(directory / self.HELD_FILE), "wb") as f, \
                pa.ipc.new_stream(f, self.batches[0].schema) as writer:
            for batch in self.batches:
                writer.write_batch(batch)
        return self.HELD_FILE

    def restore(self, directory: Path, name: str | None) -> None:
        """The changes a checkpoint's ``save`` wrote, held again."""
        if name is not None:
            with pa.OSFile(str(directory / name), "rb") as f:
                self.batches = list(pa.ipc.open_stream(f))

    def release(self) -> Iterator[Output]:
        if not self.batches:
            return
        changes = pa.Table.from_batches(self.batches)
        ingested, self.batches, self.ingested = self.ingested, [], None
        net = net_changes(changes, self.result.find_key())
        if net.num_rows:
            yield Output("result", net.combine_chunks().to_batches()[0], ingested)


def _labelled(out: Output) -> Output:
    """An updating result's change kinds as the column ``op`` (+I, -U, +U, -D), in place of the
    engines' hidden integer column."""
    batch = out.batch
    if batch is None or pn.CHANGE_KIND not in batch.schema.names:
        return out
    i = batch.schema.get_field_index(pn.CHANGE_KIND)
    labels = pa.array(pn.ChangeKind.LABELS, pa.string()).take(batch.column(i))
    return Output(out.kind, batch.remove_column(i).append_column(pa.field(CHANGE_COLUMN, pa.string(), nullable=False),
                                                                 labels), out.ingested)


def _write(sink: Sink, out: Output, metrics: Metrics, latency: Latencies) -> None:
    if out.kind == "result":
        metrics.add("output_rows", out.rows.num_rows)
    sink.write(out.kind, out.rows)
    if out.kind == "result" and out.ingested is not None:  # emitted: the sink has it
        latency.record(out.ingested, time.perf_counter(), out.rows.num_rows)


class _Interval:
    """Whether a checkpoint is due at this barrier: every n batches, or once n ms have passed."""

    def __init__(self, every: tuple[str, int]) -> None:
        self.every = every
        self.batches = 0
        self.since = time.monotonic()

    def tick(self) -> bool:
        self.batches += 1
        kind, n = self.every
        due = self.batches >= n if kind == "batches" else (time.monotonic() - self.since) * 1000 >= n
        if due:
            self.batches, self.since = 0, time.monotonic()
        return due


def _start(store: CheckpointStore | None, graph: op.OperatorGraph, identity: dict[str, Any], config: Config,
           metrics: Metrics, compiled_at: Callable[..., op.OperatorGraph]) \
        -> tuple[CompiledEngine, Checkpoint | None]:
    """An engine restored from the newest checkpoint that restores, or a fresh one if there is none.

    A checkpoint that verifies but cannot be restored (its state files do not match it) is
    passed over for the one before it; if none restores, that is an error, not a fresh start.
    ``compiled_at(n)`` is this query's graph at parallelism ``n``: what a checkpoint taken at another
    parallelism holds the state of (``compiled_at(n, **settings)``: with other Config settings).
    """
    from darwin.runtime.compiled import CompiledEngine, has_input_after

    failure: CheckpointError | None = None
    for latest in store.complete() if store is not None else ():
        saved_graph = _check_compatible(latest, identity, graph, compiled_at)
        body = latest.body
        offsets = [int(source["offset"]) for source in body["engine"]["sources"]]
        if body["finished"] and has_input_after(graph, offsets):
            raise CheckpointError(
                f"checkpoint {latest.id} in {str(latest.path.parent)!r} is the final checkpoint of a finished job: it "
                f"consumed {body['engine']['offset']} input rows and fired every window, and this input has more rows. "
                f"A finished job cannot be resumed over more input; give a new checkpoint_dir and output directory, "
                f"or {RESET_HINT}")
        engine = CompiledEngine(graph, config, metrics, job=body["job"], fresh=False,
                                saved_graph=None if saved_graph is graph else saved_graph)
        try:
            engine.restore(latest.path, body["engine"], latest.id, saved_graph)
        except CheckpointError as e:
            engine.close()
            log.warning("checkpoint %d cannot be restored (%s); trying an older one", latest.id, e)
            failure = e
            continue
        log.info("resuming from checkpoint %d in %s", latest.id, latest.path.parent)
        return engine, latest
    if failure is not None:
        raise CheckpointError(f"no checkpoint in {config.checkpoint_dir!r} can be restored; the last one tried "
                              f"failed with: {failure}")
    return CompiledEngine(graph, config, metrics, job=uuid.uuid4().hex), None


def _identity(plan: pn.PlanNode, graph: op.OperatorGraph, config: Config) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the query, the state layout it compiled to
    (which depends on the data, e.g. a window ring's key domain), and where its state lives."""
    text, layout = render(plan), graph.describe()
    return {"query": fingerprint(text), "plan": text, "layout": fingerprint(layout), "graph": layout,
            "state": config.state, "parallelism": config.workers, "settings": layout_settings(config),
            "state_path": None if config.state_path is None else str(Path(config.state_path).resolve())}


def _check_compatible(latest: Checkpoint, identity: dict[str, Any], graph: op.OperatorGraph,
                      compiled_at: Callable[..., op.OperatorGraph]) -> op.OperatorGraph:
    """Refuse a checkpoint this run cannot resume; the graph its run had (this run's, or this query's
    at the parallelism it was taken at)."""
    body, where = latest.body, f"checkpoint {latest.id} in {str(latest.path.parent)!r}"
    if body["query"] != identity["query"]:
        was, now = first_difference(body["plan"], identity["plan"])
        raise CheckpointError(f"{where} was written by a different query (first difference: checkpoint has "
                              f"{was!r}, this query has {now!r}); resume it with the same query, or give a new "
                              "checkpoint_dir")
    if body["state"] != identity["state"]:
        raise CheckpointError(f"{where} holds state of backend {body['state']!r}; this run uses "
                              f"{identity['state']!r}. State cannot move between backends")
    if body["state_path"] != identity["state_path"]:
        raise CheckpointError(f"{where} keeps its state in state_path {body['state_path']!r}; this run uses "
                              f"{identity['state_path']!r}")
    taken, workers = int(body.get("parallelism", 1)), int(identity["parallelism"])
    # at another parallelism the same query over the same input compiles to the checkpoint's layout at its
    # parallelism (one thread has no serial column, a ring where workers keep hash tables, ...)
    saved = graph if taken == workers else compiled_at(taken)
    layout = saved.describe() if taken != workers else identity["graph"]
    if body["layout"] != fingerprint(layout):
        raise layout_refusal(where, body, layout, identity["settings"], taken, workers, saved, compiled_at)
    return saved
