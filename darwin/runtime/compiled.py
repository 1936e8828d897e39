"""The compiled engine: Arrow batches from the source through generated Numba pipelines."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from darwin.codegen.target import ensure_target
from darwin.config import Config
from darwin.graph import operators as op
from darwin.graph.translate import translate
from darwin.plan import nodes as pn
from darwin.runtime.encoding import EncodedBatch, StringPool, decode, encode
from darwin.runtime.output import Output
from darwin.runtime.prefetch import prefetched
from darwin.runtime.progress import Metrics

if TYPE_CHECKING:
    from darwin.runtime.pipeline import PipelineRunner


def run(plan: pn.PlanNode, config: Config, metrics: Metrics) -> Iterator[Output]:
    ensure_target(config.target)  # before anything compiles: Numba fixes the target then
    from darwin.runtime.pipeline import PipelineRunner
    from darwin.state.backend import backend_for

    graph = translate(plan, config)
    pool = StringPool()
    backend = backend_for(config)
    started = time.perf_counter()
    runners = [PipelineRunner(p, config, pool, backend) for p in graph.pipelines]
    first = graph.pipelines[0]
    assert isinstance(first.input, op.ScanInput)
    scan = first.input.scan
    consumers = {p.input.producer: runners[p.id] for p in graph.pipelines
                 if isinstance(p.input, op.FiredWindowsInput)}
    def read() -> Iterator[EncodedBatch]:
        for batch in scan.source.batches(scan.columns, config.batch_size):
            yield encode(batch, first.input_schema, pool, scan.source.name, first.moved_inputs,
                         first.computed_inputs)

    try:
        for encoded in prefetched(read, config.prefetch):
            metrics.add("input_rows", encoded.length)
            yield from _push(runners[0], encoded, consumers, pool, final=False)
        for runner in runners:  # end of input: every window fires
            fired = runner.drain(final=True)
            if fired is not None:
                yield from _push(consumers[runner.p.id], fired, consumers, pool, final=True)
    finally:
        backend.close()
    for runner in runners:
        for name, value in runner.counters().items():
            metrics.add(name, value)
        if runner.kernel is not None:
            metrics.add("kernels_compiled", sum(runner.kernel.stats.cache_misses.values()))
            metrics.add("kernels_from_cache", sum(runner.kernel.stats.cache_hits.values()))
    metrics.set("watermark", runners[0].watermark)
    metrics.set("run_seconds", time.perf_counter() - started)


def _push(runner: PipelineRunner, batch: EncodedBatch, consumers: dict[int, PipelineRunner], pool: StringPool,
          final: bool) -> Iterator[Output]:
    """Run ``batch`` through a pipeline and everything downstream of it."""
    out, late, fired_early = runner.process(batch)
    for fired in fired_early:  # windows a full ring had to drain before the batch ended
        yield from _push(consumers[runner.p.id], fired, consumers, pool, final)
    if late is not None and late.length:
        yield Output("late", decode(late, runner.p.output_schema, pool))
    if out is not None and out.length:
        yield Output("result", decode(out, runner.p.output_schema, pool, batch, dict(runner.p.moved_strings)))
    if runner.state is not None and not final:
        fired = runner.drain(final=False)
        if fired is not None:
            yield from _push(consumers[runner.p.id], fired, consumers, pool, final)
