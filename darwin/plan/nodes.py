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

from darwin.errors import DarwinTypeError, PlanError, UnsupportedError
from darwin.io.source import Source
from darwin.plan.aggregates import agg_type, function
from darwin.plan.exprs import AggCall, Case, Column, ExprNode, Literal, Unary, columns_of, type_of
from darwin.plan.window import BarrierWindow, SessionWindow, Window
from darwin.types import DType, Field, Schema

WINDOW_START, WINDOW_END = "window_start", "window_end"
WINDOW_ID = "window_id"  # a barrier window's number: the barriers before its rows


@dataclass(frozen=True)
class Scan:
    """Read ``columns`` of a source whose event time is ``time_column``."""

    source: Source
    columns: tuple[str, ...]
    time_column: str | None
    max_delay_ms: int | None  # None: the config's default delay
    # a row more than this ahead of the largest event time seen does not move the watermark
    max_future_ms: int | None = None
    # columns no two rows of the source share values of (Flink's PRIMARY KEY ... NOT ENFORCED): what
    # the user declares is trusted, not checked, and lets a join keep fewer rows (darwin.plan.keys)
    primary_key: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.primary_key is not None:
            if not self.primary_key or len(set(self.primary_key)) != len(self.primary_key):
                raise PlanError(f"primary_key of {self.source.name}: give distinct column names, got "
                                f"{list(self.primary_key)}")
            for c in self.primary_key:
                self.source.schema.field(c, f"primary_key of {self.source.name}")
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
        return hash((id(self.source), self.columns, self.time_column, self.max_delay_ms, self.max_future_ms,
                     self.primary_key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Scan) and other.source is self.source and other.columns == self.columns
                and other.time_column == self.time_column and other.max_delay_ms == self.max_delay_ms
                and other.max_future_ms == self.max_future_ms and other.primary_key == self.primary_key)


class _OneInput:
    """A node over one input, held in its ``input`` field."""

    input: Any

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.input,)

    def with_inputs(self, *inputs: PlanNode) -> Any:
        """This node over ``inputs`` (itself if they are the same nodes)."""
        return _over(self, ("input",), inputs)


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
        _refuse_unbounded_time(self.input, self.window.on, self.window.slide_ms, "a window")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        return windowed_schema(self.input.schema)


@dataclass(frozen=True)
class Aggregate(_OneInput):
    """Windowed group-by: one row per (window, keys) when the watermark passes the window's end.

    ``count_distinct`` is allowed beside aggregates that combine exactly from parts of a group
    (``check_split_distinct``): the compiled engine counts it in two windowed steps
    (``darwin.plan.split_distinct``). ``second_step`` marks the second of them, which re-groups
    the first's rows, one window of it each: its windows are not counted again in
    ``windows_fired``."""

    input: WindowAssign
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]
    second_step: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.input, WindowAssign):
            raise PlanError("agg: a streaming aggregation needs a window; call .window(...) first")
        _need_aggregates(self.aggs)
        if updating(self.input):
            raise UnsupportedError(f"a windowed aggregation over {_UPDATING} "
                                   "is not supported yet")
        _ = self.schema
        check_split_distinct(self)

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        return _windowed_groups(inp, (inp.field(WINDOW_START), inp.field(WINDOW_END)), self.keys, self.aggs)


@dataclass(frozen=True)
class SessionAggregate(_OneInput):
    """Aggregation per key and session window: one row per session when the watermark passes its
    end (the last row's time + gap). A row whose own window [t, t + gap] meets an open session of
    its key joins it, merging every session it bridges; one that meets none and has already ended
    by the watermark is late."""

    input: PlanNode
    window: SessionWindow
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]

    def __post_init__(self) -> None:
        _need_aggregates(self.aggs)
        if updating(self.input):
            raise UnsupportedError(f"a session window aggregation over {_UPDATING} is not supported yet")
        _refuse_unbounded_time(self.input, self.window.on, None, "a session window")
        f = self.input.schema.field(self.window.on, "session window")
        if f.dtype is not DType.TIMESTAMP:
            raise DarwinTypeError(f"session window: column {self.window.on!r} is {f.dtype.value}; a window needs "
                                  "a timestamp column (cast it with col(...).cast('timestamp'))")
        _distinct_keys(self.keys)
        _refuse_unwindowed(self.aggs, "a session window aggregation")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        bounds = (Field(WINDOW_START, DType.TIMESTAMP, False), Field(WINDOW_END, DType.TIMESTAMP, False))
        return _windowed_groups(self.input.schema, bounds, self.keys, self.aggs)


