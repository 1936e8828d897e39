"""What the SQL planner works on: relations (a table and the columns SQL can name), the catalog of
named tables, and what a query passes on to the one around it (window bounds, a top-N request)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from darwin.api import Table, WindowedTable
from darwin.plan.window import SessionWindow, Window
from darwin.sql.expressions import Entry, Scope
from darwin.sql.hints import TableOptions


@dataclass
class Relation:
    """A FROM item or a join of them: the table, the columns SQL can name, and what it came from."""

    table: Table
    scope: Scope
    windowed: WindowedTable | None = None  # a TUMBLE/HOP table function: grouping by its bounds aggregates it
    session: tuple[Table, SessionWindow, tuple[str, ...]] | None = None  # a SESSION table function
    lookup: bool = False  # FOR SYSTEM_TIME AS OF: the static side of a lookup join
    bounds: Bounds | None = None  # the window bounds a windowed aggregation's result passes on


@dataclass(frozen=True)
class Bounds:
    """The columns of a windowed aggregation's result that hold its windows' start and end (either
    may be missing), and the window: grouping by them again is Flink's cascading window."""

    start: str | None
    end: str | None
    window: Window


def relation(table: Table, qualifier: str | None) -> Relation:
    return Relation(table, Scope([Entry(qualifier, n, n) for n in table.columns]))


@dataclass
class RankRequest:
    """An outer ``WHERE rn <= n`` over a subquery selecting ``ROW_NUMBER() OVER (...) AS rn``."""

    alias: str
    n: int
    keep_rank: bool


@dataclass(frozen=True)
class RankedView:
    """A view or WITH table selecting ROW_NUMBER(): planned where a query reads it, with the top-N
    that query's WHERE asks of it (``WITH r AS (SELECT ..., ROW_NUMBER() ... AS rn ...) SELECT ...
    FROM r WHERE rn <= 3``), as it is planned inside a subquery."""

    query: exp.Select
    plan: Callable[[RankRequest | None], Table]


@dataclass
class Catalog:
    """Named tables a query can read: views, registered tables, and the tables of CREATE TABLE
    (built on first use by ``resolve``); views ranking their rows are planned where they are read."""

    tables: dict[str, Table] = field(default_factory=dict)
    resolve: Callable[[str, TableOptions | None], Table | None] = lambda name, options: None
    ranked: dict[str, RankedView] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)  # names in ``tables`` that are CREATE TABLE's, not views

    def get(self, name: str) -> Table | None:
        table = self.tables.get(name)
        if table is None and name in self.ranked:
            return self.ranked[name].plan(None)  # read other than by a top-N: refused where it ranks
        if table is None:
            table = self.resolve(name, None)
            if table is not None:
                self.tables[name] = table
                self.declared.add(name)
        return table

    def is_view(self, name: str) -> bool:
        """Whether ``name`` is a view, a WITH table or a table given by the caller: no CREATE TABLE's."""
        return name in self.ranked or (name in self.tables and name not in self.declared)

    def hinted(self, name: str, options: TableOptions) -> Table | None:
        """The CREATE TABLE ``name`` read with ``options`` over its WITH options (``resolve`` keeps one
        table per set of options); None if no CREATE TABLE has that name."""
        return self.resolve(name, options)

    def define(self, name: str, table: Table | RankedView) -> None:
        """A view or WITH table, replacing any table of that name."""
        self.tables.pop(name, None)
        self.ranked.pop(name, None)
        self.declared.discard(name)
        if isinstance(table, RankedView):
            self.ranked[name] = table
        else:
            self.tables[name] = table

    def child(self) -> Catalog:
        return Catalog(dict(self.tables), self.resolve, dict(self.ranked), set(self.declared))


def conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def null_safe_equality(node: exp.Expr) -> tuple[exp.Expr, exp.Expr] | None:
    """The operands ``(a, b)`` of a condition that is true where ``a = b`` or both are NULL, as
    Flink writes it: ``a IS NOT DISTINCT FROM b``, ``NOT (a IS DISTINCT FROM b)``, or ``a = b OR (a
    IS NULL AND b IS NULL)`` (either order throughout), which Calcite plans as a join key whose NULLs
    match (filterNulls = false); None for any other condition."""
    node = _bare(node)
    if isinstance(node, exp.NullSafeEQ):
        return node.this, node.expression
    if isinstance(node, exp.Not) and isinstance(_bare(node.this), exp.NullSafeNEQ):
        inner = _bare(node.this)
        return inner.this, inner.expression
    if not isinstance(node, exp.Or):
        return None
    for eq, nulls in ((_bare(node.this), _bare(node.expression)), (_bare(node.expression), _bare(node.this))):
        if isinstance(eq, exp.EQ) and isinstance(nulls, exp.And):
            tested = [_null_tested(nulls.this), _null_tested(nulls.expression)]
            a, b = _bare(eq.this), _bare(eq.expression)
            if None not in tested and (tested in ([a, b], [b, a])) and a != b:
                return eq.this, eq.expression
    return None


def _bare(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _null_tested(node: exp.Expr) -> exp.Expr | None:
    """``x`` of ``x IS NULL``."""
    node = _bare(node)
    return _bare(node.this) if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) else None
