"""The fluent API: immutable tables that build a logical plan.

Examples
--------
>>> import pyarrow as pa, darwin as dw
>>> t = dw.from_arrow(pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, 2]}), time="ts")
>>> t.window(dw.Tumble("1s", on="ts")).agg(n=dw.count()).collect()["n"].to_pylist()
[1, 1]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import pyarrow as pa

from darwin.config import Config
from darwin.durations import to_millis
from darwin.errors import PlanError
from darwin.expr import Agg, Expr, IntoExpr, OverAgg, _node
from darwin.io.paced import Paced
from darwin.io.sinks import Sink
from darwin.io.source import Source
from darwin.io.sources import ArrowSource, BatchSource, ParquetSource
from darwin.plan import nodes as pn
from darwin.plan.exprs import Column, ExprNode, widened
from darwin.plan.window import BarrierWindow, SessionWindow, Window
from darwin.runtime.output import RunResult

if TYPE_CHECKING:
    from darwin.runtime.control import JobControl
    from darwin.runtime.job import JobResult


class Table:
    """A query under construction; every method returns a new ``Table``."""

    __slots__ = ("plan",)

    def __init__(self, plan: pn.PlanNode) -> None:
        self.plan = plan

    # -- schema ---------------------------------------------------------------------
    @property
    def schema(self) -> pa.Schema:
        return self.plan.schema.to_arrow()

    @property
    def columns(self) -> list[str]:
        return list(self.plan.schema.names)

    def __repr__(self) -> str:
        return f"Table({self.plan.schema})"

    # -- relational operations ------------------------------------------------------
    def filter(self, predicate: Expr) -> Table:
        """Keep the rows where ``predicate`` is true (null counts as false)."""
        return Table(pn.Filter(self.plan, _node(predicate)))

    def select(self, /, *columns: str | Expr, **named: IntoExpr) -> Table:
        """Exactly these columns, in this order: names, aliased expressions, or name=expression
        (``name="other"`` renames a column, as in polars; ``lit("other")`` is the text)."""
        plan, named = _over_columns(self.plan, named)
        exprs = [_named(c) for c in columns] + [(name, _named_value(e)) for name, e in named.items()]
        return Table(pn.Project(plan, tuple(exprs)))

    def with_columns(self, /, *columns: Expr, **named: IntoExpr) -> Table:
        """All current columns, plus (or replacing) the given ones."""
        plan, named = _over_columns(self.plan, named)
        new = dict([_named(c) for c in columns] + [(name, _named_value(e)) for name, e in named.items()])
        exprs = [(n, new.pop(n, Column(n))) for n in self.plan.schema.names]
        return Table(pn.Project(plan, tuple(exprs + list(new.items()))))

    def drop(self, *names: str) -> Table:
        for n in names:
            self.plan.schema.field(n, "drop")
        return self.select(*[n for n in self.plan.schema.names if n not in names])

    def group_by(self, /, *keys: str | Expr, **named: IntoExpr) -> GroupedTable:
        """Groups without a window: ``agg`` makes an updating table of one row per group, changed
        as rows arrive (``collect()`` gives the final rows, ``changelog()`` every change).
        Keys are column names, or expressions named ``name=expr``."""
        plan = self.plan
        if named:
            computed = [(name, _named_value(e)) for name, e in named.items()]
            plan = pn.Project(plan, tuple((n, Column(n)) for n in plan.schema.names if n not in named)
                              + tuple(computed))
        return GroupedTable(plan, _key_names(plan, keys) + tuple(named))

    def agg(self, /, state_ttl: Any = None, **aggs: Agg) -> Table:
        """One updating row over all rows (a global aggregation without a window)."""
        return GroupedTable(self.plan, ()).agg(state_ttl, **aggs)

    def top_n(self, n: int, by: str | Sequence[str] = (), order: OrderBy = (), rank: str | None = None,
              state_ttl: Any = None) -> Table:
        """The first ``n`` rows per ``by`` in ``order`` (``ROW_NUMBER() ... <= n``), an updating table:
        rows enter and leave the top as they arrive. ``rank`` adds each row's position (1..n).
        ``state_ttl`` forgets a partition, silently, once the watermark is that far past the
        watermark at its top's last change (Flink's ``table.exec.state.ttl``, in event time)."""
        return Table(pn.TopN(self.plan, n, _names(by), _order(order), rank, _state_ttl(state_ttl)))

    def deduplicate(self, on: str | Sequence[str], keep: str = "first", order: str | None = None,
                    state_ttl: Any = None) -> Table:
        """One row per distinct ``on``: the ``first`` or ``last`` by column ``order`` (default: arrival).
        Keeping the first arrival appends; otherwise a later winner replaces the row (-U, +U).
        ``state_ttl`` forgets a key, silently, once the watermark is that far past the watermark at
        its kept row's last change; a later row of it is then kept as the first again."""
        return Table(pn.Deduplicate(self.plan, _names(on), keep, order, _state_ttl(state_ttl)))

    @overload
    def window(self, window: Window, late_output: bool = False) -> WindowedTable: ...

    @overload
    def window(self, window: SessionWindow, late_output: bool = False) -> SessionWindowedTable: ...

    @overload
    def window(self, window: BarrierWindow, late_output: bool = False) -> BarrierWindowedTable: ...

    def window(self, window: Window | SessionWindow | BarrierWindow, late_output: bool = False) \
            -> WindowedTable | SessionWindowedTable | BarrierWindowedTable:
        """Assign rows to event-time windows; ``late_output`` keeps late rows instead of only counting them.
        Session windows (``dw.Session``) are only aggregated: ``.group_by(...).agg(...)``; barrier
        windows (``dw.Barrier``) are aggregated or attached to rows (``.table()``)."""
        if isinstance(window, BarrierWindow):
            if late_output:
                raise PlanError("late_output=True: barrier windows have no late rows (they are not event-time windows)")
            pn.check_barrier_window(window, self.plan)  # the condition and the time column, now
            return BarrierWindowedTable(self.plan, window)
        if isinstance(window, SessionWindow):
            if late_output:
                raise PlanError("late_output=True is not supported for session windows yet; late rows are counted")
            return SessionWindowedTable(self.plan, window)
        if not isinstance(window, Window):
            raise PlanError(f"window() takes dw.Tumble(...), dw.Slide(...), dw.Session(...) or dw.Barrier(...), "
                            f"got {window!r}")
        return WindowedTable(pn.WindowAssign(self.plan, window, late_output))

    # -- joins ----------------------------------------------------------------------
    def join(self, other: Table | WindowedTable | LookupTable, on: Any = None, *, left_on: Any = None,
             right_on: Any = None, how: str = "inner", where: Expr | None = None, suffix: str = "_right",
             state_ttl: Any = None) -> Table:
        """Rows of this table and ``other`` whose keys are equal (NULL keys never match).

        Keys are ``on=[(left, right), ...]`` pairs, or ``left_on=``/``right_on=``; each a column name
        or an expression. A pair given as ``dw.null_safe(left, right)`` in ``on=`` matches a NULL
        with a NULL, as Flink's IS NOT DISTINCT FROM key. ``how`` is inner, left, right or full;
        ``where`` is a further condition over the joined columns. A right column whose name is taken
        gets ``suffix``. A condition bounding both sides' event times makes an interval join, whose
        rows leave the state once they can no longer match; ``other`` from ``.lookup()`` makes a
        lookup join; ``state_ttl`` drops a regular join's rows once the watermark has moved that far
        past their arrival: one duration for both sides, or a pair ``(left, right)``, None keeping
        that side's rows for ever (Flink's STATE_TTL hint gives each input its own).
        """
        left_keys, right_keys, safe = _join_keys(on, left_on, right_on)
        condition = None if where is None else _node(where)
        if isinstance(other, LookupTable):
            if state_ttl is not None:
                raise PlanError("join: a lookup join keeps no stream rows, so it takes no state_ttl")
            lk, rk = _paired_keys(self.plan, other.plan, left_keys, right_keys)
            return Table(pn.LookupJoin(self.plan, other.plan, lk, rk, how, condition, suffix, safe))
        if isinstance(other, WindowedTable):
            raise PlanError("join: window both sides alike for a window join, e.g. "
                            "a.window(dw.Tumble('10s', on='t')).join(b.window(dw.Tumble('10s', on='t')), ...)")
        if not isinstance(other, Table):
            raise PlanError(f"join() takes a Table, a windowed table or a .lookup() table, got {other!r}")
        ttl, sides = _join_ttl(state_ttl)
        lk, rk = _paired_keys(self.plan, other.plan, left_keys, right_keys)
        return Table(pn.Join(self.plan, other.plan, lk, rk, how, condition, suffix, ttl, safe, sides))

    def union(self, *others: Table) -> Table:
        """Every row of this table and of ``others`` (UNION ALL); same column names and types."""
        for o in others:
            if not isinstance(o, Table):
                raise PlanError(f"union() takes tables, got {o!r}")
        return Table(pn.Union((self.plan, *(o.plan for o in others))))

    def lookup(self) -> LookupTable:
        """This bounded table as the static side of a lookup join: loaded once and indexed by key."""
        return LookupTable(self.plan)

    # -- execution ------------------------------------------------------------------
    def explain(self, config: Config | None = None) -> str:
        """Every stage: logical plan, optimized plan, operator graph with pipelines, generated source."""
        from darwin.runtime.executor import explain

        return explain(self.plan, config or Config())

    def execute(self, config: Config | None = None) -> RunResult:
        """Run to the end; the result, the late rows (if asked for) and the run's metrics."""
        from darwin.runtime.executor import run

        return run(self.plan, config or Config())

    def collect(self, config: Config | None = None) -> pa.Table:
        """The final result: for an updating result (outer joins), rows withdrawn are gone."""
        return self.execute(config).table

    def changelog(self, config: Config | None = None) -> pa.Table:
        """Every change of the result in order, with its kind in column ``op`` (+I, -U, +U, -D)."""
        return self.execute(config).changelog

    def sink(self, sink: Sink) -> SinkQuery:
        """Send the results to ``sink`` (``dw.sinks.Parquet``, ``dw.sinks.CSV``); ``.run()`` starts it.

        A sink that cannot write this result (an updating one to ``mode='append'``, a partition
        column or upsert key the result lacks) is refused here with a ``SinkError``."""
        from darwin.runtime.job import result_spec

        if not isinstance(sink, Sink):
            raise PlanError(f"sink() takes a sink such as dw.sinks.Parquet(path), got {sink!r}")
        sink.check(result_spec(self.plan))
        return SinkQuery(self.plan, sink)

    def iter_batches(self, config: Config | None = None) -> Iterator[pa.RecordBatch]:
        """Results as they are produced: for windowed queries, as windows fire (an updating result's
        with its change kinds in column ``op``)."""
        from darwin.runtime.executor import stream

        yield from stream(self.plan, config or Config())

    def iter_changes(self, config: Config | None = None) -> Iterator[pa.RecordBatch]:
        """The changes of the result as they are produced, each batch with its kinds in column ``op``
        (+I, -U, +U, -D; an append-only result's rows are all +I): ``changelog()`` one batch at a time."""
        from darwin.runtime.executor import stream
        from darwin.runtime.output import with_inserts

        updating = pn.updating(self.plan)
        for batch in stream(self.plan, config or Config()):
            yield batch if updating else with_inserts(batch)


