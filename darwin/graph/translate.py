"""Logical plan -> operator graph: choose physical operators and cut pipelines at breakers."""

from __future__ import annotations

import dataclasses

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.graph import operators as op
from darwin.io.source import column_bounds
from darwin.plan import nodes as pn
from darwin.plan.aggregates import function
from darwin.plan.exprs import Column, ExprNode, Literal, StringCall, columns_of, type_of
from darwin.plan.inspected import inspected_columns
from darwin.plan.keys import unique_on
from darwin.plan.rules import map_children
from darwin.plan.strings import VECTORIZED
from darwin.plan.temporal import checks_window_times, join_timing, union_source
from darwin.plan.visitor import SharedNodeVisitor
from darwin.types import DType


def translate(plan: pn.PlanNode, config: Config) -> op.OperatorGraph:
    """The operator graph of an (optimized) plan: pipelines cut at aggregations, joins and unions."""
    t = _Translator(config)
    root = t.visit(plan)
    output = t.close(root, op.EmitRows(), root_output=True)
    inspected = inspected_columns(plan)
    payload = tuple(frozenset(f.name for f in scan.schema.fields
                              if f.dtype is DType.STRING and f.name not in inspected[id(scan)]) for scan in t.scans)
    return op.OperatorGraph(tuple(t.pipelines), tuple(t.joins), tuple(t.unions), tuple(t.scans), tuple(t.lookups),
                            tuple(t.order), output, payload, tuple(t.operators))


@dataclasses.dataclass(frozen=True)
class _Chain:
    """An open pipeline: a port and the stateless operators after it, not yet given a sink."""

    port: op.Port
    input_schema: pn.Schema
    ops: tuple[op.StatelessOp, ...]
    schema: pn.Schema  # of the rows after the operators
    updating: bool = False  # rows carry a change kind in column CHANGE_KIND

    def then(self, o: op.StatelessOp, schema: pn.Schema) -> _Chain:
        return dataclasses.replace(self, ops=self.ops + (o,), schema=schema)


KEY_PREFIX = "__darwin_key"
ARG_PREFIX = "__darwin_arg"
BARRIER_COLUMN = "__darwin_barrier"  # a barrier window's condition, computed by its input pipeline


