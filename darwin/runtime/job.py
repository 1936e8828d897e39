"""A query writing to a sink, with periodic checkpoints and recovery: exactly-once output.

Every ``checkpoint_interval`` (batches or time), at a batch boundary, the job
closes the sink's epoch, captures the engine (source offset, event-time progress,
counters, string dictionary, operator state) into a checkpoint, makes it durable,
and only then commits the epoch's output. A restart with the same
``checkpoint_dir`` resumes from the newest complete checkpoint: it completes that
checkpoint's commit, throws away output staged after it, and replays the source
from the recorded offset.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from darwin.config import Config
from darwin.errors import CheckpointError, ConfigError
from darwin.io.sinks import Sink
from darwin.plan import nodes as pn
from darwin.plan.explain import render
from darwin.plan.rules import optimize
from darwin.runtime.output import Output
from darwin.runtime.progress import Metrics
from darwin.state.checkpoint import Checkpoint, CheckpointStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobResult:
    """What a sink run did: its metrics, the committed files, and where it resumed from."""

    metrics: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    resumed_from: int | None = None


def run_job(plan: pn.PlanNode, sink: Sink, config: Config) -> JobResult:
    every = config.checkpoint_every
    if every is not None and config.mode != "compiled":
        raise ConfigError("checkpoints are taken by the compiled engine; use mode 'compiled' with checkpoint_dir")
    metrics = Metrics()
    started = time.perf_counter()
    late_schema = pn.late_output_schema(plan)
    late_arrow = None if late_schema is None else late_schema.to_arrow()
    if config.mode == "interpreted":
        _run_interpreted(plan, sink, config, metrics, late_arrow)
        return _result(sink, metrics, started, None)

    from darwin.runtime.compiled import CompiledEngine

    store = CheckpointStore(config.checkpoint_dir) if every is not None else None
    latest = store.latest() if store is not None else None
    identity = _identity(plan, config)
    if latest is not None:
        _check_compatible(latest, identity)
        log.info("resuming from checkpoint %d in %s", latest.id, store.root)
    engine = CompiledEngine(optimize(plan), config, metrics, fresh=latest is None)
    try:
        if latest is not None:  # counters continue: the metrics are those of the whole job
            engine.restore(latest.path, latest.body["engine"], latest.id)
            metrics.add("output_rows", latest.body["output_rows"])
        sink.open(plan.schema.to_arrow(), late_arrow, None if latest is None else latest.body["sink"])
        epoch = 1 if latest is None else latest.id + 1
        due = _Interval(every)

        def checkpoint(finished: bool) -> None:
            nonlocal epoch
            t = time.perf_counter()
            prepared = sink.prepare(epoch)
            directory = store.directory(epoch)
            body, files = engine.snapshot(directory)
            store.commit(epoch, {**identity, "finished": finished, "engine": body, "sink": prepared,
                                 "output_rows": metrics.values["output_rows"]}, files)
            engine.after_checkpoint(epoch)
            sink.commit(prepared)
            metrics.add("checkpoints", 1)
            metrics.add("checkpoint_seconds", time.perf_counter() - t)
            epoch += 1

        for out in engine.outputs():
            if out.kind != "barrier":
                _write(sink, out, metrics)
            elif store is not None and due.tick():
                checkpoint(finished=False)
        if store is not None:
            checkpoint(finished=True)
        else:
            sink.commit(sink.prepare(epoch))
    finally:
        engine.close()
        sink.close()
    return _result(sink, metrics, started, None if latest is None else latest.id)


def _run_interpreted(plan: pn.PlanNode, sink: Sink, config: Config, metrics: Metrics, late_arrow: Any) -> None:
    from darwin.reference.interpreter import run as interpret

    sink.open(plan.schema.to_arrow(), late_arrow, None)
    try:
        for out in interpret(plan, config, metrics):
            _write(sink, out, metrics)
        sink.commit(sink.prepare(1))
    finally:
        sink.close()


def _write(sink: Sink, out: Output, metrics: Metrics) -> None:
    if out.kind == "result":
        metrics.add("output_rows", out.batch.num_rows)
    sink.write(out.kind, out.batch)


def _result(sink: Sink, metrics: Metrics, started: float, resumed_from: int | None) -> JobResult:
    metrics.set("seconds", time.perf_counter() - started)
    return JobResult(metrics.as_dict(), sink.files(), resumed_from)


class _Interval:
    """Whether a checkpoint is due at this barrier: every n batches, or once n ms have passed."""

    def __init__(self, every: tuple[str, int] | None) -> None:
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


def _identity(plan: pn.PlanNode, config: Config) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the query and where its state lives."""
    text = render(plan)
    return {"query": hashlib.sha256(text.encode()).hexdigest(), "plan": text, "state": config.state,
            "state_path": None if config.state_path is None else str(Path(config.state_path).resolve())}


def _check_compatible(latest: Checkpoint, identity: dict[str, Any]) -> None:
    body, where = latest.body, f"checkpoint {latest.id} in {str(latest.path.parent)!r}"
    if body["query"] != identity["query"]:
        old, new = body["plan"].splitlines(), identity["plan"].splitlines()
        i = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        was, now = (lines[i].strip() if i < len(lines) else "(end of plan)" for lines in (old, new))
        raise CheckpointError(f"{where} was written by a different query (first difference: checkpoint has "
                              f"{was!r}, this query has {now!r}); resume it with the same query, or give a new "
                              "checkpoint_dir")
    if body["state"] != identity["state"]:
        raise CheckpointError(f"{where} holds state of backend {body['state']!r}; this run uses "
                              f"{identity['state']!r}. State cannot move between backends")
    if body["state_path"] != identity["state_path"]:
        raise CheckpointError(f"{where} keeps its state in state_path {body['state_path']!r}; this run uses "
                              f"{identity['state_path']!r}")
