"""The reference interpreter: runs the *unoptimized* logical plan one row at a time.

It defines Darwin's semantics, and the compiled engine is tested against it
(``docs/decisions.md`` explains the choices):
- sources are read a batch at a time; the next batch comes from the unfinished source with
  the smallest watermark (ties: the order of the scans in the plan, left input first). A
  source without event time has no watermark until it ends, so it is read first;
- a source's watermark advances per record: max event time seen − delay; a finished
  source's watermark is +infinity;
- a batch goes through every operator it reaches before anything else happens; a node
  with several consumers hands it to each in the order the compiled engine's pipelines reading it
  are made (``_Operator.attach``);
- then every stateful operator, inputs first, takes its new watermark (the minimum of its
  inputs'), fires the windows whose end <= watermark (ordered by window start, then by the
  order in which their groups first appeared) and frees join rows that can no longer match;
- a row is late by the watermark just after it when the operator reads straight from a
  source, and otherwise by the operator's watermark before this batch (rows travel ahead
  of the watermark that follows them). A window [start, end) is late once end <= that
  watermark; a row is late when all its windows are; late rows are counted (and kept
  when the window asks for it);
- joins: see ``_Join``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from darwin.config import Config
from darwin.plan import nodes as pn
from darwin.plan.aggregates import Accumulator, function, order_key
from darwin.plan.evaluate import Row, compile_expr
from darwin.plan.exprs import Column
from darwin.plan.ranking import Ranking, ranking_of
from darwin.plan.temporal import checks_window_times, join_timing, judged_by_source, producer, union_source
from darwin.plan.visitor import SharedNodeVisitor
from darwin.plan.window import BarrierWindow
from darwin.runtime.encoding import to_int64
from darwin.runtime.output import Output
from darwin.runtime.progress import LateRowsWarning, Metrics, WatermarkClock, check_window_time, latest_event_time
from darwin.timestamps import END_OF_INPUT, NO_WATERMARK
from darwin.types import DType, Schema

INSERT, DELETE = pn.ChangeKind.INSERT, pn.ChangeKind.DELETE
RETRACTIONS = (pn.ChangeKind.UPDATE_BEFORE, DELETE)


class _Context:
    def __init__(self, metrics: Metrics, config: Config) -> None:
        self.metrics, self.config = metrics, config
        self.late_rows: list[Row] = []


def run(plan: pn.PlanNode, config: Config, metrics: Metrics) -> Iterator[Output]:
    """Output batches of ``plan``: after each input batch, what it and the watermark it moved produced."""
    ctx = _Context(metrics, config)
    built = _Builder(ctx)
    root = built.visit(plan)
    root.attach()
    out = _Collector()
    root.consumers.append((out, 0))
    ops = [built.results[id(n)][1] for n in pn.walk(plan) if id(n) in built.results]  # a lookup table loads apart
    scans = [op for op in ops if isinstance(op, _Scan)]
    stateful = [op for op in ops if isinstance(op, (_WindowAggregate, _SessionAggregate, _Join, _Union, _Rank,
                                                 _GroupAggregate))]
    late_schema = pn.late_output_schema(plan)
    late_warning = LateRowsWarning(", ".join(s.node.source.name for s in scans), late_schema is not None)
    schema = _output_schema(plan)
    while True:
        pending = [s for s in scans if not s.finished]
        if not pending:
            break
        scan = min(pending, key=lambda s: s.watermark())  # min() keeps the first of equals: plan order
        scan.read()
        for op in stateful:
            op.advance()
        late_warning.update(metrics.values["late_rows"], min(s.clock.watermark for s in scans))
        yield from _drain(out.rows, schema, ctx, late_schema)
    timed = [s.clock.watermark for s in scans if s.node.time_column is not None]
    metrics.set("watermark", min(timed) if timed else NO_WATERMARK)
    metrics.add("future_rows", sum(s.clock.future_rows for s in scans))


def _output_schema(plan: pn.PlanNode) -> Schema:
    return pn.with_change_kind(plan.schema) if pn.updating(plan) else plan.schema


def _drain(out: list[Row], schema: Schema, ctx: _Context, late_schema: Schema | None) -> Iterator[Output]:
    if out:
        yield Output("result", _batch(out, schema))
        out.clear()
    if ctx.late_rows and late_schema is not None:
        yield Output("late", _batch(ctx.late_rows, late_schema))
        ctx.late_rows.clear()


def rows_of(batch: pa.RecordBatch, schema: Schema, source: str) -> list[Row]:
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


Rows = list[Row]
Marks = list[int]  # per row: the watermark it is judged by downstream


class _Operator:
    """One plan node's work. ``push`` takes rows arriving on input ``port``; ``emit`` hands rows
    to every consumer in turn; ``advance`` runs after each input batch."""

    deferred = False  # a stateless operator becomes a consumer when the operator reading it does

    def __init__(self, inputs: list[_Operator]) -> None:
        self.inputs = inputs
        self.consumers: list[tuple[Any, int]] = []
        self.wm = NO_WATERMARK
        self.attached = False
        if not self.deferred:
            self.attach()

    def attach(self) -> None:
        """Become a consumer of each input, in port order, once.

        A batch reaches a node's consumers in the order the compiled engine makes the pipelines reading
        it: a chain of stateless operators is made when the operator reading it is (so a ``_Map`` attaches
        then), a join's left input before its right one is visited and a union's parts in turn (so the
        builder moves them to their places, ``_Builder.placed``), any other operator as it is built."""
        if self.attached:
            return
        self.attached = True
        for port, op in enumerate(self.inputs):
            op.attach()
            op.consumers.append((self, port))

    def emit(self, rows: Rows, marks: Marks) -> None:
        if rows:
            for consumer, port in self.consumers:
                consumer.push(rows, marks, port)

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        raise NotImplementedError

    def watermark(self) -> int:
        """Stateless operators pass their input's watermark on."""
        return self.inputs[0].watermark()

    def advance(self) -> None:
        """Take the new watermark; fire and free what it allows."""


