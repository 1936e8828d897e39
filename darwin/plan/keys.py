"""The unique key of a result: columns whose values identify one of its rows at any time.

An upsert sink writes the latest row per key, so it needs one (Flink derives a sink's upsert
key from the plan the same way). An updating aggregation is keyed by its group keys, a windowed
or session one by its window and group keys, a deduplication by its columns, a top-N with a rank
column by its partition and rank (a top-1 by its partition alone); filters keep the key,
projections keep it while they pass its columns through (renamed or not), and so do top-N without
a rank and OVER windows (rows of their input). A source has the key the user declares (``primary_key=``,
trusted as Flink's ``PRIMARY KEY ... NOT ENFORCED``). Joins and unions have no key Darwin can derive: a
row of an outer join is identified by what the user knows of the data, so they name it (``key=``).

Examples
--------
>>> import pyarrow as pa, darwin as dw
>>> t = dw.from_arrow(pa.table({"k": [1, 1, 2], "v": [1.0, 2.0, 3.0]}))
>>> unique_key(t.group_by("k").agg(n=dw.count()).plan)
('k',)
"""

from __future__ import annotations

from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.visitor import PlanVisitor

Key = tuple[str, ...] | None  # None: no key is known; (): the result has at most one row


def unique_key(plan: pn.PlanNode) -> Key:
    """The columns identifying a row of ``plan``'s result, or None if the plan does not say."""
    return _UniqueKey().visit(plan)


def unique_on(plan: pn.PlanNode, keys: tuple[ex.ExprNode, ...]) -> bool:
    """Whether no two rows of ``plan``'s result (an append-only one) ever have equal ``keys``: its
    unique key is among them as plain columns. A join with such a side keeps no row of the other
    side that has found its match there: no second one can come."""
    key = unique_key(plan)
    named = {k.name for k in keys if isinstance(k, ex.Column)}
    return key is not None and not pn.updating(plan) and set(key) <= named


class _UniqueKey(PlanVisitor[Key]):
    translation = "the unique-key analysis (an upsert sink's key; name it with key=[...])"

    def visit_Scan(self, n: pn.Scan) -> Key:
        key = n.primary_key  # declared by the user (trusted, as Flink's NOT ENFORCED); else rows may repeat
        return key if key is not None and all(c in n.columns for c in key) else None

    def visit_Filter(self, n: pn.Filter) -> Key:
        return self.visit(n.input)

    def visit_Project(self, n: pn.Project) -> Key:
        key = self.visit(n.input)
        if key is None:
            return None
        passed = {e.name: name for name, e in reversed(n.exprs) if isinstance(e, ex.Column)}  # first name wins
        return tuple(passed[k] for k in key) if all(k in passed for k in key) else None

    def visit_WindowAssign(self, n: pn.WindowAssign) -> Key:
        key = self.visit(n.input)  # a sliding window repeats a row once per window it is in
        return None if key is None else (*key, pn.WINDOW_START)

    def visit_Aggregate(self, n: pn.Aggregate) -> Key:
        return (pn.WINDOW_START, pn.WINDOW_END, *n.keys)  # each window fires once per group

    def visit_SessionAggregate(self, n: pn.SessionAggregate) -> Key:
        return (pn.WINDOW_START, pn.WINDOW_END, *n.keys)  # a key's sessions never overlap

    def visit_BarrierAggregate(self, n: pn.BarrierAggregate) -> Key:
        return (pn.WINDOW_ID, *n.keys)  # a barrier fires each group once

    def visit_BarrierAssign(self, n: pn.BarrierAssign) -> Key:
        return self.visit(n.input)  # a row of its input, with its window added

    def visit_GroupAggregate(self, n: pn.GroupAggregate) -> Key:
        return n.keys

    def visit_TopN(self, n: pn.TopN) -> Key:
        if n.rank is not None:  # one row per rank of each partition, as Flink keys a top-N with its rank
            return (*n.partition, n.rank)
        key = self.visit(n.input)  # a top-N keeps rows of its input
        if key is None and n.n == 1:  # and a top-1 holds one of them per partition
            return n.partition
        return key

    def visit_Deduplicate(self, n: pn.Deduplicate) -> Key:
        return n.on

    def visit_Over(self, n: pn.Over) -> Key:
        return self.visit(n.input)  # a row of its input, with aggregates added

    def visit_Join(self, n: pn.Join | pn.LookupJoin) -> Key:
        return None  # a row may match several rows of the other side

    visit_LookupJoin = visit_Join

    def visit_Union(self, n: pn.Union) -> Key:
        return None  # the parts may hold the same row
