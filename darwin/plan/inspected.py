"""Which columns an operator looks into, as opposed to only moving them to the output.

A string column that nothing compares, hashes, groups, orders or passes to a function need not
be interned: the compiled engine appends its values to the string pool without looking them up
(``StringPool.append``), which is what makes wide text payloads (Nexmark's ``extra``) cheap to
carry through a join. Codes of such a column are only ever decoded, never compared.
"""

from __future__ import annotations

from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.rules import columns_from_parents
from darwin.plan.visitor import PlanVisitor


def inspected_columns(plan: pn.PlanNode) -> dict[int, set[str]]:
    """For every node (by id) the columns of its output that some operator above looks into.

    The plan's output is only decoded, so nothing of it is inspected at the root; a node read by
    several parents is inspected in the union of what they inspect.
    """
    return columns_from_parents(plan, _INSPECTS, set())


class _Inspects(PlanVisitor[list[set[str]]]):
    """The columns of each input a node looks into, given the ``inspected`` columns of its output."""

    translation = "the analysis of inspected columns"

    def visit_Scan(self, n: pn.Scan, inspected: set[str]) -> list[set[str]]:
        return []

    def visit_Filter(self, n: pn.Filter, inspected: set[str]) -> list[set[str]]:
        return [inspected | ex.columns_of(n.predicate)]

    def visit_Project(self, n: pn.Project, inspected: set[str]) -> list[set[str]]:
        uses: set[str] = set()
        for name, e in n.exprs:
            if not isinstance(e, ex.Column) or name in inspected:  # a bare column is moved, or renamed
                uses |= ex.columns_of(e)
        return [uses]

    def visit_WindowAssign(self, n: pn.WindowAssign, inspected: set[str]) -> list[set[str]]:
        return [(inspected - {pn.WINDOW_START, pn.WINDOW_END}) | {n.window.on}]

    def visit_Aggregate(self, n: pn.AnyAggregate, inspected: set[str]) -> list[set[str]]:
        return [pn.aggregate_reads(n)]

    visit_GroupAggregate = visit_SessionAggregate = visit_BarrierAggregate = visit_Aggregate

    def visit_BarrierAssign(self, n: pn.BarrierAssign, inspected: set[str]) -> list[set[str]]:
        return [(inspected & set(n.input.schema.names)) | pn.barrier_reads(n.window)]  # a carried value is moved

    def visit_TopN(self, n: pn.TopN | pn.Deduplicate | pn.Over, inspected: set[str]) -> list[set[str]]:
        if pn.updating(n.input):  # a retraction compares whole rows
            return [set(n.input.schema.names)]
        return [(inspected & set(n.input.schema.names)) | pn.ranking_reads(n)]

    visit_Deduplicate = visit_Over = visit_TopN

    def visit_Join(self, n: pn.Join | pn.LookupJoin, inspected: set[str]) -> list[set[str]]:
        return list(pn.join_reads(n, inspected))  # its keys and condition, and what is inspected above

    visit_LookupJoin = visit_Join

    def visit_Union(self, n: pn.Union, inspected: set[str]) -> list[set[str]]:
        return [set(inspected) for _ in n.parts]


_INSPECTS = _Inspects()