class _Collector:
    def __init__(self) -> None:
        self.rows: Rows = []

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        self.rows.extend(rows)


class _Scan(_Operator):
    def __init__(self, node: pn.Scan, ctx: _Context) -> None:
        super().__init__([])
        self.node, self.ctx = node, ctx
        config = ctx.config
        self.clock = WatermarkClock(node.max_delay_ms if node.max_delay_ms is not None else config.max_delay_ms,
                                    node.max_future_ms)
        self.batches = iter(node.source.batches(node.columns, config.batch_size))
        self.finished = False

    def watermark(self) -> int:
        return END_OF_INPUT if self.finished else self.clock.watermark

    def read(self) -> None:
        batch = next(self.batches, None)
        if batch is None:
            self.finished = True
            return
        rows = rows_of(batch, self.node.schema, self.node.source.name)
        self.ctx.metrics.add("input_rows", len(rows))
        time_col, marks = self.node.time_column, []
        if time_col is not None:
            latest_event_time(to_int64(batch.column(time_col), self.node.source.name, time_col),
                              self.node.source.name, time_col)
        for row in rows:
            if time_col is not None and row[time_col] is not None:
                self.clock.observe(row[time_col])
            marks.append(self.clock.watermark)
        self.emit(rows, marks)


class _Map(_Operator):
    """A stateless operator: each row becomes zero or more rows, keeping its watermark mark."""

    deferred = True

    def __init__(self, fn: Callable[[Row], list[Row]], child: _Operator) -> None:
        super().__init__([child])
        self.fn = fn

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        out_rows, out_marks = [], []
        for row, mark in zip(rows, marks):
            for r in self.fn(row):
                out_rows.append(r)
                out_marks.append(mark)
        self.emit(out_rows, out_marks)


def _keep_change(row: Row, new: Row) -> Row:
    """Rows of an updating result carry their change kind through stateless operators."""
    kind = row.get(pn.CHANGE_KIND)
    if kind is not None:
        new[pn.CHANGE_KIND] = kind
    return new


class _Builder(SharedNodeVisitor[_Operator]):
    """The operator graph of a plan: one operator per node (a node several parents read is built
    once), each registered as a consumer of its inputs' operators in plan order."""

    translation = "the reference interpreter"

    def __init__(self, ctx: _Context) -> None:
        super().__init__()
        self.ctx = ctx

    def visit_Scan(self, node: pn.Scan) -> _Operator:
        return _Scan(node, self.ctx)

    def visit_Filter(self, node: pn.Filter) -> _Operator:
        pred = compile_expr(node.predicate, node.input.schema)
        return _Map(lambda row: [row] if pred(row) is True else [], self.visit(node.input))

    def visit_Project(self, node: pn.Project) -> _Operator:
        fns = [(name, compile_expr(e, node.input.schema)) for name, e in node.exprs]
        casts = {f.name for f in node.schema.fields if f.dtype is DType.FLOAT64}
        return _Map(lambda row: [_keep_change(row, {
            n: (float(v) if n in casts and v is not None else v) for n, f in fns for v in (f(row),)})],
            self.visit(node.input))

    def visit_WindowAssign(self, node: pn.WindowAssign) -> _Operator:
        w, ctx = node.window, self.ctx
        checks = checks_window_times(node.input, w.on)

        def assign(row: Row) -> list[Row]:
            t = row[w.on]
            if t is None:
                ctx.metrics.add("null_time_rows", 1)
                return []
            if checks:
                check_window_time(t, w.on)
            return [{**row, pn.WINDOW_START: start, pn.WINDOW_END: start + w.size_ms}
                    for start in window_starts(t, w.size_ms, w.slide_ms)]
        return _Map(assign, self.visit(node.input))

    def visit_Aggregate(self, node: pn.Aggregate) -> _Operator:
        return _WindowAggregate(node, self.ctx, self.visit(node.input.input))

    def visit_GroupAggregate(self, node: pn.GroupAggregate) -> _Operator:
        return _GroupAggregate(node, self.visit(node.input))

    def visit_SessionAggregate(self, node: pn.SessionAggregate) -> _Operator:
        return _SessionAggregate(node, self.ctx, self.visit(node.input))

    def visit_BarrierAggregate(self, node: pn.BarrierAggregate) -> _Operator:
        return _BarrierAggregate(node, self.ctx, self.visit(node.input))

    def visit_BarrierAssign(self, node: pn.BarrierAssign) -> _Operator:
        return _BarrierAssign(node, self.visit(node.input))

    def visit_TopN(self, node: pn.TopN | pn.Deduplicate) -> _Operator:
        return _Rank(node, self.ctx, self.visit(node.input))

    visit_Deduplicate = visit_TopN

    def visit_Over(self, node: pn.Over) -> _Operator:
        return _Over(node, self.visit(node.input))

    def visit_Union(self, node: pn.Union) -> _Operator:
        parts = [self.placed(p) for p in node.parts]
        return _placed(_Union([op for op, _ in parts], pn.updating(node), union_source(node) is not None), parts)

    def visit_Join(self, node: pn.Join) -> _Operator:
        left = self.placed(node.left)
        right = self.placed(node.right)
        return _placed(_Join(node, self.ctx, left[0], right[0]), [left, right])

    def placed(self, node: pn.PlanNode) -> tuple[_Operator, int]:
        """``node``'s operator, attached, and the place among its consumers of the one reading it next:
        the compiled engine makes a join's left pipeline (a union's part) before it visits the next input."""
        op = self.visit(node)
        op.attach()
        return op, len(op.consumers)

    def visit_LookupJoin(self, node: pn.LookupJoin) -> _Operator:
        table = [row for out in run(node.table, self.ctx.config, Metrics()) if out.kind == "result"
                 for row in out.rows.to_pylist()]
        return _Map(_lookup(node, table), self.visit(node.input))


