"""One SELECT planned clause by clause: FROM (relations, joins, window table functions), WHERE,
GROUP BY with its aggregates, HAVING, the select list, and the top-N of a ROW_NUMBER filtered by the
query around it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlglot import exp

import darwin.expr as dx
from darwin.api import Table, WindowedTable, desc
from darwin.errors import SqlError
from darwin.expr import Expr, col
from darwin.plan import exprs as ex
from darwin.plan.exprs import type_of
from darwin.plan.nodes import WINDOW_END, WINDOW_START, joined_names
from darwin.plan.window import Session, Slide, Tumble, Window
from darwin.sql.dialect import Flink, WindowFunction
from darwin.sql.expressions import Entry, ExpressionTranslator, Scope, interval_ms
from darwin.sql.relations import Bounds, RankRequest, Relation, conjuncts, relation
from darwin.types import DType

if TYPE_CHECKING:
    from darwin.sql.translate import QueryPlanner

AGGREGATES: dict[type, Callable[..., dx.Agg]] = {exp.Sum: dx.sum, exp.Min: dx.min, exp.Max: dx.max, exp.Avg: dx.avg}
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


def _row_number(item: exp.Expr) -> exp.Window | None:
    inner = item.this if isinstance(item, exp.Alias) else item
    return inner if isinstance(inner, exp.Window) and isinstance(inner.this, exp.RowNumber) else None


class SelectPlanner:
    """One SELECT, clause by clause."""

    def __init__(self, planner: QueryPlanner, node: exp.Select) -> None:
        self.planner, self.node, self.where = planner, node, planner.where
        self.pool = conjuncts(node.args["where"].this) if node.args.get("where") else []
        self.window: Window | None = None  # the window of this SELECT's windowed aggregation, if any
        self.ranked: str | None = None  # the rank column a window top-N added, when the query selects it

    def error(self, node: exp.Expr | None, message: str) -> SqlError:
        return self.where.error(node, message)

    def translator(self, rel: Relation, replaced: dict[str, Expr] | None = None) -> ExpressionTranslator:
        return ExpressionTranslator(rel.scope, self.where, rel.table.plan.schema, replaced)

    def plan(self, rank: RankRequest | None) -> Table:
        node = self.node
        for unsupported in ("order", "limit", "offset", "distinct"):
            clause = node.args.get(unsupported)
            if clause:
                placed = isinstance(clause, exp.Expr) and self.where.position(clause) is not None
                raise self.error(clause if placed else node,
                                 f"{unsupported.upper()} is not supported on a stream in Darwin's SQL")
        rel = self.from_clause()
        if rank is not None and rel.windowed is not None and not self.pool and node.args.get("group") is None:
            rank = self._window_top_n(rel, rank)
        if self.pool:
            predicate = self._and([self.translator(rel)(c) for c in self.pool])
            rel.table = self.planner._located(self.pool[0], lambda: rel.table.filter(predicate))
        rel, replaced = self.group_by(rel)
        having = node.args.get("having")
        if having is not None:
            predicate = self.translator(rel, replaced)(having.this)
            rel.table = self.planner._located(having, lambda: rel.table.filter(predicate))
        return self.select_list(rel, replaced, rank)

    @staticmethod
    def _and(parts: list[Expr]) -> Expr:
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out

    # -- FROM and joins --------------------------------------------------------------------
    def from_clause(self) -> Relation:
        from_ = self.node.args.get("from_") or self.node.args.get("from")
        if from_ is None:
            raise self.error(self.node, "a SELECT needs FROM: Darwin's SQL reads streams and tables")
        joins = self.node.args.get("joins") or []
        first = from_.this
        if not joins and isinstance(first, exp.Subquery):
            request = self._rank_request(first)
            if request is not None:
                return relation(self.planner.query(first.this, request), first.alias or None)
        rel = self.planner.from_item(first)
        inner = all(not j.args.get("side") for j in joins)
        for j in joins:
            right = self.planner.from_item(j.this)
            conditions = conjuncts(j.args.get("on"))
            if j.args.get("using"):
                raise self.error(j, "JOIN ... USING is not supported; write ON a.x = b.x")
            if inner:
                taken = [c for c in self.pool if self._sides(c, rel, right) == {"left", "right"}]
                self.pool = [c for c in self.pool if not any(c is t for t in taken)]
                conditions += taken
            how = str(j.args.get("side") or "inner").lower()
            rel = self.join(j, rel, right, conditions, how)
        return rel

    def _sides(self, node: exp.Expr, left: Relation, right: Relation) -> set[str]:
        """Which sides the columns of ``node`` come from; 'neither' for one neither has."""
        sides = set()
        for c in node.find_all(exp.Column):
            if isinstance(c.this, exp.Star):
                continue
            in_left = bool(left.scope.lookup(c.name, c.table or None))
            in_right = bool(right.scope.lookup(c.name, c.table or None))
            sides.add("left" if in_left and not in_right else "right" if in_right and not in_left
                      else "neither" if not in_left else "both")
        return sides

    def join(self, node: exp.Join, left: Relation, right: Relation, conditions: list[exp.Expr],
             how: str) -> Relation:
        left_keys, right_keys, rest = [], [], []
        for c in conditions:
            if isinstance(c, exp.EQ):
                a, b = self._sides(c.this, left, right), self._sides(c.expression, left, right)
                if a == {"left"} and b == {"right"}:
                    left_keys.append(self.translator(left)(c.this))
                    right_keys.append(self.translator(right)(c.expression))
                    continue
                if a == {"right"} and b == {"left"}:
                    left_keys.append(self.translator(left)(c.expression))
                    right_keys.append(self.translator(right)(c.this))
                    continue
            rest.append(c)
        if not left_keys:
            raise self.error(node, "a join needs an equality between a column of each side (ON a.x = b.y); "
                                   "cross joins are not supported")
        names = joined_names(tuple(left.table.columns), tuple(right.table.columns), "_right")
        scope = Scope(left.scope.entries + [Entry(e.qualifier, e.name, names[e.column]) for e in right.scope.entries],
                      proctime=left.scope.proctime | right.scope.proctime)
        if right.lookup:
            self._check_as_of(node.this, left)
        pairs = list(zip(left_keys, right_keys))

        def joined(where: Expr | None) -> Table:
            other: Any = right.table.lookup() if right.lookup else right.table
            return self.planner._located(node, lambda: left.table.join(other, on=pairs, how=how, where=where))

        result = joined(None)
        if rest:  # the other conditions are over the joined columns: typed against the join without them
            result = joined(self._and([self.translator(Relation(result, scope))(c) for c in rest]))
        return Relation(result, scope)

    def _check_as_of(self, table: exp.Expr, left: Relation) -> None:
        """``FOR SYSTEM_TIME AS OF`` names a PROCTIME() attribute or a time column of the left side.
        The lookup table is bounded and loaded once, so every time sees the same rows."""
        version = table.args.get("version")
        when = version.expression if version is not None else None
        if not isinstance(when, exp.Column):
            raise self.error(when or table, "FOR SYSTEM_TIME AS OF takes a column of the left side")
        if when.name in left.scope.proctime:
            return
        value = self.translator(left)(when).node
        if type_of(value, left.table.plan.schema, "FOR SYSTEM_TIME AS OF").dtype is not DType.TIMESTAMP:
            raise self.error(when, f"FOR SYSTEM_TIME AS OF {when.sql(dialect=Flink)}: not a time column")

    def _rank_request(self, sub: exp.Subquery) -> RankRequest | None:
        """The top-N asked of a subquery selecting ROW_NUMBER(): its bound, taken out of this WHERE."""
        inner = sub.this
        if not isinstance(inner, exp.Select):
            return None
        numbered = [item for item in inner.expressions if _row_number(item) is not None]
        if not numbered:
            return None
        alias = numbered[0].alias
        if not alias:
            raise self.error(numbered[0], "name ROW_NUMBER() OVER (...) with AS, and filter on it: WHERE rn <= N")
        items = self.node.expressions
        selects_rank = any(isinstance(i, exp.Star) or isinstance(i, exp.Column) and isinstance(i.this, exp.Star)
                           for i in items) or any(c.name == alias for i in items for c in i.find_all(exp.Column))
        for condition in self.pool:
            bound = self._rank_bound(condition, alias)
            if bound is not None:
                self.pool = [p for p in self.pool if p is not condition]
                return RankRequest(alias, bound, selects_rank)
        raise self.error(numbered[0], f"ROW_NUMBER() is only supported as a top-N: filter it with WHERE {alias} <= N")

    @staticmethod
    def _rank_bound(c: exp.Expr, alias: str) -> int | None:
        if isinstance(c, (exp.LTE, exp.LT, exp.EQ)) and isinstance(c.this, exp.Column) and c.this.name == alias \
                and isinstance(c.expression, exp.Literal) and not c.expression.is_string:
            n = int(c.expression.this)
            if isinstance(c, exp.EQ) and n != 1:
                return None
            return n - 1 if isinstance(c, exp.LT) else n
        return None

    # -- GROUP BY --------------------------------------------------------------------------
    def group_by(self, rel: Relation) -> tuple[Relation, dict[str, Expr]]:
        node = self.node
        group = node.args.get("group")
        calls: list[exp.Expr] = []
        for item in node.expressions:
            aggregate_calls(item, calls)
        if node.args.get("having") is not None:
            aggregate_calls(node.args["having"], calls)
        if group is None and not calls:
            return rel, {}
        aliases = {i.this.sql(dialect=Flink): i.alias for i in node.expressions if isinstance(i, exp.Alias)}
        translate = self.translator(rel)
        plain: list[str] = []
        computed: dict[str, Expr] = {}
        replaced: dict[str, Expr] = {}
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
                plain.append(column.name)
                continue
            text = g.sql(dialect=Flink)
            name = aliases.get(text) or f"EXPR${len(computed)}"
            computed[name] = translate(g)
            replaced[text] = col(name)
        aggs: dict[str, dx.Agg] = {}
        for i, call in enumerate(calls):
            text = call.sql(dialect=Flink)
            if text in replaced:
                continue
            name = aliases.get(text) or f"$agg{i}"
            aggs[name] = self._aggregate(call, rel)
            replaced[text] = col(name)
        if not aggs:  # GROUP BY only to group: Darwin's aggregations need an aggregate, dropped by the select
            aggs["$count"] = dx.count()
        if cascade and rel.bounds is not None and not computed:
            table = self._cascade(node, rel, rel.bounds, plain, aggs)
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
                    replaced[f.sql(dialect=Flink)] = col(bound)
        kept = set(table.columns)
        visible = [e for e in rel.scope.entries if e.column in kept and e.column not in aggs]
        scope = Scope(visible, frozenset(e.name for e in rel.scope.entries) - {e.name for e in visible})
        return Relation(table, scope), replaced

    def _grouped(self, node: exp.Expr, rel: Relation, plain: list[str], computed: dict[str, Expr],
                 aggs: dict[str, dx.Agg], bounds: bool, group_window: tuple[WindowFunction, Any] | None) -> Table:
        def build() -> Table:
            if group_window is not None:
                windowed = group_window[1]
                if computed:
                    raise self.error(group_window[0], "computed group keys with a group window are not supported")
                return windowed.group_by(*plain).agg(**aggs)
            if rel.session is not None:
                source, window, keys = rel.session
                if not bounds or set(plain) != set(keys):
                    raise self.error(node, f"a SESSION table function is aggregated by its PARTITION BY columns "
                                           f"{list(keys)} and window_start, window_end")
                return source.window(window).group_by(*plain).agg(**aggs)
            if bounds and rel.windowed is not None:
                if computed:
                    raise self.error(node, "computed group keys in a windowed aggregation are not supported; "
                                           "compute them in a view below the TUMBLE/HOP")
                return rel.windowed.group_by(*plain).agg(**aggs)
            return rel.table.group_by(*plain, **computed).agg(**aggs)
        result: Table = self.planner._located(node, build)
        return result

    def _cascade(self, node: exp.Expr, rel: Relation, bounds: Bounds, keys: list[str],
                 aggs: dict[str, dx.Agg]) -> Table:
        """GROUP BY the window bounds of a windowed aggregation's result (Flink's cascading window):
        a tumbling window of the slide over the window ends, whose every window holds the rows of
        one window, with the bounds computed back from its start."""
        window = bounds.window
        on = bounds.end or bounds.start
        assert on is not None
        start = col(WINDOW_START)

        def build() -> Table:
            grouped = rel.table.window(Tumble(window.slide_ms, on=on)).group_by(*keys).agg(**aggs)
            if bounds.end is None:  # only the starts: the tumble over them starts at each start
                return grouped.with_columns(**{on: start})
            restored = {bounds.end: start}
            if bounds.start is not None:
                restored[bounds.start] = start - window.size_ms
            return grouped.with_columns(**restored)
        result: Table = self.planner._located(node, build)
        return result

    def _group_window(self, g: WindowFunction, rel: Relation) -> Any:
        """A group window of GROUP BY: ``TUMBLE(ts, size)``, ``HOP(ts, slide, size)``, ``SESSION(ts, gap)``."""
        args = g.expressions
        if not args or not isinstance(args[0], exp.Column):
            raise self.error(g, f"{g.kind} in GROUP BY takes the time column first, e.g. {g.kind}(ts, INTERVAL ...)")
        on = self.translator(rel)(args[0]).node
        assert isinstance(on, ex.Column)
        intervals = [interval_ms(a, self.where) for a in args[1:]]
        if g.kind == "SESSION" and len(intervals) == 1:
            window: Any = Session(intervals[0], on=on.name)
        elif g.kind == "TUMBLE" and len(intervals) == 1:
            window = Tumble(intervals[0], on=on.name)
        elif g.kind == "HOP" and len(intervals) == 2:
            window = Slide(intervals[1], intervals[0], on=on.name)
        else:
            raise self.error(g, f"{g.kind} group window with {len(intervals)} intervals is not supported")
        return self.planner._located(g, lambda: rel.table.window(window))

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
        return make(translate(arg), filter=condition)

    # -- the select list ---------------------------------------------------------------------
    def select_list(self, rel: Relation, replaced: dict[str, Expr], rank: RankRequest | None) -> Table:
        translate = self.translator(rel, replaced)
        named: dict[str, Any] = {}
        numbered: tuple[str, exp.Window] | None = None
        proctime: set[str] = set()

        def add(name: str, value: Any) -> None:
            unique, k = name, 0
            while unique in named:
                unique, k = f"{name}{k}", k + 1
            named[unique] = value

        for i, item in enumerate(self.node.expressions):
            if isinstance(item, exp.Star) or isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                qualifier = item.table or None if isinstance(item, exp.Column) else None
                entries = [e for e in rel.scope.entries if qualifier is None or e.qualifier == qualifier]
                if qualifier is not None and not entries:
                    raise self.error(item, f"{qualifier}.*: no table {qualifier!r} here")
                for e in entries:
                    add(e.name, col(e.column))
                continue
            value = item.this if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else item.name if isinstance(item, exp.Column) \
                else f"EXPR${i}"
            window = _row_number(item)
            if window is not None and self.ranked is not None and name == self.ranked:
                add(name, col(name))  # ranked already, by a window top-N
                continue
            if window is not None:
                if rank is None or name != rank.alias:
                    raise self.error(item, "ROW_NUMBER() is only supported as a top-N: filter it in an outer query "
                                           "with WHERE rn <= N")
                numbered = (name, window)
                continue
            if isinstance(value, exp.Anonymous) and str(value.this).upper() == "PROCTIME" and not value.expressions:
                proctime.add(name)  # not a column: Darwin has no processing time (see record_proctime)
                continue
            if isinstance(value, exp.Window):
                add(name, self._over(value, rel, translate))
                continue
            add(name, translate(value))
        if not named:
            raise self.error(self.node, "a SELECT needs at least one column besides PROCTIME()")
        table = self.planner._located(self.node, lambda: rel.table.select(**named))
        if proctime:
            self.planner.record_proctime(table, frozenset(proctime))
        if self.window is not None:
            self._record_bounds(table, named)
        if rank is None:
            return table
        if numbered is None:
            raise self.error(self.node, f"no ROW_NUMBER() ... AS {rank.alias} in this SELECT")
        return self._top_n(table, named, numbered, rank, translate)

    def _window_top_n(self, rel: Relation, rank: RankRequest) -> RankRequest | None:
        """Flink's window top-N: ROW_NUMBER over a window table function, partitioned by window_start
        and window_end, is the top-N of each window, emitted once when it closes (an appending
        result). Ranked here, before the select list; otherwise (other partitions) the request
        stands and the select list ranks its rows as an updating top-N."""
        assert rel.windowed is not None
        item = next(i for i in self.node.expressions if _row_number(i) is not None and i.alias == rank.alias)
        window = _row_number(item)
        assert window is not None
        translate = self.translator(rel)
        names = [translate(p).node for p in window.args.get("partition_by") or []]
        order = window.args.get("order")
        keys = [(translate(o.this).node, bool(o.args.get("desc"))) for o in (order.expressions if order else [])]
        if not keys or not all(isinstance(n, ex.Column) for n in names + [k for k, _ in keys]):
            return rank
        by = [n.name for n in names if isinstance(n, ex.Column)]
        if WINDOW_START not in by or WINDOW_END not in by:
            return rank
        order_by = [desc(k.name) if d else k.name for k, d in keys if isinstance(k, ex.Column)]
        windowed = rel.windowed
        rel.table = self.planner._located(window, lambda: windowed.top_n(
            rank.n, by=[b for b in by if b not in (WINDOW_START, WINDOW_END)], order=order_by,
            rank=rank.alias if rank.keep_rank else None))
        if rank.keep_rank:
            rel.scope.entries.append(Entry(None, rank.alias, rank.alias))
            self.ranked = rank.alias
        else:
            self.node = self.node.copy()
            self.node.set("expressions", [i for i in self.node.expressions if i is not item and
                                          not (_row_number(i) is not None and i.alias == rank.alias)])
        return None

    def _record_bounds(self, table: Table, named: Mapping[str, Any]) -> None:
        """Which selected columns are the window's bounds, for a cascading window above."""
        assert self.window is not None
        names = {v.node.name: n for n, v in named.items() if isinstance(v, Expr) and isinstance(v.node, ex.Column)}
        start, end = names.get(WINDOW_START), names.get(WINDOW_END)
        if start is not None or end is not None:
            self.planner.record_bounds(table, Bounds(start, end, self.window))

    def _over(self, window: exp.Window, rel: Relation, translate: ExpressionTranslator) -> Any:
        """``agg(x) OVER (PARTITION BY ... ORDER BY ... ROWS BETWEEN n PRECEDING AND CURRENT ROW)``."""
        call = window.this
        make = AGGREGATES.get(type(call))
        if isinstance(call, exp.Count):
            agg = dx.count() if isinstance(call.this, exp.Star) else dx.count(translate(call.this))
        elif make is not None:
            agg = make(translate(call.this))
        else:
            raise self.error(window, f"{call.sql(dialect=Flink)} OVER (...) is not supported; COUNT, SUM, MIN, MAX "
                                     "and AVG are")
        by = [self._column_name(p, translate) for p in window.args.get("partition_by") or []]
        order = window.args.get("order")
        order_by = [desc(self._column_name(o.this, translate)) if o.args.get("desc")
                    else self._column_name(o.this, translate) for o in (order.expressions if order else [])]
        spec = window.args.get("spec")
        if spec is None or str(spec.args.get("kind", "")).upper() != "ROWS" \
                or str(spec.args.get("end", "")).upper() != "CURRENT ROW":
            raise self.error(window, "OVER needs ROWS BETWEEN n PRECEDING AND CURRENT ROW")
        start = spec.args.get("start")
        if not isinstance(start, exp.Literal):
            raise self.error(window, "OVER: only a number of PRECEDING rows is supported (not UNBOUNDED)")
        return self.planner._located(window, lambda: agg.over(partition_by=by, order_by=order_by,
                                                              rows=(int(start.this), 0)))

    def _column_name(self, node: exp.Expr, translate: ExpressionTranslator) -> str:
        value = translate(node).node
        if not isinstance(value, ex.Column):
            raise self.error(node, "PARTITION BY and ORDER BY of a window take columns")
        return value.name

    def _top_n(self, table: Table, named: Mapping[str, Any], numbered: tuple[str, exp.Window],
               rank: RankRequest, translate: ExpressionTranslator) -> Table:
        """The selected rows ranked by the ROW_NUMBER window: its PARTITION BY and ORDER BY name
        selected expressions, or hidden columns added for the ranking and dropped after it."""
        name, window = numbered
        outputs = {v.node: n for n, v in named.items() if isinstance(v, Expr)}
        hidden: dict[str, Expr] = {}

        def column_for(node: exp.Expr) -> str:
            value = translate(node)
            if value.node in outputs:
                return outputs[value.node]
            key = f"$rank{len(hidden)}"
            hidden[key] = value
            outputs[value.node] = key
            return key

        by = [column_for(p) for p in window.args.get("partition_by") or []]
        order = window.args.get("order")
        keys = [(column_for(o.this), bool(o.args.get("desc"))) for o in (order.expressions if order else [])]
        if not keys:
            raise self.error(window, "ROW_NUMBER() needs ORDER BY")
        if hidden:
            table = self.planner._located(window, lambda: table.with_columns(**hidden))
        schema = table.plan.schema
        single_time = len(keys) == 1 and schema.field(keys[0][0]).dtype is DType.TIMESTAMP
        if rank.n == 1 and single_time and not rank.keep_rank:
            column, descending = keys[0]
            result = self.planner._located(window, lambda: table.deduplicate(
                on=by, keep="last" if descending else "first", order=column))
        else:
            order_by = [desc(c) if d else c for c, d in keys]
            result = self.planner._located(window, lambda: table.top_n(
                rank.n, by=by, order=order_by, rank=name if rank.keep_rank else None))
        wanted = list(named) + ([name] if rank.keep_rank else [])
        if result.columns != wanted:
            result = result.select(*wanted)
        return result
