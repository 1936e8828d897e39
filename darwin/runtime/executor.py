"""Runs a logical plan with the engine the config chooses, and explains it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa

from darwin.config import Config
from darwin.errors import ConfigError
from darwin.io.sinks import Blackhole, Collect
from darwin.plan import nodes as pn
from darwin.plan.explain import render
from darwin.plan.rules import optimize
from darwin.runtime.job import Driver
from darwin.runtime.output import RunResult, final_table

log = logging.getLogger(__name__)


def _checked(config: Config) -> Config:
    if config.checkpoint_dir:
        raise ConfigError("checkpoints protect output a sink commits: run the query with "
                          "q.sink(dw.sinks.Parquet(path)).run(config), or drop checkpoint_dir for collect/execute")
    return config


def stream(plan: pn.PlanNode, config: Config) -> Iterator[pa.RecordBatch]:
    """Result batches as the driver produces them (the sink keeps nothing)."""
    for out in Driver(plan, Blackhole(), _checked(config)).outputs():
        if out.kind == "result":
            yield out.batch


def run(plan: pn.PlanNode, config: Config) -> RunResult:
    """The whole result, the late rows (if kept) and the metrics, collected in memory."""
    sink = Collect()
    metrics = Driver(plan, sink, _checked(config)).run().metrics
    table = sink.table()
    assert table is not None
    log.debug("run finished: %s", metrics)
    if pn.updating(plan):
        return RunResult(final_table(table), sink.table("late"), metrics, changelog=table)
    return RunResult(table, sink.table("late"), metrics)


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
