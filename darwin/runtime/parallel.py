"""Pipelines several worker threads share (``op.Parallel``), with the interface of ``PipelineRunner``.

A stateless pipeline reading a source runs as slices: each worker runs the kernel over its
contiguous part of the batch, and the parts' rows are joined in order.

A keyed windowed aggregation runs as partitions: every row goes to the worker owning its key group
(``darwin.runtime.routing``), each worker keeps the state of its groups and walks its rows in batch
order. Each worker reads the whole batch and keeps its own rows, so no thread routes for all of them.
Two things make the result the one a single thread gives, whatever the timing:
- lateness is judged per row against the batch's event-time progress over *all* rows up to it (each
  worker writes it at its rows as it routes), not against what one worker has seen;
- fired windows are merged, not concatenated: every entry carries the serial number of the row that
  made it, and the workers' fired rows are ordered by window, then that serial -- the order one
  thread's table fires them in (by window, then first seen).

Where every aggregate merges exactly, a keyed aggregation may pre-aggregate (local/global): each
worker folds a contiguous slice of the batch into a table of its own, and the partial entries,
far fewer than rows when keys repeat, go to the workers owning their keys, which merge them into
their state. A hot key then costs its owner one entry per slice, not all of its rows. Lateness and
first-seen serials are judged per row in the slice exactly as the owner would, so both ways give
the same state; the runner pre-aggregates only while partials are much fewer than rows.

Where the key is a small dense integer range, each worker instead keeps a window ring over every
key for its contiguous slice of each batch (merged rings): it runs the one-thread kernel from the
event-time progress of the rows before its slice, and a fired window's entries from all workers
are merged in one thread's order. Shared pipelines may use fewer workers for a while
(``darwin.runtime.adaptive``): slices on fewer threads, key owners run by fewer threads (on one,
the coordinating thread routes the batch once and runs every owner in turn; each owner keeps its
key groups' state). Their output does not depend on how many.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numba import njit

from darwin.codegen import layout as ctl
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.runtime.adaptive import WorkerShare
from darwin.runtime.encoding import Column, EncodedBatch, StringPool, concat_columns
from darwin.runtime.pipeline import FIRST_SEEN, PipelineRunner, concatenated
from darwin.runtime.rescale import COUNTER_SLOTS, RetiredTables, read_saved, table_names
from darwin.runtime.routing import key_columns, key_groups, owned_rows, owners, rows_by_owner, split_rows
from darwin.runtime.static_index import StaticIndex
from darwin.runtime.workers import WorkerPool
from darwin.state.backend import StateBackend
from darwin.state.hash_table import FIRE_CHUNK, HashTableState
from darwin.state.memory import MemoryBackend
from darwin.state.merge import Entries, WindowRuns, merge_partials, merge_ring_entries, merged_runs, take_rows
from darwin.state.ring import RingState
from darwin.timestamps import NO_WATERMARK

T = TypeVar("T")
Processed = tuple[EncodedBatch | None, EncodedBatch | None, list[EncodedBatch]]  # a runner's process()
COUNTERS = ("late_rows", "null_time_rows", "future_rows")
# pre-aggregate while a slice's partial entries are at most this share of its rows; after a batch
# where they were not, route rows directly for this many batches before trying again. Merging an
# entry into its owner costs about three times what folding a row does (Nexmark q5 at 10M events:
# ~250 ns against ~75 ns), so partials pay off only when they are much fewer than rows: q5's are a
# third of its rows, and it ran 1.6x slower pre-aggregating than routing them
PAYS_OFF = 0.25
RETRY_AFTER = 16
MERGE_HERE = 2048  # partial entries of a batch the coordinating thread merges into their owners itself


def pipeline_runner(p: op.Pipeline, config: Config, pool: StringPool, backend: StateBackend,
                    lookups: Sequence[StaticIndex], workers: WorkerPool, new_tables: bool = False) \
        -> PipelineRunner | SlicedRunner | KeyedRunner:
    """The runner of ``p``: one thread's, or one sharing it among the workers as ``p.parallel`` says.
    ``new_tables``: its state starts empty (a checkpoint of another parallelism holds it in other tables)."""
    if p.parallel is None:
        return PipelineRunner(p, config, pool, backend, lookups, new_tables=new_tables)
    if p.parallel.keyed:
        return KeyedRunner(p, config, pool, backend, lookups, workers, new_tables)
    return SlicedRunner(p, config, pool, backend, lookups, workers)


class _Shared:
    """What both kinds have: a replica of the pipeline's runner per worker."""

    def __init__(self, p: op.Pipeline, replicas: list[PipelineRunner], workers: WorkerPool) -> None:
        self.p, self.replicas, self.workers = p, replicas, workers
        self.kernel = replicas[0].kernel
        self.worker_busy = [0.0] * len(replicas)  # seconds each worker spent on this pipeline
        self.share = WorkerShare(p.id, len(replicas))  # how many of them it uses now (slices only)

    def _adapted(self, run: Callable[[int], list[T]]) -> list[T]:
        """``run(k)`` on the workers this batch gets, then its work (busy seconds over all of them)
        told to the share, which adapts the count for the batches after. A batch the run's budget
        kept on fewer threads is not told: its work on one thread (routed rows: the batch routed
        once, not by every worker) is not what the share's own count does."""
        allowed = self.workers.budget.threads
        before = sum(self.worker_busy)
        results = run(self.share.for_batch(allowed))
        if allowed >= self.share.active:
            self.share.observe(sum(self.worker_busy) - before)
        return results

    def _on_budget(self, parts: Sequence[Callable[[], T]]) -> list[T]:
        """Every part's result: on the workers, or all on this thread while the run's budget has
        given its other threads back (counted as the first worker's busy time)."""
        if self.workers.budget.threads > 1:
            return self.workers.run(parts, self.worker_busy)
        started = time.perf_counter()
        results = [part() for part in parts]
        self.worker_busy[0] += time.perf_counter() - started
        return results

    def _counters(self) -> dict[str, int]:
        totals = {name: 0 for name in COUNTERS}
        for r in self.replicas:
            for name, value in r.counters().items():
                if name in totals:
                    totals[name] += value
        return totals

    def after_checkpoint(self, checkpoint_id: int) -> None:
        for r in self.replicas:
            r.after_checkpoint(checkpoint_id)

    def close(self) -> None:
        for r in self.replicas:
            r.close()