class SinkQuery:
    """A query bound to a sink. ``run`` executes it with the config's checkpointing.

    With ``checkpoint_dir`` set, a run that is restarted after a crash resumes from
    the last complete checkpoint and the sink's committed output is exactly once.
    """

    __slots__ = ("plan", "target")

    def __init__(self, plan: pn.PlanNode, target: Sink) -> None:
        self.plan, self.target = plan, target

    def run(self, config: Config | None = None, control: JobControl | None = None) -> JobResult:
        """Run to the end of the input, or until ``control.stop()`` (a final checkpoint, then the end;
        ``JobResult.stopped`` says which). ``control.status()`` reads the job while it runs."""
        from darwin.runtime.job import run_job

        return run_job(self.plan, self.target, config or Config(), control)


class LookupTable:
    """A bounded table to join a stream with: ``stream.join(table.lookup(), on=[...])``."""

    __slots__ = ("plan",)

    def __init__(self, plan: pn.PlanNode) -> None:
        self.plan = plan


class WindowedTable:
    """A table whose rows carry windows; group it, aggregate it, or join it with one windowed alike."""

    __slots__ = ("plan",)

    def __init__(self, plan: pn.WindowAssign) -> None:
        self.plan = plan

    def join(self, other: WindowedTable, on: Any = None, *, left_on: Any = None, right_on: Any = None,
             how: str = "inner", where: Expr | None = None, suffix: str = "_right") -> Table:
        """A window join: rows of the same window whose keys are equal; a window's rows leave the
        state when it closes, and an outer join's unmatched rows are emitted then."""
        if not isinstance(other, WindowedTable) or not other.plan.window.same_windows(self.plan.window):
            raise PlanError("window join: window the other side with windows of the same size and slide, e.g. "
                            f"other.window({self.plan.window!r}) (over any of its time columns)")
        left_keys, right_keys, safe = _join_keys(on, left_on, right_on)
        lk, rk = _paired_keys(self.plan, other.plan, left_keys + [pn.WINDOW_START], right_keys + [pn.WINDOW_START])
        return Table(pn.Join(self.plan, other.plan, lk, rk, how, None if where is None else _node(where), suffix,
                             null_safe=safe))

    def group_by(self, *keys: str | Expr) -> GroupedTable:
        return GroupedTable(self.plan, _key_names(self.plan, keys))

    def agg(self, /, **aggs: Agg) -> Table:
        """One row per window over all rows (a global windowed aggregation)."""
        return GroupedTable(self.plan, ()).agg(**aggs)

    def top_n(self, n: int, by: str | Sequence[str] = (), order: OrderBy = (), rank: str | None = None) -> Table:
        """Flink's window top-N: the first ``n`` rows per window and ``by`` in ``order``, emitted once
        when the window closes (an appending result, with window_start/window_end)."""
        return Table(pn.TopN(self.plan, n, _names(by), _order(order), rank))

    def table(self) -> Table:
        """The rows with their window_start/window_end columns (one row per window)."""
        return Table(self.plan)


