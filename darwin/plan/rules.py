"""Optimizer rules: each a pure function from plan to equivalent plan.

Rules never change results, including late-event accounting: the watermark is
taken at the source, before any filter, so moving a filter below a window or a
projection changes nothing but the work done.

The optimized plan is what the compiled engine runs (and ``explain`` shows); the reference
interpreter runs the plan as written. One rule is a lowering the compiled engine needs, not only a
saving: ``split_distinct`` counts ``count_distinct`` of a tumbling or sliding window in two windowed
steps, as the window kernels keep value slots, not sets.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from darwin.errors import CastError, DarwinTypeError
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.evaluate import compile_expr
from darwin.plan.keys import unique_key
from darwin.plan.split_distinct import split_distinct
from darwin.plan.visitor import PlanVisitor
from darwin.types import Schema

Rule = Callable[[pn.PlanNode], pn.PlanNode]


# ----------------------------------------------------------------------------- constant folding

_EMPTY = Schema(())


def fold_expr(e: ex.ExprNode) -> ex.ExprNode:
    """Evaluate sub-expressions without columns once, at plan time."""
    if isinstance(e, (ex.Column, ex.Literal)):
        return e
    folded = map_children(e, fold_expr)
    if ex.columns_of(folded):
        return _simplify_logic(folded)
    try:
        t = ex.type_of(folded, _EMPTY)
        value = compile_expr(folded, _EMPTY)({})
    except (DarwinTypeError, ArithmeticError, CastError):  # a failing CAST fails where a row reaches it
        return folded
    if isinstance(value, float) and not math.isfinite(value):
        return folded  # keep non-finite values computed at run time: no literal for them
    try:
        return ex.Literal(value, t.dtype)
    except DarwinTypeError:
        return folded


def _simplify_logic(e: ex.ExprNode) -> ex.ExprNode:
    """x & true -> x, x | false -> x (only where the result type cannot change)."""
    if isinstance(e, ex.Binary) and e.op in ("and", "or"):
        neutral = e.op == "and"
        for keep, other in ((e.left, e.right), (e.right, e.left)):
            if isinstance(other, ex.Literal) and other.value is neutral:
                return keep
    return e


def map_children(e: ex.ExprNode, fn: Callable[[ex.ExprNode], ex.ExprNode]) -> ex.ExprNode:
    """``e`` with ``fn`` applied to each direct child."""
    if isinstance(e, ex.Binary):
        return ex.Binary(e.op, fn(e.left), fn(e.right))
    if isinstance(e, ex.Unary):
        return ex.Unary(e.op, fn(e.operand))
    if isinstance(e, ex.IsIn):
        return ex.IsIn(fn(e.operand), e.values)
    if isinstance(e, ex.Cast):
        return ex.Cast(fn(e.operand), e.dtype, e.safe, e.bits)
    if isinstance(e, ex.DatePart):
        return ex.DatePart(e.part, fn(e.operand))
    if isinstance(e, ex.TimeFloor):
        return ex.TimeFloor(e.unit, fn(e.operand))
    if isinstance(e, ex.MathCall):
        return ex.MathCall(e.func, tuple(fn(a) for a in e.args))
    if isinstance(e, ex.Case):
        return ex.Case(tuple((fn(c), fn(v)) for c, v in e.whens), fn(e.otherwise))
    if isinstance(e, ex.StringCall):
        return ex.StringCall(e.func, fn(e.operand), e.args)
    if isinstance(e, ex.Strftime):
        return ex.Strftime(fn(e.operand), e.format)
    if isinstance(e, ex.Concat):
        return ex.Concat(tuple(fn(p) for p in e.parts), e.separator)
    return e


def fold_constants(node: pn.PlanNode) -> pn.PlanNode:
    def rule(n: pn.PlanNode) -> pn.PlanNode:
        if isinstance(n, pn.Filter):
            pred = fold_expr(n.predicate)
            if isinstance(pred, ex.Literal) and pred.value is True:
                return n.input
            return n if pred == n.predicate else pn.Filter(n.input, pred)
        if isinstance(n, pn.Project):
            exprs = tuple((name, _typed_fold(e, n.input.schema)) for name, e in n.exprs)
            return n if exprs == n.exprs else pn.Project(n.input, exprs)
        return n
    return pn.transform(node, rule)


def _typed_fold(e: ex.ExprNode, schema: Schema) -> ex.ExprNode:
    """Fold, but keep the projected column's type (a folded int stays int, float stays float)."""
    folded = fold_expr(e)
    before, after = ex.type_of(e, schema), ex.type_of(folded, schema)
    return folded if (before.dtype, before.nullable) == (after.dtype, after.nullable) else e


