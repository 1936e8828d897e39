"""Flink's GREATEST and LEAST: the greatest or least of their arguments, NULL where any argument is NULL.

Flink compares the arguments, cast to their common type, with Java's ``compareTo``: a DOUBLE's total order puts
NaN above every number and -0.0 below 0.0, and strings by their UTF-8 bytes (``BinaryStringData.compareTo``), as
``<`` orders them. Each is built from the fluent API (``when``, comparisons, ``+``), so every engine runs it with
rules it already has: the argument chosen is the first one at least (most) as great (small) as every argument after
it, NaN counted greatest; where that is a zero, its sign is the one Java's order gives (0.0 for GREATEST when any
argument is 0.0; -0.0 for LEAST when any is -0.0), which the sum of the zeros has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from darwin.expr import Expr, lit, when
from darwin.plan.exprs import type_of
from darwin.sql.dialect import Flink
from darwin.types import DType

if TYPE_CHECKING:
    from darwin.sql.expressions import ExpressionTranslator

NUMBERS = {DType.INT64, DType.FLOAT64}


def greatest_or_least(tr: ExpressionTranslator, node: exp.Greatest | exp.Least, greatest: bool) -> Expr:
    """GREATEST(a, b, ...) or LEAST(a, b, ...) of numbers, strings, timestamps or booleans, as Flink's."""
    name = "GREATEST" if greatest else "LEAST"
    nodes = [node.this, *node.expressions]
    values = [tr(n) for n in nodes]
    types = [type_of(v.node, tr.schema) for v in values]
    dtype = _common_type(tr, node, name, nodes, [t.dtype for t in types])
    if any(t.dtype is None for t in types):  # a NULL literal: NULL, of the others' type
        return lit(None, dtype)
    if dtype is DType.FLOAT64:
        values = [v if t.dtype is DType.FLOAT64 else v.cast(DType.FLOAT64) for v, t in zip(values, types)]
    chosen = _extreme(values, dtype, greatest)
    nullable = [v for v, t in zip(values, types) if t.nullable]
    if not nullable:
        return chosen
    any_null = nullable[0].is_null()
    for v in nullable[1:]:
        any_null = any_null | v.is_null()
    return when(any_null, lit(None, dtype)).otherwise(chosen)


def _common_type(tr: ExpressionTranslator, node: exp.Expr, name: str, nodes: list[exp.Expr],
                 dtypes: list[DType | None]) -> DType | None:
    """The type the arguments are compared in: DOUBLE where a number is one, else the one type they share."""
    known = {d for d in dtypes if d is not None}
    if not known:
        return None
    if known <= NUMBERS:
        return DType.FLOAT64 if DType.FLOAT64 in known else DType.INT64
    if len(known) > 1:
        described = ", ".join(f"{n.sql(dialect=Flink)} ({d.value})" for n, d in zip(nodes, dtypes) if d is not None)
        raise tr.where.error(node, f"{name} takes arguments of one type (numbers, strings, TIMESTAMPs or BOOLEANs), "
                                   f"as in Flink; got {described}")
    return known.pop()


def _extreme(values: list[Expr], dtype: DType | None, greatest: bool) -> Expr:
    """The greatest (least) of values none of which is NULL."""
    if dtype is DType.BOOL:  # FALSE before TRUE
        result = values[0]
        for v in values[1:]:
            result = (result | v) if greatest else (result & v)
        return result
    floats = dtype is DType.FLOAT64
    builder = None
    for i, v in enumerate(values[:-1]):
        beats_all = _beats(v, values[i + 1], greatest, floats)
        for later in values[i + 2:]:
            beats_all = beats_all & _beats(v, later, greatest, floats)
        builder = when(beats_all, v) if builder is None else builder.when(beats_all, v)
    chosen = values[0] if builder is None else builder.otherwise(values[-1])
    if not floats:
        return chosen
    return when(chosen == 0.0, _signed_zero(values, greatest)).otherwise(chosen)


def _beats(a: Expr, b: Expr, greatest: bool, floats: bool) -> Expr:
    """Whether ``a`` is at least as great (small) as ``b`` in Java's order, where NaN is the greatest number."""
    if not floats:
        return a >= b if greatest else a <= b
    return (a >= b) | (a != a) if greatest else (a <= b) | (b != b)


def _signed_zero(values: list[Expr], greatest: bool) -> Expr:
    """The zero Java's order chooses among the arguments that are zeros: a sum of zeros is 0.0 unless all are -0.0,
    so GREATEST is the sum of the zeros (-0.0 standing for the other values) and LEAST minus the sum of their
    negations."""
    total: Expr | None = None
    for v in values:
        term = v if greatest else -v
        zero = when(v == 0.0, term).otherwise(lit(-0.0))
        total = zero if total is None else total + zero
    assert total is not None
    return total if greatest else -total
