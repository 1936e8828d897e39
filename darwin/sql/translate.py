"""SQL queries to Darwin tables: a visitor over sqlglot's query classes, built on the fluent API.

``QueryPlanner.query`` takes a parsed query (SELECT, UNION ALL, WITH, a subquery) and returns
a ``darwin.api.Table``; each query class has a ``visit_<Class>`` method, and any other raises a
``SqlError`` with its line and column. FROM items (named tables, subqueries, window table
functions) are planned here, a SELECT's clauses by ``darwin.sql.select``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from darwin.api import Table
from darwin.errors import DarwinError, SqlError
from darwin.expr import col
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.nodes import WINDOW_END, WINDOW_START
from darwin.plan.window import Session, Slide, Tumble
from darwin.sql.dialect import TABLE_HINTS, Descriptor, Flink, TableArgument, WindowFunction
from darwin.sql.errors import Located
from darwin.sql.expressions import Entry, interval_ms
from darwin.sql.hints import TableOptions, table_options
from darwin.sql.relations import Bounds, Catalog, RankedView, RankRequest, Relation, relation
from darwin.sql.select import SelectPlanner, row_number
from darwin.types import DType


class QueryPlanner:
    """Plans queries over ``catalog``; ``where`` locates errors in the SQL text."""

    def __init__(self, catalog: Catalog, where: Located, bounds: dict[int, tuple[Any, Bounds]] | None = None) -> None:
        self.catalog, self.where = catalog, where
        self.bounds = {} if bounds is None else bounds  # id(plan) -> (plan, its window bounds)
        self.proctime: dict[int, tuple[Any, frozenset[str]]] = {}  # id(plan) -> (plan, its PROCTIME() names)

    def record_proctime(self, table: Table, names: frozenset[str]) -> None:
        """``names`` are PROCTIME() attributes of ``table``: not columns (Darwin has no processing
        time), only what a FOR SYSTEM_TIME AS OF lookup may name."""
        self.proctime[id(table.plan)] = (table.plan, names)

    def proctime_of(self, table: Table) -> frozenset[str]:
        found = self.proctime.get(id(table.plan))
        return found[1] if found is not None and found[0] is table.plan else frozenset()

    def record_bounds(self, table: Table, bounds: Bounds) -> None:
        self.bounds[id(table.plan)] = (table.plan, bounds)

    def bounds_of(self, table: Table) -> Bounds | None:
        found = self.bounds.get(id(table.plan))
        return found[1] if found is not None and found[0] is table.plan else None

    def error(self, node: exp.Expr | None, message: str) -> SqlError:
        return self.where.error(node, message)

    def query(self, node: exp.Expr, rank: RankRequest | None = None) -> Table:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} is not supported as a query in Darwin's SQL")
        if rank is not None and not isinstance(node, (exp.Select, exp.Subquery)):
            raise self.error(node, "ROW_NUMBER() top-N needs a plain SELECT")
        return method(node, rank) if rank is not None else method(node)

    def visit_Subquery(self, node: exp.Subquery, rank: RankRequest | None = None) -> Table:
        return self.query(node.this, rank)

    def visit_Union(self, node: exp.Union) -> Table:
        if node.args.get("distinct"):
            raise self.error(node, "UNION (distinct) is not supported; use UNION ALL")
        planner = self._with(node)
        left, right = planner.query(node.this), planner.query(node.expression)
        if len(left.columns) != len(right.columns):
            raise self.error(node, f"UNION ALL of {len(left.columns)} and {len(right.columns)} columns")
        if right.columns != left.columns:  # SQL unions by position
            right = right.select(**{a: col(b) for a, b in zip(left.columns, right.columns)})
        left, right = _widened(left, right), _widened(right, left)
        return self._located(node, lambda: left.union(right))

    def _with(self, node: exp.Expr) -> QueryPlanner:
        """A planner that also sees the query's WITH tables."""
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is None:
            return self
        planner = QueryPlanner(self.catalog.child(), self.where, self.bounds)
        planner.proctime = self.proctime
        for cte in with_.expressions:
            planner.define(cte.alias, cte.this)
        return planner

    def define(self, name: str, query: exp.Expr) -> None:
        """A view or WITH table: planned now, or where it is read if it selects ROW_NUMBER() (the top-N
        is asked by the query reading it)."""
        if isinstance(query, exp.Select) and any(row_number(i) is not None for i in query.expressions):
            self.catalog.define(name, RankedView(query, lambda rank: self.query(query, rank)))
        else:
            self.catalog.define(name, self.query(query))

    def _located(self, node: exp.Expr, build: Callable[[], Any]) -> Any:
        """Darwin's own checks (types, columns, connectors), reported at ``node`` unless located already."""
        try:
            return build()
        except DarwinError as e:
            if isinstance(e, SqlError) and str(e).startswith("line "):
                raise
            raise self.error(node, str(e)) from None

    # -- SELECT ----------------------------------------------------------------------------
    def visit_Select(self, node: exp.Select, rank: RankRequest | None = None) -> Table:
        planner = self._with(node)
        return SelectPlanner(planner, node).plan(rank)

    # -- FROM items ------------------------------------------------------------------------
    def from_item(self, node: exp.Expr) -> Relation:
        alias = node.alias or None
        if isinstance(node, exp.Subquery):
            table = self.query(node.this)
            rel = relation(table, alias)
            rel.bounds = self.bounds_of(table)
            rel.scope.proctime = self.proctime_of(table)
            return rel
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier) and node.args.get(TABLE_HINTS):
            raise self.error(node.args[TABLE_HINTS][0], "a table hint follows a table's name (FROM t /*+ OPTIONS(...) "
                                                        "*/ AS alias), not a table function")
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) \
                and str(node.this.this).upper() == "TABLE" and len(node.this.expressions) == 1 \
                and isinstance(node.this.expressions[0], WindowFunction):
            return self.table_function(node.this.expressions[0], alias)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            if node.args.get("db") or node.args.get("catalog"):
                raise self.error(node, f"{node.sql(dialect=Flink)}: catalogs and databases are not supported")
            table = self.named_table(node)
            rel = relation(table, alias or node.name)
            rel.bounds = self.bounds_of(table)
            rel.scope.proctime = self.proctime_of(table)
            version = node.args.get("version")
            if version is not None:
                rel.lookup = True
            return rel
        raise self.error(node, f"{node.sql(dialect=Flink)} is not supported in FROM")

    def named_table(self, node: exp.Table) -> Table:
        options = table_options(node, self.where)
        if options is not None:
            return self.hinted_table(node, options)
        table = self._located(node, lambda: self.catalog.get(node.name))  # a connector's errors, located here
        if table is None:
            raise self.error(node, f"unknown table {node.name!r}; known: {', '.join(sorted(self.catalog.tables))}"
                                   " (and the tables of CREATE TABLE)")
        return table

    def hinted_table(self, node: exp.Table, options: TableOptions) -> Table:
        """The CREATE TABLE ``node`` names, read with its OPTIONS hints over its WITH options: a table of its
        own, so two references with different options are two sources. A view takes none, as in Flink."""
        if self.catalog.is_view(node.name):
            raise self.error(options.hint, f"OPTIONS hints apply to the tables of CREATE TABLE; {node.name!r} is a "
                                           "view (or a WITH table, or a table given to dw.sql), which has no "
                                           "connector options to change (Flink: hints can only be applied to tables)")
        table = self.catalog.hinted(node.name, options)
        if table is None:
            raise self.error(node, f"unknown table {node.name!r}; known: {', '.join(sorted(self.catalog.tables))}"
                                   " (and the tables of CREATE TABLE)")
        return table

    def table_function(self, fn: WindowFunction, alias: str | None) -> Relation:
        """``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))``, ``HOP(..., slide, size)``,
        ``SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)``: the rows with their window."""
        args = fn.expressions
        if len(args) < 3 or not isinstance(args[0], TableArgument) or not isinstance(args[1], Descriptor) \
                or len(args[1].expressions) != 1:
            raise self.error(fn, f"{fn.kind}: write {fn.kind}(TABLE t, DESCRIPTOR(time_column), INTERVAL ...)")
        source = self.named_table(args[0].this)
        on = args[1].expressions[0].name
        if on in self.proctime_of(source):
            raise self.error(args[1], f"{fn.kind} over PROCTIME() {on!r}: Darwin has no processing time; window on "
                                      "an event-time column (with a WATERMARK)")
        if on not in source.columns:
            raise self.error(args[1], f"{fn.kind}: {args[0].this.name} has no column {on!r}")
        intervals = [interval_ms(a, self.where) for a in args[2:]]
        if fn.kind == "SESSION":
            keys = tuple(c.name for c in args[0].args.get("partition_by") or [])
            if len(intervals) != 1:
                raise self.error(fn, "SESSION: one gap, e.g. INTERVAL '10' SECOND")
            window = self._located(fn, lambda: Session(intervals[0], on=on))
            rel = relation(source, alias)
            rel.session = (source, window, keys)
            rel.scope.entries += [Entry(alias, WINDOW_START, WINDOW_START), Entry(alias, WINDOW_END, WINDOW_END)]
            return rel
        if fn.kind == "TUMBLE" and len(intervals) == 1:
            w = self._located(fn, lambda: Tumble(intervals[0], on=on))
        elif fn.kind == "HOP" and len(intervals) == 2:
            w = self._located(fn, lambda: Slide(intervals[1], intervals[0], on=on))
        else:
            raise self.error(fn, f"{fn.kind} with {len(intervals)} intervals is not supported; TUMBLE(TABLE t, "
                                 "DESCRIPTOR(ts), size) and HOP(TABLE t, DESCRIPTOR(ts), slide, size) are")
        windowed = self._located(fn, lambda: source.window(w))
        rel = relation(windowed.table(), alias)
        rel.windowed = windowed
        return rel