# ----------------------------------------------------------------------------- filters

def merge_filters(node: pn.PlanNode) -> pn.PlanNode:
    """Filter(Filter(x, a), b) -> Filter(x, a & b): one test per row instead of two operators."""
    def rule(n: pn.PlanNode) -> pn.PlanNode:
        if isinstance(n, pn.Filter) and isinstance(n.input, pn.Filter):
            return pn.Filter(n.input.input, ex.Binary("and", n.input.predicate, n.predicate))
        return n
    return pn.transform(node, rule)


def push_down_predicates(node: pn.PlanNode) -> pn.PlanNode:
    """Move filters towards the sources: through projections, window assignment, other filters,
    unions (into every input) and joins (a conjunct over one side's columns into that side, where
    the join kind keeps that side's rows only when they match anyway)."""
    done: dict[int, tuple[pn.PlanNode, pn.PlanNode]] = {}  # id -> (node, result): the node stays alive

    def push(n: pn.PlanNode) -> pn.PlanNode:
        if id(n) not in done:
            below = tuple(push(child) for child in n.inputs)
            done[id(n)] = (n, _push_filter(n.predicate, below[0], push) if isinstance(n, pn.Filter)
                           else n.with_inputs(*below))
        return done[id(n)][1]
    return push(node)


def _push_filter(pred: ex.ExprNode, below: pn.PlanNode, push: Rule) -> pn.PlanNode:
    if isinstance(below, pn.Project):
        mapping = dict(below.exprs)
        if all(_cheap(mapping[c]) for c in ex.columns_of(pred)):
            return pn.Project(push(pn.Filter(below.input, _substitute(pred, mapping))), below.exprs)
    if isinstance(below, pn.WindowAssign) and not (ex.columns_of(pred) & {pn.WINDOW_START, pn.WINDOW_END}):
        return pn.WindowAssign(push(pn.Filter(below.input, pred)), below.window, below.late_output)
    if isinstance(below, pn.Filter) and not isinstance(below.input, pn.Scan):
        return pn.Filter(push(pn.Filter(below.input, pred)), below.predicate)
    if isinstance(below, pn.Union):
        return pn.Union(tuple(push(pn.Filter(p, pred)) for p in below.parts))
    if isinstance(below, (pn.Join, pn.LookupJoin)):
        return _into_join(pred, below, push)
    return pn.Filter(below, pred)


def _into_join(pred: ex.ExprNode, join: pn.Join | pn.LookupJoin, push: Rule) -> pn.PlanNode:
    """Conjuncts over the left columns go left unless the join pads the left side; those over the
    right columns go right (renamed back) unless it pads the right side; the rest stay above."""
    left, right = join.inputs
    how = join.how
    left_names = set(left.schema.names)
    original = {out: name for name, out in join.right_names.items()}
    to_left, to_right, above = [], [], []
    for c in ex.conjuncts(pred):
        cols = ex.columns_of(c)
        if cols and cols <= left_names and how in ("inner", "left"):
            to_left.append(c)
        elif cols and cols <= set(original) and how in ("inner", "right") and not isinstance(join, pn.LookupJoin):
            to_right.append(_substitute(c, {o: ex.Column(n) for o, n in original.items()}))
        else:
            above.append(c)
    if not to_left and not to_right:
        return pn.Filter(join, pred)
    new_left = push(pn.Filter(left, _and_all(to_left))) if to_left else left
    new_right = push(pn.Filter(right, _and_all(to_right))) if to_right else right
    rebuilt = join.with_inputs(new_left, new_right)
    return pn.Filter(rebuilt, _and_all(above)) if above else rebuilt



def _and_all(parts: list[ex.ExprNode]) -> ex.ExprNode:
    out = parts[0]
    for p in parts[1:]:
        out = ex.Binary("and", out, p)
    return out


