"""Logical plan -> operator graph: choose physical operators and cut pipelines at breakers."""

from __future__ import annotations

import dataclasses

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.graph import operators as op
from darwin.io.source import column_bounds
from darwin.plan import nodes as pn
from darwin.plan.exprs import Column, columns_of
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
    if isinstance(node, pn.Scan):
        delay = node.max_delay_ms if node.max_delay_ms is not None else config.max_delay_ms
        source: op.ScanInput | op.FiredWindowsInput = op.ScanInput(node, delay)
    elif isinstance(node, pn.Aggregate):
        if pn.scans(node) and _has_aggregate(node.input):
            raise UnsupportedError("a windowed aggregation over the result of another windowed aggregation "
                                   "is not supported yet")
        _build(node.input.input, op.WindowAggregateSink(node, config.state), node.input.input.schema,
               pipelines, config)
        source = op.FiredWindowsInput(len(pipelines) - 1)
    else:
        raise UnsupportedError(f"the compiled engine has no operator for {type(node).__name__}")
    if isinstance(sink, op.WindowAggregateSink) and isinstance(source, op.ScanInput):
        sink = dataclasses.replace(sink, ring=_ring(sink.aggregate, source, chain))
    moved = _moved_strings(node.schema, chain, output_schema) if isinstance(sink, op.CollectSink) \
        and isinstance(source, op.ScanInput) else ()
    pipelines.append(op.Pipeline(len(pipelines), source, node.schema, tuple(chain), sink, output_schema, moved))


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

    Open windows have starts in (max time - delay - size, max time], so (delay + size) / slide + 2
    slots always suffice. The key must be one NOT NULL integer column read unchanged from the
    source, whose statistics give its exact range; no key at all is a domain of one.
    """
    if source.scan.time_column is None or any(isinstance(o, op.WindowAssignOp) for o in chain):
        return None
    w = agg.input.window
    slots = (source.delay_ms + w.size_ms) // w.slide_ms + 2
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


def _has_aggregate(node: pn.PlanNode) -> bool:
    return isinstance(node, pn.Aggregate) or any(_has_aggregate(c) for c in pn.inputs(node))