class _Translator(SharedNodeVisitor[_Chain]):
    """Each node becomes operators of an open chain; a breaker closes its input's chain into a pipeline.

    Nodes are translated once (a scan several branches read has one reader; an aggregation several
    parents read is built once); pipelines and stateful operators are numbered in plan order, inputs
    first, which is the order the runtime advances watermarks in.
    """

    translation = "the compiled engine"

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.pipelines: list[op.Pipeline] = []
        self.joins: list[op.JoinOperator] = []
        self.unions: list[op.UnionOperator] = []
        self.operators: list[op.StreamOperator] = []
        self.scans: list[pn.Scan] = []
        self.lookups: list[op.LookupTableSpec] = []
        self.order: list[op.Stateful] = []

    # -- stateless nodes extend the chain ---------------------------------------------------------
    def visit_Scan(self, node: pn.Scan) -> _Chain:
        delay = node.max_delay_ms if node.max_delay_ms is not None else self.config.max_delay_ms
        self.scans.append(node)
        return _Chain(op.SourcePort(node, delay, len(self.scans) - 1), node.schema, (), node.schema)

    def visit_Filter(self, node: pn.Filter) -> _Chain:
        chain = self.visit(node.input)  # an updating input's change kind stays with the rows kept
        return chain.then(op.FilterOp(node.predicate), chain.schema)

    def visit_Project(self, node: pn.Project) -> _Chain:
        chain = self.visit(node.input)
        if isinstance(chain.port, op.JoinPort) and not chain.ops:  # the join assembles only what this reads
            reads = set().union(*(columns_of(e) for _, e in node.exprs)) | {pn.CHANGE_KIND}
            narrowed = pn.Schema(tuple(f for f in chain.input_schema.fields if f.name in reads))
            chain = dataclasses.replace(chain, input_schema=narrowed, schema=narrowed)
        exprs = node.exprs
        schema = node.schema
        if chain.updating:  # the change kind travels with every row
            exprs += ((pn.CHANGE_KIND, Column(pn.CHANGE_KIND)),)
            schema = pn.with_change_kind(schema)
        return chain.then(op.ProjectOp(exprs), schema)

    def visit_WindowAssign(self, node: pn.WindowAssign) -> _Chain:
        checks = checks_window_times(node.input, node.window.on)
        return self.visit(node.input).then(op.WindowAssignOp(node.window, checks_times=checks), node.schema)

    def visit_LookupJoin(self, node: pn.LookupJoin) -> _Chain:
        chain = self.visit(node.input)
        right_keys = node.as_join.plain_keys[1]
        keys = tuple(f"{KEY_PREFIX}{i}" for i in range(len(right_keys)))
        exprs = tuple((c, Column(c)) for c in node.table.schema.names) + tuple(zip(keys, right_keys))
        self.lookups.append(op.LookupTableSpec(pn.Project(node.table, exprs), keys, node.table.schema.names))
        return chain.then(op.LookupJoinOp(len(self.lookups) - 1, node), node.schema)

    # -- breakers close chains ------------------------------------------------------------------
    def visit_Aggregate(self, node: pn.Aggregate) -> _Chain:
        distinct = pn.distinct_calls(node.aggs)
        if distinct:  # the window kernels keep value slots, not sets
            name, call = distinct[0]
            raise UnsupportedError(f"agg {name}={call}: {self.translation} counts count_distinct in a window only "
                                   "in two steps, which the optimizer rule split_distinct makes; translate "
                                   "the optimized plan (darwin.plan.rules.optimize)")
        chain = self.visit(node.input.input)
        sink = op.WindowAggregateSink(node, op.StateSpec(undo_log=self.config.state_traits.undo_log))
        producer = self.close(chain, sink)
        self.order.append(op.Stateful("aggregate", producer))
        return _Chain(op.FiredWindowsPort(producer), node.schema, (), node.schema)

    def visit_Join(self, node: pn.Join) -> _Chain:
        left_keys, right_keys = node.plain_keys  # a null-safe pair as two pairs no NULL is in
        keys = tuple(f"{KEY_PREFIX}{i}" for i in range(len(left_keys)))
        left = self.close(_with_keys(self.visit(node.left), keys, left_keys), op.EmitRows())
        right = self.close(_with_keys(self.visit(node.right), keys, right_keys), op.EmitRows())
        j = op.JoinOperator(len(self.joins), node, left, right, keys, join_timing(node),
                            op.StateSpec(undo_log=self.config.state_traits.undo_log),
                            (unique_on(node.left, left_keys), unique_on(node.right, right_keys)))
        self.joins.append(j)
        self.order.append(op.Stateful("join", j.id))
        updating = pn.updating(node)
        schema = pn.with_change_kind(node.schema) if updating else node.schema
        return _Chain(op.JoinPort(j.id), schema, (), schema, updating)

    def visit_GroupAggregate(self, node: pn.GroupAggregate | pn.SessionAggregate) -> _Chain:
        chain = self.visit(node.input)
        args = tuple(None if call.input is None else f"{ARG_PREFIX}{i}" for i, (_, call) in enumerate(node.aggs))
        read = node.keys + ((node.window.on,) if isinstance(node, pn.SessionAggregate) else ())
        exprs = tuple((k, Column(k)) for k in dict.fromkeys(read)) + tuple(
            (f"{ARG_PREFIX}{i}", call.input) for i, (_, call) in enumerate(node.aggs) if call.input is not None)
        schema = pn.project_schema(exprs, chain.schema)
        if chain.updating:
            exprs += ((pn.CHANGE_KIND, Column(pn.CHANGE_KIND)),)
            schema = pn.with_change_kind(schema)
        return self._stream_operator(node, chain.then(op.ProjectOp(exprs), schema), args)

    visit_SessionAggregate = visit_GroupAggregate

    def visit_BarrierAggregate(self, node: pn.BarrierAggregate) -> _Chain:
        """Its keys, time column and arguments, and whether each row is a barrier."""
        chain = self.visit(node.input)
        args = tuple(None if call.input is None else f"{ARG_PREFIX}{i}" for i, (_, call) in enumerate(node.aggs))
        read = node.keys + ((node.window.on,) if node.window.on else ())
        exprs = tuple((k, Column(k)) for k in dict.fromkeys(read)) + tuple(
            (f"{ARG_PREFIX}{i}", call.input) for i, (_, call) in enumerate(node.aggs) if call.input is not None)
        exprs += ((BARRIER_COLUMN, node.window.when),)
        return self._stream_operator(node, chain.then(op.ProjectOp(exprs), pn.project_schema(exprs, chain.schema)),
                                     args)

    def visit_BarrierAssign(self, node: pn.BarrierAssign) -> _Chain:
        """Its rows, and whether each is a barrier."""
        chain = self.visit(node.input)
        exprs = tuple((c, Column(c)) for c in chain.schema.names) + ((BARRIER_COLUMN, node.window.when),)
        return self._stream_operator(node, chain.then(op.ProjectOp(exprs), pn.project_schema(exprs, chain.schema)))

    def visit_TopN(self, node: pn.TopN | pn.Deduplicate) -> _Chain:
        inp = node.input
        if isinstance(inp, pn.WindowAssign):  # a window top-N: late windows go where rows are judged one by one
            assign = op.WindowAssignOp(inp.window, drops_late=True,
                                       checks_times=checks_window_times(inp.input, inp.window.on))
            chain = self.visit(inp.input).then(assign, inp.schema)
            return self._stream_operator(node, chain)
        return self._stream_operator(node, self.visit(inp))

    visit_Deduplicate = visit_TopN

    def visit_Over(self, node: pn.Over) -> _Chain:
        """Its rows with each aggregate's argument as a column of its own."""
        chain = self.visit(node.input)
        args = tuple(None if call.input is None else f"{ARG_PREFIX}{i}" for i, (_, call) in enumerate(node.aggs))
        exprs = tuple((c, Column(c)) for c in chain.schema.names) + tuple(
            (name, call.input) for name, (_, call) in zip(args, node.aggs)
            if name is not None and call.input is not None)
        return self._stream_operator(node, chain.then(op.ProjectOp(exprs), pn.project_schema(exprs, chain.schema)),
                                     args)

    def _stream_operator(self, node: op.StreamNode, chain: _Chain, args: tuple[str | None, ...] = ()) -> _Chain:
        """A stream operator reading ``chain``'s rows, and the open chain of its output. A session
        window over a source's rows judges them one by one: they come with the source's progress."""
        pipeline = self.close(chain, op.EmitRows(), writes_progress=isinstance(node, pn.SessionAggregate))
        p = self.pipelines[pipeline]
        o = op.StreamOperator(len(self.operators), node, pipeline, args, p.timing if p.writes_progress else None)
        self.operators.append(o)
        self.order.append(op.Stateful("operator", o.id))
        updating = pn.updating(node)
        out = pn.with_change_kind(node.schema) if updating else node.schema
        return _Chain(op.OperatorPort(o.id), out, (), out, updating)

    def visit_Union(self, node: pn.Union) -> _Chain:
        updating = pn.updating(node)
        producers = tuple(self.close(self._union_part(p, updating), op.EmitRows()) for p in node.parts)
        u = op.UnionOperator(len(self.unions), producers)
        self.unions.append(u)
        self.order.append(op.Stateful("union", u.id))
        schema = pn.with_change_kind(node.schema) if updating else node.schema
        source = None
        if union_source(node) is not None:  # every producer reads that source: the first one's port
            first = self.pipelines[producers[0]].input
            assert isinstance(first, op.SourcePort)
            source = first
        return _Chain(op.UnionPort(producers, source), schema, (), schema, updating)

    def _union_part(self, part: pn.PlanNode, updating: bool) -> _Chain:
        """A part of a union; in an updating one every part's rows carry a change kind (an appending
        part's are inserts). Each part is closed before the next is visited: pipelines are numbered
        in plan order, which orders the pipelines reading one source."""
        chain = self.visit(part)
        return _inserting(chain) if updating and not chain.updating else chain

    def close(self, chain: _Chain, sink: op.Sink, root_output: bool = False, writes_progress: bool = False) -> int:
        """Make ``chain`` a pipeline ending in ``sink``; its id. ``writes_progress``: where it judges its rows
        by a source's event-time progress, they go on with it (``Pipeline.writes_progress``)."""
        ops, input_schema = list(chain.ops), chain.input_schema
        computed: tuple[tuple[str, str, tuple, str], ...] = ()
        port = chain.port
        if isinstance(port, op.SourcePort):
            ops, computed, input_schema = _vectorize_string_calls(ops, input_schema)
        reads_progress = isinstance(port, op.UnionPort) and port.source is not None and _judges_rows(ops, sink)
        if reads_progress:
            assert isinstance(port, op.UnionPort)
            self._write_progress(port.producers)
        parallel = _parallel(self.config.workers, port, ops, sink, self.config.pre_aggregate)
        # on several workers a ring needs every aggregate to merge exactly (pre_aggregate): each worker
        # keeps one over all keys and the rings' entries merge as windows fire
        if isinstance(sink, op.WindowAggregateSink) and isinstance(port, op.SourcePort) \
                and self.config.state_traits.in_memory and (parallel is None or parallel.pre_aggregate):
            ring = _ring(sink.aggregate, port, ops)
            if ring is not None:  # a ring keeps no undo log: it lives in DRAM
                sink = dataclasses.replace(sink, state=op.StateSpec(ring=ring))
                if parallel is not None:
                    parallel = dataclasses.replace(parallel, pre_aggregate=False, merged_rings=True)
        # panes fire windows within a batch, as the watermark moves; rows carrying their progress come
        # out of order (one producer's after another's), so a later one may belong to a window fired
        if isinstance(sink, op.WindowAggregateSink) and self.config.panes and self.config.state_traits.in_memory \
                and _in_panes(sink.aggregate) and not reads_progress:
            sink = dataclasses.replace(sink, state=dataclasses.replace(sink.state, panes=True))
            if parallel is not None and not parallel.merged_rings:  # a slice's partial panes cannot fire mid-batch
                parallel = dataclasses.replace(parallel, pre_aggregate=False)
        output_schema = chain.schema if isinstance(sink, op.EmitRows) else sink.aggregate.input.input.schema
        moved = _moved_strings(input_schema, ops, output_schema) \
            if root_output and isinstance(port, op.SourcePort) else ()
        pipeline = op.Pipeline(len(self.pipelines), port, input_schema, tuple(ops), sink, output_schema, moved,
                               computed, parallel, reads_progress)
        self.pipelines.append(_writing_progress(pipeline) if writes_progress and pipeline.timing else pipeline)
        return len(self.pipelines) - 1

    def _write_progress(self, producers: tuple[int, ...]) -> None:
        """A union's producers pass each row on with their source's event-time progress at it."""
        for i in producers:
            if not self.pipelines[i].writes_progress:
                self.pipelines[i] = _writing_progress(self.pipelines[i])