def _cheap(e: ex.ExprNode) -> bool:
    """Substituting an expression into a predicate must not duplicate real work."""
    return isinstance(e, (ex.Column, ex.Literal)) or not any(
        isinstance(c, (ex.Case, ex.DatePart, ex.TimeFloor, ex.StringCall, ex.Strftime, ex.Concat)) for c in _walk(e))


def _walk(e: ex.ExprNode) -> list[ex.ExprNode]:
    out = [e]
    for c in ex.children(e):
        out.extend(_walk(c))
    return out


def _substitute(e: ex.ExprNode, mapping: dict[str, ex.ExprNode]) -> ex.ExprNode:
    if isinstance(e, ex.Column):
        return mapping[e.name]
    return map_children(e, lambda c: _substitute(c, mapping))


# ----------------------------------------------------------------------------- projections

def prune_projections(node: pn.PlanNode) -> pn.PlanNode:
    """Compute and read only the columns something above uses; scans read fewer columns.

    First each node learns the columns its parents need (the union over all of them: a node read
    by several parents stays one node), then the plan is rebuilt bottom-up.
    """
    needed = columns_from_parents(node, _NEEDS, set(node.schema.names))
    rebuilt: dict[int, pn.PlanNode] = {}
    for n in pn.walk(node):
        inputs = tuple(rebuilt[id(c)] for c in n.inputs)
        rebuilt[id(n)] = _shrink(n, inputs, needed[id(n)])
    return rebuilt[id(node)]


def columns_from_parents(plan: pn.PlanNode, per_input: PlanVisitor[list[set[str]]], at_root: set[str]) \
        -> dict[int, set[str]]:
    """For every node (by id), a set of its output columns that its parents ask for, top-down:
    the root has ``at_root``, and ``per_input.visit(node, asked)`` says what a node asks of each
    input. A node read by several parents gets the union of what they ask."""
    asked: dict[int, set[str]] = {id(plan): set(at_root)}
    for n in reversed(list(pn.walk(plan))):
        for child, uses in zip(n.inputs, per_input.visit(n, asked.setdefault(id(n), set()))):
            asked.setdefault(id(child), set()).update(uses)
    return asked


class _Needs(PlanVisitor[list[set[str]]]):
    """The columns each input must provide for a node to produce ``needed`` (and do its own work)."""

    translation = "projection pruning"

    def visit_Scan(self, n: pn.Scan, needed: set[str]) -> list[set[str]]:
        return []

    def visit_Filter(self, n: pn.Filter, needed: set[str]) -> list[set[str]]:
        return [needed | set(ex.columns_of(n.predicate))]

    def visit_Project(self, n: pn.Project, needed: set[str]) -> list[set[str]]:
        uses: set[str] = set()
        for _, e in _kept_exprs(n, needed):
            uses |= ex.columns_of(e)
        return [uses]

    def visit_WindowAssign(self, n: pn.WindowAssign, needed: set[str]) -> list[set[str]]:
        inner = (needed - {pn.WINDOW_START, pn.WINDOW_END}) | {n.window.on}
        if n.late_output:
            inner |= set(n.input.schema.names)  # late rows keep every input column
        return [inner]

    def visit_Aggregate(self, n: pn.AnyAggregate, needed: set[str]) -> list[set[str]]:
        return [pn.aggregate_reads(n)]

    visit_GroupAggregate = visit_SessionAggregate = visit_BarrierAggregate = visit_Aggregate

    def visit_BarrierAssign(self, n: pn.BarrierAssign, needed: set[str]) -> list[set[str]]:
        return [(needed & set(n.input.schema.names)) | pn.barrier_reads(n.window) | {c for _, c in n.carried}]

    def visit_TopN(self, n: pn.TopN | pn.Deduplicate | pn.Over, needed: set[str]) -> list[set[str]]:
        reads = (needed & set(n.input.schema.names)) | pn.ranking_reads(n)
        if not pn.updating(n.input):
            return [reads]
        # a retraction is matched to the held row equal to it in every column it has: with a unique
        # key of the input among them, that is the one row it retracts (one live row per key), as it
        # is with every column; without one, equal rows could be told apart by a column pruned away
        key = unique_key(n.input)
        return [set(n.input.schema.names) if key is None else reads | set(key)]

    visit_Deduplicate = visit_Over = visit_TopN

    def visit_Join(self, n: pn.Join | pn.LookupJoin, needed: set[str]) -> list[set[str]]:
        left, right = n.inputs
        left_uses, right_uses = pn.join_reads(n, needed)
        read = needed | (set() if n.where is None else ex.columns_of(n.where))  # by output name; keys by input name
        left_keeps, right_keeps = _suffix_blockers(n, read)
        return [left_uses | left_keeps, right_uses | right_keeps]

    visit_LookupJoin = visit_Join

    def visit_Union(self, n: pn.Union, needed: set[str]) -> list[set[str]]:
        return [set(needed) for _ in n.parts]