class SessionWindowedTable:
    """Rows to aggregate per key and session: ``.group_by(...).agg(...)`` (one row per session, with
    its window_start and window_end, when the watermark passes its end)."""

    __slots__ = ("plan", "window")

    def __init__(self, plan: pn.PlanNode, window: SessionWindow) -> None:
        self.plan, self.window = plan, window

    def group_by(self, *keys: str | Expr) -> GroupedTable:
        return GroupedTable(self.plan, _key_names(self.plan, keys), self.window)

    def agg(self, /, **aggs: Agg) -> Table:
        """Sessions over all rows, without a key."""
        return GroupedTable(self.plan, (), self.window).agg(**aggs)


class BarrierWindowedTable:
    """Rows in data-triggered windows: ``.group_by(...).agg(...)`` emits every group's row of a window
    when the barrier closing it arrives; ``.table()`` gives the rows with their window's id."""

    __slots__ = ("plan", "window")

    def __init__(self, plan: pn.PlanNode, window: BarrierWindow) -> None:
        self.plan, self.window = plan, window

    def group_by(self, *keys: str | Expr) -> GroupedTable:
        return GroupedTable(self.plan, _key_names(self.plan, keys), barrier=self.window)

    def agg(self, /, **aggs: Agg) -> Table:
        """One row per window over all rows, without a key."""
        return GroupedTable(self.plan, (), barrier=self.window).agg(**aggs)

    def table(self, /, **carried: str) -> Table:
        """Every row with its window_id (and window_start, window_end with ``on=``); each
        ``name="column"`` adds that column's value on the barrier row that opened the row's window
        (NULL before the first barrier), e.g. ``.table(page_category="category")``."""
        for name, source in carried.items():
            if not isinstance(source, str):
                raise PlanError(f"table({name}=...): give the name of a column of the barrier rows, got {source!r}")
        return Table(pn.BarrierAssign(self.plan, self.window, tuple(carried.items())))