def _widened(table: Table, other: Table) -> Table:
    """``table`` with each column typed as a UNION types it from its inputs, as in Flink: a bare NULL
    (typed BIGINT alone) takes the other input's type, and a BIGINT column that is a DOUBLE in
    ``other`` is cast to DOUBLE, the least restrictive type (other types must match)."""
    dtypes = {f.name: f.dtype for f in other.plan.schema.fields}
    retyped: dict[str, DType] = {}
    for f in table.plan.schema.fields:
        theirs = dtypes.get(f.name)
        if theirs is None or theirs is f.dtype:
            continue
        if _bare_null(table.plan, f.name) or (f.dtype is DType.INT64 and theirs is DType.FLOAT64):
            retyped[f.name] = theirs
    if not retyped:
        return table
    return table.select(**{c: col(c).cast(retyped[c]) if c in retyped else col(c) for c in table.columns})


def _bare_null(plan: pn.PlanNode, column: str) -> bool:
    """Whether ``column`` of ``plan`` is a NULL written without a type (``SELECT k, NULL``), through
    renaming projections and unions of such NULLs."""
    if isinstance(plan, pn.Union):
        return all(_bare_null(p, column) for p in plan.inputs)
    if not isinstance(plan, pn.Project):
        return False
    e = dict(plan.exprs).get(column)
    if isinstance(e, ex.Column):
        return _bare_null(plan.input, e.name)
    return isinstance(e, ex.Literal) and e.value is None and e.dtype is None