def check_barrier_window(window: BarrierWindow, rows: PlanNode, what: str = "a barrier window") -> None:
    """``window.when`` is a bool over ``rows``, ``window.on`` (if given) a timestamp of it, and the
    rows append (a barrier is a row's place in the stream, which retractions would not keep)."""
    if not isinstance(window, BarrierWindow):
        raise PlanError(f"{what}: needs a dw.Barrier(when=...) window, got {window!r}")
    if updating(rows):
        raise UnsupportedError(f"{what} over {_UPDATING} is not supported yet")
    t = type_of(window.when, rows.schema, f"{what}: when=")
    if t.dtype not in (DType.BOOL, None):
        raise DarwinTypeError(f"{what}: when={window.when} is {t.dtype.value}, not bool")
    for c in window.by:
        rows.schema.field(c, f"{what}: by=")
    if window.on is not None:
        f = rows.schema.field(window.on, f"{what}: on=")
        if f.dtype is not DType.TIMESTAMP:
            raise DarwinTypeError(f"{what}: on={window.on!r} is {f.dtype.value}; the bounds of a "
                                  "barrier window need a timestamp column")


class _Barriered(_OneInput):
    """A node over rows in barrier windows (``check_barrier_window`` says what it checks)."""

    input: PlanNode
    window: BarrierWindow

    def _check_window(self, what: str) -> None:
        check_barrier_window(self.window, self.input, what)

    def _bounds(self) -> tuple[Field, ...]:
        """window_id, and with ``on`` the previous barrier's time (NULL for the first window) and this one's."""
        ident = (Field(WINDOW_ID, DType.INT64, False),)
        if self.window.on is None:
            return ident
        return ident + (Field(WINDOW_START, DType.TIMESTAMP, True), Field(WINDOW_END, DType.TIMESTAMP, True))


@dataclass(frozen=True)
class BarrierAggregate(_Barriered):
    """Aggregation per key and barrier window: when a barrier row arrives, every key's aggregate of
    the rows since the previous barrier is emitted (keys in the order they first arrived in the
    window) and the state is emptied. The barrier row itself is in no window; rows after the last
    barrier are never emitted (no barrier closed their window)."""

    input: PlanNode
    window: BarrierWindow
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]

    def __post_init__(self) -> None:
        self._check_window("a barrier window aggregation")
        if self.window.by:
            raise UnsupportedError("a barrier window aggregation with per-key barriers (dw.Barrier(by=...)) is not "
                                   "supported yet; per-key barriers number rows: .window(...).table()")
        _need_aggregates(self.aggs)
        _distinct_keys(self.keys)
        _refuse_unwindowed(self.aggs, "a barrier window aggregation")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        return _windowed_groups(self.input.schema, self._bounds(), self.keys, self.aggs)


@dataclass(frozen=True)
class BarrierAssign(_Barriered):
    """Every row with the number of its barrier window (``window_id``: the barriers before it), and
    with ``on`` the window's start (the previous barrier's time, NULL before the first barrier). A
    barrier row carries the id of the window it closes, and its own time as window_end; other rows
    get a NULL window_end (the barrier closing their window has not come yet). With per-key barriers
    (``window.by``) all of it is counted per key: a barrier moves only its own key's window.
    ``carried`` (new name, input column) pairs add, to every row, that column's value on the barrier
    row that opened its window (NULL before the first one): a page's metadata, read by its views."""

    input: PlanNode
    window: BarrierWindow
    carried: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        self._check_window("a barrier window")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        added = list(self._bounds())
        for name, source in self.carried:
            f = inp.field(source, f"table({name}=...) of a barrier window")
            added.append(Field(name, f.dtype, True))
        taken = set(inp.names)
        for f in added:
            if f.name in taken:
                raise PlanError(f"a barrier window adds column {f.name!r}, which the rows already have")
            taken.add(f.name)
        return Schema(inp.fields + tuple(added), inp.unsupported)


def _need_aggregates(aggs: tuple[tuple[str, AggCall], ...]) -> None:
    if not aggs:
        raise PlanError("agg: at least one aggregate is needed, e.g. agg(n=dw.count())")


def _distinct_keys(keys: tuple[str, ...]) -> None:
    if len(set(keys)) != len(keys):
        raise PlanError(f"group_by: a key is given twice in {list(keys)}")


def _windowed_groups(inp: Schema, bounds: tuple[Field, ...], keys: tuple[str, ...],
                     aggs: tuple[tuple[str, AggCall], ...]) -> Schema:
    """A windowed aggregation's rows: the window's bounds, the group keys, the aggregates."""
    fields = list(bounds)
    for k in keys:
        if k in (WINDOW_START, WINDOW_END) or k in {f.name for f in bounds}:
            raise PlanError(f"group_by: {k!r} is already part of every windowed group")
        fields.append(inp.field(k, "group_by"))
    for name, call in aggs:
        fields.append(Field(name, *agg_type(call, inp, name)))
    return Schema(tuple(fields), inp.unsupported)


