"""Text rendering of logical plans."""

from __future__ import annotations

from darwin.plan import nodes as pn


def describe(node: pn.PlanNode) -> str:
    """One line for a node, without its inputs."""
    if isinstance(node, pn.Scan):
        delay = "" if node.max_delay_ms is None else f" max_delay={node.max_delay_ms}ms"
        if node.max_future_ms is not None:
            delay += f" max_future={node.max_future_ms}ms"
        time = f" time={node.time_column}" if node.time_column else ""
        return f"Scan {node.source.name} [{', '.join(node.columns)}]{time}{delay}"
    if isinstance(node, pn.Filter):
        return f"Filter {node.predicate}"
    if isinstance(node, pn.Project):
        return "Project " + ", ".join(
            n if getattr(e, "name", None) == n else f"{n}={e}" for n, e in node.exprs)
    if isinstance(node, pn.WindowAssign):
        return f"WindowAssign {node.window}" + (" late_output" if node.late_output else "")
    if isinstance(node, pn.Aggregate):
        aggs = ", ".join(f"{n}={c}" for n, c in node.aggs)
        return f"Aggregate keys=[{', '.join(node.keys)}] aggs=[{aggs}]"
    return type(node).__name__


def render(node: pn.PlanNode, indent: int = 0) -> str:
    lines = ["  " * indent + describe(node)]
    for child in pn.inputs(node):
        lines.append(render(child, indent + 1))
    return "\n".join(lines)