def _placed(op: _Operator, inputs: list[tuple[_Operator, int]]) -> _Operator:
    """``op`` moved among each input's consumers to the place it had when that input was visited (the
    last input first, so one operator read twice keeps its ports in order)."""
    for port, (child, place) in reversed(list(enumerate(inputs))):
        child.consumers.remove((op, port))
        child.consumers.insert(place, (op, port))
    return op


class _Union(_Operator):
    """Rows of every input as they come, judged by the union's watermark: the minimum of its inputs'
    (or, where every input passes on one source's rows, by that source's watermark just after each,
    the mark it came with). A union of changelogs is a changelog: an appending input's rows are
    inserts of it."""

    def __init__(self, inputs: list[_Operator], updating: bool, one_source: bool) -> None:
        super().__init__(inputs)
        self.updating, self.one_source = updating, one_source

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        if self.updating:
            rows = [row if pn.CHANGE_KIND in row else {**row, pn.CHANGE_KIND: INSERT} for row in rows]
        self.emit(rows, marks if self.one_source else [self.wm] * len(rows))

    def watermark(self) -> int:
        return self.wm

    def advance(self) -> None:
        self.wm = min(op.watermark() for op in self.inputs)


class _NullKey:
    """A NULL in a null-safe key pair: equal to itself only, so it meets a NULL of the other side."""

    def __repr__(self) -> str:
        return "NULL"


_NULL_KEY = _NullKey()


def _key(fns: list[Callable[[Row], Any]], row: Row, null_safe: frozenset[int]) -> tuple | None:
    """A join key, or None if any part is NULL (a NULL key never matches) but a null-safe one."""
    key = tuple(_NULL_KEY if v is None and i in null_safe else v
                for i, v in enumerate(_group_key(f(row)) for f in fns))
    return None if any(v is None for v in key) else key


def _lookup(node: pn.LookupJoin, table: Rows) -> Callable[[Row], list[Row]]:
    """Each stream row with the table's rows of its key, in table order (a left join keeps it alone)."""
    index: dict[tuple, Rows] = {}
    table_keys = [compile_expr(k, node.table.schema) for k in node.right_keys]
    for row in table:
        key = _key(table_keys, row, node.null_safe)
        if key is not None:
            index.setdefault(key, []).append(row)
    stream_keys = [compile_expr(k, node.input.schema) for k in node.left_keys]
    names = node.right_names
    condition = None if node.where is None else compile_expr(node.where, node.schema)
    padding = {out: None for out in names.values()}

    def probe(row: Row) -> list[Row]:
        key = _key(stream_keys, row, node.null_safe)
        out = []
        for match in index.get(key, ()) if key is not None else ():
            joined = {**row, **{names[k]: v for k, v in match.items()}}
            if condition is None or condition(joined) is True:
                out.append(joined)
        if not out and node.how == "left":
            out.append({**row, **padding})
        return out
    return probe


class _Entry:
    """A row kept in a join's state."""

    __slots__ = ("row", "matches", "bound", "stamp", "alive")

    def __init__(self, row: Row, matches: int, bound: int, stamp: int) -> None:
        self.row, self.matches, self.bound, self.stamp, self.alive = row, matches, bound, stamp, True