@dataclass(frozen=True)
class GroupAggregate(_OneInput):
    """Group-by without a window: an updating table of one row per group (Flink's GROUP BY on a
    stream). After each input batch, a new group's row is inserted (+I), a changed one updated
    (-U old, +U new), an emptied one deleted (-D). Rows of an updating input are retracted."""

    input: PlanNode
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggCall], ...]
    state_ttl_ms: int | None = None  # a group leaves the state once the watermark is this far past its last row
    # state_ttl_ms (None too) was given for this operator itself (Flink's STATE_TTL hint): a session's
    # table.exec.state.ttl does not replace it
    ttl_given: bool = False

    def __post_init__(self) -> None:
        _need_aggregates(self.aggs)
        _distinct_keys(self.keys)
        _check_state_ttl("agg", self.state_ttl_ms, self.input)
        if self.state_ttl_ms is not None and any(function(call.func).distinct for _, call in self.aggs):
            raise UnsupportedError("agg: state_ttl with a distinct count is not supported yet (its value sets "
                                   "cannot be dropped per group)")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        fields = [inp.field(k, "group_by") for k in self.keys]
        for name, call in self.aggs:
            if name in self.keys:
                raise PlanError(f"agg: {name}= is also a group key")
            fields.append(Field(name, *agg_type(call, inp, name)))
        return Schema(tuple(fields), inp.unsupported)


def _check_state_ttl(what: str, ttl_ms: int | None, input: PlanNode) -> None:
    """A state TTL is positive, and over an appending input: a retraction of a key whose state has
    expired would need Flink's rule for it (dropped unless the key came back), not written yet."""
    if ttl_ms is None:
        return
    if ttl_ms <= 0:
        raise PlanError(f"{what}: state_ttl must be positive, got {ttl_ms}ms")
    if updating(input):
        raise UnsupportedError(f"{what}: state_ttl over {_UPDATING} is not supported yet; it is over an "
                               "append-only input")


@dataclass(frozen=True)
class SortKey:
    """One key of an order: ascending puts NULLs first, descending last (as Flink and Spark do);
    NaN is above every number."""

    column: str
    descending: bool = False

    def __str__(self) -> str:
        return f"{self.column} {'desc' if self.descending else 'asc'}"


RANK_ORDERS = ("first", "last")


@dataclass(frozen=True)
class TopN(_OneInput):
    """The first ``n`` rows of each partition (rows equal in ``by``) in ``order``, as Flink's
    ``ROW_NUMBER() OVER (PARTITION BY by ORDER BY order) <= n``; rows tied in ``order`` rank in
    arrival order. ``rank`` names a column holding each row's position (1..n), if given.

    Over windowed rows (a ``WindowAssign`` input) each window ranks apart and its rows are emitted
    once, when the window closes: the result appends. Otherwise the result updates as rows enter
    and leave the top, and an updating input's retracted rows leave it."""

    input: PlanNode
    n: int
    by: tuple[str, ...]
    order: tuple[SortKey, ...]
    rank: str | None = None
    state_ttl_ms: int | None = None  # a partition leaves the state once the watermark is this far past its last change

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise PlanError(f"top_n: n must be a positive integer, got {self.n!r}")
        if not self.order:
            raise PlanError("top_n: give an order, e.g. order=[dw.desc('price')]")
        if self.windowed and updating(self.input):
            raise UnsupportedError(f"a window top-N over {_UPDATING} is not supported yet")
        if self.windowed and self.state_ttl_ms is not None:
            raise PlanError("top_n: a window top-N forgets each window when it fires; it takes no state_ttl")
        _check_state_ttl("top_n", self.state_ttl_ms, self.input)
        _ = self.schema

    @property
    def windowed(self) -> bool:
        return isinstance(self.input, WindowAssign)

    @property
    def partition(self) -> tuple[str, ...]:
        """What a rank is counted within: the window (if any) and ``by``."""
        return ((WINDOW_START, WINDOW_END) if self.windowed else ()) + self.by

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        _check_ranking_columns("top_n", inp, self.by, self.order)
        if self.rank is None:
            return inp
        if self.rank in inp:
            raise PlanError(f"top_n: rank={self.rank!r} is already a column; choose another name")
        return Schema(inp.fields + (Field(self.rank, DType.INT64, False),), inp.unsupported)


