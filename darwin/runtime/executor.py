"""Runs a logical plan with the engine the config chooses, and explains it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa

from darwin.config import Config
from darwin.errors import ConfigError
from darwin.plan import nodes as pn
from darwin.plan.explain import render
from darwin.plan.rules import optimize
from darwin.runtime.output import Output, RunResult
from darwin.runtime.progress import Metrics

log = logging.getLogger(__name__)


def _outputs(plan: pn.PlanNode, config: Config, metrics: Metrics) -> Iterator[Output]:
    if config.checkpoint_dir:
        raise ConfigError("checkpoints protect output a sink commits: run the query with "
                          "q.sink(dw.sinks.Parquet(path)).run(config), or drop checkpoint_dir for collect/execute")
    if config.mode == "interpreted":
        from darwin.reference.interpreter import run as interpret

        yield from interpret(plan, config, metrics)
    else:
        from darwin.runtime.compiled import run as run_compiled

        yield from run_compiled(optimize(plan), config, metrics)


def stream(plan: pn.PlanNode, config: Config) -> Iterator[pa.RecordBatch]:
    for out in _outputs(plan, config, Metrics()):
        if out.kind == "result":
            yield out.batch


def run(plan: pn.PlanNode, config: Config) -> RunResult:
    metrics = Metrics()
    results: list[pa.RecordBatch] = []
    late: list[pa.RecordBatch] = []
    started = time.perf_counter()
    for out in _outputs(plan, config, metrics):
        if out.kind != "barrier":
            (results if out.kind == "result" else late).append(out.batch)
    metrics.set("seconds", time.perf_counter() - started)
    table = pa.Table.from_batches(results, schema=plan.schema.to_arrow())
    metrics.set("output_rows", table.num_rows)
    late_schema = pn.late_output_schema(plan)
    late_table = None if late_schema is None else pa.Table.from_batches(late, schema=late_schema.to_arrow())
    log.debug("run finished: %s", metrics.values)
    return RunResult(table, late_table, metrics.as_dict())


def explain(plan: pn.PlanNode, config: Config) -> str:
    from darwin.graph.translate import translate

    optimized = optimize(plan)
    parts = ["== logical plan ==", render(plan), "", "== optimized plan ==", render(optimized), ""]
    graph = translate(optimized, config)
    parts += ["== operator graph ==", graph.describe(), ""]
    if config.mode == "compiled":
        from darwin.codegen.generate import generate_pipeline

        for p in graph.pipelines:
            if p.needs_kernel:
                parts += [f"== generated source: pipeline {p.id} ==", generate_pipeline(p).source]
    return "\n".join(parts)
