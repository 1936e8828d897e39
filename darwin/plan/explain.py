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
        key = f" primary_key=[{', '.join(node.primary_key)}]" if node.primary_key else ""
        return f"Scan {node.source.name} [{', '.join(node.columns)}]{time}{delay}{key}"

    def visit_Filter(self, node: pn.Filter) -> str:
        return f"Filter {node.predicate}"

    def visit_Project(self, node: pn.Project) -> str:
        return "Project " + ", ".join(n if getattr(e, "name", None) == n else f"{n}={e}" for n, e in node.exprs)

    def visit_WindowAssign(self, node: pn.WindowAssign) -> str:
        return f"WindowAssign {node.window}" + (" late_output" if node.late_output else "")

    def visit_Aggregate(self, node: pn.AnyAggregate) -> str:
        aggs = ", ".join(f"{n}={c}" for n, c in node.aggs)
        step = " (count_distinct's second step)" if isinstance(node, pn.Aggregate) and node.second_step else ""
        return f"{type(node).__name__} keys=[{', '.join(node.keys)}] aggs=[{aggs}]{step}"

    def visit_GroupAggregate(self, node: pn.GroupAggregate) -> str:
        return self.visit_Aggregate(node) + _ttl(node.state_ttl_ms)

    def visit_SessionAggregate(self, node: pn.SessionAggregate | pn.BarrierAggregate) -> str:
        return f"{self.visit_Aggregate(node)} {node.window}"

    visit_BarrierAggregate = visit_SessionAggregate

    def visit_BarrierAssign(self, node: pn.BarrierAssign) -> str:
        carried = ", ".join(f"{name}={source}" for name, source in node.carried)
        return f"BarrierAssign {node.window}" + (f" carrying [{carried}]" if carried else "")

    def visit_TopN(self, node: pn.TopN) -> str:
        rank = f" rank={node.rank}" if node.rank else ""
        return (f"TopN {node.n} by=[{', '.join(node.partition)}] order=[{', '.join(map(str, node.order))}]{rank}"
                + (" (per window)" if node.windowed else "") + _ttl(node.state_ttl_ms))

    def visit_Over(self, node: pn.Over) -> str:
        aggs = ", ".join(f"{n}={c}" for n, c in node.aggs)
        return (f"Over partition_by=[{', '.join(node.partition_by)}] order_by=[{', '.join(map(str, node.order_by))}] "
                f"rows {node.preceding} preceding aggs=[{aggs}]")

    def visit_Deduplicate(self, node: pn.Deduplicate) -> str:
        order = "arrival" if node.order is None else node.order
        return f"Deduplicate on=[{', '.join(node.on)}] keep={node.keep} by {order}" + _ttl(node.state_ttl_ms)

    def visit_Join(self, node: pn.Join) -> str:
        from darwin.plan.temporal import join_timing

        timing = join_timing(node)
        kind = "regular" if timing is None else timing.kind
        return f"Join {node.how} {kind} on [{_pairs(node)}]" + _where(node) + _ttl(node.state_ttl_ms) + _sides(node)

    def visit_LookupJoin(self, node: pn.LookupJoin) -> str:
        return f"LookupJoin {node.how} on [{_pairs(node)}]" + _where(node)

    def visit_Union(self, node: pn.Union) -> str:
        return f"Union of {len(node.parts)}"


def _ttl(ms: int | None) -> str:
    return "" if ms is None else f" state_ttl={ms}ms"


def _sides(node: pn.Join) -> str:
    """The TTLs given per side, where any was (a plan with none reads as before them)."""
    if node.side_ttl_ms == (None, None):
        return ""
    own = [("" if ms is None else f" {name}={ms}ms" if ms else f" {name}=never")
           for name, ms in zip(("left", "right"), node.side_ttl_ms)]
    return " state_ttl of" + "".join(own)


def _pairs(node: pn.Join | pn.LookupJoin) -> str:
    return ", ".join(pn.key_pairs(node, " = "))


def _where(node: pn.Join | pn.LookupJoin) -> str:
    return "" if node.where is None else f" where {node.where}"


_DESCRIBE = _Describe()


def describe(node: pn.PlanNode) -> str:
    """One line for a node, without its inputs."""
    return _DESCRIBE.visit(node)


def render(node: pn.PlanNode, indent: int = 0) -> str:
    lines = ["  " * indent + describe(node)]
    for child in node.inputs:
        lines.append(render(child, indent + 1))
    return "\n".join(lines)