@dataclass(frozen=True)
class Deduplicate(_OneInput):
    """One row per distinct ``on``: the first or the last by ``order`` (a column; None: arrival),
    ties broken by arrival. Keeping the first in arrival order appends (later rows are dropped);
    otherwise a row that wins replaces the one kept (-U, +U): the result updates."""

    input: PlanNode
    on: tuple[str, ...]
    keep: str = "first"
    order: str | None = None
    state_ttl_ms: int | None = None  # a key leaves the state once the watermark is this far past its last change

    def __post_init__(self) -> None:
        if self.keep not in RANK_ORDERS:
            raise PlanError(f"deduplicate: keep={self.keep!r}; use 'first' or 'last'")
        _check_state_ttl("deduplicate", self.state_ttl_ms, self.input)
        if not self.on:
            raise PlanError("deduplicate: give the columns that identify a row, e.g. on=['bidder', 'auction']")
        if updating(self.input):
            raise UnsupportedError(f"deduplicate: the input is {_UPDATING}; deduplicate an append-only input")
        _check_ranking_columns("deduplicate", self.input.schema, self.on,
                               () if self.order is None else (SortKey(self.order),))

    @property
    def appends(self) -> bool:
        """Only the first row in arrival order is ever kept: nothing is replaced."""
        return self.keep == "first" and self.order is None

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True)
class Over(_OneInput):
    """Each row with aggregates over a frame of its partition: the ``preceding`` rows before it and
    itself (``ROWS BETWEEN preceding PRECEDING AND CURRENT ROW``) in ``order_by``, rows tied in the
    order by arrival. The result updates: after each batch a partition's rows whose aggregates
    changed are updated, so a row arriving out of order updates the rows after it, and a
    retracted row leaves its partition."""

    input: PlanNode
    partition_by: tuple[str, ...]
    order_by: tuple[SortKey, ...]
    preceding: int
    aggs: tuple[tuple[str, AggCall], ...]

    def __post_init__(self) -> None:
        if isinstance(self.preceding, bool) or not isinstance(self.preceding, int) or self.preceding < 0:
            raise PlanError(f"over: rows=(preceding, 0) takes a preceding count >= 0, got {self.preceding!r}")
        if not self.order_by:
            raise PlanError("over: give order_by, e.g. over(partition_by='k', order_by='ts', rows=(10, 0))")
        _check_ranking_columns("over", self.input.schema, self.partition_by, self.order_by)
        _refuse_unwindowed(self.aggs, "an OVER window")
        _ = self.schema

    @cached_property
    def schema(self) -> Schema:
        inp = self.input.schema
        fields = list(inp.fields)
        for name, call in self.aggs:
            if name in inp:
                raise PlanError(f"over: {name}= is already a column; an aggregate over a window adds a new one")
            fields.append(Field(name, *agg_type(call, inp, name)))
        return Schema(tuple(fields), inp.unsupported)


def distinct_calls(aggs: tuple[tuple[str, AggCall], ...]) -> list[tuple[str, AggCall]]:
    """The aggregates that keep sets of values (``count_distinct``)."""
    return [(name, call) for name, call in aggs if function(call.func).distinct]


SPLIT_DISTINCT = ("count_distinct in a tumbling or sliding window is counted in two steps: once per "
                  "(window, keys, value), then per window and keys, so every other aggregate of the "
                  "aggregation must give its result from its results over the parts of a group")
SEPARATELY = (" Compute it in an aggregation of its own over the same window and keys, and join the two "
              "on window_start, window_end and the keys (a window join; a NULL key never matches).")


def check_split_distinct(node: Aggregate) -> None:
    """What a tumbling or sliding window's aggregation with ``count_distinct`` must hold, so that
    every engine accepts what the compiled engine's two steps (``darwin.plan.split_distinct``)
    compute exactly: one distinct argument (any filters), not reading the window's bounds, and a
    column if late rows are kept (they keep the input's columns); every other aggregate one that
    combines exactly from its results over parts of a group (``combined_by``, ``combines_exactly``):
    counts, integer sums, min and max -- not avg or a float sum, which round by how values are
    grouped."""
    distinct = distinct_calls(node.aggs)
    if not distinct:
        return
    schema = node.input.schema
    name, first = distinct[0]
    for other_name, call in distinct[1:]:
        if call.arg != first.arg:
            raise UnsupportedError(
                f"agg {other_name}={call}: count_distinct of more than one expression in one windowed aggregation "
                f"is not supported yet ({first.arg} in {name}=, {call.arg} in {other_name}=; counts of one "
                "expression with different filters are)." + SEPARATELY)
    assert first.arg is not None  # agg_type refuses count_distinct() without a column
    if columns_of(first.arg) & {WINDOW_START, WINDOW_END}:
        raise UnsupportedError(f"agg {name}={first}: count_distinct of the window's bounds is not supported "
                               "(they are one value per window)")
    if node.input.late_output and not isinstance(first.arg, Column):
        raise UnsupportedError(f"agg {name}={first}: count_distinct of an expression in a window keeping late "
                               "rows (late_output=True) is not supported; add the expression as a column "
                               "first (.with_columns(...)) and count that")
    for other_name, call in node.aggs:
        f = function(call.func)
        if f.distinct:
            continue
        arg = None if call.input is None else type_of(call.input, schema).dtype
        if f.combined_by is None or not f.combines_exactly(arg):
            what = call.func if arg is None else f"{call.func} of {arg.value}"
            why = "it would round by how the values were grouped" if f.combined_by is not None else \
                f"no aggregate gives a group's {call.func} from its parts' results"
            raise UnsupportedError(
                f"agg {other_name}={call}: {what} beside count_distinct ({name}=) in a windowed aggregation is "
                f"not supported. {SPLIT_DISTINCT}, which {what} does not ({why})." + SEPARATELY)