class _Join(_Operator):
    """A join of two streams.

    A row arriving on one side is matched against the other side's state: its matches in the
    order they arrived, those for which ``where`` holds; the joined rows go out at once, in input
    order. Then it is kept. A row with a NULL key never matches and is not kept.

    - Regular joins keep rows (for ``state_ttl`` of watermark progress after the watermark at
      their arrival, if given). Outer joins emit an unmatched row padded with NULLs at once, and
      when its first match arrives, a -D of the padded row before the joined row. A row an
      updating input withdraws (-U/-D) takes back what it joined and one kept row (``_retract``).
    - Interval and window joins (``darwin.plan.temporal``) drop late rows (counted) and free a
      row once the other side's watermark has passed its bound; an outer join emits a padded row
      for a row freed without a match (left side first, in arrival order). Output only appends.
    """

    def __init__(self, node: pn.Join, ctx: _Context, left: _Operator, right: _Operator) -> None:
        super().__init__([left, right])
        self.node, self.ctx = node, ctx
        self.timing = join_timing(node)
        self.updating = pn.updating(node)
        self.keys = [[compile_expr(k, node.left.schema) for k in node.left_keys],
                     [compile_expr(k, node.right.schema) for k in node.right_keys]]
        self.condition = None if node.where is None else compile_expr(node.where, node.schema)
        self.names = node.right_names
        self.outer = (node.how in ("left", "full"), node.how in ("right", "full"))
        self.state: list[list[_Entry]] = [[], []]
        self.index: list[dict[tuple, list[_Entry]]] = [{}, {}]
        self.side_wm = [NO_WATERMARK, NO_WATERMARK]
        self.out: Rows = []

    def watermark(self) -> int:
        return self.wm

    def _joined(self, left: Row | None, right: Row | None, kind: int) -> Row:
        row: Row = dict(left) if left is not None else {n: None for n in self.node.left.schema.names}
        for name, out in self.names.items():
            row[out] = None if right is None else right[name]
        if self.updating:
            row[pn.CHANGE_KIND] = kind
        return row

    def _pair(self, side: int, mine: Row | None, theirs: Row | None, kind: int = INSERT) -> Row:
        return self._joined(mine, theirs, kind) if side == 0 else self._joined(theirs, mine, kind)

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        side, other = port, 1 - port
        timing = None if self.timing is None else (self.timing.left, self.timing.right)[side]
        out = self.out
        for row in rows:
            kind = row.get(pn.CHANGE_KIND, INSERT)
            if pn.CHANGE_KIND in row:  # the kind goes with the joined row, not with the row kept
                row = {n: v for n, v in row.items() if n != pn.CHANGE_KIND}
            key = _key(self.keys[side], row, self.node.null_safe)
            if kind in RETRACTIONS:
                self._retract(side, row, key, kind)
                continue
            # an inner join passes its input's kind on (+I or +U), as Flink's does; an outer one adds (+I)
            added = kind if not (self.outer[side] or self.outer[other]) else INSERT
            bound = NO_WATERMARK
            if timing is not None:
                t = row[timing.time]
                if t is None:
                    self.ctx.metrics.add("null_time_rows", 1)
                    key = None  # it cannot match: a row without a time has no bound
                elif t + timing.time_shift < self.side_wm[side]:
                    self.ctx.metrics.add("late_rows", 1)
                    continue
                else:
                    b = row[timing.bound]
                    bound = NO_WATERMARK if b is None else b + timing.bound_shift
            if key is None:
                if self.outer[side]:
                    out.append(self._pair(side, row, None))
                continue
            matches = 0
            for entry in self.index[other].get(key, ()):
                if not entry.alive:
                    continue
                joined = self._pair(side, row, entry.row)
                if self.condition is not None and self.condition(joined) is not True:
                    continue
                if self.updating and self.outer[other] and entry.matches == 0:
                    out.append(self._pair(other, entry.row, None, DELETE))
                entry.matches += 1
                matches += 1
                joined[pn.CHANGE_KIND] = added
                out.append(joined)
            if matches == 0 and self.outer[side] and timing is None:
                out.append(self._pair(side, row, None))
            entry = _Entry(row, matches, bound, self.wm)
            self.state[side].append(entry)
            self.index[side].setdefault(key, []).append(entry)
        self._flush()

    def _retract(self, side: int, row: Row, key: tuple | None, kind: int) -> None:
        """Row ``row`` of an updating input withdrawn (-U/-D): as Flink's regular join, it takes back
        its pairs with the other side's kept rows (-D, or its own kind on a side that is not outer),
        a kept row of an outer other side whose last match it was is padded again (+I), and its own
        padded row goes if it matched nothing. Then the oldest kept row of its side with exactly its
        values (NaN equal to NaN, NULL to NULL, -0.0 not to 0.0) leaves: one for each retraction."""
        other, out = 1 - side, self.out
        gone = DELETE if self.outer[side] else kind
        matches = 0
        for entry in self.index[other].get(key, ()) if key is not None else ():
            if not entry.alive:
                continue
            joined = self._pair(side, row, entry.row, gone)
            if self.condition is not None and self.condition(joined) is not True:
                continue
            matches += 1
            out.append(joined)
            if self.outer[other] and entry.matches > 0:
                entry.matches -= 1
                if entry.matches == 0:
                    out.append(self._pair(other, entry.row, None, INSERT))
        if matches == 0 and self.outer[side]:
            out.append(self._pair(side, row, None, DELETE))
        kept = self.index[side].get(key, []) if key is not None else []  # a NULL key's row was never kept
        taken = next((e for e in kept if e.alive and _same_row(e.row, row)), None)  # rows of one input: same names
        if taken is None:  # its state_ttl ran out: its pairs were still taken back, as in Flink
            return
        taken.alive = False
        self.state[side].remove(taken)
        kept.remove(taken)
        if not kept and key is not None:
            del self.index[side][key]

    def _flush(self) -> None:
        rows, self.out = self.out, []
        self.emit(rows, [self.wm] * len(rows))

    def advance(self) -> None:
        wms = [op.watermark() for op in self.inputs]
        self.side_wm, new = wms, min(wms)
        for side in (0, 1):
            self._expire(side, wms[1 - side], new)
        self._flush()  # with the watermark before this one: rows travel ahead of the watermark
        self.wm = new if self.timing is None else self.timing.output_watermark(*wms)

    def _expire(self, side: int, other_wm: int, new: int) -> None:
        """Free ``side``'s rows whose bound the other side's watermark has passed, or (``state_ttl``)
        whose time to live has run out at the join's new watermark ``new``."""
        timing = None if self.timing is None else (self.timing.left, self.timing.right)[side]
        if timing is not None:
            self._free(side, lambda e: e.bound < other_wm)
        elif (ttl := self.node.ttl_of(side)) is not None and new != NO_WATERMARK:
            for e in self.state[side]:
                if e.stamp == NO_WATERMARK:
                    e.stamp = new  # arrived before any watermark: its time starts with the first one
            self._free(side, lambda e: e.stamp + ttl < new)

    def _free(self, side: int, expired: Callable[[_Entry], bool]) -> None:
        kept = []
        for e in self.state[side]:
            if not expired(e):
                kept.append(e)
                continue
            e.alive = False
            if self.outer[side] and e.matches == 0 and self.timing is not None:
                self.out.append(self._pair(side, e.row, None))
        self.state[side] = kept
        for key in [k for k, entries in self.index[side].items() if not any(e.alive for e in entries)]:
            del self.index[side][key]


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
    def __init__(self, node: pn.Aggregate, ctx: _Context, child: _Operator) -> None:
        super().__init__([child])
        self.node, self.ctx = node, ctx
        self.window = node.input.window
        self.checks = checks_window_times(node.input.input, self.window.on)
        schema = node.input.input.schema
        self.keys = [compile_expr(Column(k), schema) for k in node.keys]
        self.args = [(function(call.func), compile_expr(call.input, schema) if call.input is not None else None)
                     for _, call in node.aggs]
        self.groups: dict[tuple, list[Accumulator]] = {}

    def watermark(self) -> int:
        return self.wm

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        w = self.window
        for row, wm in zip(rows, marks):
            t = row[w.on]
            if t is None:
                self.ctx.metrics.add("null_time_rows", 1)
                continue
            if self.checks:
                check_window_time(t, w.on)
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

    def advance(self) -> None:
        old, self.wm = self.wm, self.inputs[0].watermark()
        size = self.window.size_ms
        fired = [k for k in self.groups if k[0] + size <= self.wm]
        fired.sort(key=lambda k: k[0])  # stable: groups keep their first-seen order
        names = [f.name for f in self.node.schema.fields]
        rows = []
        for k in fired:
            values = [k[0], k[0] + size, *k[1:], *(a.result() for a in self.groups.pop(k))]
            rows.append(dict(zip(names, values)))
        if not self.node.second_step:  # a distinct count's second step fires the first's windows again
            self.ctx.metrics.add("windows_fired", len({k[0] for k in fired}))
        self.emit(rows, [old] * len(rows))


