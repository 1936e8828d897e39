"""The reference interpreter: runs the *unoptimized* logical plan one row at a time.

It defines Darwin's semantics, and the compiled engine is tested against it:
- the watermark advances per record at the source: max event time seen − delay;
- a window [start, end) is late once end <= watermark; a row is late when all its
  windows are; late rows are counted (and kept when the window asks for it);
- after each input batch the windows whose end <= watermark fire, ordered by
  window start, then by the order in which their groups first appeared;
- at the end of input every remaining window fires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.plan import nodes as pn
from darwin.plan.aggregates import Accumulator, function
from darwin.plan.evaluate import Row, compile_expr
from darwin.plan.exprs import Column
from darwin.plan.visitor import PlanVisitor
from darwin.runtime.encoding import to_int64
from darwin.runtime.output import Output
from darwin.runtime.progress import LateRowsWarning, Metrics, WatermarkClock
from darwin.types import DType, Schema

Emit = Callable[[Row], None]


class _Context:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.clock: WatermarkClock | None = None
        self.late_rows: list[Row] = []


def run(plan: pn.PlanNode, config: Config, metrics: Metrics) -> Iterator[Output]:
    """Output batches of ``plan``, row by row; only single-source plans for now."""
    (scan,) = pn.scans(plan)
    ctx = _Context(metrics)
    out: list[Row] = []
    root = _Builder(ctx).visit(plan, out.append)
    time_col = scan.time_column
    ctx.clock = WatermarkClock(scan.max_delay_ms if scan.max_delay_ms is not None else config.max_delay_ms,
                               scan.max_future_ms)
    late_schema = pn.late_output_schema(plan)
    late_warning = LateRowsWarning(scan.source.name, late_schema is not None)
    for batch in scan.source.batches(scan.columns, config.batch_size):
        rows = _rows(batch, scan.schema, scan.source.name)
        metrics.add("input_rows", len(rows))
        for row in rows:
            if time_col is not None and row[time_col] is not None:
                ctx.clock.observe(row[time_col])
            root.push(row)
        root.flush()
        late_warning.update(metrics.values["late_rows"], ctx.clock.watermark)
        yield from _drain(out, plan.schema, ctx, late_schema)
    root.finish()
    yield from _drain(out, plan.schema, ctx, late_schema)
    metrics.set("watermark", ctx.clock.watermark)
    metrics.add("future_rows", ctx.clock.future_rows)


def _drain(out: list[Row], schema: Schema, ctx: _Context, late_schema: Schema | None) -> Iterator[Output]:
    if out:
        yield Output("result", _batch(out, schema))
        out.clear()
    if ctx.late_rows and late_schema is not None:
        yield Output("late", _batch(ctx.late_rows, late_schema))
        ctx.late_rows.clear()


def _rows(batch: pa.RecordBatch, schema: Schema, source: str) -> list[Row]:
    """Rows of a batch; integers and timestamps go through the compiled engine's conversion, so both
    engines see the same milliseconds and refuse the same out-of-range values."""
    cols = {}
    for f, name in zip(schema.fields, batch.schema.names):
        arr = batch.column(name)
        if f.dtype in (DType.INT64, DType.TIMESTAMP):
            arr = to_int64(arr, source, name)
        elif pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        cols[name] = arr.to_pylist()
    names = list(cols)
    return [dict(zip(names, values)) for values in zip(*cols.values())] if names else []


def _batch(rows: list[Row], schema: Schema) -> pa.RecordBatch:
    arrow = schema.to_arrow()
    return pa.RecordBatch.from_arrays(
        [pa.array([r[f.name] for r in rows], type=f.type) for f in arrow], schema=arrow)


class _Operator:
    def push(self, row: Row) -> None: ...
    def flush(self) -> None: ...
    def finish(self) -> None: ...


class _Stateless(_Operator):
    def __init__(self, fn: Callable[[Row], None], child: _Operator | None) -> None:
        self.fn, self.child = fn, child

    def push(self, row: Row) -> None:
        self.fn(row)

    def flush(self) -> None:
        if self.child:
            self.child.flush()

    def finish(self) -> None:
        if self.child:
            self.child.finish()


class _Builder(PlanVisitor[_Operator]):
    """The operator tree of a plan: ``visit(node, emit)`` builds ``node``'s operators, pushing its
    output rows into ``emit``, over the operators of its inputs."""

    translation = "the reference interpreter"

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx

    def visit_Scan(self, node: pn.Scan, emit: Emit) -> _Operator:
        return _Stateless(emit, None)

    def visit_Filter(self, node: pn.Filter, emit: Emit) -> _Operator:
        pred = compile_expr(node.predicate, node.input.schema)
        return self.visit(node.input, lambda row: emit(row) if pred(row) is True else None)

    def visit_Project(self, node: pn.Project, emit: Emit) -> _Operator:
        fns = [(name, compile_expr(e, node.input.schema)) for name, e in node.exprs]
        casts = {f.name for f in node.schema.fields if f.dtype is DType.FLOAT64}
        return self.visit(node.input, lambda row: emit(
            {n: (float(v) if n in casts and v is not None else v) for n, f in fns for v in (f(row),)}))

    def visit_WindowAssign(self, node: pn.WindowAssign, emit: Emit) -> _Operator:
        w, ctx = node.window, self.ctx

        def assign(row: Row) -> None:
            t = row[w.on]
            if t is None:
                ctx.metrics.add("null_time_rows", 1)
                return
            for start in window_starts(t, w.size_ms, w.slide_ms):
                emit({**row, pn.WINDOW_START: start, pn.WINDOW_END: start + w.size_ms})
        return self.visit(node.input, assign)

    def visit_Aggregate(self, node: pn.Aggregate, emit: Emit) -> _Operator:
        if any(isinstance(n, pn.Aggregate) for n in pn.walk(node.input)):
            raise UnsupportedError("a windowed aggregation over the result of another windowed aggregation "
                                   "is not supported yet")
        agg = _WindowAggregate(node, self.ctx, emit)
        return _Chain(self.visit(node.input.input, agg.push), agg)


class _Chain(_Operator):
    """An input operator feeding a stateful one: batch ends go to both, upstream first."""

    def __init__(self, first: _Operator, second: _Operator) -> None:
        self.first, self.second = first, second

    def push(self, row: Row) -> None:
        self.first.push(row)

    def flush(self) -> None:
        self.first.flush()
        self.second.flush()

    def finish(self) -> None:
        self.first.finish()
        self.second.finish()


_NAN = float("nan")


def _group_key(v: Any) -> Any:
    """One group for 0.0 and -0.0, and one for every NaN, as the compiled hash table does."""
    if isinstance(v, float):
        return _NAN if v != v else v + 0.0
    return v


def window_starts(t: int, size: int, slide: int) -> list[int]:
    """Starts of the windows holding ``t``, ascending."""
    last = t - t % slide
    k = size // slide
    return [last - (k - 1 - j) * slide for j in range(k)]


class _WindowAggregate(_Operator):
    def __init__(self, node: pn.Aggregate, ctx: _Context, emit: Emit) -> None:
        self.node, self.ctx, self.emit = node, ctx, emit
        self.window = node.input.window
        schema = node.input.input.schema
        self.keys = [compile_expr(Column(k), schema) for k in node.keys]
        self.args = [(function(call.func), compile_expr(call.arg, schema) if call.arg is not None else None)
                     for _, call in node.aggs]
        self.groups: dict[tuple, list[Accumulator]] = {}

    def push(self, row: Row) -> None:
        w = self.window
        t = row[w.on]
        if t is None:
            self.ctx.metrics.add("null_time_rows", 1)
            return
        wm = self.ctx.clock.watermark
        keys = tuple(_group_key(f(row)) for f in self.keys)
        accepted = False
        for start in window_starts(t, w.size_ms, w.slide_ms):
            if start + w.size_ms <= wm:
                continue
            accepted = True
            group = self.groups.get((start, *keys))
            if group is None:
                group = self.groups[(start, *keys)] = [agg.accumulator() for agg, _ in self.args]
            for acc, (_, f) in zip(group, self.args):
                v = f(row) if f is not None else 1
                if v is not None:  # aggregates skip nulls
                    acc.add(v)
        if not accepted:
            self.ctx.metrics.add("late_rows", 1)
            if self.node.input.late_output:
                self.ctx.late_rows.append(row)

    def flush(self) -> None:
        self._fire(self.ctx.clock.watermark)

    def finish(self) -> None:
        self._fire(None)

    def _fire(self, wm: int | None) -> None:
        size = self.window.size_ms
        fired = [k for k in self.groups if wm is None or k[0] + size <= wm]
        fired.sort(key=lambda k: k[0])  # stable: groups keep their first-seen order
        names = [f.name for f in self.node.schema.fields]
        for k in fired:
            values = [k[0], k[0] + size, *k[1:], *(a.result() for a in self.groups.pop(k))]
            self.emit(dict(zip(names, values)))
        self.ctx.metrics.add("windows_fired", len({k[0] for k in fired}))