def _writing_progress(p: op.Pipeline) -> op.Pipeline:
    """``p`` passing each row on with its source's event-time progress at it, on one thread (a slice
    would need the progress of the slices before it)."""
    out = pn.Schema(p.output_schema.fields + (pn.Field(op.PROGRESS_COLUMN, DType.INT64, False),))
    return dataclasses.replace(p, output_schema=out, writes_progress=True, parallel=None)


def _judges_rows(ops: list[op.StatelessOp], sink: op.Sink) -> bool:
    """Whether a pipeline judges its rows late one by one: a windowed aggregation, or a window top-N's
    window-assign dropping late windows."""
    return isinstance(sink, op.WindowAggregateSink) or any(
        isinstance(o, op.WindowAssignOp) and o.drops_late for o in ops)


def _inserting(chain: _Chain) -> _Chain:
    """An appending chain's rows as inserts of an updating stream (a change kind of +I each)."""
    exprs: tuple[tuple[str, ExprNode], ...] = tuple((n, Column(n)) for n in chain.schema.names)
    exprs += ((pn.CHANGE_KIND, Literal(pn.ChangeKind.INSERT, DType.INT64)),)
    return dataclasses.replace(chain.then(op.ProjectOp(exprs), pn.with_change_kind(chain.schema)), updating=True)