class _Session:
    """A session of one key: [start, end] with end = its last row's time + gap, and its rows in
    arrival order (numbered)."""

    __slots__ = ("start", "end", "rows")

    def __init__(self, start: int, end: int, rows: list[tuple[int, Row]]) -> None:
        self.start, self.end, self.rows = start, end, rows


class _SessionAggregate(_Operator):
    """Session windows (``pn.SessionAggregate``), merged as rows arrive: a row's window [t, t + gap]
    takes in every open session of its key it meets. A row meeting none whose window has ended by
    its watermark is late. Over a source's rows that watermark is the source's just after the row,
    and a session whose end it has reached fires there (it is closed for the row and every later
    one), with the others it closed; otherwise it is the operator's watermark before the batch,
    and sessions fire when the watermark reaches their end. A session is aggregated (its rows in
    arrival order) and emitted, those firing at once ordered by start, then by the order its key
    first arrived."""

    def __init__(self, node: pn.SessionAggregate, ctx: _Context, child: _Operator) -> None:
        super().__init__([child])
        self.node, self.ctx = node, ctx
        self.gap = node.window.gap_ms
        self.checks = checks_window_times(node.input, node.window.on)
        schema = node.input.schema
        self.keys = [compile_expr(Column(k), schema) for k in node.keys]
        self.args = [(function(call.func), compile_expr(call.input, schema) if call.input is not None else None)
                     for _, call in node.aggs]
        self.sessions: dict[tuple, list[_Session]] = {}
        self.arrival: dict[tuple, int] = {}  # key -> the order it first arrived in
        self.seq = 0
        self.by_row = isinstance(producer(node.input), pn.Scan)
        self.names = [f.name for f in node.schema.fields]

    def watermark(self) -> int:
        return self.wm

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        on = self.node.window.on
        out: Rows = []
        for row, mark in zip(rows, marks):
            wm = max(self.wm, mark) if self.by_row else self.wm
            if self.by_row:
                out += self._fire(wm)
            t = row[on]
            key = tuple(_group_key(f(row)) for f in self.keys)
            self.arrival.setdefault(key, len(self.arrival))
            if t is None:
                self.ctx.metrics.add("null_time_rows", 1)
                continue
            if self.checks:
                check_window_time(t, on)
            sessions = self.sessions.setdefault(key, [])
            met = [s for s in sessions if s.start <= t + self.gap and t <= s.end]
            if not met and t + self.gap <= wm:
                self.ctx.metrics.add("late_rows", 1)
                continue
            merged = _Session(min([t, *(s.start for s in met)]), max([t + self.gap, *(s.end for s in met)]),
                              sorted([(self.seq, row), *(r for s in met for r in s.rows)], key=lambda r: r[0]))
            self.seq += 1
            sessions[:] = [s for s in sessions if s not in met] + [merged]
        self.emit(out, [self.wm] * len(out))

    def advance(self) -> None:
        old, self.wm = self.wm, self.inputs[0].watermark()
        out = self._fire(self.wm)
        self.emit(out, [old] * len(out))

    def _fire(self, wm: int) -> Rows:
        """The sessions whose end ``wm`` has reached, aggregated, ordered by start then by the order
        their keys first arrived; they leave the state."""
        fired = []
        for key, sessions in self.sessions.items():
            fired += [(s.start, self.arrival[key], key, s) for s in sessions if s.end <= wm]
            sessions[:] = [s for s in sessions if s.end > wm]
        fired.sort(key=lambda f: (f[0], f[1]))
        out = []
        for start, _, key, session in fired:
            accs = [agg.accumulator() for agg, _ in self.args]
            for _, row in session.rows:
                for acc, (_, f) in zip(accs, self.args):
                    v = f(row) if f is not None else 1
                    if v is not None:
                        acc.add(v)
            keys = [float("nan") if k is _NAN else k for k in key]
            out.append(dict(zip(self.names, [start, session.end, *keys, *(a.result() for a in accs)])))
        self.ctx.metrics.add("windows_fired", len(fired))
        return out