def Barrier(when: IntoExpr, on: str | None = None, by: str | Sequence[str] = ()) -> BarrierWindow:  # noqa: N802
    """Windows closed by data: each row for which ``when`` holds (a barrier) closes the window of
    every key; ``on`` names a timestamp column whose barrier times bound the windows. With ``by``,
    a barrier closes only the window of its own ``by`` key (e.g. a page's metadata update)."""
    if isinstance(when, str):
        when = Column(when)
    return BarrierWindow(_node(when), on, _names(by))


class GroupedTable:
    """Grouped rows: of windows (a windowed aggregation that appends) or of the whole stream (an
    updating aggregation)."""

    __slots__ = ("plan", "keys", "session", "barrier")

    def __init__(self, plan: pn.PlanNode, keys: tuple[str, ...], session: SessionWindow | None = None,
                 barrier: BarrierWindow | None = None) -> None:
        self.plan, self.keys, self.session, self.barrier = plan, keys, session, barrier

    def agg(self, /, state_ttl: Any = None, **aggs: Agg) -> Table:
        """``state_ttl`` (an aggregation without a window only) forgets a group, silently, once the
        watermark is that far past the watermark at its last row; its key then starts from zero (+I)."""
        if isinstance(state_ttl, Agg):
            raise PlanError("agg: state_ttl= names the state's time to live; name the aggregate otherwise")
        calls = []
        for name, a in aggs.items():
            if not isinstance(a, Agg):
                raise PlanError(f"agg: {name}= must be an aggregate such as dw.sum('x'), got {a!r}")
            calls.append((name, a.call))
        if state_ttl is not None and (self.barrier is not None or self.session is not None
                                      or isinstance(self.plan, pn.WindowAssign)):
            raise PlanError("agg: a windowed aggregation forgets each window when it fires; it takes no state_ttl")
        if self.barrier is not None:
            return Table(pn.BarrierAggregate(self.plan, self.barrier, self.keys, tuple(calls)))
        if self.session is not None:
            return Table(pn.SessionAggregate(self.plan, self.session, self.keys, tuple(calls)))
        if isinstance(self.plan, pn.WindowAssign):
            return Table(pn.Aggregate(self.plan, self.keys, tuple(calls)))
        return Table(pn.GroupAggregate(self.plan, self.keys, tuple(calls), _state_ttl(state_ttl)))


