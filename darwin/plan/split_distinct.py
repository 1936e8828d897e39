"""count_distinct in tumbling and sliding windows, for the compiled engine: two windowed steps.

The window kernels keep typed value slots per (window, keys) on three backends, not sets of values.
As Flink's split-distinct aggregation does, the rule rewrites

    Aggregate(WindowAssign(rows, w), keys, [d=count_distinct(v, filter=p), n=count(), hi=max(x)])

into two aggregations that only need slots:

1. the same window grouped by ``keys + (v,)``: one row per (window, keys, value), with each other
   aggregate as a partial (``n1=count()``, ``hi1=max(x)``) and, for a filtered distinct count, the
   count of the value's rows where its filter holds (``p1=count(v, filter=p)``);
2. those rows re-grouped per window and keys: a tumbling window of the slide over
   ``window_end - 1`` (each window of step 1 is one window of step 2, ``[end - slide, end)``), with
   ``d=count(v, filter=p1 > 0)`` (``count(v)`` without a filter: a NULL value is its own group of
   step 1 and is not counted), and each partial combined (``n=sum(n1)``, ``hi=max(hi1)``: the
   registry's ``combined_by``, exact where ``combines_exactly``).

A projection then restores ``window_start`` (``window_end - size``), the columns' names and order.

Nothing in the output changes, not its order or its timing: step 1 decides lateness as the
aggregation did (same window, same rows); a window of step 1 fires when the watermark reaches its
end, and its rows reach step 2 before that watermark does (rows travel ahead of the watermark that
follows them), where the window ``[end - slide, end)`` is not late (its end is above the watermark
before the batch) and fires at the same watermark. Step 1 emits a window's (keys, value) groups in
the order they first appeared, so the keys' first groups come in the order the keys first appeared,
which is the order step 2 emits them in. Step 2's windows are not counted again in
``windows_fired`` (``Aggregate.second_step``).

What the two steps cannot compute is refused when the plan is built, for every engine
(``darwin.plan.nodes.check_split_distinct``). The reference interpreter and Spark count distinct
values natively (a set per window and group), so the differential tests compare two independent
implementations.
"""

from __future__ import annotations

from darwin.errors import PlanError
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.aggregates import function
from darwin.plan.window import Window
from darwin.types import DType


def split_distinct(plan: pn.PlanNode) -> pn.PlanNode:
    """Every windowed aggregation with ``count_distinct`` in two steps (see the module)."""
    def rule(n: pn.PlanNode) -> pn.PlanNode:
        if isinstance(n, pn.Aggregate) and pn.distinct_calls(n.aggs):
            return two_steps(n)
        return n
    return pn.transform(plan, rule)


def two_steps(agg: pn.Aggregate) -> pn.Project:
    """``agg`` (with ``count_distinct``) as two windowed aggregations and a projection, same rows."""
    assign = agg.input
    w = assign.window
    rows = assign.input
    distinct = pn.distinct_calls(agg.aggs)
    value = distinct[0][1].arg
    assert value is not None
    taken = set(rows.schema.names) | {pn.WINDOW_START, pn.WINDOW_END} | {name for name, _ in agg.aggs}

    def fresh(base: str) -> str:
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    if isinstance(value, ex.Column):
        v = value.name
    else:  # the value becomes a column, so step 1 can group by it (check_split_distinct: no late rows kept)
        v = fresh("__darwin_distinct")
        reads = set(agg.keys) | {w.on}  # what step 1 reads besides the value
        for _, call in agg.aggs:
            reads |= ex.columns_of(call.filter) if function(call.func).distinct else ex.columns_of(call)
        rows = pn.Project(rows, tuple((c, ex.Column(c)) for c in rows.schema.names if c in reads) + ((v, value),))
        assign = pn.WindowAssign(rows, w, assign.late_output)

    first: list[tuple[str, ex.AggCall]] = []  # step 1's partials
    second: list[tuple[str, ex.AggCall]] = []  # step 2's aggregates, named as the original's
    seen: dict[ex.ExprNode, str] = {}  # a distinct count's filter -> the partial counting its rows
    for name, call in agg.aggs:
        f = function(call.func)
        if f.distinct:
            if call.filter is None:
                second.append((name, ex.AggCall("count", ex.Column(v))))
                continue
            if call.filter not in seen:
                seen[call.filter] = fresh(f"__darwin_seen{len(seen)}")
                first.append((seen[call.filter], ex.AggCall("count", ex.Column(v), call.filter)))
            passed = ex.Binary("gt", ex.Column(seen[call.filter]), ex.Literal(0, DType.INT64))
            second.append((name, ex.AggCall("count", ex.Column(v), passed)))
        else:
            assert f.combined_by is not None  # check_split_distinct refused the others
            part = fresh(f"__darwin_part{len(first)}")
            first.append((part, call))
            second.append((name, ex.AggCall(f.combined_by, ex.Column(part))))
    if not first:  # an aggregation needs an aggregate: a count of the group's rows, read by no one
        first.append((fresh("__darwin_rows"), ex.AggCall("count", None)))

    keys1 = agg.keys + (() if v in agg.keys else (v,))
    step1 = pn.Aggregate(assign, keys1, tuple(first))
    end = fresh("__darwin_end")
    carried = tuple((c, ex.Column(c)) for c in keys1 + tuple(n for n, _ in first))
    last_ms = ex.Binary("sub", ex.Column(pn.WINDOW_END), ex.Literal(1, DType.INT64))
    between = pn.Project(step1, carried + ((end, last_ms),))
    regrouped = pn.WindowAssign(between, Window(w.slide_ms, w.slide_ms, end))
    step2 = pn.Aggregate(regrouped, agg.keys, tuple(second), second_step=True)
    start: ex.ExprNode = ex.Column(pn.WINDOW_START) if w.is_tumbling else \
        ex.Binary("sub", ex.Column(pn.WINDOW_END), ex.Literal(w.size_ms, DType.INT64))
    out = pn.Project(step2, ((pn.WINDOW_START, start), (pn.WINDOW_END, ex.Column(pn.WINDOW_END)))
                     + tuple((c, ex.Column(c)) for c in agg.keys + tuple(n for n, _ in agg.aggs)))
    if out.schema.fields != agg.schema.fields:  # a bug here, not the user's: the rows would differ
        raise PlanError(f"count_distinct in two steps: {out.schema} is not {agg.schema}")
    return out