class _Barriers:
    """Where a barrier window stands, per ``by`` key (one key without it): the barriers seen (the
    current window's id) and the barrier row that opened it."""

    def __init__(self, window: BarrierWindow, schema: Schema) -> None:
        self.window, self.is_barrier = window, compile_expr(window.when, schema)
        self.by = [compile_expr(Column(c), schema) for c in window.by]
        self.state: dict[tuple, tuple[int, Row | None]] = {}  # key -> (window id, the barrier that opened it)

    def bounds(self, row: Row, end: Any, carried: tuple[tuple[str, str], ...] = ()) -> list[Any]:
        """window_id, and with ``on`` window_start and window_end, of the window ``row`` is in; then
        the ``carried`` columns of the barrier that opened it."""
        ident, opener = self.state.get(self._key(row), (0, None))
        out: list[Any] = [ident]
        if self.window.on is not None:
            out += [None if opener is None else opener[self.window.on], end]
        return out + [None if opener is None else opener[source] for _, source in carried]

    def close(self, row: Row) -> None:
        key = self._key(row)
        ident, _ = self.state.get(key, (0, None))
        self.state[key] = (ident + 1, row)

    def _key(self, row: Row) -> tuple:
        return tuple(_group_key(f(row)) for f in self.by)


class _BarrierAggregate(_Operator):
    """Barrier windows (``pn.BarrierAggregate``): rows are aggregated per key until a barrier row,
    which emits every key's row of the window (keys in the order they first arrived in it) and
    empties the state. The barrier row is in no window."""

    def __init__(self, node: pn.BarrierAggregate, ctx: _Context, child: _Operator) -> None:
        super().__init__([child])
        self.node, self.ctx = node, ctx
        schema = node.input.schema
        self.barriers = _Barriers(node.window, schema)
        self.keys = [compile_expr(Column(k), schema) for k in node.keys]
        self.args = [(function(call.func), compile_expr(call.input, schema) if call.input is not None else None)
                     for _, call in node.aggs]
        self.groups: dict[tuple, list[Accumulator]] = {}  # insertion order: first arrival in the window
        self.names = [f.name for f in node.schema.fields]

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        out, out_marks = [], []
        for row, mark in zip(rows, marks):
            if self.barriers.is_barrier(row) is True:
                bounds = self.barriers.bounds(row, row[self.node.window.on] if self.node.window.on else None)
                for key, accs in self.groups.items():
                    keys = [float("nan") if k is _NAN else k for k in key]
                    out.append(dict(zip(self.names, [*bounds, *keys, *(a.result() for a in accs)])))
                    out_marks.append(mark)
                self.ctx.metrics.add("windows_fired", 1)
                self.groups = {}
                self.barriers.close(row)
                continue
            key = tuple(_group_key(f(row)) for f in self.keys)
            if key not in self.groups:
                self.groups[key] = [agg.accumulator() for agg, _ in self.args]
            accs = self.groups[key]
            for acc, (_, f) in zip(accs, self.args):
                v = f(row) if f is not None else 1
                if v is not None:
                    acc.add(v)
        self.emit(out, out_marks)


class _BarrierAssign(_Operator):
    """Every row with its barrier window (``pn.BarrierAssign``); a barrier row with the window it closes."""

    def __init__(self, node: pn.BarrierAssign, child: _Operator) -> None:
        super().__init__([child])
        self.node = node
        self.barriers = _Barriers(node.window, node.input.schema)
        self.names = [f.name for f in node.schema.fields[len(node.input.schema):]]

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        out = []
        on = self.node.window.on
        for row in rows:
            barrier = self.barriers.is_barrier(row) is True
            added = self.barriers.bounds(row, row[on] if barrier and on else None, self.node.carried)
            out.append({**row, **dict(zip(self.names, added))})
            if barrier:
                self.barriers.close(row)
        self.emit(out, marks)


class _Group:
    """One group of an updating aggregation: its rows (counting those taken back), accumulators,
    and the row last emitted for it."""

    __slots__ = ("rows", "accs", "emitted")

    def __init__(self, accs: list[Accumulator]) -> None:
        self.rows, self.accs = 0, accs
        self.emitted: Row | None = None


class _GroupAggregate(_Operator):
    """An aggregation without a window (``pn.GroupAggregate``). Each row of a pushed batch is added
    (+I, +U) or taken back (-U, -D); then every group the batch touched, in the order the batch
    first touched it, emits its change: +I for a new group, -U old +U new for a changed one, -D
    for one left without rows, nothing if its row is unchanged. Its rows are judged by its input's
    watermark, which it passes on."""

    def __init__(self, node: pn.GroupAggregate, child: _Operator) -> None:
        super().__init__([child])
        self.node = node
        schema = node.input.schema
        self.keys = [compile_expr(Column(k), schema) for k in node.keys]
        self.args = [(function(call.func), compile_expr(call.input, schema) if call.input is not None else None)
                     for _, call in node.aggs]
        self.retracting = pn.updating(node.input)
        self.groups: dict[tuple, _Group] = {}
        self.names = [f.name for f in node.schema.fields]
        self.stamps: dict[tuple, int] = {}  # with a state_ttl: the watermark at each group's last row

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        touched: dict[tuple, None] = {}  # an ordered set
        for row in rows:
            key = tuple(_group_key(f(row)) for f in self.keys)
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Group([agg.accumulator(self.retracting) for agg, _ in self.args])
            touched[key] = None
            kind = row.get(pn.CHANGE_KIND, INSERT)
            adds = kind in (INSERT, pn.ChangeKind.UPDATE_AFTER)
            group.rows += 1 if adds else -1
            for acc, (_, f) in zip(group.accs, self.args):
                v = f(row) if f is not None else 1
                if v is None:  # aggregates skip nulls
                    continue
                if adds:
                    acc.add(v)
                else:
                    acc.retract(v)
        out: Rows = []
        for key in touched:
            group = self.groups[key]
            old = group.emitted
            new = None if group.rows == 0 else dict(zip(self.names, [*(float("nan") if k is _NAN else k for k in key),
                                                                     *(a.result() for a in group.accs)]))
            if group.rows == 0:
                del self.groups[key]
                self.stamps.pop(key, None)
            elif self.node.state_ttl_ms is not None:
                self.stamps[key] = self.wm
            if _same_row(old, new):
                continue
            if old is not None:
                out.append({**old, pn.CHANGE_KIND: pn.ChangeKind.UPDATE_BEFORE if new else DELETE})
            if new is not None:
                out.append({**new, pn.CHANGE_KIND: pn.ChangeKind.UPDATE_AFTER if old else INSERT})
            group.emitted = new
        self.emit(out, [self.inputs[0].watermark()] * len(out))

    def advance(self) -> None:
        """With a state_ttl, forget (silently) the groups whose time ran out."""
        self.wm = self.inputs[0].watermark()
        for key in _expired(self.stamps, self.node.state_ttl_ms, self.wm):
            del self.groups[key]