def _refuse_unwindowed(aggs: tuple[tuple[str, AggCall], ...], where: str) -> None:
    """Aggregates these windows do not support (``count_distinct``) fail when the plan is built."""
    for name, call in distinct_calls(aggs):
        raise UnsupportedError(f"agg {name}={call}: {call.func} in {where} is not supported yet. It is in a "
                               "tumbling or sliding window (.window(dw.Tumble(...))/.window(dw.Slide(...))) and "
                               "in an aggregation without a window (table.group_by(...).agg(...)).")


def _check_ranking_columns(what: str, schema: Schema, by: tuple[str, ...], order: tuple[SortKey, ...]) -> None:
    if len(set(by)) != len(by):
        raise PlanError(f"{what}: a column is given twice in {list(by)}")
    for c in by:
        schema.field(c, what)
    for k in order:
        if not isinstance(k, SortKey):
            raise PlanError(f"{what}: order takes column names or dw.asc(...)/dw.desc(...), got {k!r}")
        schema.field(k.column, f"{what} order")


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


JOIN_KINDS = ("inner", "left", "right", "full")
_UPDATING = "an updating result (an outer join's, an aggregation's or a top-N's without a window)"
CHANGE_KIND = "__darwin_change"  # the hidden column of updating streams: a ChangeKind per row


class ChangeKind:
    """What an output row of an updating result does (Flink's RowKind)."""

    INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
    LABELS = ("+I", "-U", "+U", "-D")


@dataclass(frozen=True)
class Join:
    """Rows of ``left`` and ``right`` whose keys are equal (a NULL key never matches, but in a pair
    of ``null_safe``, where a NULL meets a NULL: Flink's IS NOT DISTINCT FROM key) and for which
    ``where`` (over the joined schema) holds; ``how`` keeps unmatched rows of one or both sides,
    padded with NULLs. A right column whose name the left side already has gets ``suffix``.

    Whether it is a regular, an interval or a window join follows from the keys and the condition
    (``darwin.plan.temporal``): both engines read it from there.
    """

    left: PlanNode
    right: PlanNode
    left_keys: tuple[ExprNode, ...]
    right_keys: tuple[ExprNode, ...]
    how: str = "inner"
    where: ExprNode | None = None
    suffix: str = "_right"
    state_ttl_ms: int | None = None  # rows leave the state once the watermark has moved this far past them
    null_safe: frozenset[int] = frozenset()  # the key pairs (by position) whose NULLs match each other
    # (left, right): a side's own TTL, where one was given for it (Flink's STATE_TTL hint names the
    # inputs); 0 keeps that side's rows for ever; None: the side takes state_ttl_ms
    side_ttl_ms: tuple[int | None, int | None] = (None, None)

    def __post_init__(self) -> None:
        if self.how not in JOIN_KINDS:
            raise PlanError(f"join: how={self.how!r}; use one of {list(JOIN_KINDS)}")
        if not self.left_keys or len(self.left_keys) != len(self.right_keys):
            raise PlanError("join: give the keys as pairs, e.g. on=[('auction', 'id')] or left_on=/right_on= "
                            "of the same length")
        if not self.null_safe <= set(range(len(self.left_keys))):
            raise PlanError(f"join: null_safe names key pairs {sorted(self.null_safe)} of {len(self.left_keys)}")
        for i, (lk, rk) in enumerate(zip(self.left_keys, self.right_keys)):
            lt = type_of(lk, self.left.schema, f"join key {i} of the left side").dtype
            rt = type_of(rk, self.right.schema, f"join key {i} of the right side").dtype
            if _key_family(lt) != _key_family(rt):
                raise DarwinTypeError(f"join: key pair {i} compares {lk} ({_name(lt)}) with {rk} ({_name(rt)}); "
                                      "cast one side so both have the same type")
        if not self.suffix:
            raise PlanError("join: suffix must not be empty")
        if self.state_ttl_ms is not None and self.state_ttl_ms <= 0:
            raise PlanError(f"join: state_ttl must be positive, got {self.state_ttl_ms}ms")
        if any(ms is not None and ms < 0 for ms in self.side_ttl_ms):
            raise PlanError(f"join: a side's state_ttl must not be negative, got {self.side_ttl_ms}")
        if self.where is not None:
            t = type_of(self.where, self.schema, "join condition (where=)")
            if t.dtype not in (DType.BOOL, None):
                raise DarwinTypeError(f"join: condition {self.where} is {t.dtype.value}, not bool")

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.left, self.right)

    def ttl_of(self, side: int) -> int | None:
        """How long a row of ``side`` (0 left, 1 right) is kept after its arrival; None: for ever."""
        own = self.side_ttl_ms[side]
        return self.state_ttl_ms if own is None else own or None

    @property
    def expires(self) -> bool:
        """Whether rows of either side leave the state by a TTL."""
        return self.ttl_of(0) is not None or self.ttl_of(1) is not None

    def with_inputs(self, *inputs: PlanNode) -> Join:
        return _over(self, ("left", "right"), inputs)

    @cached_property
    def plain_keys(self) -> tuple[tuple[ExprNode, ...], tuple[ExprNode, ...]]:
        """Key pairs where a NULL never matches that pair the same rows as these keys: a null-safe
        pair becomes a pair of is-NULL flags and a pair of its values with NULL read as the type's
        zero, both never NULL. The compiled engine's join index takes these."""
        return plain_keys(self.left_keys, self.right_keys, self.null_safe, self.left.schema, self.right.schema)

    @cached_property
    def right_names(self) -> dict[str, str]:
        """Each right column's name in the output."""
        return joined_names(self.left.schema.names, self.right.schema.names, self.suffix)

    @cached_property
    def schema(self) -> Schema:
        pad_left, pad_right = self.how in ("right", "full"), self.how in ("left", "full")
        fields = [Field(f.name, f.dtype, f.nullable or pad_left) for f in self.left.schema.fields]
        fields += [Field(self.right_names[f.name], f.dtype, f.nullable or pad_right)
                   for f in self.right.schema.fields]
        return Schema(tuple(fields), self.left.schema.unsupported + self.right.schema.unsupported)


