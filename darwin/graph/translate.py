"""Logical plan -> operator graph: choose physical operators and cut pipelines at breakers."""

from __future__ import annotations

import dataclasses

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.graph import operators as op
from darwin.io.source import column_bounds
from darwin.plan import nodes as pn
from darwin.plan.exprs import Column, ExprNode, StringCall, columns_of, type_of
from darwin.plan.rules import map_children
from darwin.plan.strings import VECTORIZED
from darwin.types import DType


def translate(plan: pn.PlanNode, config: Config) -> op.OperatorGraph:
    pipelines: list[op.Pipeline] = []
    _build(plan, op.CollectSink(), plan.schema, pipelines, config)
    return op.OperatorGraph(tuple(pipelines))


def _build(node: pn.PlanNode, sink: op.Sink, output_schema: pn.Schema, pipelines: list[op.Pipeline],
           config: Config) -> None:
    chain: list[op.StatelessOp] = []
    while isinstance(node, (pn.Filter, pn.Project, pn.WindowAssign)):
        if isinstance(node, pn.Filter):
            chain.append(op.FilterOp(node.predicate))
        elif isinstance(node, pn.Project):
            chain.append(op.ProjectOp(node.exprs))
        else:
            chain.append(op.WindowAssignOp(node.window))
        node = node.input
    chain.reverse()
    computed: tuple[tuple[str, str, tuple, str], ...] = ()
    input_schema = node.schema
    if isinstance(node, pn.Scan):
        delay = node.max_delay_ms if node.max_delay_ms is not None else config.max_delay_ms
        source: op.ScanInput | op.FiredWindowsInput = op.ScanInput(node, delay)
        chain, computed, input_schema = _vectorize_string_calls(chain, node.schema)
    elif isinstance(node, pn.Aggregate):
        if any(isinstance(n, pn.Aggregate) for n in pn.walk(node.input)):
            raise UnsupportedError("a windowed aggregation over the result of another windowed aggregation "
                                   "is not supported yet")
        _build(node.input.input, op.WindowAggregateSink(node, op.StateSpec(undo_log=config.state_traits.undo_log)),
               node.input.input.schema,
               pipelines, config)
        source = op.FiredWindowsInput(len(pipelines) - 1)
    else:
        raise UnsupportedError(f"the compiled engine has no operator for {type(node).__name__}")
    if isinstance(sink, op.WindowAggregateSink) and isinstance(source, op.ScanInput) \
            and config.state_traits.in_memory:
        ring = _ring(sink.aggregate, source, chain)
        if ring is not None:  # a ring keeps no undo log: it lives in DRAM
            sink = dataclasses.replace(sink, state=op.StateSpec(ring=ring))
    moved = _moved_strings(input_schema, chain, output_schema) if isinstance(sink, op.CollectSink) \
        and isinstance(source, op.ScanInput) else ()
    pipelines.append(op.Pipeline(len(pipelines), source, input_schema, tuple(chain), sink, output_schema, moved,
                                 computed))


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


RING_CELLS = 1 << 24  # slots x domain: beyond this a ring costs more memory than a hash table saves


def _ring(agg: pn.Aggregate, source: op.ScanInput, chain: list[op.StatelessOp]) -> op.Ring | None:
    """A window ring when the watermark bounds the open windows and the key is a small dense domain.

    Only on a backend whose tables live in DRAM (``StateTraits.in_memory``): a ring is DRAM by design.

    Open windows have starts in (max time - delay - size, max time], so (delay + size) / slide + 2
    slots always suffice (not with ``max_future``: its rows open windows beyond max time). The key
    must be one NOT NULL integer column read unchanged from the source, whose statistics give its
    exact range; no key at all is a domain of one. Slots x domain stays within ``RING_CELLS``, with
    or without a key; beyond it the hash table is used.
    """
    if (source.scan.time_column is None or source.scan.max_future_ms is not None
            or any(isinstance(o, op.WindowAssignOp) for o in chain)):
        return None  # rows beyond max_future open windows arbitrarily far ahead of max time: no bound
    w = agg.input.window
    slots = (source.delay_ms + w.size_ms) // w.slide_ms + 2
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