class _Ranked:
    """A row in a top-N's partition: its sort key and arrival number."""

    __slots__ = ("key", "seq", "row")

    def __init__(self, key: tuple, seq: int, row: Row) -> None:
        self.key, self.seq, self.row = key, seq, row


class _Partitions:
    """Rows by partition, as a top-N and an OVER aggregation hold them: an added row (+I, +U)
    joins its partition with its sort key and the next arrival number; a retraction (-U, -D) takes
    the earliest equal row out."""

    def __init__(self, names: list[str], partition: tuple[str, ...], order: tuple[pn.SortKey, ...]) -> None:
        self.names, self.partition, self.order = names, partition, order
        self.rows: dict[tuple, list[_Ranked]] = {}
        self.seq = 0

    def take(self, row: Row) -> tuple:
        """Add or retract ``row``; its partition."""
        part = tuple(_group_key(row[c]) for c in self.partition)
        entries = self.rows.setdefault(part, [])
        values = {n: row[n] for n in self.names}
        if row.get(pn.CHANGE_KIND, INSERT) in (INSERT, pn.ChangeKind.UPDATE_AFTER):
            entries.append(_Ranked(_sort_key(values, self.order), self.seq, values))
            self.seq += 1
        else:
            entries.remove(min((e for e in entries if _same_row(e.row, values)), key=lambda e: e.seq))
        return part


class _Rank(_Operator):
    """A top-N or a deduplication (``darwin.plan.ranking`` says how rows rank and what is emitted).

    Without a window, after each pushed batch every partition the batch touched (in the order it
    first touched them) emits the changes of its kept rows. Over windows, rows of a window that
    closed by the operator's watermark before the batch are late, and over a source's rows also
    those of a window closed by the watermark just after the row (as a windowed aggregation judges
    them); a window's kept rows are emitted when it closes, ordered as fired windows are."""

    def __init__(self, node: pn.TopN | pn.Deduplicate, ctx: _Context, child: _Operator) -> None:
        super().__init__([child])
        self.r, self.ctx = ranking_of(node), ctx
        self.held = _Partitions(list(node.input.schema.names), self.r.partition, self.r.order)
        self.parts = self.held.rows
        self.shown: dict[tuple, list[_Ranked]] = {}  # the kept rows last emitted, per partition
        self.by_row = isinstance(node.input, pn.WindowAssign) and judged_by_source(node.input.input)
        self.ttl = node.state_ttl_ms
        self.stamps: dict[tuple, int] = {}  # with a state_ttl: the watermark at each partition's last change

    def watermark(self) -> int:
        return self.wm if self.r.windowed else self.inputs[0].watermark()

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        r = self.r
        touched: dict[tuple, None] = {}
        for row, mark in zip(rows, marks):
            if r.windowed and row[pn.WINDOW_END] <= (max(self.wm, mark) if self.by_row else self.wm):
                self.ctx.metrics.add("late_rows", 1)
                continue
            touched[self.held.take(row)] = None
        out: Rows = []
        for part in touched:
            entries = self.parts[part]
            entries.sort(key=lambda e: (e.key, -e.seq if r.latest_first else e.seq))
            if not r.retracting:
                del entries[r.n:]  # a row below the top never comes back
            if r.windowed:
                continue
            new = entries[:r.n]
            if self.ttl is not None and [e.seq for e in new] != [e.seq for e in self.shown.get(part, [])]:
                self.stamps[part] = self.wm
            out += _rank_changes(r, self.shown.get(part, []), new)
            self.shown[part] = new
            if not entries:
                del self.parts[part], self.shown[part]
        if r.retractions_first:  # every row that left before every row that entered
            out = [row for row in out if row[pn.CHANGE_KIND] in RETRACTIONS] + \
                  [row for row in out if row[pn.CHANGE_KIND] not in RETRACTIONS]
        self.emit(out, [self.inputs[0].watermark()] * len(out))

    def advance(self) -> None:
        if not self.r.windowed:  # with a state_ttl, forget (silently) the partitions whose time ran out
            self.wm = self.inputs[0].watermark()
            for part in _expired(self.stamps, self.ttl, self.wm):
                del self.parts[part], self.shown[part]
            return
        old, self.wm = self.wm, self.inputs[0].watermark()
        end = self.r.partition.index(pn.WINDOW_END)
        fired = sorted((p for p in self.parts if p[end] <= self.wm), key=lambda p: p[end])  # stable: first seen
        out = [_with_rank(self.r, e.row, i) for p in fired for i, e in enumerate(self.parts.pop(p))]
        self.emit(out, [old] * len(out))