@dataclass(frozen=True)
class LookupJoin:
    """A stream joined with a bounded table loaded once (``Table.lookup()``): the table's rows are
    indexed by key and no stream row is kept. ``how`` is inner or left."""

    input: PlanNode
    table: PlanNode
    left_keys: tuple[ExprNode, ...]
    right_keys: tuple[ExprNode, ...]
    how: str = "inner"
    where: ExprNode | None = None
    suffix: str = "_right"
    null_safe: frozenset[int] = frozenset()  # the key pairs (by position) whose NULLs match each other

    def __post_init__(self) -> None:
        if self.how not in ("inner", "left"):
            raise PlanError(f"lookup join: how={self.how!r}; a lookup join is 'inner' or 'left'")
        for n in walk(self.table):
            if not isinstance(n, (Scan, Filter, Project)):
                raise PlanError(f"lookup(): the table must be a bounded source with filters and projections, "
                                f"not a {type(n).__name__}")
        for i, key in enumerate(self.right_keys):
            if type_of(key, self.table.schema, f"lookup key {i}").dtype is DType.FLOAT64:
                raise DarwinTypeError(f"lookup join: key {key} is float64; the index holds integer, timestamp, "
                                      "string or bool keys (cast both keys, e.g. .cast('int64'))")
        _ = self.as_join.schema  # the keys, the condition and the names are checked as for any join

    @cached_property
    def as_join(self) -> Join:
        """The same join as a regular one: it defines the keys' types, the output names and the schema."""
        return Join(self.input, self.table, self.left_keys, self.right_keys, self.how, self.where, self.suffix,
                    null_safe=self.null_safe)

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return (self.input, self.table)

    def with_inputs(self, *inputs: PlanNode) -> LookupJoin:
        return _over(self, ("input", "table"), inputs)

    @property
    def right_names(self) -> dict[str, str]:
        return self.as_join.right_names

    @property
    def schema(self) -> Schema:
        return self.as_join.schema


@dataclass(frozen=True)
class Union:
    """Every row of every input (UNION ALL); the inputs have the same column names and types. A
    union of changelogs is a changelog: over an updating input each part's rows keep their change
    kinds (an appending part's are +I) and each retraction still takes back a row of its own part."""

    parts: tuple[PlanNode, ...]

    def __post_init__(self) -> None:
        if len(self.parts) < 2:
            raise PlanError("union: needs at least two tables")
        first = self.parts[0].schema
        for i, p in enumerate(self.parts[1:], 1):
            s = p.schema
            if s.names != first.names or [f.dtype for f in s.fields] != [f.dtype for f in first.fields]:
                raise PlanError(f"union: table {i} has columns {_columns(s)}, table 0 has {_columns(first)}; "
                                "select the same columns, in the same order, with the same types")

    @property
    def inputs(self) -> tuple[PlanNode, ...]:
        return self.parts

    def with_inputs(self, *inputs: PlanNode) -> Union:
        if len(inputs) != len(self.parts):
            raise PlanError(f"Union takes {len(self.parts)} inputs, got {len(inputs)}")
        return self if all(a is b for a, b in zip(inputs, self.parts)) else Union(tuple(inputs))

    @cached_property
    def schema(self) -> Schema:
        first = self.parts[0].schema
        nullable = [any(p.schema.fields[j].nullable for p in self.parts) for j in range(len(first))]
        return Schema(tuple(Field(f.name, f.dtype, n) for f, n in zip(first.fields, nullable)), first.unsupported)


AnyAggregate = Aggregate | GroupAggregate | SessionAggregate | BarrierAggregate


