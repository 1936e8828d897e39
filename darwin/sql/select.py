"""One SELECT planned clause by clause: FROM (relations, joins, window table functions), WHERE,
GROUP BY (``darwin.sql.grouping``), HAVING, the select list, and the top-N of a ROW_NUMBER filtered
by the query around it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

import darwin.expr as dx
from darwin.api import Table, desc, null_safe
from darwin.expr import Expr, col
from darwin.plan import exprs as ex
from darwin.plan.exprs import type_of
from darwin.plan.nodes import WINDOW_END, WINDOW_START, joined_names
from darwin.plan.window import Window
from darwin.sql.dialect import Flink
from darwin.sql.expressions import Entry, ExpressionTranslator, Replaced, Scope
from darwin.sql.grouping import AGGREGATES, GroupByClause
from darwin.sql.hints import input_name, state_ttl_hint
from darwin.sql.relations import Bounds, RankedView, RankRequest, Relation, conjuncts, null_safe_equality, relation
from darwin.types import DType

if TYPE_CHECKING:
    from darwin.sql.translate import QueryPlanner


def row_number(item: exp.Expr) -> exp.Window | None:
    inner = item.this if isinstance(item, exp.Alias) else item
    return inner if isinstance(inner, exp.Window) and isinstance(inner.this, exp.RowNumber) else None


_WINDOW_CLAUSES = ("partition_by", "order", "spec")  # what OVER (...) says, a named window too


@dataclass(frozen=True)
class RankKeys:
    """What a ROW_NUMBER window partitions and orders by, as columns of the select list's result, and
    the hidden columns (``$rank<i>``) it computes for the expressions the query does not select."""

    by: list[str]
    keys: list[tuple[str, bool]]  # (column, descending)
    hidden: dict[str, Expr]


_MIRRORED: dict[type[exp.Expr], type[exp.Expr]] = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE,
                                                   exp.LT: exp.GT, exp.EQ: exp.EQ}


def _rank_comparison(c: exp.Expr, alias: str) -> tuple[type[exp.Expr], Decimal] | None:
    """``rn <op> number`` (or ``number <op> rn``, mirrored) as the operator and the number."""
    for column, number, op in ((c.this, c.args.get("expression"), type(c)),
                               (c.args.get("expression"), c.this, _MIRRORED.get(type(c)))):
        if op in _MIRRORED and isinstance(column, exp.Column) and column.name == alias \
                and isinstance(number, exp.Literal) and not number.is_string:
            return op, Decimal(number.this)
    return None


def _rank_upper_bound(c: exp.Expr, alias: str) -> int | None:
    """The largest row number a WHERE conjunct lets through, if it bounds the row number from above
    (the whole numbers under a bound such as 2.5)."""
    if isinstance(c, exp.Between) and isinstance(c.this, exp.Column) and c.this.name == alias:
        high = c.args.get("high")
        return math.floor(Decimal(high.this)) if isinstance(high, exp.Literal) and not high.is_string else None
    compared = _rank_comparison(c, alias)
    if compared is None:
        return None
    op, number = compared
    if op is exp.LTE or op is exp.EQ:
        return math.floor(number)
    return math.ceil(number) - 1 if op is exp.LT else None


def _only_an_upper_bound(c: exp.Expr, alias: str) -> bool:
    """Whether a conjunct says no more than that the row number is at most some bound, which the
    smallest such bound (the top-N's) implies: ``rn <= N``, ``rn < N``, ``rn = 1``."""
    compared = _rank_comparison(c, alias)
    return compared is not None and (compared[0] in (exp.LTE, exp.LT) or compared == (exp.EQ, 1))


def _names_column(node: exp.Expr, name: str) -> bool:
    return any(c.name == name for c in node.find_all(exp.Column))


class SelectPlanner(GroupByClause):
    """One SELECT, clause by clause."""

    def __init__(self, planner: QueryPlanner, node: exp.Select) -> None:
        self.planner, self.node, self.where = planner, node, planner.where
        self.pool = conjuncts(node.args["where"].this) if node.args.get("where") else []
        self.window: Window | None = None  # the window of this SELECT's windowed aggregation, if any
        self.ranked: str | None = None  # the rank column a window top-N added, when the query selects it
        self.over_window: tuple | None = None  # (partition, order, frame start) of the SELECT's first OVER
        self.ttl_hint = state_ttl_hint(node, self.where)
        self.from_name: str | None = None  # the name of the FROM item an aggregation reads, without joins

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
            self._where_clause(rel)
        rel, replaced = self.group_by(rel)
        having = node.args.get("having")
        if having is not None:
            predicate = self.translator(rel, replaced)(having.this)
            rel.table = self.planner._located(having, lambda: rel.table.filter(predicate))
        self.ttl_hint.check_used(self.where)
        return self.select_list(rel, replaced, rank)

    def _where_clause(self, rel: Relation) -> None:
        """Filter the rows WHERE keeps. A window table function's rows are also what grouping by its
        bounds aggregates under the window: the filter goes into that source too, below the window
        (a condition on the bounds themselves makes the grouping an updating aggregation over the
        filtered rows instead)."""
        predicate = self._and([self.translator(rel)(c) for c in self.pool])
        where = self.pool[0]
        rel.table = self.planner._located(where, lambda: rel.table.filter(predicate))
        on_bounds = bool(ex.columns_of(predicate.node) & {WINDOW_START, WINDOW_END})
        if rel.windowed is not None:
            windowed = rel.windowed
            source = Table(windowed.plan.input)
            rel.windowed = None if on_bounds else self.planner._located(
                where, lambda: source.filter(predicate).window(windowed.plan.window, windowed.plan.late_output))
        if rel.session is not None:
            table, window, keys = rel.session
            if on_bounds:
                raise self.error(where, "WHERE on the window_start/window_end of a SESSION table function is not "
                                        "supported; filter the aggregated result instead")
            rel.session = (self.planner._located(where, lambda: table.filter(predicate)), window, keys)

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
        self.from_name = None if joins else input_name(first)
        if not joins and isinstance(first, exp.Subquery):
            request = self._rank_request(first.this)
            if request is not None:
                return relation(self.planner.query(first.this, request), first.alias or None)
        view = self._ranked_view(first) if not joins else None
        if view is not None:
            request = self._rank_request(view.query)
            if request is not None:
                return relation(view.plan(request), first.alias or first.name)
        rel = self.planner.from_item(first)
        inner = all(not j.args.get("side") for j in joins)
        left_name = input_name(first)  # a join of joins has no name: a hint names only the inputs of the first
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
            rel.table = Table(self.ttl_hint.join(rel.table.plan, left_name, input_name(j.this), self.where))
            left_name = None
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
        left_keys: list[Expr] = []
        right_keys: list[Expr] = []
        rest: list[exp.Expr] = []
        safe_at: set[int] = set()
        for c in conditions:
            safe = null_safe_equality(c)
            pair = safe or ((c.this, c.expression) if isinstance(c, exp.EQ) else None)
            if pair is not None:
                a, b = self._sides(pair[0], left, right), self._sides(pair[1], left, right)
                if {"left"} in (a, b) and {"right"} in (a, b):
                    mine, theirs = pair if a == {"left"} else pair[::-1]
                    if safe is not None:  # NULL meets NULL: Calcite's key with filterNulls = false
                        safe_at.add(len(left_keys))
                    left_keys.append(self.translator(left)(mine))
                    right_keys.append(self.translator(right)(theirs))
                    continue
            rest.append(c)
        if not left_keys:
            raise self.error(node, "a join needs an equality between a column of each side (ON a.x = b.y, or "
                                   "a.x IS NOT DISTINCT FROM b.y); cross joins are not supported")
        names = joined_names(tuple(left.table.columns), tuple(right.table.columns), "_right")
        scope = Scope(left.scope.entries + [Entry(e.qualifier, e.name, names[e.column]) for e in right.scope.entries],
                      proctime=left.scope.proctime | right.scope.proctime)
        if right.lookup:
            self._check_as_of(node.this, left)
        pairs: list[Any] = [null_safe(a, b) if i in safe_at else (a, b)
                            for i, (a, b) in enumerate(zip(left_keys, right_keys))]

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

    def _ranked_view(self, node: exp.Expr) -> RankedView | None:
        """The view or WITH table selecting ROW_NUMBER() that a FROM item names, if it names one."""
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier) \
                or node.args.get("db") or node.args.get("catalog"):
            return None
        return self.planner.catalog.ranked.get(node.name)

    def _rank_request(self, inner: exp.Expr) -> RankRequest | None:
        """The top-N asked of a subquery (or view) selecting ROW_NUMBER(): its bound, the smallest upper bound
        WHERE puts on the row number (``rn <= N``, ``rn < N``, ``N >= rn``, ``rn = N``, ``rn BETWEEN
        a AND N``), as Flink reads a rank range. Upper bounds are taken out of this WHERE; the other
        conditions on the row number (``rn >= 2``, ``rn BETWEEN 2 AND 3``) stay to filter the ranked
        rows, which then carry their row numbers whether or not the query selects them."""
        if not isinstance(inner, exp.Select):
            return None
        numbered = [item for item in inner.expressions if row_number(item) is not None]
        if not numbered:
            return None
        alias = numbered[0].alias
        if not alias:
            raise self.error(numbered[0], "name ROW_NUMBER() OVER (...) with AS, and filter on it: WHERE rn <= N")
        bounds = [bound for c in self.pool if (bound := _rank_upper_bound(c, alias)) is not None]
        if not bounds:
            raise self.error(numbered[0], f"ROW_NUMBER() is only supported as a top-N: filter it with WHERE "
                                          f"{alias} <= N")
        self.pool = [c for c in self.pool if not _only_an_upper_bound(c, alias)]
        items = self.node.expressions
        selects_rank = any(isinstance(i, exp.Star) or isinstance(i, exp.Column) and isinstance(i.this, exp.Star)
                           for i in items) or any(_names_column(i, alias) for i in items)
        filters_rank = any(_names_column(c, alias) for c in self.pool)
        return RankRequest(alias, min(bounds), selects_rank or filters_rank)

    # -- the select list ---------------------------------------------------------------------
    def select_list(self, rel: Relation, replaced: Replaced, rank: RankRequest | None) -> Table:
        self._over_columns(rel, replaced)
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
            window = row_number(item)
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
            if isinstance(value, exp.Window) and replaced.get(value) is None:
                add(name, self._over(value, rel, translate))
                continue
            add(name, translate(value))
        if not named:
            raise self.error(self.node, "a SELECT needs at least one column besides PROCTIME()")
        if rank is not None and numbered is None:
            raise self.error(self.node, f"no ROW_NUMBER() ... AS {rank.alias} in this SELECT")
        ranking = None if numbered is None else self._rank_keys(named, numbered[1], translate)
        hidden = {} if ranking is None else ranking.hidden
        table = self.planner._located(self.node, lambda: rel.table.select(**named, **hidden))
        if proctime:
            self.planner.record_proctime(table, frozenset(proctime))
        if self.window is not None:
            self._record_bounds(table, named)
        if rank is None or numbered is None or ranking is None:
            return table
        return self._top_n(table, named, numbered, ranking, rank)

    def _window_top_n(self, rel: Relation, rank: RankRequest) -> RankRequest | None:
        """Flink's window top-N: ROW_NUMBER over a window table function, partitioned by window_start
        and window_end, is the top-N of each window, emitted once when it closes (an appending
        result). Ranked here, before the select list; otherwise (other partitions) the request
        stands and the select list ranks its rows as an updating top-N."""
        assert rel.windowed is not None
        item = next(i for i in self.node.expressions if row_number(i) is not None and i.alias == rank.alias)
        window = row_number(item)
        assert window is not None
        translate = self.translator(rel)
        names = [translate(p).node for p in window.args.get("partition_by") or []]
        order = window.args.get("order")
        keys = [(translate(o.this).node, self._descending(o)) for o in (order.expressions if order else [])]
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
                                          not (row_number(i) is not None and i.alias == rank.alias)])
        return None

    def _record_bounds(self, table: Table, named: Mapping[str, Any]) -> None:
        """Which selected columns are the window's bounds, for a cascading window above."""
        assert self.window is not None
        names = {v.node.name: n for n, v in named.items() if isinstance(v, Expr) and isinstance(v.node, ex.Column)}
        start, end = names.get(WINDOW_START), names.get(WINDOW_END)
        if start is not None or end is not None:
            self.planner.record_bounds(table, Bounds(start, end, self.window))

    def _over_columns(self, rel: Relation, replaced: Replaced) -> None:
        """Aggregates OVER a window inside an expression (``v - AVG(v) OVER (...)``), as Flink takes them: when
        the select list has one, each OVER aggregate of the SELECT (all on one window, ``_same_window``) is
        computed into a hidden column of ``rel``'s table first, and the select list reads that column where
        the aggregate was written (through ``replaced``), so the select drops it."""
        values = [item.this if isinstance(item, exp.Alias) else item for item in self.node.expressions]
        nested = [w for v in values if not isinstance(v, exp.Window) for w in v.find_all(exp.Window, bfs=False)
                  if w.find_ancestor(exp.Window) is None]  # in the order they are written
        if not nested:
            return
        windows = [v for v in values if isinstance(v, exp.Window) and row_number(v) is None] + nested
        translate = self.translator(rel, replaced)
        hidden: dict[str, Any] = {}
        for window in windows:
            if replaced.get(window) is not None:  # the same aggregate again
                continue
            name = next(n for i in itertools.count() if (n := f"$over{i}") not in rel.table.columns
                        and n not in hidden)
            hidden[name] = self._over(window, rel, translate)
            replaced[window] = col(name)
        table = rel.table
        rel.table = self.planner._located(self.node, lambda: table.with_columns(**hidden))

    def _over(self, window: exp.Window, rel: Relation, translate: ExpressionTranslator) -> Any:
        """``agg(x) OVER (PARTITION BY ... ORDER BY ... ROWS BETWEEN n PRECEDING AND CURRENT ROW)``, or
        ``OVER w`` with ``WINDOW w AS (...)`` after the SELECT's clauses."""
        window = self._named_window(window)
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
        order_by = [desc(self._column_name(o.this, translate)) if self._descending(o)
                    else self._column_name(o.this, translate) for o in (order.expressions if order else [])]
        spec = window.args.get("spec")
        end = None if spec is None else spec.args.get("end")  # None: ROWS n PRECEDING, Calcite's shorthand
        if spec is None or str(spec.args.get("kind", "")).upper() != "ROWS" \
                or end is not None and str(end).upper() != "CURRENT ROW":
            raise self.error(window, "OVER needs ROWS BETWEEN n PRECEDING AND CURRENT ROW")
        preceding = self._frame_start(window, spec)
        exclude = spec.args.get("exclude")
        if exclude is not None and exclude.name.upper() != "NO OTHERS":  # NO OTHERS: the frame as it is
            raise self.error(window, f"OVER: EXCLUDE {exclude.name} is not supported; a frame holds its "
                                     "rows from n PRECEDING to the CURRENT ROW")
        self._same_window(window, (tuple(by), tuple(map(str, order_by)), preceding))
        return self.planner._located(window, lambda: agg.over(partition_by=by, order_by=order_by,
                                                              rows=(preceding, 0)))

    def _frame_start(self, window: exp.Window, spec: exp.WindowSpec) -> int:
        """How many rows before the current one a ROWS frame starts: ``n PRECEDING``, or 0 for
        ``CURRENT ROW`` (the row alone)."""
        start = spec.args.get("start")
        if isinstance(start, str) and start.upper() == "CURRENT ROW":
            return 0
        if str(spec.args.get("start_side", "")).upper() != "PRECEDING":
            raise self.error(window, "OVER: the frame starts n PRECEDING rows before the current row "
                                     "(ROWS BETWEEN n PRECEDING AND CURRENT ROW)")
        if not isinstance(start, exp.Literal):
            raise self.error(window, "OVER: only a number of PRECEDING rows is supported (not UNBOUNDED)")
        if start.is_string or not str(start.this).isdigit():
            raise self.error(start, f"OVER: {start.sql(dialect=Flink)} PRECEDING: the frame's start is a whole "
                                    "number of rows, e.g. ROWS BETWEEN 2 PRECEDING AND CURRENT ROW")
        return int(start.this)

    def _same_window(self, window: exp.Window, key: tuple) -> None:
        """Every OVER aggregate of a SELECT is computed on one window, as Flink requires of a streaming
        query: windows partitioned or ordered otherwise run one after another, the second reading the
        first's changes in the order it emits them, so rows tied in the order would rank by where
        batches ended."""
        if self.over_window is None:
            self.over_window = key
        elif key != self.over_window:
            raise self.error(window, "this OVER window differs from the SELECT's first one: as in Flink, every "
                                     "OVER aggregate of a SELECT uses the same PARTITION BY, ORDER BY and frame")

    def _descending(self, order: exp.Ordered) -> bool:
        """Whether an ORDER BY key of a window is descending. NULLs order as the smallest values (as
        Flink's default: first ascending, last descending); NULLS FIRST/LAST asking otherwise is refused."""
        descending = bool(order.args.get("desc"))
        if bool(order.args.get("nulls_first")) == descending:
            asked = "NULLS FIRST" if descending else "NULLS LAST"
            raise self.error(order, f"{asked} with {'DESC' if descending else 'ASC'} is not supported: NULLs order "
                                    "as the smallest values (first ascending, last descending)")
        return descending

    def _named_window(self, window: exp.Window) -> exp.Window:
        """``OVER w`` as the window ``WINDOW w AS (...)`` of this SELECT defines it (Flink's named
        window); any other OVER as it is."""
        name = window.args.get("alias")
        if name is None or any(window.args.get(k) for k in _WINDOW_CLAUSES):
            return window
        named = {w.this.name: w for w in self.node.args.get("windows") or []}
        definition = named.get(name.name)
        if definition is None:
            raise self.error(window, f"OVER {name.name}: this SELECT has no WINDOW {name.name} AS (...)"
                                     + (f"; it has {', '.join(sorted(named))}" if named else ""))
        parts = {k: definition.args[k] for k in _WINDOW_CLAUSES if definition.args.get(k)}
        copied = {k: [e.copy() for e in v] if isinstance(v, list) else v.copy() for k, v in parts.items()}
        return exp.Window(this=window.this.copy(), **copied)

    def _column_name(self, node: exp.Expr, translate: ExpressionTranslator) -> str:
        value = translate(node).node
        if not isinstance(value, ex.Column):
            raise self.error(node, "PARTITION BY and ORDER BY of a window take columns")
        return value.name

    def _rank_keys(self, named: Mapping[str, Any], window: exp.Window, translate: ExpressionTranslator) -> RankKeys:
        """The columns the ROW_NUMBER window partitions and orders by: selected expressions, or hidden
        columns the select list computes beside them (from the rows it reads, as SQL's window does:
        an ORDER BY v under ``-v AS v`` orders by the input's v) and the ranking drops."""
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
        keys = [(column_for(o.this), self._descending(o)) for o in (order.expressions if order else [])]
        if not keys:
            raise self.error(window, "ROW_NUMBER() needs ORDER BY")
        return RankKeys(by, keys, hidden)

    def _top_n(self, table: Table, named: Mapping[str, Any], numbered: tuple[str, exp.Window], ranking: RankKeys,
               rank: RankRequest) -> Table:
        """The selected rows (with the ranking's hidden columns) ranked by the ROW_NUMBER window."""
        name, window = numbered
        by, keys = ranking.by, ranking.keys
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