OrderBy = str | pn.SortKey | Sequence[str | pn.SortKey]


def _state_ttl(value: Any) -> int | None:
    return None if value is None else to_millis(value, "state_ttl", PlanError)


def _join_ttl(value: Any) -> tuple[int | None, tuple[int | None, int | None]]:
    """A join's ``state_ttl=``: one duration for both sides, or ``(left, right)`` (0: for ever)."""
    if not isinstance(value, (tuple, list)):
        return _state_ttl(value), (None, None)
    if len(value) != 2:
        raise PlanError(f"join: state_ttl= takes a duration or a pair (left, right), got {value!r}")
    left, right = (0 if v is None else to_millis(v, "state_ttl", PlanError) for v in value)
    return None, (left, right)


def asc(column: str) -> pn.SortKey:
    """Ascending order of ``column`` (NULLs first), for ``order=`` of top_n."""
    return pn.SortKey(column, False)


def desc(column: str) -> pn.SortKey:
    """Descending order of ``column`` (NULLs last), for ``order=`` of top_n."""
    return pn.SortKey(column, True)


def _names(columns: str | Sequence[str]) -> tuple[str, ...]:
    return (columns,) if isinstance(columns, str) else tuple(columns)


def _order(order: OrderBy) -> tuple[pn.SortKey, ...]:
    keys = [order] if isinstance(order, (str, pn.SortKey)) else list(order)
    return tuple(pn.SortKey(k) if isinstance(k, str) else k for k in keys)


def _over_columns(plan: pn.PlanNode, named: dict[str, Any]) -> tuple[pn.PlanNode, dict[str, Any]]:
    """Aggregates over windows of rows (``dw.avg(...).over(...)``) become ``Over`` nodes below, one
    per distinct window, and the columns of the same names refer to their results."""
    windows: dict[tuple, list[tuple[str, Any]]] = {}
    for name, value in named.items():
        if isinstance(value, OverAgg):
            spec = (_names(value.partition_by), _order(value.order_by), value.preceding)
            windows.setdefault(spec, []).append((name, value.call))
    for (by, order, preceding), aggs in windows.items():
        _refuse_ties_of_updates(plan, by, order, aggs)
        plan = pn.Over(plan, by, order, preceding, tuple(aggs))
    return plan, {n: (Expr(Column(n)) if isinstance(v, OverAgg) else v) for n, v in named.items()}


