"""Logical plan -> operator graph: choose physical operators and cut pipelines at breakers."""

from __future__ import annotations

from darwin.config import Config
from darwin.errors import UnsupportedError
from darwin.graph import operators as op
from darwin.plan import nodes as pn


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
    pipelines.append(op.Pipeline(len(pipelines), source, node.schema, tuple(chain), sink, output_schema))


def _has_aggregate(node: pn.PlanNode) -> bool:
    return isinstance(node, pn.Aggregate) or any(_has_aggregate(c) for c in pn.inputs(node))
