"""Text rendering of logical plans: one line per node, inputs indented below it."""

from __future__ import annotations

from darwin.plan import nodes as pn
from darwin.plan.visitor import PlanVisitor


class _Describe(PlanVisitor[str]):
    """One line for a node, without its inputs."""

    translation = "explain"

    def visit_Scan(self, node: pn.Scan) -> str:
        delay = "" if node.max_delay_ms is None else f" max_delay={node.max_delay_ms}ms"
        if node.max_future_ms is not None:
            delay += f" max_future={node.max_future_ms}ms"
        time = f" time={node.time_column}" if node.time_column else ""
        return f"Scan {node.source.name} [{', '.join(node.columns)}]{time}{delay}"

    def visit_Filter(self, node: pn.Filter) -> str:
        return f"Filter {node.predicate}"

    def visit_Project(self, node: pn.Project) -> str:
        return "Project " + ", ".join(n if getattr(e, "name", None) == n else f"{n}={e}" for n, e in node.exprs)

    def visit_WindowAssign(self, node: pn.WindowAssign) -> str:
        return f"WindowAssign {node.window}" + (" late_output" if node.late_output else "")

    def visit_Aggregate(self, node: pn.Aggregate) -> str:
        aggs = ", ".join(f"{n}={c}" for n, c in node.aggs)
        return f"Aggregate keys=[{', '.join(node.keys)}] aggs=[{aggs}]"


_DESCRIBE = _Describe()


def describe(node: pn.PlanNode) -> str:
    """One line for a node, without its inputs."""
    return _DESCRIBE.visit(node)


def render(node: pn.PlanNode, indent: int = 0) -> str:
    lines = ["  " * indent + describe(node)]
    for child in node.inputs:
        lines.append(render(child, indent + 1))
    return "\n".join(lines)