class SlicedRunner(_Shared):
    """A stateless pipeline reading a source: each worker runs a contiguous slice of each batch."""

    def __init__(self, p: op.Pipeline, config: Config, pool: StringPool, backend: StateBackend,
                 lookups: Sequence[StaticIndex], workers: WorkerPool) -> None:
        assert p.parallel is not None
        replicas = [PipelineRunner(p, config, pool, backend, lookups) for _ in range(p.parallel.workers)]
        super().__init__(p, replicas, workers)

    def process(self, batch: EncodedBatch, input_watermark: int = NO_WATERMARK) \
            -> tuple[EncodedBatch | None, EncodedBatch | None, list[EncodedBatch]]:
        n = batch.length

        def run(k: int) -> list[tuple[EncodedBatch | None, EncodedBatch | None, list[EncodedBatch]]]:
            return self.workers.run([partial(r.process, batch, input_watermark, (n * i // k, n * (i + 1) // k))
                                     for i, r in enumerate(self.replicas[:k])], self.worker_busy)
        outs = [out for out, _, _ in self._adapted(run) if out is not None]
        return concatenated(outs, self.p.output_schema), None, []

    def drain(self, wm: int, final: bool = False) -> Iterator[EncodedBatch]:
        return iter(())

    def counters(self) -> dict[str, int]:
        return {**self._counters(), "windows_fired": 0}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """The replicas' counters added up: the body one thread's runner writes, so either restores it."""
        return {"ctl": _summed_ctl(self.replicas), "windows_fired": 0}, []

    def restore(self, directory: Path, body: dict[str, Any], checkpoint_id: int,
                saved: op.Pipeline | None = None) -> None:
        self.replicas[0].restore(directory, body, checkpoint_id)  # the others start from zero


class KeyedRunner(_Shared):
    """A windowed aggregation partitioned by key group among the workers."""

    ordered = True  # False (a benchmark's switch only): workers' windows concatenated, to price the merge
    # (merged rings: their entries not combined either, so the results are wrong)

    def __init__(self, p: op.Pipeline, config: Config, pool: StringPool, backend: StateBackend,
                 lookups: Sequence[StaticIndex], workers: WorkerPool, new_tables: bool = False) -> None:
        assert p.parallel is not None and isinstance(p.sink, op.WindowAggregateSink)
        replicas = [PipelineRunner(p, config, pool, backend, lookups, name, new_tables) for name in table_names(p)]
        super().__init__(p, replicas, workers)
        self.sink, self.config, self.backend = p.sink, config, backend
        self.retired: RetiredTables | None = None  # the tables of the checkpoint this run rescaled
        n = len(replicas)
        self.owner = owners(n)
        inp = p.input
        self.time_column = inp.scan.time_column if isinstance(inp, op.SourcePort) else None
        self.max_time = NO_WATERMARK  # over every row so far: the event-time progress rows are judged by
        self.rows_seen = 0  # serial number of the next row
        self.windows_fired = 0
        self.late_warning = replicas[0].late_warning
        self.merged_rings = p.parallel.merged_rings
        # per key, whether the state stores its validity: rows route as the state's entries do
        lay = replicas[0].ks.agg_layout if replicas[0].ks else None
        assert lay is not None  # an aggregating pipeline has a kernel and a layout
        self.nullable_keys = [k.valid_position is not None for k in lay.keys]
        if self.merged_rings:  # a full ring's windows wait for the other workers' entries of them
            for r in replicas:
                r.early = []
        # local/global: each worker's slice folds into a table of its own in DRAM, emptied every batch
        local = dataclasses.replace(p, sink=dataclasses.replace(p.sink, state=op.StateSpec()))
        self.slices = [PipelineRunner(local, config, pool, MemoryBackend(), lookups, name=f"pipeline{p.id}.slice{i}")
                       for i in range(n)] if p.parallel.pre_aggregate else []
        for r in [*replicas, *self.slices]:  # this runner warns for all of them
            r.late_warning = None
        self.fired_early: list[EncodedBatch] = []  # workers' windows fired mid-batch (panes), until the drain
        self.row_numbers = np.arange(0, dtype=np.int64)  # 0..n-1 for the largest batch yet: slices take views
        # kept from batch to batch (fresh memory costs more than filling it): each worker's row numbers
        # and progress column when rows are routed
        self.owned = [(np.empty(0, np.int64), np.empty(0, np.int64)) for _ in replicas]
        # one thread running every owner: row numbers grouped by owner, each row's owner, the progress
        self.grouped = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
        self.routed_batches = 0  # batches left to route rows directly before pre-aggregating again
        self.pre_aggregated_batches = 0

    def process(self, batch: EncodedBatch, input_watermark: int = NO_WATERMARK) \
            -> tuple[EncodedBatch | None, EncodedBatch | None, list[EncodedBatch]]:
        assert self.p.parallel is not None
        if self.merged_rings:
            self._in_slices(batch, input_watermark)
        else:
            self._routed(batch, input_watermark)
        self.rows_seen += batch.length
        if self.late_warning is not None:
            late = sum(int(r.ctl[ctl.LATE_ROWS]) for r in self.replicas)
            self.late_warning.update(late, NO_WATERMARK if self.max_time == NO_WATERMARK else
                                     self.max_time - self.replicas[0].p.input.delay_ms)  # type: ignore[union-attr]
        return None, None, []

    def _routed(self, batch: EncodedBatch, input_watermark: int) -> None:
        """Hash tables: rows (or their slices' partial entries) go to the worker owning their key,
        which judges lateness by the batch's progress column."""
        assert self.p.parallel is not None
        pre_aggregating = bool(self.slices) and not self.routed_batches
        times = self._times(batch)
        if pre_aggregating:
            if times is not None:  # the slices fill in their own parts of it
                progress = Column(np.empty(batch.length, np.int64), None)
                batch = EncodedBatch({**batch.columns, op.PROGRESS_COLUMN: progress}, batch.length, batch.arrow)
            self._pre_aggregate(batch, input_watermark, times)
            if times is not None and batch.length:  # the column is whole now: the progress the next batch goes on from
                self.max_time = int(batch.columns[op.PROGRESS_COLUMN].values[-1])
            return
        self.routed_batches = max(0, self.routed_batches - 1)
        if len(self.owned[0][0]) < batch.length:  # each worker's buffers of row numbers and progress
            self.owned = [(np.empty(batch.length, np.int64), np.empty(batch.length, np.int64)) for _ in self.replicas]
        keys = tuple(key_columns([batch.columns[k] for k in self.p.parallel.keys], self.nullable_keys))
        for r in self.replicas:
            r.ctl[ctl.ROW_BASE] = self.rows_seen

        def run(k: int) -> list[list[tuple[Processed, int]]]:
            """Every owner's rows of the batch, on ``k`` threads: on one, this thread routes the batch
            once and runs the owners in turn; on more, thread j runs owners j, j + k, ..., each
            routing the batch to itself. Each owner gets the same rows and progress either way."""
            if k == 1:
                return [self._owned_here(batch, input_watermark, keys, times)]
            parts = [partial(_owned_each, [(r, w, *self.owned[w]) for w, r in enumerate(self.replicas)
                                           if w % k == j], batch, input_watermark, keys, self.owner, times,
                             self.max_time) for j in range(k)]
            return self.workers.run(parts, self.worker_busy)
        done = [d for part in self._adapted(run) for d in part]
        # windows fire mid-batch only where a row late for some of its panes' windows waits for them
        self.fired_early += [b for (_, _, fired), _ in done for b in fired]
        if times is not None and batch.length:  # the progress the next batch goes on from
            self.max_time = int(done[0][1])

    def _owned_here(self, batch: EncodedBatch, input_watermark: int, keys: tuple[np.ndarray, ...],
                    times: tuple[np.ndarray, np.ndarray] | None) -> list[tuple[Processed, int]]:
        """Every owner's rows of the batch run on this thread, the batch routed once; counted as
        the first worker's busy time (the pipeline's work, for the share)."""
        started = time.perf_counter()
        n = batch.length
        if len(self.grouped[0]) < n:  # kept from batch to batch, as the workers' buffers are
            self.grouped = (np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
        rows, owners_of, progress = self.grouped
        values, valid = (_NO_TIMES, _NO_VALID) if times is None else times
        counts, end = rows_by_owner(keys, self.owner, len(self.replicas), values, valid, self.max_time,
                                    progress, owners_of, rows)
        mine = batch if times is None else \
            EncodedBatch({**batch.columns, op.PROGRESS_COLUMN: Column(progress[:n], None)}, n, batch.arrow)
        done, first = [], 0
        for r, count in zip(self.replicas, counts.tolist()):
            done.append((r.process(mine, input_watermark, None, rows[first:first + count]), end))
            first += count
        self.worker_busy[0] += time.perf_counter() - started
        return done

    def _slices(self, n: int, k: int) -> list[np.ndarray]:
        """Rows 0..n-1 cut into k contiguous selections (views of one array)."""
        if len(self.row_numbers) < n:
            self.row_numbers = np.arange(n, dtype=np.int64)
        return [self.row_numbers[n * i // k:n * (i + 1) // k] for i in range(k)]

    def _in_slices(self, batch: EncodedBatch, input_watermark: int) -> None:
        """Merged rings: each worker folds a contiguous slice of the batch into its own ring with the
        one-thread kernel, its event-time progress starting where the rows before its slice left it."""
        n, times = batch.length, self._times(batch)

        def run(k: int) -> list[None]:
            for r in self.replicas[:k]:
                r.ctl[ctl.ROW_BASE] = self.rows_seen
            slices = [partial(_ring_slice, r, batch, input_watermark, n * i // k, n * (i + 1) // k, times,
                              self.max_time) for i, r in enumerate(self.replicas[:k])]
            # the first part runs on this thread at once, the others once a pool thread wakes and takes
            # the GIL; the last slice first reads every row before it for their progress, so it goes here
            done = self.workers.run([slices[-1], *slices[:-1]], self.worker_busy)
            if times is not None:  # the last slice's progress is the batch's
                self.max_time = int(self.replicas[k - 1].ctl[ctl.MAX_TIME])
            return done
        self._adapted(run)

    def _pre_aggregate(self, batch: EncodedBatch, input_watermark: int,
                       times: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Local/global: fold slices into partial entries, then merge each into its key's owner."""
        n = batch.length

        def run(k: int) -> list[Entries]:  # as many slices as the pipeline's workers now (adaptive)
            for r in self.slices[:k]:
                r.ctl[ctl.ROW_BASE] = self.rows_seen
            folds = [partial(_partials, r, batch, input_watermark, rows, times, self.max_time)
                     for r, rows in zip(self.slices, self._slices(n, k))]
            return self.workers.run(folds, self.worker_busy)
        partials = self._adapted(run)
        counts = list(COUNTER_SLOTS)
        for r, local in zip(self.replicas, self.slices):  # the slices' counts become the workers' own
            r.ctl[counts] += local.ctl[counts]
            local.ctl[counts] = 0
        shares: list[list[tuple[list[np.ndarray], list[np.ndarray]]]] = [[] for _ in self.replicas]
        for keys, values in partials:  # in slice order: older rows' partials merge first
            if not len(keys[0]):
                continue
            for w, rows in enumerate(split_rows(key_groups(keys[1:]), self.owner, len(self.replicas))):
                if len(rows):
                    shares[w].append(([c[rows] for c in keys], [c[rows] for c in values]))
        merges = [partial(self._merge_into, r, share) for r, share in zip(self.replicas, shares)]
        made = sum(len(keys[0]) for keys, _ in partials)
        if made <= MERGE_HERE:  # a step on the pool would cost more than the merges
            for merge in merges:
                merge()
        else:
            self.workers.run(merges, self.worker_busy)
        if made > PAYS_OFF * n:
            self.routed_batches = RETRY_AFTER
        self.pre_aggregated_batches += 1

    def _merge_into(self, runner: PipelineRunner, share: list[tuple[list[np.ndarray], list[np.ndarray]]]) -> None:
        state, lay = runner.state, runner.ks.agg_layout if runner.ks else None
        assert state is not None and not isinstance(state, RingState) and lay is not None  # no ring when keyed
        for keys, values in share:
            merge_partials(state, lay, keys, values, self.config.state_traits.undo_log)
            end = int(keys[0].min()) + self.sink.window.size_ms
            runner.ctl[ctl.MIN_WINDOW_END] = min(int(runner.ctl[ctl.MIN_WINDOW_END]), end)
        state.end_batch()

    def _times(self, batch: EncodedBatch) -> tuple[np.ndarray, np.ndarray] | None:
        """The event times of the batch and their validity (empty: all valid), or None without a time column."""
        if self.time_column is None:
            return None
        times = batch.columns[self.time_column]
        valid = np.ones(0, np.bool_) if times.valid is None else times.valid
        return times.values.astype(np.int64, copy=False), valid

    def drain(self, wm: int, final: bool = False) -> Iterator[EncodedBatch]:
        """The windows ending at or before ``wm`` over every worker, in one thread's order."""
        if self.merged_rings:
            yield from self._merged(self._merged_windows(wm, final))
            return
        early, self.fired_early = self.fired_early, []
        if not final and all(r.ctl[ctl.MIN_WINDOW_END] > wm for r in self.replicas):
            for r in self.replicas:  # no worker holds a window to fire: no step on the pool
                r.mark_fired_through(wm)
            yield from self._merged(early)
            return
        parts = [partial(_drained, r, wm, final) for r in self.replicas]
        yield from self._merged(early + [b for fired in self._on_budget(parts) for b in fired])

    def _merged_windows(self, wm: int, final: bool) -> list[EncodedBatch]:
        """Merged rings: every worker's entries of the windows fired (mid-batch or now), each key's
        entries combined into one, as result rows with the serial of the row that made the key's first."""
        parts: list[Entries] = []
        for r in self.replicas:
            assert r.early is not None
            parts += r.early
            r.early.clear()
            parts += r.fired_entries(wm, final)
        first = self.replicas[0]
        assert first.ks is not None and first.ks.agg_layout is not None and self.sink.state.ring is not None
        if not parts:
            return []
        if self.ordered:
            keys, values = merge_ring_entries(first.ks.agg_layout, self.sink.state.ring, parts)
        else:  # the benchmark's price of the merge: entries concatenated, a key's parts not combined
            keys = [np.concatenate(c) for c in zip(*(k for k, _ in parts))]
            values = [np.concatenate(c) for c in zip(*(v for _, v in parts))]
        return [first.fired_rows(keys, values)] if len(keys[0]) else []

    def _merged(self, batches: list[EncodedBatch]) -> Iterator[EncodedBatch]:
        """The workers' fired rows ordered by window, then first-seen row; without that serial.
        Merged rings' rows come as one batch in that order already."""
        batches = [b for b in batches if b.length]
        if not batches:
            return
        starts = [b.columns[pn.WINDOW_START].values for b in batches]
        seen = [b.columns[FIRST_SEEN].values for b in batches]
        runs = merged_runs(starts, seen) if self.ordered else None
        if runs is not None:  # the workers' runs merged, chunk by chunk (merged rings: one run)
            self.windows_fired += runs.windows
            yield from _interleaved(batches, runs)
            return
        columns = {name: concat_columns([b.columns[name] for b in batches]) for name in batches[0].columns}
        starts_all, seen_all = columns[pn.WINDOW_START].values, columns.pop(FIRST_SEEN).values
        self.windows_fired += len(np.unique(starts_all))
        if self.ordered:  # many runs: sorted; unordered: a benchmark's switch
            order = np.lexsort((seen_all, starts_all))
            columns = {name: Column(c.values[order], None if c.valid is None else c.valid[order])
                       for name, c in columns.items()}
        yield from _in_chunks(columns, 0, len(starts_all))

    def counters(self) -> dict[str, int]:
        counts = {**self._counters(), "windows_fired": self.windows_fired}
        if self.slices:  # batches this run pre-aggregated (the rest were routed row by row)
            counts["pre_aggregated_batches"] = self.pre_aggregated_batches
        return counts

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        bodies, files = [], []
        for r in self.replicas:
            body, written = r.snapshot(directory)
            bodies.append(body)
            files += written
        return {"workers": bodies, "max_time": self.max_time, "rows_seen": self.rows_seen,
                "windows_fired": self.windows_fired}, files

    def after_checkpoint(self, checkpoint_id: int) -> None:
        super().after_checkpoint(checkpoint_id)
        if self.retired is not None:
            self.retired.after_checkpoint()

    def restore(self, directory: Path, body: dict[str, Any], checkpoint_id: int,
                saved: op.Pipeline | None = None) -> None:
        """The workers' state ``body`` holds; ``saved`` is the pipeline as the checkpoint's run compiled it
        (at another parallelism, one thread's table or another number of workers' are re-dealt)."""
        parts = body.get("workers")
        if parts is not None and len(parts) == len(self.replicas):
            for r, part in zip(self.replicas, parts):
                r.restore(directory, part, checkpoint_id)
            self.max_time, self.rows_seen = int(body["max_time"]), int(body["rows_seen"])
            self.windows_fired = int(body["windows_fired"])
        else:
            self._rescale(directory, body, checkpoint_id, saved or self.p)

    def _rescale(self, directory: Path, body: dict[str, Any], checkpoint_id: int, saved: op.Pipeline) -> None:
        """State checkpointed by one thread or another number of workers: every entry goes to the worker
        owning its key group now (merged rings: to one worker, any may hold any key). Workers' fired
        windows merge by first-seen serial, which one thread's entries are given in their table's
        order (``darwin.runtime.rescale``), so no order is lost."""
        first = self.replicas[0]
        assert first.ks is not None and first.ks.agg_layout is not None
        whole = read_saved(saved, directory, body, checkpoint_id, self.backend)
        self.retired = RetiredTables(self.backend, self.p)
        keys, values = whole.entries_for(first.ks.agg_layout)
        if self.merged_rings:
            owner = np.zeros(len(keys[0]), np.int64)
        else:
            owner = self.owner[key_groups(keys[1:])] if len(keys[0]) else np.zeros(0, np.int64)
        for w, r in enumerate(self.replicas):
            mine = owner == w
            assert r.state is not None  # an aggregation's
            r.state.add_entries([c[mine] for c in keys], [c[mine] for c in values])
            if w == 0:
                r.ctl[:] = whole.ctl
            r.ctl[ctl.FIRED_THROUGH] = whole.ctl[ctl.FIRED_THROUGH]
            r.reset_min_end()
        self.max_time, self.rows_seen, self.windows_fired = whole.max_time, whole.rows_seen, whole.windows_fired


@njit(cache=True, nogil=True)
def _running_max_into(values: np.ndarray, valid: np.ndarray, out: np.ndarray, first: int, end: int,
                      start: int) -> None:
    """``out[first:end]``: ``start`` and the values of rows first..i, their running maximum."""
    top = start
    checked = valid.shape[0] > 0
    for i in range(first, end):
        if values[i] > top and (not checked or valid[i]):
            top = values[i]
        out[i] = top


@njit(cache=True, nogil=True)
def _max_before(values: np.ndarray, valid: np.ndarray, end: int, start: int) -> int:
    """``start`` and the values of rows before ``end``, their maximum; rows not ``valid`` (when it is
    not empty) count for nothing."""
    top = start
    if valid.shape[0] == 0:
        for i in range(end):
            top = max(top, values[i])
    else:
        for i in range(end):
            if valid[i] and values[i] > top:
                top = values[i]
    return top


def _ring_slice(runner: PipelineRunner, batch: EncodedBatch, input_watermark: int, first: int, end: int,
                times: tuple[np.ndarray, np.ndarray] | None, progress: int) -> None:
    """A worker's slice of a batch into its ring: the kernel judges lateness as one thread would, by
    the largest event time of every row before it, the rows of the slices before this one included
    (each worker finds their maximum itself: a vectorized pass, not a step of its own)."""
    if times is not None:  # the first slice's is the batch's start: no call (nor the GIL taken back after it)
        runner.ctl[ctl.MAX_TIME] = _max_before(*times, first, progress) if first else progress
    runner.process(batch, input_watermark, (first, end))


def _owned(runner: PipelineRunner, batch: EncodedBatch, input_watermark: int, keys: tuple[np.ndarray, ...],
           owner: np.ndarray, worker: int, times: tuple[np.ndarray, np.ndarray] | None, start: int,
           rows: np.ndarray, progress: np.ndarray) -> tuple[Processed, int]:
    """A worker's rows of a batch (those of the key groups it owns, into its ``rows`` buffer), found
    by the worker itself reading every row, with the event-time progress at them (in its own
    ``progress`` column); then its kernel over them. Also the batch's progress at its end."""
    if times is None:
        count, end = owned_rows(keys, owner, worker, _NO_TIMES, _NO_VALID, start, _NO_TIMES, rows)
        return runner.process(batch, input_watermark, None, rows[:count]), end
    count, end = owned_rows(keys, owner, worker, *times, start, progress, rows)
    mine = EncodedBatch({**batch.columns, op.PROGRESS_COLUMN: Column(progress[:batch.length], None)}, batch.length,
                        batch.arrow)
    return runner.process(mine, input_watermark, None, rows[:count]), end


def _owned_each(owned: list[tuple[PipelineRunner, int, np.ndarray, np.ndarray]], batch: EncodedBatch,
                input_watermark: int, keys: tuple[np.ndarray, ...], owner: np.ndarray,
                times: tuple[np.ndarray, np.ndarray] | None, start: int) -> list[tuple[Processed, int]]:
    """``_owned`` for each of a thread's owners (runner, worker, its buffers), in turn."""
    return [_owned(r, batch, input_watermark, keys, owner, w, times, start, rows, progress)
            for r, w, rows, progress in owned]


_NO_TIMES, _NO_VALID = np.zeros(0, np.int64), np.zeros(0, np.bool_)


def _partials(runner: PipelineRunner, batch: EncodedBatch, input_watermark: int, rows: np.ndarray,
              times: tuple[np.ndarray, np.ndarray] | None, progress: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A contiguous slice of the batch folded into the runner's own table: its entries, taken out.
    First the slice's part of the progress column, from the largest event time of every row before it
    (found by this worker: no step of its own, nothing on the coordinating thread)."""
    if times is not None and len(rows):
        first, end = int(rows[0]), int(rows[-1]) + 1
        _running_max_into(*times, batch.columns[op.PROGRESS_COLUMN].values, first, end,
                          _max_before(*times, first, progress))
    runner.process(batch, input_watermark, None, rows)
    state = runner.state
    assert isinstance(state, HashTableState)  # a slice's table lives on the memory backend
    entries = state.entries()
    state.clear()
    runner.ctl[ctl.MIN_WINDOW_END] = ctl_max()
    return entries


def _drained(runner: PipelineRunner, wm: int, final: bool) -> list[EncodedBatch]:
    return list(runner.drain(wm, final))


def _summed_ctl(replicas: list[PipelineRunner]) -> list[int]:
    """One thread's ctl: the first replica's, with every count added up over the replicas."""
    return [int(v) for v in _summed_ctl_of([r.ctl for r in replicas])]


def _summed_ctl_of(ctls: list[np.ndarray]) -> np.ndarray:
    summed = ctls[0].copy()
    for slot in COUNTER_SLOTS:
        summed[slot] = sum(int(c[slot]) for c in ctls)
    return summed


def ctl_max() -> int:
    return int(np.iinfo(np.int64).max)


def _interleaved(batches: list[EncodedBatch], runs: WindowRuns) -> Iterator[EncodedBatch]:
    """The rows of ``batches`` in the order ``runs`` tells, without their first-seen serial, in
    chunks of ``FIRE_CHUNK``: a run's rows are a slice of its batch, each chunk's share of a run is
    the next piece of that slice, so only a chunk's worth of memory is written at a time."""
    names = [name for name in batches[0].columns if name != FIRST_SEEN]
    if len(runs.part) == 1:  # one run
        only, at = batches[int(runs.part[0])], int(runs.first[0])
        yield from _in_chunks({name: only.columns[name] for name in names}, at, at + len(runs.source))
        return
    next_row = runs.first.copy()
    for first in range(0, len(runs.source), FIRE_CHUNK):
        which, rows = runs.rows(first, first + FIRE_CHUNK, next_row)
        columns = {name: _taken(which, rows, [b.columns[name] for b in batches]) for name in names}
        yield EncodedBatch(columns, len(which))


def _taken(which: np.ndarray, rows: np.ndarray, parts: list[Column]) -> Column:
    """Merged rows of a column; with a validity mask if any part has one (as ``concat_columns``)."""
    values = take_rows(which, rows, [c.values for c in parts])
    if all(c.valid is None for c in parts):
        return Column(values, None)
    return Column(values, take_rows(which, rows, [np.ones(len(c.values), np.bool_) if c.valid is None else c.valid
                                                  for c in parts]))


def _in_chunks(columns: dict[str, Column], start: int, stop: int) -> Iterator[EncodedBatch]:
    """Rows ``start:stop`` of ``columns`` in batches of at most ``FIRE_CHUNK``: slices, no copy."""
    for first in range(start, stop, FIRE_CHUNK):
        end = min(first + FIRE_CHUNK, stop)
        yield EncodedBatch({name: Column(c.values[first:end], None if c.valid is None else c.valid[first:end])
                            for name, c in columns.items()}, end - first)
