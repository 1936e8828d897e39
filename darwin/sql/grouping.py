"""GROUP BY and its aggregates, for a SELECT: windowed (window table functions, group windows,
cascading windows), session and updating aggregations, and what the clauses after it see."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

import darwin.expr as dx
from darwin.api import SessionWindowedTable, Table, WindowedTable
from darwin.errors import SqlError
from darwin.expr import Expr, col
from darwin.plan import exprs as ex
from darwin.plan.aggregates import call_type
from darwin.plan.nodes import WINDOW_END, WINDOW_START
from darwin.plan.window import Session, SessionWindow, Slide, Tumble, Window
from darwin.sql.dialect import Flink, WindowFunction
from darwin.sql.errors import Located
from darwin.sql.expressions import ExpressionTranslator, Replaced, Scope, interval_ms
from darwin.sql.hints import StateTtlHint
from darwin.sql.relations import Bounds, Relation

if TYPE_CHECKING:
    from darwin.sql.translate import QueryPlanner

AGGREGATES: dict[type, Callable[..., dx.Agg]] = {exp.Sum: dx.sum, exp.Min: dx.min, exp.Max: dx.max, exp.Avg: dx.avg}
GROUP_WINDOW_ARITY = {("TUMBLE", 1), ("HOP", 2), ("SESSION", 1)}  # the intervals each group window takes
GROUP_WINDOW_BOUNDS = {f"{kind}_{end}": bound for kind in ("TUMBLE", "HOP", "SESSION")
                       for end, bound in (("START", WINDOW_START), ("END", WINDOW_END))}


def aggregate_calls(node: exp.Expr, out: list[exp.Expr]) -> list[exp.Expr]:
    """The aggregate calls in ``node`` (with their FILTER), outside OVER windows."""
    if isinstance(node, exp.Window):
        return out
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc) or isinstance(node, exp.AggFunc):
        out.append(node)
        return out
    for child in node.iter_expressions():
        aggregate_calls(child, out)
    return out


class GroupByClause:
    """The GROUP BY part of ``SelectPlanner``: needs its node, planner and error location."""

    node: exp.Select
    planner: QueryPlanner
    where: Located
    window: Window | None
    ttl_hint: StateTtlHint  # the SELECT's STATE_TTL hints
    from_name: str | None  # the name of the FROM item, where it is one (no joins)

    def error(self, node: exp.Expr | None, message: str) -> SqlError:
        return self.where.error(node, message)

    def translator(self, rel: Relation, replaced: Replaced | None = None) -> ExpressionTranslator:
        return ExpressionTranslator(rel.scope, self.where, rel.table.plan.schema, replaced)

    def group_by(self, rel: Relation) -> tuple[Relation, Replaced]:
        node = self.node
        group = node.args.get("group")
        calls: list[exp.Expr] = []
        for item in node.expressions:
            aggregate_calls(item, calls)
        if node.args.get("having") is not None:
            aggregate_calls(node.args["having"], calls)
        if group is None and not calls:
            return rel, Replaced()
        replaced = Replaced(rel.scope)
        aliases = {replaced.key(i.this): i.alias for i in node.expressions if isinstance(i, exp.Alias)}
        taken = set(aliases.values()) | set(rel.table.columns)

        def unused(name: str) -> str:
            """An internal name no alias and no input column has."""
            while name in taken:
                name += "_"
            taken.add(name)
            return name
        translate = self.translator(rel)
        plain: list[str] = []
        computed: dict[str, Expr] = {}
        bounds = False
        cascade: list[str] = []  # the window bounds of a windowed aggregation below, grouped by again
        group_window: tuple[WindowFunction, Any] | None = None
        for g in group.expressions if group is not None else []:
            if isinstance(g, WindowFunction):
                group_window = (g, self._group_window(g, rel))
                continue
            if isinstance(g, exp.Column):
                column = translate(g).node
                assert isinstance(column, ex.Column)
                if column.name in (WINDOW_START, WINDOW_END) and (rel.windowed is not None or rel.session):
                    bounds = True
                    continue
                if rel.bounds is not None and column.name in (rel.bounds.start, rel.bounds.end):
                    cascade.append(column.name)
                    continue
                if column.name not in plain:  # GROUP BY k, t.k: one key
                    plain.append(column.name)
                continue
            if replaced.get(g) is not None:  # the same expression again
                continue
            alias = aliases.get(replaced.key(g))
            # a key named as an input column would replace it under the aggregates, which read the input's;
            # two keys (or a key and an aggregate) may share an alias, and each needs a column of its own
            name = alias if alias and alias not in rel.table.columns and alias not in computed \
                else unused(f"EXPR${len(computed)}")
            computed[name] = translate(g)
            replaced[g] = col(name)
        named = {*plain, *cascade, *computed, WINDOW_START, WINDOW_END}  # the result's columns besides aggregates
        if rel.bounds is not None:
            named |= {b for b in (rel.bounds.start, rel.bounds.end) if b is not None}
        aggs: dict[str, dx.Agg] = {}
        for i, call in enumerate(calls):
            if replaced.get(call) is not None:
                continue
            alias = aliases.get(replaced.key(call))
            name = alias if alias and alias not in named else unused(f"$agg{i}")
            named.add(name)
            aggs[name] = self._aggregate(call, rel)
            replaced[call] = col(name)
        if not aggs:  # GROUP BY only to group: Darwin's aggregations need an aggregate, dropped by the select
            aggs["$count"] = dx.count()
        if cascade and rel.bounds is not None and not computed:
            table = self._cascade(node, rel, rel.bounds, plain, aggs, unused("$window_end"))
            self.window = rel.bounds.window
        else:
            plain += cascade
            table = self._grouped(node, rel, plain, computed, aggs, bounds, group_window)
            if bounds and rel.windowed is not None:
                self.window = rel.windowed.plan.window
            elif group_window is not None and isinstance(group_window[1], WindowedTable):
                self.window = group_window[1].plan.window
        for item in node.expressions:  # TUMBLE_START(...) and friends of a group window
            for f in item.find_all(exp.Anonymous):
                bound = GROUP_WINDOW_BOUNDS.get(str(f.this).upper())
                if bound is not None:
                    if group_window is None:
                        raise self.error(f, f"{f.this} needs a group window in GROUP BY")
                    self._check_auxiliary(f, group_window[0], rel)
                    replaced[f] = col(bound)
        kept = set(table.columns)
        visible = [e for e in rel.scope.entries if e.column in kept and e.column not in aggs]
        scope = Scope(visible, frozenset(e.name for e in rel.scope.entries) - {e.name for e in visible})
        return Relation(table, scope), replaced

    def _grouped(self, node: exp.Expr, rel: Relation, plain: list[str], computed: dict[str, Expr],
                 aggs: dict[str, dx.Agg], bounds: bool, group_window: tuple[WindowFunction, Any] | None) -> Table:
        def build() -> Table:
            self.ttl_hint.of(self.from_name)  # a hint may name a windowed aggregation's input, which reads no TTL
            if group_window is not None:
                return _keyed_below(group_window[1], computed).group_by(*plain, *computed).agg(**aggs)
            if rel.session is not None:
                source, window, keys = rel.session
                if not bounds or set(plain) != set(keys):
                    raise self.error(node, f"a SESSION table function is aggregated by its PARTITION BY columns "
                                           f"{list(keys)} and window_start, window_end")
                return source.window(window).group_by(*plain).agg(**aggs)
            if bounds and rel.windowed is not None:
                return _keyed_below(rel.windowed, computed).group_by(*plain, *computed).agg(**aggs)
            aggregated = rel.table.group_by(*plain, **computed).agg(**aggs)
            return Table(self.ttl_hint.aggregate(aggregated.plan, self.from_name, self.where))
        result: Table = self.planner._located(node, build)
        return result

    def _cascade(self, node: exp.Expr, rel: Relation, bounds: Bounds, keys: list[str],
                 aggs: dict[str, dx.Agg], end_column: str) -> Table:
        """GROUP BY the window bounds of a windowed aggregation's result (Flink's cascading window):
        a tumbling window of the slide over the window ends, whose every window holds the rows of
        one window, with the bounds computed back from its start. Only the ends are never late: a
        window's row reaches the tumble before the watermark that fired it, so where only the starts
        were selected the ends are computed from them (``end_column``); a tumble over the starts of
        sliding windows found the rows late once the watermark had passed start + slide."""
        window = bounds.window
        start = col(WINDOW_START)

        def build() -> Table:
            table, on = rel.table, bounds.end
            if on is None:
                assert bounds.start is not None
                table, on = table.with_columns(**{end_column: col(bounds.start) + window.size_ms}), end_column
            grouped = table.window(Tumble(window.slide_ms, on=on)).group_by(*keys).agg(**aggs)
            restored = {bounds.end: start} if bounds.end is not None else {}
            if bounds.start is not None:
                restored[bounds.start] = start - window.size_ms
            return grouped.with_columns(**restored)
        result: Table = self.planner._located(node, build)
        return result

    def _window_operands(self, kind: str, call: exp.Expr, args: list[exp.Expr],
                         rel: Relation) -> tuple[str, list[int]]:
        """The time column and the intervals (ms) of a group window or of its auxiliary function."""
        if not args or not isinstance(args[0], exp.Column):
            raise self.error(call, f"{kind} takes the time column first, e.g. {kind}(ts, INTERVAL ...)")
        on = self.translator(rel)(args[0]).node
        assert isinstance(on, ex.Column)
        return on.name, [interval_ms(a, self.where) for a in args[1:]]

    def _check_auxiliary(self, f: exp.Anonymous, g: WindowFunction, rel: Relation) -> None:
        """``TUMBLE_START(ts, size)`` and friends name the GROUP BY window they take the bounds of, as
        in Flink (Calcite): another function, column or interval is refused rather than answered with
        the window's bounds. An interval matches one of the same duration ('10' SECOND and '10000'
        MILLISECOND; Calcite wants the same text)."""
        name = str(f.this).upper()
        kind = name.rsplit("_", 1)[0]
        window = f"{g.kind}({', '.join(a.sql(dialect=Flink) for a in g.expressions)})"
        if kind != g.kind:
            raise self.error(f, f"{f.sql(dialect=Flink)} needs a {kind} group window; GROUP BY has {window}")
        if self._window_operands(name, f, f.expressions, rel) != self._window_operands(kind, g, g.expressions, rel):
            raise self.error(f, f"{f.sql(dialect=Flink)} does not match the group window {window} of GROUP BY: "
                                "give it the window's time column and intervals")

    def _group_window(self, g: WindowFunction, rel: Relation) -> Any:
        """A group window of GROUP BY: ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)``, ``SESSION(ts, gap)``."""
        on, intervals = self._window_operands(f"{g.kind} in GROUP BY", g, g.expressions, rel)
        if (g.kind, len(intervals)) not in GROUP_WINDOW_ARITY:
            raise self.error(g, f"{g.kind} group window with {len(intervals)} intervals is not supported")
        # built inside _located: a window's own refusal (a HOP's size not a multiple of its slide) names
        # the group window's line and column too
        return self.planner._located(g, lambda: rel.table.window(_group_window_spec(g.kind, intervals, on)))

    def _aggregate(self, call: exp.Expr, rel: Relation) -> dx.Agg:
        """The aggregate of ``call``; AVG is a DOUBLE (Flink's AVG of a BIGINT is a BIGINT)."""
        translate = self.translator(rel)
        condition = None
        if isinstance(call, exp.Filter):
            condition = translate(call.expression.this)
            call = call.this
        arg = call.this
        if isinstance(call, exp.Count):
            if isinstance(arg, exp.Star) or arg is None:
                return dx.count(filter=condition)
            if isinstance(arg, exp.Distinct):
                if len(arg.expressions) != 1:
                    raise self.error(call, "COUNT(DISTINCT ...) of one expression is supported")
                return dx.count_distinct(translate(arg.expressions[0]), filter=condition)
            return dx.count(translate(arg), filter=condition)
        make = AGGREGATES.get(type(call))
        if make is None or isinstance(arg, exp.Distinct):
            raise self.error(call, f"aggregate {call.sql(dialect=Flink)} is not supported; COUNT, COUNT(DISTINCT), "
                                   "SUM, MIN, MAX and AVG are")
        agg: dx.Agg = make(translate(arg), filter=condition)
        schema = rel.table.plan.schema  # refused here, at the call, naming it as written (not its internal name)
        self.planner._located(call, lambda: call_type(agg.call, schema, call.sql(dialect=Flink)))
        return agg


def _keyed_below(windowed: Any, computed: dict[str, Expr]) -> Any:
    """The window (a ``WindowedTable`` or a ``SessionWindowedTable``) over its input with the computed group
    keys added (``LOWER(name)`` of ``GROUP BY TUMBLE(...), LOWER(name)``): computed in a projection below the
    window, as Flink's planner does, so the windowed aggregation groups by columns."""
    if not computed:
        return windowed
    if isinstance(windowed, WindowedTable):
        keyed = Table(windowed.plan.input).with_columns(**computed)
        return WindowedTable(replace(windowed.plan, input=keyed.plan))
    return SessionWindowedTable(Table(windowed.plan).with_columns(**computed).plan, windowed.window)


def _group_window_spec(kind: str, intervals: list[int], on: str) -> Window | SessionWindow:
    """``TUMBLE(ts, size)``, ``HOP(ts, slide, size)``, ``SESSION(ts, gap)`` of GROUP BY."""
    if kind == "SESSION":
        return Session(intervals[0], on=on)
    if kind == "TUMBLE":
        return Tumble(intervals[0], on=on)
    return Slide(intervals[1], intervals[0], on=on)