def _with_keys(chain: _Chain, names: tuple[str, ...], keys: tuple[ExprNode, ...]) -> _Chain:
    """The chain's rows with the join keys appended as columns ``names``."""
    exprs = tuple((n, Column(n)) for n in chain.schema.names) + tuple(zip(names, keys))
    return chain.then(op.ProjectOp(exprs), pn.project_schema(exprs, chain.schema))


def _vectorize_string_calls(chain: list[op.StatelessOp], schema: pn.Schema) \
        -> tuple[list[op.StatelessOp], tuple[tuple[str, str, tuple, str], ...], pn.Schema]:
    """Replace string functions of source columns that Arrow computes exactly by new input columns.

    Only calls before any projection qualify, where a column name still means the source column.
    """
    computed: dict[tuple[str, tuple, str], str] = {}
    fields = list(schema.fields)

    def rewrite(e: ExprNode) -> ExprNode:
        if isinstance(e, StringCall) and e.func in VECTORIZED and isinstance(e.operand, Column):
            key = (e.func, e.args, e.operand.name)
            if key not in computed:
                name = _fresh_name(f"{e.func}#{len(computed)}", {f.name for f in fields})
                computed[key] = name
                t = type_of(e, schema)
                assert t.dtype is not None  # a string function's result type is known
                fields.append(pn.Field(name, t.dtype, t.nullable))
            return Column(computed[key])
        return map_children(e, rewrite)

    out: list[op.StatelessOp] = []
    for i, o in enumerate(chain):
        if isinstance(o, op.ProjectOp):
            out.append(op.ProjectOp(tuple((n, rewrite(e)) for n, e in o.exprs)))
            out.extend(chain[i + 1:])
            break
        out.append(op.FilterOp(rewrite(o.predicate)) if isinstance(o, op.FilterOp) else o)
    specs = tuple((name, func, args, column) for (func, args, column), name in computed.items())
    return out, specs, pn.Schema(tuple(fields))