def _expired(stamps: dict[tuple, int], ttl: int | None, wm: int) -> list[tuple]:
    """The keys of ``stamps`` (the watermark at each key's last write) whose ``ttl`` has run out by
    the watermark ``wm``, forgotten; a key stamped before any watermark starts at the first, as a
    join's rows do (``_Join._expire``)."""
    if ttl is None or wm == NO_WATERMARK:
        return []
    for key, stamp in stamps.items():
        if stamp == NO_WATERMARK:
            stamps[key] = wm
    gone = [key for key, stamp in stamps.items() if stamp + ttl < wm]
    for key in gone:
        del stamps[key]
    return gone


class _Over(_Operator):
    """Aggregates over windows of rows (``pn.Over``). Rows are added and retracted (the earliest
    equal one) as in a top-N; then every partition the batch touched, in the order it first touched
    them, emits -D for each row that left (in the old order), and after those of every partition,
    each partition in the new order +I for each new row and -U old, +U new for each row whose
    aggregates changed."""

    def __init__(self, node: pn.Over, child: _Operator) -> None:
        super().__init__([child])
        self.node = node
        schema = node.input.schema
        self.args = [(function(call.func), compile_expr(call.input, schema) if call.input is not None else None)
                     for _, call in node.aggs]
        self.held = _Partitions(list(schema.names), node.partition_by, node.order_by)
        self.parts = self.held.rows
        self.shown: dict[tuple, dict[int, Row]] = {}  # per partition: arrival number -> the row last emitted

    def push(self, rows: Rows, marks: Marks, port: int) -> None:
        touched = dict.fromkeys(self.held.take(row) for row in rows)  # in the order first touched
        gone: Rows = []  # the rows that left, of every partition, before the rest
        out: Rows = []
        for part in touched:
            entries = self.parts[part]
            entries.sort(key=lambda e: (e.key, e.seq))
            new = {e.seq: self._result(entries, i) for i, e in enumerate(entries)}
            old = self.shown.get(part, {})
            gone += [{**row, pn.CHANGE_KIND: DELETE} for seq, row in old.items() if seq not in new]
            for seq, row in new.items():
                if seq not in old:
                    out.append({**row, pn.CHANGE_KIND: INSERT})
                elif not _same_row(old[seq], row):
                    out += [{**old[seq], pn.CHANGE_KIND: pn.ChangeKind.UPDATE_BEFORE},
                            {**row, pn.CHANGE_KIND: pn.ChangeKind.UPDATE_AFTER}]
            self.shown[part] = new
            if not entries:
                del self.parts[part], self.shown[part]
        out = gone + out
        self.emit(out, [self.inputs[0].watermark()] * len(out))

    def _result(self, entries: list[_Ranked], i: int) -> Row:
        accs = [agg.accumulator() for agg, _ in self.args]
        for e in entries[max(0, i - self.node.preceding):i + 1]:  # oldest first
            for acc, (_, f) in zip(accs, self.args):
                v = f(e.row) if f is not None else 1
                if v is not None:
                    acc.add(v)
        return {**entries[i].row, **{name: a.result() for (name, _), a in zip(self.node.aggs, accs)}}


def _with_rank(r: Ranking, row: Row, position: int, kind: int | None = None) -> Row:
    out = dict(row)
    if r.rank is not None:
        out[r.rank] = position + 1
    if kind is not None:
        out[pn.CHANGE_KIND] = kind
    return out


def _rank_changes(r: Ranking, old: list[_Ranked], new: list[_Ranked]) -> Rows:
    """What a partition emits when its kept rows go from ``old`` to ``new``."""
    out: Rows = []
    if r.by_position:
        for i in range(max(len(old), len(new))):
            before, after = old[i] if i < len(old) else None, new[i] if i < len(new) else None
            if before is not None and after is not None and before.seq == after.seq:
                continue
            if before is not None:
                out.append(_with_rank(r, before.row, i, pn.ChangeKind.UPDATE_BEFORE if after else DELETE))
            if after is not None:
                out.append(_with_rank(r, after.row, i, pn.ChangeKind.UPDATE_AFTER if before else INSERT))
        return out
    old_seqs, new_seqs = {e.seq for e in old}, {e.seq for e in new}
    left = [e.row for e in old if e.seq not in new_seqs]
    came = [e.row for e in new if e.seq not in old_seqs]
    if not r.updates:
        return came
    for i in range(max(len(left), len(came))):
        if i < len(left):
            out.append({**left[i], pn.CHANGE_KIND: pn.ChangeKind.UPDATE_BEFORE if i < len(came) else DELETE})
        if i < len(came):
            out.append({**came[i], pn.CHANGE_KIND: pn.ChangeKind.UPDATE_AFTER if i < len(left) else INSERT})
    return out


class _Descending:
    """A value that sorts in reverse."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Descending) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.v == other.v


def _sort_key(row: Row, order: tuple[pn.SortKey, ...]) -> tuple:
    """Ascending NULLs first, descending NULLs last; NaN above every number (as Spark orders)."""
    key: list[Any] = []
    for k in order:
        v = row[k.column]
        if v is None:
            key += [1 if k.descending else 0, 0]
            continue
        value = (1, 0.0) if isinstance(v, float) and v != v else (0, v)
        key += [0 if k.descending else 1, _Descending(value) if k.descending else value]
    return tuple(key)


def _same_row(a: Row | None, b: Row | None) -> bool:
    """The same rows: NaN equal to NaN, NULL to NULL, -0.0 not to 0.0. A retraction takes back the
    row emitted, and an unchanged result is one its emitted row can still stand for, so both go by
    the values themselves, not by how they compare."""
    if a is None or b is None:
        return a is b
    return all(x is y if x is None or y is None else order_key(x) == order_key(y)
               for x, y in zip(a.values(), b.values()))
