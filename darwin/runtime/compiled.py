"""The compiled engine: Arrow batches from the source through generated Numba pipelines."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from darwin.codegen.target import ensure_target
from darwin.config import Config
from darwin.graph import operators as op
from darwin.io.source import read_from
from darwin.runtime.dictionary import load_dictionary, save_dictionary
from darwin.runtime.encoding import EncodedBatch, StringPool, decode, encode
from darwin.runtime.output import BARRIER, Output
from darwin.runtime.prefetch import prefetched
from darwin.runtime.progress import Metrics

if TYPE_CHECKING:
    from darwin.runtime.pipeline import PipelineRunner


class CompiledEngine:
    """One run of a plan: its pipelines, their state, and how far into the source it is.

    ``outputs()`` yields results and late rows, and a barrier after each input batch;
    between batches the state is consistent, so ``snapshot`` can capture it.
    """

    def __init__(self, graph: op.OperatorGraph, config: Config, metrics: Metrics, job: str,
                 fresh: bool = True) -> None:
        ensure_target(config.target)  # before anything compiles: Numba fixes the target then
        from darwin.runtime.pipeline import PipelineRunner
        from darwin.state.backend import backend_for

        self.config, self.metrics, self.job = config, metrics, job
        self.graph = graph
        self.pool = StringPool()
        self.backend = backend_for(config, job, fresh)
        self.runners = [PipelineRunner(p, config, self.pool, self.backend) for p in self.graph.pipelines]
        first = self.graph.pipelines[0]
        assert isinstance(first.input, op.ScanInput)
        self.first, self.scan = first, first.input.scan
        self.consumers = {p.input.producer: self.runners[p.id] for p in self.graph.pipelines
                          if isinstance(p.input, op.FiredWindowsInput)}
        self.offset = 0  # source rows consumed

    def outputs(self) -> Iterator[Output]:
        config, first, scan, pool = self.config, self.first, self.scan, self.pool
        started = time.perf_counter()

        def read() -> Iterator[EncodedBatch]:
            for batch in read_from(scan.source, scan.columns, config.batch_size, self.offset):
                yield encode(batch, first.input_schema, pool, scan.source.name, first.moved_inputs,
                             first.computed_inputs)

        for encoded in prefetched(read, config.prefetch):
            self.metrics.add("input_rows", encoded.length)
            yield from self._push(self.runners[0], encoded, final=False)
            self.offset += encoded.length
            yield BARRIER
        for runner in self.runners:  # end of input: every window fires
            for fired in runner.drain(final=True):
                yield from self._push(self.consumers[runner.p.id], fired, final=True)
        for runner in self.runners:
            for name, value in runner.counters().items():
                self.metrics.add(name, value)
            if runner.kernel is not None:
                self.metrics.add("kernels_compiled", sum(runner.kernel.stats.cache_misses.values()))
                self.metrics.add("kernels_from_cache", sum(runner.kernel.stats.cache_hits.values()))
        self.metrics.set("watermark", self.runners[0].watermark)
        self.metrics.set("run_seconds", time.perf_counter() - started)

    def _push(self, runner: PipelineRunner, batch: EncodedBatch, final: bool) -> Iterator[Output]:
        """Run ``batch`` through a pipeline and everything downstream of it."""
        pool = self.pool
        out, late, fired_early = runner.process(batch)
        for fired in fired_early:  # windows a full ring had to drain before the batch ended
            yield from self._push(self.consumers[runner.p.id], fired, final)
        if late is not None and late.length:
            yield Output("late", decode(late, runner.p.output_schema, pool))
        if out is not None and out.length:
            yield Output("result", decode(out, runner.p.output_schema, pool, batch, dict(runner.p.moved_strings)))
        if runner.state is not None and not final:
            for fired in runner.drain(final=False):
                yield from self._push(self.consumers[runner.p.id], fired, final)

    # -- checkpoints ------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """Everything a restarted run needs, at the barrier the engine is paused at."""
        files = [save_dictionary(self.pool, directory)]
        runners = []
        for r in self.runners:
            body, written = r.snapshot(directory)
            runners.append(body)
            files += written
        return {"offset": self.offset, "backend": self.backend.name, "runners": runners}, files

    def restore(self, directory: Path, body: dict[str, Any], checkpoint_id: int) -> None:
        load_dictionary(self.pool, directory)
        for r, saved in zip(self.runners, body["runners"]):
            r.restore(directory, saved, checkpoint_id)
        self.offset = int(body["offset"])
        self.metrics.add("input_rows", self.offset)

    def after_checkpoint(self, checkpoint_id: int) -> None:
        for r in self.runners:
            r.after_checkpoint(checkpoint_id)

    def close(self) -> None:
        for r in self.runners:
            r.close()
        self.backend.close()


def has_input_after(graph: op.OperatorGraph, offset: int) -> bool:
    """Whether the graph's source holds rows past ``offset`` (a finished job's checkpoint covers none)."""
    first = graph.pipelines[0].input
    assert isinstance(first, op.ScanInput)
    return next(iter(read_from(first.scan.source, first.scan.columns, 1, offset)), None) is not None