def _fresh_name(base: str, taken: set[str]) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def _moved_strings(schema: pn.Schema, chain: list[op.StatelessOp], output: pn.Schema) \
        -> tuple[tuple[str, str], ...]:
    """Output string columns that are input string columns no operator looks into."""
    origin = {f.name: f.name for f in schema.fields if f.dtype is DType.STRING}
    inspected: set[str] = set()
    for o in chain:
        if isinstance(o, op.FilterOp):
            inspected |= {origin[c] for c in columns_of(o.predicate) if c in origin}
        elif isinstance(o, op.ProjectOp):
            renamed = {}
            for name, e in o.exprs:
                if isinstance(e, Column) and e.name in origin:
                    renamed[name] = origin[e.name]
                else:
                    inspected |= {origin[c] for c in columns_of(e) if c in origin}
            origin = renamed
    return tuple((name, src) for name, src in origin.items() if src not in inspected and name in output)


def _parallel(workers: int, port: op.Port, chain: list[op.StatelessOp], sink: op.Sink,
              pre_aggregate: bool = True) -> op.Parallel | None:
    """How ``workers`` threads share a pipeline, or None for one thread.

    A windowed aggregation is split by key group when each of its keys is an input column carried
    unchanged to the sink, so a row's owner is known before its kernel runs. A pipeline only
    emitting rows of a source is cut into slices. Not (yet) split: a source with ``max_future``
    (its clock is sequential by definition), aggregations keeping late rows, global aggregations,
    keys a lookup join or an expression makes, stateless pipelines behind a breaker, and pipelines
    dropping a window top-N's late windows (each slice would need the progress of the ones before).

    A keyed aggregation pre-aggregates (local/global) when every aggregate merges exactly, so the
    result cannot depend on how the rows were grouped into partials.
    """
    if workers == 1 or (isinstance(port, op.SourcePort) and port.scan.max_future_ms is not None):
        return None
    if isinstance(sink, op.EmitRows):
        return op.Parallel(workers) if isinstance(port, op.SourcePort) and chain and not _judges_rows(chain, sink) \
            else None
    if sink.late_output or not sink.aggregate.keys or any(isinstance(o, op.LookupJoinOp) for o in chain):
        return None
    keys = tuple(_source_column(k, chain) for k in sink.aggregate.keys)
    if any(k is None for k in keys):
        return None
    return op.Parallel(workers, tuple(k for k in keys if k is not None),
                       pre_aggregate and _merges_exactly(sink.aggregate))