def _refuse_ties_of_updates(plan: pn.PlanNode, by: tuple[str, ...], order: tuple[pn.SortKey, ...],
                            aggs: list[tuple[str, Any]]) -> None:
    """An OVER window over another's result (two windows in one ``with_columns``, or chained) reads
    its changes: rows tied in its order rank by when their changes reached it, which depends on
    where batches ended (an updated row is added again after its ties, partitions come one by one).
    Refused unless its partition and order columns hold a unique key of the input, so no rows tie;
    SQL refuses two windows in one SELECT the same way."""
    from darwin.plan.keys import unique_key

    below = plan
    while isinstance(below, (pn.Filter, pn.Project)):
        below = below.input
    if not isinstance(below, pn.Over):
        return
    key = unique_key(plan)
    if key is not None and set(key) <= set(by) | {k.column for k in order}:
        return
    names = ", ".join(name for name, _ in aggs)
    ties = f"order_by={[k.column for k in order]}" + ("" if not by else f" within partition_by={list(by)}")
    has = "has no unique key Darwin knows" if key is None else f"is keyed by {list(key)}"
    raise PlanError(
        f"over window of {names}: it reads another over window's result, whose rows tied in {ties} would rank by "
        f"where batches ended; that result {has}. Compute the aggregates over one window, or add a unique key to "
        "order_by (declare it with the source's primary_key=)")


def _key_names(plan: pn.PlanNode, keys: tuple[str | Expr, ...]) -> tuple[str, ...]:
    names = []
    for k in keys:
        if isinstance(k, Expr) and isinstance(k.node, Column):
            k = k.node.name
        if not isinstance(k, str):
            raise PlanError(f"group_by takes column names or name=expression; name {k!r}, e.g. group_by(k=...)")
        plan.schema.field(k, "group_by")
        names.append(k)
    return tuple(names)


def _named_value(value: IntoExpr) -> ExprNode:
    """What ``name=value`` computes: a string names a column, as in polars (``lit("x")`` is the text)."""
    return Column(value) if isinstance(value, str) else _node(value)


def _named(c: str | Expr) -> tuple[str, Any]:
    if isinstance(c, str):
        return c, Column(c)
    if isinstance(c, Expr):
        if c.name is None:
            raise PlanError(f"select: give the expression {c.node} a name with .alias('name') or name=...")
        return c.name, c.node
    raise PlanError(f"select takes column names or expressions, got {c!r}")


class NullSafe:
    """A join key pair whose NULLs match each other: ``dw.null_safe(left, right)`` in ``on=``."""

    __slots__ = ("left", "right")

    def __init__(self, left: str | Expr, right: str | Expr) -> None:
        self.left, self.right = left, right

    def __repr__(self) -> str:
        return f"null_safe({self.left!r}, {self.right!r})"


def null_safe(left: str | Expr, right: str | Expr | None = None) -> NullSafe:
    """A key pair of ``join(on=[...])`` where a NULL key meets a NULL key of the other side (and
    nothing else), as Flink's ``a.x IS NOT DISTINCT FROM b.x``: ``on=[("k", "k"), dw.null_safe("x")]``.
    ``right`` is ``left`` unless given. Other pairs' NULLs still never match."""
    return NullSafe(left, left if right is None else right)


JoinKeys = tuple[list[Any], list[Any], frozenset[int]]