def aggregate_reads(n: AnyAggregate) -> set[str]:
    """The columns an aggregation reads of its input: keys, window (if any) and arguments."""
    uses = set(n.keys)
    if isinstance(n, Aggregate):
        uses |= {n.input.window.on, WINDOW_START, WINDOW_END}
    if isinstance(n, SessionAggregate):
        uses.add(n.window.on)
    if isinstance(n, BarrierAggregate):
        uses |= barrier_reads(n.window)
    for _, call in n.aggs:
        uses |= columns_of(call)
    return uses


def barrier_reads(w: BarrierWindow) -> set[str]:
    """The columns a barrier window reads: its condition's and its time column."""
    return set(columns_of(w.when)) | ({w.on} if w.on else set()) | set(w.by)


def ranking_reads(n: TopN | Deduplicate | Over) -> set[str]:
    """The columns a top-N, a deduplication or an OVER aggregation ranks by (and aggregates)."""
    if isinstance(n, Over):
        return set(n.partition_by) | {k.column for k in n.order_by} | {c for _, a in n.aggs for c in columns_of(a)}
    if isinstance(n, TopN):
        return set(n.partition) | {k.column for k in n.order}
    return set(n.on) | ({n.order} if n.order is not None else set())


def join_reads(n: Join | LookupJoin, outputs: set[str]) -> tuple[set[str], set[str]]:
    """The columns of each input a join reads to produce the output columns ``outputs``: those
    and what its keys and condition read, each under its input's name."""
    left, right = n.inputs
    wanted = outputs | (set() if n.where is None else set(columns_of(n.where)))
    left_uses = (wanted & set(left.schema.names)) | {c for k in n.left_keys for c in columns_of(k)}
    right_uses = {name for name, out in n.right_names.items() if out in wanted}
    right_uses |= {c for k in n.right_keys for c in columns_of(k)}
    return left_uses, right_uses


def with_change_kind(schema: Schema) -> Schema:
    """``schema`` plus the hidden change-kind column an updating stream's rows carry."""
    return Schema(schema.fields + (Field(CHANGE_KIND, DType.INT64, False),), schema.unsupported)


def joined_names(left: tuple[str, ...], right: tuple[str, ...], suffix: str) -> dict[str, str]:
    """Right column -> its output name: unchanged, or with ``suffix`` (repeated) where taken."""
    taken = set(left)
    out = {}
    for name in right:
        new = name
        while new in taken:
            new += suffix
        taken.add(new)
        out[name] = new
    return out


def key_pairs(join: Join | LookupJoin, equals: str) -> list[str]:
    """Each key pair as text, a null-safe one with ``<=>`` (Spark's and MySQL's null-safe equality)."""
    return [f"{a}{equals.replace('=', '<=>') if i in join.null_safe else equals}{b}"
            for i, (a, b) in enumerate(zip(join.left_keys, join.right_keys))]


_ZERO = {DType.INT64: 0, DType.TIMESTAMP: 0, DType.FLOAT64: 0.0, DType.BOOL: False, DType.STRING: ""}


def plain_keys(left_keys: tuple[ExprNode, ...], right_keys: tuple[ExprNode, ...], null_safe: frozenset[int],
               left: Schema, right: Schema) -> tuple[tuple[ExprNode, ...], tuple[ExprNode, ...]]:
    """``Join.plain_keys`` of these keys over these inputs."""
    lk: list[ExprNode] = []
    rk: list[ExprNode] = []
    for i, (a, b) in enumerate(zip(left_keys, right_keys)):
        if i not in null_safe:
            lk.append(a)
            rk.append(b)
            continue
        lk.append(Unary("is_null", a))
        rk.append(Unary("is_null", b))
        for keys, key, schema in ((lk, a, left), (rk, b, right)):
            dtype = type_of(key, schema, f"join key {i}").dtype
            if dtype is not None:  # a NULL literal's flag says it all
                keys.append(Case(((Unary("is_null", key), Literal(_ZERO[dtype], dtype)),), key))
        if len(lk) != len(rk):  # one side a NULL literal: the flags alone
            del (lk if len(lk) > len(rk) else rk)[-1]
    return tuple(lk), tuple(rk)


def _key_family(t: DType | None) -> str | None:
    return None if t is None else "integer" if t in (DType.INT64, DType.TIMESTAMP) else t.value


def _name(t: DType | None) -> str:
    return "null" if t is None else t.value


def _refuse_unbounded_time(node: PlanNode, column: str, slide_ms: int | None, what: str) -> None:
    """Event-time windows over a column no watermark bounds are refused, as Flink refuses windows on
    a column that is not a time attribute: over another operator's rows, lateness is judged by that
    operator's watermark, and a column that may lie far behind it (a window's ``window_start`` into
    a shorter window, a group key, a regular join's times) would make which rows come late depend
    on where batches end (``TimeLag.judged_alike``). Updating inputs are refused by their readers."""
    from darwin.plan.explain import describe
    from darwin.plan.temporal import judged_by_source, producer, time_lags

    _refuse_time_after_regular_join(node, column, what)
    if judged_by_source(node) or updating(node):
        return
    lag = time_lags(node).get(column)
    if lag is not None and lag.judged_alike(slide_ms):
        return
    behind = "may lie any time behind its watermark" if lag is None else \
        f"lies up to {lag.behind_ms} ms behind its watermark"
    raise UnsupportedError(
        f"{what} on {column!r} over the output of {describe(producer(node))}: {column!r} is not a time attribute "
        f"there (it {behind}), so which of its rows came late would depend on where batches end (Flink "
        "refuses windows on a column that is not a time attribute). Window on a time attribute: a source's "
        "time column before that operator, a windowed aggregation's window_end, or window_end - 1 (Flink's "
        "window_time)")


