"""Optimizer rules: each a pure function from plan to equivalent plan.

Rules never change results, including late-event accounting: the watermark is
taken at the source, before any filter, so moving a filter below a window or a
projection changes nothing but the work done.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from darwin.errors import DarwinTypeError
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.evaluate import compile_expr
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
    except (DarwinTypeError, ArithmeticError):
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
        return ex.Cast(fn(e.operand), e.dtype)
    if isinstance(e, ex.DatePart):
        return ex.DatePart(e.part, fn(e.operand))
    if isinstance(e, ex.Case):
        return ex.Case(tuple((fn(c), fn(v)) for c, v in e.whens), fn(e.otherwise))
    if isinstance(e, ex.StringCall):
        return ex.StringCall(e.func, fn(e.operand), e.args)
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
    """Move filters towards the source, through projections, window assignment and other filters."""
    below = tuple(push_down_predicates(child) for child in node.inputs)
    if not isinstance(node, pn.Filter):
        return node.with_inputs(*below)
    (below,) = below
    pred = node.predicate
    if isinstance(below, pn.Project):
        mapping = dict(below.exprs)
        if all(_cheap(mapping[c]) for c in ex.columns_of(pred)):
            return pn.Project(push_down_predicates(pn.Filter(below.input, _substitute(pred, mapping))), below.exprs)
    if isinstance(below, pn.WindowAssign) and not (ex.columns_of(pred) & {pn.WINDOW_START, pn.WINDOW_END}):
        return pn.WindowAssign(push_down_predicates(pn.Filter(below.input, pred)), below.window,
                               below.late_output)
    if isinstance(below, pn.Filter) and not isinstance(below.input, pn.Scan):
        return pn.Filter(push_down_predicates(pn.Filter(below.input, pred)), below.predicate)
    return pn.Filter(below, pred)


def _cheap(e: ex.ExprNode) -> bool:
    """Substituting an expression into a predicate must not duplicate real work."""
    return isinstance(e, (ex.Column, ex.Literal)) or not any(
        isinstance(c, (ex.Case, ex.DatePart, ex.StringCall)) for c in _walk(e))


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
    """Compute and read only the columns something above uses; scans read fewer columns."""
    return _Prune().visit(node, set(node.schema.names))


class _Prune(PlanVisitor[pn.PlanNode]):
    """Each node rebuilt to produce only the ``needed`` columns (and what its own work reads)."""

    translation = "projection pruning"

    def visit_Scan(self, n: pn.Scan, needed: set[str]) -> pn.PlanNode:
        cols = tuple(c for c in n.columns if c in needed or c == n.time_column)
        if not cols:
            cols = n.columns[:1]
        return n if cols == n.columns else dataclasses.replace(n, columns=cols)

    def visit_Filter(self, n: pn.Filter, needed: set[str]) -> pn.PlanNode:
        return pn.Filter(self.visit(n.input, needed | set(ex.columns_of(n.predicate))), n.predicate)

    def visit_Project(self, n: pn.Project, needed: set[str]) -> pn.PlanNode:
        exprs = tuple((name, e) for name, e in n.exprs if name in needed) or n.exprs[:1]
        uses: set[str] = set()
        for _, e in exprs:
            uses |= ex.columns_of(e)
        child = self.visit(n.input, uses)
        if all(isinstance(e, ex.Column) and e.name == name for name, e in exprs) \
                and tuple(name for name, _ in exprs) == child.schema.names:
            return child  # an identity projection
        return pn.Project(child, exprs)

    def visit_WindowAssign(self, n: pn.WindowAssign, needed: set[str]) -> pn.PlanNode:
        inner = (needed - {pn.WINDOW_START, pn.WINDOW_END}) | {n.window.on}
        if n.late_output:
            inner |= set(n.input.schema.names)  # late rows keep every input column
        return pn.WindowAssign(self.visit(n.input, inner), n.window, n.late_output)

    def visit_Aggregate(self, n: pn.Aggregate, needed: set[str]) -> pn.PlanNode:
        uses = set(n.keys) | {n.input.window.on}
        for _, call in n.aggs:
            uses |= ex.columns_of(call)
        return pn.Aggregate(self.visit(n.input, uses | {pn.WINDOW_START, pn.WINDOW_END}), n.keys, n.aggs)


DEFAULT_RULES: tuple[tuple[str, Rule], ...] = (
    ("fold_constants", fold_constants),
    ("merge_filters", merge_filters),
    ("push_down_predicates", push_down_predicates),
    ("merge_filters", merge_filters),
    ("prune_projections", prune_projections),
)


def optimize(node: pn.PlanNode, disabled: frozenset[str] = frozenset()) -> pn.PlanNode:
    for name, rule in DEFAULT_RULES:
        if name not in disabled:
            node = rule(node)
    return node