def _join_keys(on: Any, left_on: Any, right_on: Any) -> JoinKeys:
    """(left keys, right keys, the null-safe pairs) from ``on=[(l, r), ...]`` or ``left_on=``/``right_on=``."""
    if on is not None:
        if left_on is not None or right_on is not None:
            raise PlanError("join: give on=[(left, right), ...] or left_on=/right_on=, not both")
        pairs = [on] if isinstance(on, (tuple, NullSafe)) else list(on) if isinstance(on, list) else None
        if pairs is None or not pairs or not all(
                isinstance(p, NullSafe) or isinstance(p, tuple) and len(p) == 2 for p in pairs):
            raise PlanError(f"join: on= takes (left key, right key) pairs or dw.null_safe(left, right), e.g. "
                            f"on=[('auction', 'id')], got {on!r}")
        split = [(p.left, p.right) if isinstance(p, NullSafe) else p for p in pairs]
        return [p[0] for p in split], [p[1] for p in split], \
            frozenset(i for i, p in enumerate(pairs) if isinstance(p, NullSafe))
    if left_on is None or right_on is None:
        raise PlanError("join: say which keys to join on: on=[(left, right), ...] or left_on= and right_on=")
    lefts = list(left_on) if isinstance(left_on, (list, tuple)) else [left_on]
    rights = list(right_on) if isinstance(right_on, (list, tuple)) else [right_on]
    if any(isinstance(k, NullSafe) for k in lefts + rights):
        raise PlanError("join: give a null-safe key pair in on=, e.g. on=[dw.null_safe('x')], not in "
                        "left_on=/right_on=")
    if len(lefts) != len(rights):
        raise PlanError(f"join: {len(lefts)} left key(s) but {len(rights)} right key(s)")
    return lefts, rights, frozenset()


def _paired_keys(left: pn.PlanNode, right: pn.PlanNode, left_keys: list[Any], right_keys: list[Any]) \
        -> tuple[tuple[ExprNode, ...], tuple[ExprNode, ...]]:
    """The join's key expressions, an integer key paired with a float key widened to float."""
    pairs = [widened(a, b, left.schema, right.schema)
             for a, b in zip(_key_nodes(left_keys), _key_nodes(right_keys))]
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


def _key_nodes(keys: list[Any]) -> tuple[ExprNode, ...]:
    out: list[ExprNode] = []
    for k in keys:
        if isinstance(k, str):
            out.append(Column(k))
        elif isinstance(k, Expr):
            out.append(k.node)
        else:
            raise PlanError(f"join: a key is a column name or an expression, got {k!r}")
    return tuple(out)


def _scan(source: Source, time: str | None, max_delay: Any, max_future: Any, rate_limit: Any = None,
          primary_key: str | Sequence[str] | None = None) -> Table:
    """The scan node; durations are query parameters, so a bad one is a ``PlanError``. A
    ``rate_limit`` (events per second of wall-clock time) paces the source (``darwin.io.paced``)."""
    if rate_limit is not None:
        source = Paced(source, rate_limit)
    delay = None if max_delay is None else to_millis(max_delay, "max_delay", PlanError)
    future = None if max_future is None else to_millis(max_future, "max_future", PlanError)
    key = None if primary_key is None else _names(primary_key)
    return Table(pn.Scan(source, source.schema.names, time, delay, future, key))