def _refuse_time_after_regular_join(node: PlanNode, column: str, what: str) -> None:
    """Event-time windows over a regular join's rows are refused, as in Flink: a row the join keeps
    pairs with rows of any later time, so its output carries no bound on ``column`` that a watermark
    could follow, and which rows came late would depend on where batches end."""
    from darwin.plan.explain import describe
    from darwin.plan.temporal import join_timing, time_attributes

    joins = [n for n in walk(node) if isinstance(n, Join) and join_timing(n) is None]
    if joins and column not in time_attributes(node):
        raise UnsupportedError(
            f"{what} on {column!r} over the output of a regular join ({describe(joins[0])}): a row the join "
            f"keeps in state pairs with rows of any later time, so "
            f"the joined rows carry no bound on {column!r} a watermark could follow, and which rows came late "
            "would depend on where batches end (Flink refuses it too). Window the sides before joining, or bound "
            "the join in time: an interval join (where=col('t_right').between(col('t') - ..., col('t') + ...)) "
            "or a window join (both sides windowed alike, joined on window_start)")


def _columns(s: Schema) -> str:
    return "[" + ", ".join(f"{f.name}: {f.dtype.value}" for f in s.fields) + "]"


PlanNode = (Scan | Filter | Project | WindowAssign | Aggregate | SessionAggregate | GroupAggregate | TopN | Deduplicate
            | Over | Join | LookupJoin | Union | BarrierAggregate | BarrierAssign)


def updating(node: PlanNode) -> bool:
    """Whether ``node`` produces an updating result (rows carry a change kind), not only appends.

    Group aggregations without a window update their groups' rows, and so do a top-N without a
    window and a deduplication that may replace the row it kept. Outer regular joins update: a
    NULL-padded row is retracted when its match arrives. Interval and window joins emit padded
    rows only when a row can no longer match, so they append.
    """
    from darwin.plan.temporal import join_timing

    for n in walk(node):
        if isinstance(n, (GroupAggregate, Over)) or (isinstance(n, TopN) and not n.windowed) \
                or (isinstance(n, Deduplicate) and not n.appends):
            return True
        if isinstance(n, Join) and n.how != "inner" and join_timing(n) is None:
            return True
    return False


def late_output_schema(plan: PlanNode) -> Schema | None:
    """Schema of the late rows a plan keeps (its window's input), or None if it keeps none.

    One window of the plan may keep late rows: they go to one output.
    """
    kept = [n for n in walk(plan) if isinstance(n, WindowAssign) and n.late_output]
    if len(kept) > 1:
        raise PlanError("late_output=True is allowed on one window of a query; it is set on "
                        f"{len(kept)} windows")
    if kept:
        _refuse_late_output_not_aggregated(plan, kept[0])
    return kept[0].input.schema if kept else None


def _refuse_late_output_not_aggregated(plan: PlanNode, window: WindowAssign) -> None:
    """Only a windowed aggregation returns the rows it finds late: a window top-N or a window join
    counts its late rows and drops them, and a window's rows themselves are never late, so
    late_output=True on a window read otherwise would keep nothing while rows were dropped."""
    from darwin.plan.explain import describe

    readers = [n for n in walk(plan) if any(i is window for i in n.inputs)]
    other = next((n for n in readers if not isinstance(n, Aggregate)), None)
    if other is None and readers:
        return
    read_by = "its rows are the result" if other is None else f"its rows are read by {describe(other)}"
    raise PlanError(f"late_output=True on {window.window}: {read_by}, which returns no late rows (only a "
                    "windowed aggregation, .window(...).group_by(...).agg(...), does; a window top-N or window "
                    "join counts its late rows in late_rows and drops them, and a window's rows alone are never "
                    "late). Leave late_output out")


def _arity(node: Any, inputs: tuple[PlanNode, ...], n: int) -> None:
    if len(inputs) != n:
        raise PlanError(f"{type(node).__name__} takes {n} input(s), got {len(inputs)}")


def _over(node: Any, fields: tuple[str, ...], inputs: tuple[PlanNode, ...]) -> Any:
    """``node`` with its input ``fields`` set to ``inputs``: itself if they are the same nodes."""
    _arity(node, inputs, len(fields))
    if all(getattr(node, f) is i for f, i in zip(fields, inputs)):
        return node
    return dataclasses.replace(node, **dict(zip(fields, inputs)))


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