def _merges_exactly(agg: pn.Aggregate) -> bool:
    """Whether every aggregate's partial states merge into what one fold over the rows gives."""
    schema = agg.input.input.schema
    return all(function(call.func).merges_exactly(None if call.input is None else type_of(call.input, schema).dtype)
               for _, call in agg.aggs)


def _in_panes(agg: pn.Aggregate) -> bool:
    """Whether a windowed aggregation folds each row once, into its pane, instead of once per window:
    a sliding window whose aggregates all merge exactly (a float sum would round by how rows were
    grouped into panes). Only on a backend whose tables live in DRAM: a window that fires combines
    its panes' entries, all of them at once."""
    return not agg.input.window.is_tumbling and _merges_exactly(agg)


# slots x domain: beyond this a ring leaves the caches (a cell is at least 17 bytes: value, order,
# seen), and a row's accesses to a sparse domain miss where a hash table of the live keys would not:
# Nexmark q5 at 10M events (4.9M cells) ran 1.4x slower on a ring than on the hash table
RING_CELLS = 1 << 20


def _ring(agg: pn.Aggregate, source: op.SourcePort, chain: list[op.StatelessOp]) -> op.Ring | None:
    """A window ring when the watermark bounds the open windows and the key is a small dense domain.

    Only on a backend whose tables live in DRAM (``StateTraits.in_memory``): a ring is DRAM by design.

    Open windows of the source's event time have starts in (max time - delay - size, max time], so
    (delay + size) / slide + 2 slots always suffice (not with ``max_future``: its rows open windows
    beyond max time, nor for a window on another column: its rows open them anywhere); rounded up
    to a power of two, a window's slot is its index masked. The key
    must be one NOT NULL integer column read unchanged from the source, whose statistics give its
    exact range; no key at all is a domain of one. Slots x domain stays within ``RING_CELLS``, with
    or without a key; beyond it the hash table is used.
    """
    if (source.scan.time_column is None or source.scan.max_future_ms is not None
            or any(isinstance(o, (op.WindowAssignOp, op.LookupJoinOp)) for o in chain)):
        return None  # rows beyond max_future open windows arbitrarily far ahead of max time: no bound
    w = agg.input.window
    if _source_column(w.on, chain) != source.scan.time_column:
        return None  # another time (a second timestamp, one computed) opens windows anywhere ahead of max time
    # a power of two, so a window's slot is a mask of its index, not a division
    slots = 1 << ((source.delay_ms + w.size_ms) // w.slide_ms + 1).bit_length()
    if slots > RING_CELLS:  # a long delay or window over a short slide: the hash table holds only live windows
        return None
    if not agg.keys:
        return op.Ring(slots, 0, 1, keyed=False)
    if len(agg.keys) != 1:
        return None
    f = agg.input.input.schema.field(agg.keys[0])
    origin = _source_column(agg.keys[0], chain)
    if f.dtype is not DType.INT64 or f.nullable or origin is None:
        return None
    bounds = column_bounds(source.scan.source, origin)
    if bounds is None:
        return None
    low, size = bounds[0], bounds[1] - bounds[0] + 1
    return op.Ring(slots, low, size) if slots * size <= RING_CELLS else None


def _source_column(name: str, chain: list[op.StatelessOp]) -> str | None:
    """The source column ``name`` carries unchanged through the chain, if any."""
    for o in reversed(chain):
        if isinstance(o, op.ProjectOp):
            e = dict(o.exprs)[name]
            if not isinstance(e, Column):
                return None
            name = e.name
    return name
