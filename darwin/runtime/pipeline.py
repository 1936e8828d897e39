"""Runs one compiled pipeline over encoded batches, and drains fired windows from its state."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import layout as ctl
from darwin.codegen.aggregates import AggLayout, finalize
from darwin.codegen.compiler import load_kernel
from darwin.codegen.generate import generate_pipeline
from darwin.codegen.signature import (
    Buffer,
    ColumnArg,
    ControlArg,
    LookupArg,
    ParamArg,
    Part,
    SelectionArg,
    StateArg,
    TextArg,
)
from darwin.config import Config
from darwin.errors import CastError, DarwinError, SourceError
from darwin.graph import operators as op
from darwin.plan.casts import failure
from darwin.plan.strings import PARSERS
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.lookups import FormatTable, LookupTable, PairTable
from darwin.runtime.progress import LateRowsWarning, window_time_error
from darwin.runtime.rescale import RetiredTables, read_saved, table_names
from darwin.runtime.static_index import StaticIndex
from darwin.state.backend import KeyedState, StateBackend
from darwin.state.hash_table import HashTableState
from darwin.state.panes import NOT_YET, fired_windows, first_end
from darwin.state.ring import RingState
from darwin.timestamps import NO_WATERMARK
from darwin.types import Schema

INT64_MAX = np.iinfo(np.int64).max
FIRST_SEEN = "__darwin_first_seen"  # a keyed-parallel worker's fired rows: the serial of the row that made each
OUT_BUFFER_ROWS = 1 << 20  # rows of output buffers a kernel call may fill
SCOUTED_MISSES = 1 << 16  # strings a scouting kernel records missing before it stops (ptm: triples)


class PipelineRunner:
    def __init__(self, p: op.Pipeline, config: Config, pool: StringPool, backend: StateBackend,
                 lookups: Sequence[StaticIndex] = (), name: str | None = None, new_tables: bool = False) -> None:
        """``name``: of its state (one per worker when several threads share the pipeline);
        ``new_tables``: the state starts empty in a resumed run (the checkpoint's is in other tables)."""
        self.p = p
        self.ctl = np.zeros(ctl.SIZE, dtype=np.int64)
        self.ctl[ctl.MAX_TIME] = NO_WATERMARK
        self.ctl[ctl.MIN_WINDOW_END] = INT64_MAX
        self.ctl[ctl.FIRED_THROUGH] = NOT_YET
        self.ks = generate_pipeline(p) if p.needs_kernel else None
        self.kernel = load_kernel(self.ks, config.cache_dir) if self.ks else None
        self.params: dict[str, object] = {}
        if self.ks:
            for i, s in enumerate(self.ks.params.strings):
                self.params[f"ps{i}"] = np.int64(pool.code(s))
            for i, (dtype, values) in enumerate(self.ks.params.arrays):
                self.params[f"pa{i}"] = np.array(values, dtype=dtype)
            for i, strings in enumerate(self.ks.params.string_sets):
                self.params[f"pc{i}"] = np.sort(np.fromiter((pool.code(v) for v in strings), np.int64, len(strings)))
        self.pool = pool
        self.lookups = [LookupTable(f, a) for f, a in self.ks.params.lookups] if self.ks else []
        self.formats = [FormatTable(f) for f in self.ks.params.formats] if self.ks else []
        self.pairs = [PairTable(spec) for spec in self.ks.params.pairs] if self.ks else []
        if self.ks and self.ks.params.scouting:
            self.params["ptm"] = np.zeros(3 * SCOUTED_MISSES, dtype=np.int64)
        self._bind_formats()
        self.static = lookups
        # rows a lookup join may make of one input row: the most rows its table holds for one key
        self.fanout = 1
        for o in p.operators:
            if isinstance(o, op.LookupJoinOp):
                self.fanout *= max(1, lookups[o.lookup].max_rows_per_key)
        self.sink = p.sink
        self.selection: np.ndarray | None = None  # the rows of the batch a keyed-parallel worker runs
        self.scratch = np.zeros(1, dtype=np.int64)  # reinterprets a float key's bits inside kernels
        self.state: KeyedState | RingState | None = None
        self.windows_fired = 0
        # a worker of merged rings: the entries of windows its full ring had to fire mid-batch, kept
        # (not finalized) until the windows are merged with the other workers' entries
        self.early: list[tuple[list[np.ndarray], list[np.ndarray]]] | None = None
        self.late_warning: LateRowsWarning | None = None
        self.retired: RetiredTables | None = None  # the tables of the checkpoint this run rescaled
        if isinstance(p.sink, op.WindowAggregateSink):
            self.backend = backend
            self.state = self.new_state(name or table_names(p)[0], new_tables)
            source = p.input.scan.source.name if isinstance(p.input, op.SourcePort) else p.input.describe()
            self.late_warning = LateRowsWarning(source, p.sink.late_output)

    def new_state(self, name: str, new: bool = False) -> KeyedState | RingState:
        """A table of this aggregation's layout on the run's backend (a ring in DRAM)."""
        ring = self._agg.ring
        if ring is None:
            return self.backend.hash_table(name, self._layout, new)
        return RingState(name, ring, self._layout.value_dtypes, self._agg.window.slide_ms)

    # an aggregating pipeline's sink and its state layout (it always has a kernel)
    @property
    def _agg(self) -> op.WindowAggregateSink:
        assert isinstance(self.sink, op.WindowAggregateSink)
        return self.sink

    @property
    def _layout(self) -> AggLayout:
        assert self.ks is not None and self.ks.agg_layout is not None
        return self.ks.agg_layout

    # -- processing ---------------------------------------------------------------------------
    def process(self, batch: EncodedBatch, input_watermark: int = NO_WATERMARK,
                rows: tuple[int, int] | None = None, selection: np.ndarray | None = None) \
            -> tuple[EncodedBatch | None, EncodedBatch | None, list[EncodedBatch]]:
        """Run the kernel over a batch: emitted rows, late rows, windows fired mid-batch.

        A pipeline that does not read a source judges lateness by ``input_watermark``. A worker
        sharing the pipeline runs the batch's ``rows`` (a slice) or its ``selection`` (row numbers,
        for a keyed-parallel kernel).

        Output buffers hold every row the kernel may write, rows_per_input per input row; so that
        sliding windows cannot make them huge, such a batch runs in chunks of at most ``OUT_BUFFER_ROWS``.
        """
        p = self.p
        start, n = rows if rows is not None else (0, batch.length if selection is None else len(selection))
        self.selection = selection
        fired: list[EncodedBatch] = []
        if self.kernel is None:
            return batch, None, fired
        collect = isinstance(self.sink, op.EmitRows)
        late = _buffers(p.output_schema, n - start) if self.state is not None and self._agg.late_output else None
        self.ctl[ctl.LATE_OUT_ROWS] = 0
        self.ctl[ctl.INPUT_WATERMARK] = input_watermark
        self._bind_lookups()
        per_row = p.rows_per_input * self.fanout
        # a row may add an entry per window it is in (one pane), for each row a lookup join made of it
        self.ctl[ctl.ROOM_PER_ROW] = per_row * (self._agg.window.windows_per_row
                                                if self.state is not None and not self._agg.panes else 1)
        # a row making at most one: buffers as large as the input, which is there already (chunks
        # would be copied into one batch again)
        chunk = max(1, OUT_BUFFER_ROWS // per_row) if collect and per_row > 1 else max(n - start, 1)
        outs: list[EncodedBatch] = []
        for first in range(start, n, chunk):
            end = min(n, first + chunk)
            out = _buffers(p.output_schema, (end - first) * per_row) if collect else None
            self.ctl[ctl.OUT_ROWS] = 0
            pos = first
            while True:
                pos = self.kernel(pos, end, *self._args(batch, out, late))
                if pos >= end:
                    break
                if self._string_missing():
                    self._make_strings(pos, end, batch, out, late)
                else:
                    self._resolve(int(self.ctl[ctl.STATUS]), fired)
            if out is not None:
                outs.append(_sliced(out, int(self.ctl[ctl.OUT_ROWS])))
        if self.state is not None:
            self.state.end_batch()
            if self._agg.panes and self.p.parallel is None:  # the serial of the next batch's first row
                self.ctl[ctl.ROW_BASE] += n - start
            if self.late_warning is not None:  # None: a worker's share, whose runner warns for all
                self.late_warning.update(int(self.ctl[ctl.LATE_ROWS]), self.watermark)
        result = None
        if collect:
            result = outs[0] if len(outs) == 1 else concatenated(outs, p.output_schema)
        return result, (_sliced(late, int(self.ctl[ctl.LATE_OUT_ROWS])) if late else None), fired

    def _bind_lookups(self) -> None:
        """String functions' tables over every code of the pool (``plv``/``plm``), and over the strings their
        results add, as many times as the kernel applies a function to another's result (``lookup_depth``;
        a function applied again to its own results, such as ``concat``, would lengthen strings without end).
        The strings added last get results at the next call, before a kernel can read them as input."""
        assert self.ks is not None or not self.lookups
        for _ in range(self.ks.params.lookup_depth if self.ks else 0):
            before = len(self.pool)
            for lut in self.lookups:
                lut.cover(self.pool)
            if len(self.pool) == before:
                break
        for i, lut in enumerate(self.lookups):
            self.params[f"plv{i}"], self.params[f"plm{i}"] = lut.values, lut.valid

    def _bind_formats(self) -> None:
        for i, table in enumerate(self.formats):
            self.params[f"pfk{i}"], self.params[f"pfc{i}"] = table.keys, table.codes
        for i, pairs in enumerate(self.pairs):
            self.params[f"pqa{i}"], self.params[f"pqb{i}"], self.params[f"pqc{i}"] = \
                pairs.left, pairs.right, pairs.codes

    def _string_missing(self) -> bool:
        """Whether the kernel stopped for a string a table lacks (a formatted timestamp, a number's text, a
        concatenation, an expanding function's result) and can scout."""
        assert self.ks is not None
        return int(self.ctl[ctl.STATUS]) in (ctl.NEEDS_STRING, ctl.NEEDS_PAIR) and self.ks.params.scouting

    def _make_strings(self, pos: int, end: int, batch: EncodedBatch, out: dict[str, Column] | None,
                      late: dict[str, Column] | None) -> None:
        """The string the kernel stopped for and every string the rows after it lack, made at once, not one
        kernel stop per value: the kernel runs on from ``pos`` as a scout (``ctl.SCOUT``), which changes no
        state, writes no row and stops for nothing but recording the time units and pairs its tables lack, up
        to ``SCOUTED_MISSES``; ``ctl`` is then as it was before the scout ran. A pair of a string the scout
        found missing itself (a concatenation of a number's text) waits for the next scout."""
        assert self.kernel is not None
        stopped = self.ctl.copy()
        self._add_strings(_missed(stopped, int(stopped[ctl.STATUS])))
        stopped[ctl.STATUS] = ctl.OK
        self.ctl[ctl.STATUS] = ctl.OK
        self.ctl[ctl.SCOUT] = 1
        self.ctl[ctl.MISSES] = 0
        self.kernel(pos, end, *self._args(batch, out, late))
        found = self.params["ptm"][:3 * int(self.ctl[ctl.MISSES])]  # type: ignore[index]
        self.ctl[:] = stopped
        self._add_strings(found)

    def _add_strings(self, found: np.ndarray) -> None:
        """Make the strings recorded as (table, key, key) triples, the table a pair table's number or ``-1 - i``
        for format ``i`` (whose key is a time unit), and rebind the tables: the formats' and pair tables, and
        the lookup tables over the new strings (no table is empty then: a scout reads a missing string's code,
        -1, as the last)."""
        tables, a, b = found[0::3], found[1::3], found[2::3]
        for table in np.unique(tables).tolist():
            mine = tables == table
            if table < 0:
                self.formats[-1 - table].add(a[mine], self.pool)
            else:
                self.pairs[table].add(a[mine], b[mine], self.pool)
        self._bind_formats()
        self._bind_lookups()

    def _resolve(self, status: int, fired: list[EncodedBatch]) -> None:
        """Fix what made the kernel stop, so it can go on from the same row."""
        self.ctl[ctl.STATUS] = ctl.OK
        if status in (ctl.NEEDS_STRING, ctl.NEEDS_PAIR):
            self._add_strings(_missed(self.ctl, status))  # and string functions of the new strings
        elif status == ctl.CAST_FAILED:
            self._cast_failed(int(self.ctl[ctl.FORMAT_SITE]), int(self.ctl[ctl.FORMAT_KEY]))
        elif status == ctl.NEEDS_ROOM:
            state = self.state
            assert state is not None and not isinstance(state, RingState)  # only a hash table's kernel asks
            state.grow(int(self.ctl[ctl.ROOM_PER_ROW]))
        elif status in (ctl.RING_FULL, ctl.WINDOWS_DUE):
            # RING_FULL: the watermark closed a window whose slot a new one needs; WINDOWS_DUE: a row
            # late for some of its pane's windows waits until the watermark's windows have fired
            wm = self.watermark if self.p.source_timed else int(self.ctl[ctl.INPUT_WATERMARK])
            if self.early is not None:
                entries = list(self.fired_entries(wm))
                if not entries and status == ctl.RING_FULL:
                    raise DarwinError("internal error: a window ring is full of open windows")
                self.early.extend(entries)
                return
            drained = list(self.drain(wm))
            if not drained and status == ctl.RING_FULL:
                raise DarwinError("internal error: a window ring is full of open windows")
            fired.extend(drained)
        elif status == ctl.WINDOW_TIME_BEYOND:
            raise window_time_error(self.p.checked_times[int(self.ctl[ctl.FORMAT_SITE])], int(self.ctl[ctl.FORMAT_KEY]))
        elif status == ctl.OUT_OF_DOMAIN:
            ring, inp = self._agg.ring, self.p.input
            assert ring is not None and isinstance(inp, op.SourcePort)  # only a ring's kernel asks; rings read sources
            raise SourceError(f"source {inp.scan.source.name!r}: a value of group key "
                              f"{self._agg.aggregate.keys[0]!r} is outside [{ring.low}, {ring.low + ring.size - 1}], "
                              "the range the source's statistics promised")
        else:
            raise DarwinError(f"internal error: kernel stopped with status {status}")

    def _cast_failed(self, site: int, code: int) -> None:
        """A string's CAST met text that does not parse: the query fails naming it (Flink's CAST does)."""
        lut = self.lookups[site]
        dtype = next(t for t, name in PARSERS.items() if name == lut.func)
        text = self.pool.decode(np.array([code], dtype=np.int64), None).to_pylist()[0]
        raise CastError(failure(text, dtype, *lut.args))

    def _args(self, batch: EncodedBatch, out: dict[str, Column] | None,
              late: dict[str, Column] | None) -> list[object]:
        """The kernel's arguments after (start, n), bound as its signature says."""
        assert self.ks is not None  # process() runs only a pipeline that has a kernel
        buffers = {Buffer.OUTPUT: out, Buffer.LATE: late}
        args: list[object] = []
        for arg in self.ks.signature.args:
            match arg:
                case ColumnArg(Buffer.INPUT, column, part):
                    c = batch.columns[column]
                    values = c.values if part is Part.VALUES else c.valid
                    args.append(np.ascontiguousarray(values) if values is not None
                                else np.ones(batch.length, dtype=np.bool_))
                case ColumnArg(buffer, column, part):
                    columns = buffers[buffer]
                    assert columns is not None  # the kernel writes the buffers process() makes for its sink
                    c = columns[column]
                    args.append(c.values if part is Part.VALUES else c.valid)
                case ParamArg(name):
                    args.append(self.params[name])
                case ControlArg():
                    args.append(self.ctl)
                case SelectionArg():
                    args.append(self.selection)
                case StateArg(name):
                    args.append(self._state_array(name))
                case LookupArg(lookup, part):
                    args.append(self.static[lookup].array(part))
                case TextArg(part):
                    args.append(self.pool.text_arrays()[part])
                case _:
                    raise DarwinError(f"internal error: the runtime cannot bind kernel argument {arg!r}")
        return args

    def _state_array(self, name: str) -> np.ndarray:
        if name == "fbuf":
            return self.scratch.view(np.float64)
        if name == "ibuf":
            return self.scratch
        assert self.state is not None  # state arguments are an aggregating kernel's
        return self.state.array(name)

    # -- checkpoints ----------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """Counters, event-time progress and state, at a batch boundary."""
        body: dict[str, Any] = {"ctl": self.ctl.tolist(), "windows_fired": self.windows_fired}
        files: list[str] = []
        if self.state is not None:
            body["state"], files = self.state.snapshot(directory)
        return body, files

    def restore(self, directory: Path, body: dict[str, Any], checkpoint_id: int,
                saved: op.Pipeline | None = None) -> None:
        """The state ``body`` holds; ``saved`` is the pipeline as the checkpoint's run compiled it (at
        another parallelism: its workers' tables become this one thread's)."""
        if "workers" in body:
            self._restore_workers(directory, body, checkpoint_id, saved or self.p)
            return
        ctl_saved = np.array(body["ctl"], dtype=np.int64)
        self.ctl[:len(ctl_saved)] = ctl_saved  # slots added since the checkpoint keep their initial values
        self.windows_fired = int(body["windows_fired"])
        if self.state is not None:
            self.state.restore(directory, body["state"], checkpoint_id)

    def _restore_workers(self, directory: Path, body: dict[str, Any], checkpoint_id: int, saved: op.Pipeline) -> None:
        """Several workers' state (a checkpoint taken at another parallelism), into this thread's table:
        entries by window, then first-seen serial, as one thread holds them."""
        state = self.state
        assert state is not None  # a checkpoint holds workers' tables only of an aggregation
        whole = read_saved(saved, directory, body, checkpoint_id, self.backend)
        keys, values = whole.entries_for(self._layout)
        state.add_entries(keys, values)
        self.retired = RetiredTables(self.backend, self.p)
        self.ctl[:] = whole.ctl
        self.windows_fired = whole.windows_fired
        self.reset_min_end()

    def after_checkpoint(self, checkpoint_id: int) -> None:
        if self.state is not None:
            self.state.after_checkpoint(checkpoint_id)
        if self.retired is not None:
            self.retired.after_checkpoint()

    def close(self) -> None:
        if self.state is not None:
            self.state.close()

    # -- event time ---------------------------------------------------------------------------
    @property
    def watermark(self) -> int:
        """The watermark a source-reading kernel has reached (per row, within the batch)."""
        t = int(self.ctl[ctl.MAX_TIME])
        source = self.p.timing
        if t == NO_WATERMARK or source is None:
            return NO_WATERMARK
        return t - source.delay_ms

    def counters(self) -> dict[str, int]:
        return {"late_rows": int(self.ctl[ctl.LATE_ROWS]), "null_time_rows": int(self.ctl[ctl.NULL_TIME_ROWS]),
                "future_rows": int(self.ctl[ctl.FUTURE_ROWS]), "windows_fired": self.windows_fired}

    def drain(self, wm: int, final: bool = False) -> Iterator[EncodedBatch]:
        """Remove the windows that end at or before ``wm`` (all of them if ``final``), as batches in
        window order.

        Consume it to the end before the kernel runs again: the state changes as it goes.
        """
        previous = None  # a window may span chunks: count it once
        for keys, values in self.fired_entries(wm, final):
            starts = keys[0]  # in window order
            self.windows_fired += 1 + int(np.count_nonzero(starts[1:] != starts[:-1])) - int(starts[0] == previous)
            previous = starts[-1]
            yield self.fired_rows(keys, values)

    def fired_rows(self, keys: list[np.ndarray], values: list[np.ndarray]) -> EncodedBatch:
        """Fired entries as result rows (a worker's carry the serial of the row that made each)."""
        columns = finalize(self._layout, keys, values, self._agg.window.size_ms)
        fired = {f.name: Column(*columns[f.name]) for f in self._agg.aggregate.schema.fields}
        seen = self._layout.first_seen
        if seen is not None:  # a worker's windows: merged with the others' by first-seen row
            fired[FIRST_SEEN] = Column(values[seen], None)
        return EncodedBatch(fired, len(keys[0]))

    def fired_entries(self, wm: int, final: bool = False) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """The state's entries of the windows ending at or before ``wm`` (all if ``final``), removed:
        keys (window start first) and value slots, in window order, not finalized."""
        s = self.state
        if s is None or s.is_empty() or (not final and self.ctl[ctl.MIN_WINDOW_END] > wm):
            self.mark_fired_through(wm)
            return
        if self._agg.panes:
            assert isinstance(s, (HashTableState, RingState)) and self.ks is not None and self.ks.agg_layout is not None
            yield from fired_windows(s, self.ks.agg_layout, self._agg.window, int(self.ctl[ctl.FIRED_THROUGH]), wm,
                                     final)
            self.mark_fired_through(wm)
        else:
            yield from s.fire(wm, self._agg.window.size_ms, final)
        self.reset_min_end()

    def mark_fired_through(self, wm: int) -> None:
        """Every window ending by ``wm`` that holds an entry has fired: panes count them all as fired."""
        if self.state is not None and self._agg.panes:
            self.ctl[ctl.FIRED_THROUGH] = max(int(self.ctl[ctl.FIRED_THROUGH]), wm)

    def reset_min_end(self) -> None:
        """The end of the first window the state may fire (after its entries changed from outside the kernel)."""
        s = self.state
        assert s is not None
        if self._agg.panes:
            assert isinstance(s, (HashTableState, RingState))
            end = first_end(s, self._agg.window, int(self.ctl[ctl.FIRED_THROUGH]))
        else:
            start = s.min_start()
            end = None if start is None else start + self._agg.window.size_ms
        self.ctl[ctl.MIN_WINDOW_END] = INT64_MAX if end is None else end


def _buffers(schema: Schema, rows: int) -> dict[str, Column]:
    return {f.name: Column(np.empty(rows, dtype=f.dtype.numpy), np.empty(rows, dtype=np.bool_) if f.nullable
                           else None) for f in schema.fields}


def concatenated(batches: list[EncodedBatch], schema: Schema) -> EncodedBatch:
    """One batch of the chunks' output rows, in order (an empty one for no chunks)."""
    if not batches:
        return _sliced(_buffers(schema, 0), 0)
    columns = {}
    for f in schema.fields:
        parts = [b.columns[f.name] for b in batches]
        valid = np.concatenate([c.valid for c in parts]) if f.nullable else None
        columns[f.name] = Column(np.concatenate([c.values for c in parts]), valid)
    return EncodedBatch(columns, sum(b.length for b in batches))


def _missed(control: np.ndarray, status: int) -> np.ndarray:
    """The string a kernel stopped for (``status`` NEEDS_STRING or NEEDS_PAIR) as the (table, key, key)
    triple ``_add_strings`` takes: a format's is table ``-1 - site`` at a time unit, a pair table's its two keys."""
    site, key = int(control[ctl.FORMAT_SITE]), int(control[ctl.FORMAT_KEY])
    if status == ctl.NEEDS_STRING:
        return np.array([-1 - site, key, 0], dtype=np.int64)
    return np.array([site, key, int(control[ctl.PAIR_RIGHT])], dtype=np.int64)


def _sliced(cols: dict[str, Column], rows: int) -> EncodedBatch:
    return EncodedBatch({name: Column(c.values[:rows], None if c.valid is None else c.valid[:rows])
                         for name, c in cols.items()}, rows)
