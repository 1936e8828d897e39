"""Logical plan nodes: frozen values that validate and type themselves when built.

A bad column, a type mismatch or a window on a non-time column fails here, when
the query is built, naming the column and the operation.

A plan is a DAG: every node has ``inputs`` (a tuple: none for a scan, one for the
operators here, two or more for joins and unions) and ``with_inputs`` to rebuild it
over new ones. ``walk`` and ``transform`` are the one traversal every rewrite uses;
both visit a node shared by several parents once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from darwin.errors import DarwinTypeError, PlanError
from darwin.io.source import Source
from darwin.plan.aggregates import agg_type
from darwin.plan.exprs import AggCall, ExprNode, type_of
from darwin.plan.window import Window
from darwin.types import DType, Field, Schema

WINDOW_START, WINDOW_END = "window_start", "window_end"


@dataclass(frozen=True)
class Scan:
    """Read ``columns`` of a source whose event time is ``time_column``."""

    source: Source
    columns: tuple[str, ...]
    time_column: str | None
    max_delay_ms: int | None  # None: the config's default delay
    # a row more than this ahead of the largest event time seen does not move the watermark
    max_future_ms: int | None = None

    def __post_init__(self) -> None:
        if self.max_future_ms is not None:
            if self.time_column is None:
                raise PlanError(f"max_future of {self.source.name}: needs an event-time column (time=...)")
            if self.max_future_ms <= 0:
                raise PlanError(f"max_future of {self.source.name} must be positive, got {self.max_future_ms}ms")
        for c in self.columns:
            self.source.schema.field(c, f"scan of {self.source.name}")
        if self.time_column is not None:
            f = self.source.schema.field(self.time_column, f"time column of {self.source.name}")
            if f.dtype is not DType.TIMESTAMP:
                raise DarwinTypeError(f"time column {self.time_column!r} of {self.source.name} must be a "
                                      f"timestamp, but it is {f.dtype.value}")

    @cached_property
    def schema(self) -> Schema:
        return self.source.schema.select(self.columns)

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return ()

    def with_inputs(self, *inputs: PlanNode) -> Scan:
        _arity(self, inputs, 0)
        return self

    def __hash__(self) -> int:
        return hash((id(self.source), self.columns, self.time_column, self.max_delay_ms, self.max_future_ms))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Scan) and other.source is self.source and other.columns == self.columns
                and other.time_column == self.time_column and other.max_delay_ms == self.max_delay_ms
                and other.max_future_ms == self.max_future_ms)


class _OneInput:
    """A node over one input, held in its ``input`` field."""

    input: Any

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: PlanNode) -> Any:
        """This node over ``inputs`` (itself if they are the same nodes)."""
        _arity(self, inputs, 1)
        return self if inputs[0] is self.input else dataclasses.replace(self, input=inputs[0])  # type: ignore[type-var]


@dataclass(frozen=True)
class Filter(_OneInput):
    input: PlanNode
    predicate: ExprNode

    def __post_init__(self) -> None:
        t = type_of(self.predicate, self.input.schema, "filter")
        if t.dtype not in (DType.BOOL, None):
            raise DarwinTypeError(f"filter: predicate {self.predicate} is {t.dtype.value}, not bool")

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True)
class Project(_OneInput):
    """Compute named expressions; the output has exactly these columns, in order."""

    input: PlanNode
    exprs: tuple[tuple[str, ExprNode], ...]

    def __post_init__(self) -> None:
        if not self.exprs:
            raise PlanError("select: at least one column is needed")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        return project_schema(self.exprs, self.input.schema)


@dataclass(frozen=True)
class WindowAssign(_OneInput):
    """Attach window_start/window_end; a sliding window repeats the row once per window."""

    input: PlanNode
    window: Window
    late_output: bool = False

    def __post_init__(self) -> None:
        f = self.input.schema.field(self.window.on, "window")
        if f.dtype is not DType.TIMESTAMP:
            raise DarwinTypeError(f"window: column {self.window.on!r} is {f.dtype.value}; a window needs a "
                                  "timestamp column (cast it with col(...).cast('timestamp'))")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        return windowed_schema(self.input.schema)


@dataclass(frozen=True)
class Aggregate(_OneInput):
    """Windowed group-by: one row per (window, keys) when the watermark passes the window's end."""

    input: WindowAssign
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.input, WindowAssign):
            raise PlanError("agg: a streaming aggregation needs a window; call .window(...) first")
        if not self.aggs:
            raise PlanError("agg: at least one aggregate is needed, e.g. agg(n=dw.count())")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        fields = [inp.field(WINDOW_START), inp.field(WINDOW_END)]
        for k in self.keys:
            if k in (WINDOW_START, WINDOW_END):
                raise PlanError(f"group_by: {k!r} is already part of every windowed group")
            fields.append(inp.field(k, "group_by"))
        for name, call in self.aggs:
            fields.append(Field(name, *agg_type(call, inp, name)))
        return Schema(tuple(fields), inp.unsupported)


def project_schema(exprs: tuple[tuple[str, ExprNode], ...], schema: Schema) -> Schema:
    fields = []
    for name, e in exprs:
        t = type_of(e, schema, f"select of {name!r}")
        # an untyped NULL becomes an int64 column of nulls, as in Spark's void -> cast
        fields.append(Field(name, t.dtype or DType.INT64, t.nullable))
    return Schema(tuple(fields), schema.unsupported)


def windowed_schema(schema: Schema) -> Schema:
    """``schema`` plus the window bounds every windowed row carries."""
    for n in (WINDOW_START, WINDOW_END):
        if n in schema:
            raise PlanError(f"window: the input already has a column named {n!r}")
    return Schema(schema.fields + (Field(WINDOW_START, DType.TIMESTAMP, False),
                                   Field(WINDOW_END, DType.TIMESTAMP, False)), schema.unsupported)


PlanNode = Scan | Filter | Project | WindowAssign | Aggregate


def late_output_schema(plan: PlanNode) -> Schema | None:
    """Schema of the late rows a plan keeps (its window's input), or None if it keeps none."""
    while not isinstance(plan, Scan):
        if isinstance(plan, WindowAssign) and plan.late_output:
            return plan.input.schema
        plan = plan.input
    return None


def _arity(node: Any, inputs: tuple[PlanNode, ...], n: int) -> None:
    if len(inputs) != n:
        raise PlanError(f"{type(node).__name__} takes {n} input(s), got {len(inputs)}")


def walk(node: PlanNode) -> Iterator[PlanNode]:
    """Every node of the plan once, inputs before the nodes that read them."""
    seen: set[int] = set()

    def visit(n: PlanNode) -> Iterator[PlanNode]:
        if id(n) in seen:
            return
        seen.add(id(n))
        for child in n.inputs:
            yield from visit(child)
        yield n
    yield from visit(node)


def transform(node: PlanNode, fn: Callable[[PlanNode], PlanNode]) -> PlanNode:
    """Rewrite bottom-up: ``fn`` gets each node rebuilt over its rewritten inputs; shared nodes once."""
    done: dict[int, PlanNode] = {}
    for n in walk(node):
        done[id(n)] = fn(n.with_inputs(*(done[id(c)] for c in n.inputs)))
    return done[id(node)]


def scans(node: PlanNode) -> list[Scan]:
    return [n for n in walk(node) if isinstance(n, Scan)]