def from_source(source: Source, time: str | None = None, max_delay: Any = None, max_future: Any = None,
                rate_limit: float | None = None, primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over any object implementing ``darwin.io.source.Source`` (your own inputs).

    ``max_delay`` bounds out-of-orderness (the watermark trails the largest event time by it);
    ``max_future``, if given, keeps a row more than that ahead of the largest event time seen
    from moving the watermark (it is counted in ``future_rows`` and otherwise processed normally).
    ``rate_limit``, if given, releases the rows no faster than that many per second of wall-clock
    time, as a live producer would (for latency measurements, ``execute().metrics``).
    ``primary_key``, if given, names columns no two rows share values of, as Flink's ``PRIMARY KEY
    ... NOT ENFORCED``: trusted, not checked (rows that break it make undefined results), it lets a
    join keep fewer rows: a row of the other side that has found its one match is not kept.
    """
    if not isinstance(source, Source):
        raise PlanError(f"from_source() needs a darwin.io.source.Source (name, schema, batches), got {source!r}")
    return _scan(source, time, max_delay, max_future, rate_limit, primary_key)


def from_arrow(table: pa.Table | pa.RecordBatch, time: str | None = None, max_delay: Any = None,
               name: str = "arrow", max_future: Any = None, rate_limit: float | None = None,
               primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over in-memory Arrow data whose event time is column ``time`` (see ``from_source``)."""
    return _scan(ArrowSource(table, name), time, max_delay, max_future, rate_limit, primary_key)


def read_parquet(path: str | os.PathLike[str], time: str | None = None, max_delay: Any = None,
                 max_future: Any = None, rate_limit: float | None = None,
                 primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over a Parquet file, or a directory of ``*.parquet`` files read in name order; only the
    columns the query uses are read (see ``from_source``)."""
    if Path(path).is_dir():
        from darwin.io.file_sources import FilesSource, data_files

        files = data_files(path, (".parquet",), "Parquet")
        return _scan(FilesSource(files, ParquetSource, os.fspath(path)), time, max_delay, max_future, rate_limit,
                     primary_key)
    return _scan(ParquetSource(path), time, max_delay, max_future, rate_limit, primary_key)


def read_csv(path: str | os.PathLike[str], schema: pa.Schema | Mapping[str, Any] | None = None, *,
             header: bool = True, delimiter: str = ",", time: str | None = None, max_delay: Any = None,
             max_future: Any = None, rate_limit: float | None = None,
             primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over a CSV file, or a directory of ``*.csv`` files read in name order.

    ``schema`` (an Arrow schema, or a mapping column -> type name such as ``{"ts": "timestamp[ms]"}``)
    names the columns read and their types; without it the header names them and their types are
    inferred. A value not of its column's type, or a malformed row, is a ``SourceError`` naming file,
    line and column.
    """
    from darwin.io.file_sources import CsvSource, FilesSource, csv_files_schema, data_files
    from darwin.io.type_names import arrow_schema

    types = None if schema is None else arrow_schema(schema, "read_csv(schema=...)")
    files = data_files(path, (".csv",), "CSV")
    if types is None and header and Path(path).is_dir():  # one type per column over all the files
        types = csv_files_schema(files, delimiter)
    source: Source = FilesSource(files, lambda f: CsvSource(f, types, header=header, delimiter=delimiter),
                                 os.fspath(path)) if Path(path).is_dir() \
        else CsvSource(files[0], types, header=header, delimiter=delimiter)
    return _scan(source, time, max_delay, max_future, rate_limit, primary_key)


def read_ipc(path: str | os.PathLike[str], time: str | None = None, max_delay: Any = None,
             max_future: Any = None, rate_limit: float | None = None,
             primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over an Arrow IPC file or stream, or a directory of them (``*.arrow``, ``*.arrows``,
    ``*.feather``, ``*.ipc``) read in name order (see ``from_source``)."""
    from darwin.io.file_sources import FilesSource, IpcSource, data_files

    files = data_files(path, (".arrow", ".arrows", ".feather", ".ipc"), "Arrow IPC")
    source: Source = FilesSource(files, IpcSource, os.fspath(path)) if Path(path).is_dir() else IpcSource(files[0])
    return _scan(source, time, max_delay, max_future, rate_limit, primary_key)


def from_batches(schema: pa.Schema, batches: Callable[[], Iterable[pa.RecordBatch]], time: str | None = None,
                 max_delay: Any = None, name: str = "batches", non_null: Iterable[str] = (),
                 max_future: Any = None, rate_limit: float | None = None,
                 primary_key: str | Sequence[str] | None = None) -> Table:
    """A table over a replayable factory of record batches (called once per run; see ``from_source``)."""
    return _scan(BatchSource(schema, batches, name, non_null), time, max_delay, max_future, rate_limit, primary_key)


def read_kafka(topic: str, bootstrap_servers: str, schema: pa.Schema | None = None, *, format: str = "json",
               time: str = "timestamp", max_delay: Any = None, max_future: Any = None, **options: Any) -> Table:
    """A table over a Kafka topic: the value's columns, then key, timestamp, partition, offset and headers.

    ``time`` is the event-time column (the record timestamp by default, or a column of the value);
    ``options`` go to ``darwin.io.kafka.KafkaSource`` (``bounded``, ``start``, ``group``, ``config``, ...).
    """
    from darwin.io.kafka import KafkaSource

    return _scan(KafkaSource(topic, bootstrap_servers, schema=schema, format=format, time_column=time, **options),
                 time, max_delay, max_future)