_NEEDS = _Needs()


def _suffix_blockers(n: pn.Join | pn.LookupJoin, outputs: set[str]) -> tuple[set[str], set[str]]:
    """The columns of each input that must stay for the right columns in ``outputs`` to keep their
    suffixed names: a right column ``a`` named ``a_right`` keeps that name only while ``a`` is taken."""
    left, right = n.inputs
    left_names, right_out = set(left.schema.names), {out: name for name, out in n.right_names.items()}
    left_keeps, right_keeps = set(), set()
    for name, out in n.right_names.items():
        if out == name or out not in outputs:
            continue
        blocked = name
        while blocked != out:
            if blocked in left_names:
                left_keeps.add(blocked)
            elif blocked in right_out:
                right_keeps.add(right_out[blocked])
            blocked += n.suffix
    return left_keeps, right_keeps


def _kept_exprs(n: pn.Project, needed: set[str]) -> tuple[tuple[str, ex.ExprNode], ...]:
    return tuple((name, e) for name, e in n.exprs if name in needed) or n.exprs[:1]


def _shrink(n: pn.PlanNode, inputs: tuple[pn.PlanNode, ...], needed: set[str]) -> pn.PlanNode:
    """``n`` over its pruned inputs, producing what is ``needed``."""
    if isinstance(n, pn.Scan):
        cols = tuple(c for c in n.columns if c in needed or c == n.time_column) or n.columns[:1]
        return n if cols == n.columns else dataclasses.replace(n, columns=cols)
    if isinstance(n, pn.Project):
        (child,) = inputs
        if isinstance(child, pn.Project) and _selects(child.exprs) and isinstance(child.input, pn.Join):
            child = child.input  # the join's pruning projection: this one reads the join's columns itself
        exprs = _kept_exprs(n, needed)
        if _selects(exprs) and tuple(name for name, _ in exprs) == child.schema.names:
            return child  # an identity projection
        return pn.Project(child, exprs)
    if isinstance(n, pn.Union):  # every input gives exactly the needed columns, in the same order
        names = tuple(c for c in n.schema.names if c in needed) or n.schema.names[:1]
        parts = tuple(p if p.schema.names == names else pn.Project(p, tuple((c, ex.Column(c)) for c in names))
                      for p in inputs)
        return pn.Union(parts)
    rebuilt = n.with_inputs(*inputs)
    if isinstance(rebuilt, pn.Join) and not set(rebuilt.schema.names) <= needed:
        # columns only the join's condition reads (or no one) stop here, so its state and the
        # operators after it do not carry them
        return pn.Project(rebuilt, tuple((c, ex.Column(c)) for c in rebuilt.schema.names if c in needed)
                          or ((rebuilt.schema.names[0], ex.Column(rebuilt.schema.names[0])),))
    return rebuilt


def _selects(exprs: tuple[tuple[str, ex.ExprNode], ...]) -> bool:
    """Whether a projection's expressions only keep some of its input's columns, under their names."""
    return all(isinstance(e, ex.Column) and e.name == name for name, e in exprs)


DEFAULT_RULES: tuple[tuple[str, Rule], ...] = (
    ("fold_constants", fold_constants),
    ("merge_filters", merge_filters),
    ("push_down_predicates", push_down_predicates),
    ("merge_filters", merge_filters),
    ("prune_projections", prune_projections),
    # last: the rules above see the aggregation as written, and its two steps are minimal already
    ("split_distinct", split_distinct),
)


def optimize(node: pn.PlanNode, disabled: frozenset[str] = frozenset()) -> pn.PlanNode:
    for name, rule in DEFAULT_RULES:
        if name not in disabled:
            node = rule(node)
    return node
