"""SQL scripts: ``CREATE TABLE ... WITH (...)``, ``CREATE VIEW``, ``INSERT INTO``, queries and
``SET``/``RESET`` (``darwin.sql.settings``).

``plan_script`` parses and plans every statement without running anything; ``sql`` returns the
table of a query (Flink's ``sqlQuery``: an INSERT INTO there is refused, never dropped), ``sql_job``
runs a script's INSERT INTO statements (Flink's ``executeSql``/statement set).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeGuard, TypeVar

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from darwin.api import Table, from_source
from darwin.config import Config
from darwin.errors import DarwinError, DarwinTypeError, SqlError
from darwin.expr import Expr, col, lit
from darwin.io.sinks import Sink
from darwin.plan import nodes as pn
from darwin.plan.exprs import type_of
from darwin.runtime.job import JobResult
from darwin.sql.computed_time import ComputedTime
from darwin.sql.connectors import TableSpec, check_options, connector, unknown_option
from darwin.sql.dialect import Flink, Metadata, Watermark
from darwin.sql.errors import Located
from darwin.sql.expressions import Entry, ExpressionTranslator, Scope, interval_ms, sql_type
from darwin.sql.hints import TableOptions, table_options
from darwin.sql.relations import Catalog
from darwin.sql.settings import (
    Session,
    SessionStatement,
    Settings,
    is_session_statement,
    session_statement,
    state_ttl_applied,
)
from darwin.sql.translate import QueryPlanner
from darwin.types import DType, Field, Schema


@dataclass(frozen=True)
class Insert:
    """An ``INSERT INTO target SELECT ...``: the query's table (named as the target's columns) and
    the target's sink."""

    target: str
    table: Table
    sink: Sink
    settings: Settings = field(default_factory=Settings)  # the SET statements' settings in effect at it


@dataclass
class Script:
    """What a script declares and what it inserts, planned."""

    specs: dict[str, TableSpec] = field(default_factory=dict)
    catalog: Catalog = field(default_factory=Catalog)
    inserts: list[Insert] = field(default_factory=list)
    query: Table | None = None  # the last statement, if it is a query
    computed: dict[str, Computed] = field(default_factory=dict)  # by table: its computed columns
    settings: Settings = field(default_factory=Settings)  # in effect at the end of the script


@dataclass(frozen=True)
class Computed:
    """A table's computed columns (``price2 AS price * 2``) and every column's name in declared order."""

    columns: tuple[tuple[str, exp.Expr], ...]
    order: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


Statement = exp.Expr | SessionStatement
T = TypeVar("T")


def parse(text: str) -> list[Statement]:
    """The statements of ``text``, parsed as Flink SQL; a syntax error names its line and column.
    SET and RESET are read by Flink's own pattern (their keys and values need no quotes)."""
    dialect = Flink()
    statements: list[Statement] = []
    try:
        for tokens in _statement_tokens(dialect.tokenize(text)):
            if is_session_statement(tokens[0]):
                statements.append(session_statement(text, tokens[0].start, tokens[-1].end + 1,
                                                     Located(text).error_at))
            else:
                statements += [s for s in dialect.parser().parse(tokens, text) if s is not None]
        return statements
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        if str(first.get("highlight", "")).startswith("/*+") \
                and first.get("description", "").startswith(SQLGLOT_SYNTAX):  # a hint the parser took nowhere
            first = {**first, "description": MISPLACED_HINT}  # the dialect places a hint at its opening
        where = f"line {first.get('line')}, column {first.get('col')}: " if first.get("line") else ""
        raise SqlError(f"{where}{first.get('description', str(e))}") from None


SQLGLOT_SYNTAX = ("Invalid expression", "Required keyword", "Expecting", "Unexpected")  # not the dialect's own
MISPLACED_HINT = ("a hint /*+ ... */ goes right after SELECT (a query hint: STATE_TTL) or right after a table's name "
                  "(a table hint: OPTIONS), as in Flink's grammar")


def _statement_tokens(tokens: list[Token]) -> list[list[Token]]:
    """The tokens of each statement (those between semicolons), empty statements left out."""
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type is TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    return [s for s in statements if s]


# What a connector's 'path' option becomes (``paths=``): the path to use, or a DarwinError saying why not
PathRule = Callable[[str], str]
SQL_INSERT_ADVICE = ("dw.sql() returns the table of the script's query and runs nothing; run INSERT INTO statements "
                     "with dw.sql_job(script) (as Flink's executeSql), or write the query's table to a sink: "
                     "dw.sql(...).sink(...).run()")


def plan_script(text: str, tables: Mapping[str, Table] | None = None, *, paths: PathRule | None = None) -> Script:
    """Plan every statement of ``text``; ``tables`` are tables the script can read by name. ``paths``
    turns each CREATE TABLE's 'path' option into the path its connector is given (a deployment resolves
    them against its directory and keeps them under it); its refusal is an ``SqlError`` at the option."""
    return _plan(parse(text), Located(text), tables, paths)


def _plan(statements: list[Statement], where: Located, tables: Mapping[str, Table] | None,
          paths: PathRule | None) -> Script:
    script = Script()
    for name, table in (tables or {}).items():
        if not isinstance(table, Table):
            raise SqlError(f"tables={{{name!r}: ...}}: a table is a dw.Table (from dw.from_arrow, dw.read_parquet, "
                           f"a query...), got {type(table).__name__}")

    hinted: dict[tuple[str, tuple[tuple[str, str], ...]], Table] = {}  # by name and options: OPTIONS-hinted tables

    def resolve(name: str, options: TableOptions | None) -> Table | None:
        spec = script.specs.get(name)
        if spec is None:
            return None
        if options is None:
            return source_of(spec)
        merged = hinted_spec(spec, options, where, paths)
        if merged.options == spec.options:
            return script.catalog.get(name)
        key = (name, tuple(sorted(merged.options.items())))
        if key not in hinted:
            hinted[key] = built_at_hint(options, name, where, lambda: source_of(merged))
        return hinted[key]

    def source_of(spec: TableSpec) -> Table:
        name = spec.name
        computed = script.computed.get(name)
        timed = computed is not None and spec.time_column in computed.names  # the time is computed: not read
        read = replace(spec, time_column=None, max_delay_ms=None) if timed else spec
        check_options(spec)
        table = connector(spec.options.get("connector", ""), name).source(read)
        if computed is not None:
            table = planner._located(computed.columns[0][1], lambda: with_computed(table, spec, computed, where))
        if spec.proctime:
            planner.record_proctime(table, frozenset(spec.proctime))
        return table

    script.catalog = Catalog(dict(tables or {}), resolve)
    planner = QueryPlanner(script.catalog, where)
    session = Session()
    for statement in statements:
        script.query = None
        if isinstance(statement, SessionStatement):
            session.apply(statement, where.error_at, where.at)
        elif isinstance(statement, exp.Create):
            kind = str(statement.args.get("kind", "")).upper()
            if kind == "TABLE":
                spec = table_spec(statement, where, paths)
                script.specs[spec.name] = spec
                script.computed.pop(spec.name, None)
                computed = computed_columns(statement, spec, where)
                if computed.columns:
                    script.computed[spec.name] = computed
                script.catalog.tables.pop(spec.name, None)
                for key in [k for k in hinted if k[0] == spec.name]:
                    del hinted[key]
            elif kind == "VIEW":
                planner.define(statement.this.name, statement.expression)
            else:
                raise where.error(statement, f"CREATE {kind} is not supported; CREATE TABLE and CREATE VIEW are")
        elif isinstance(statement, exp.Insert):
            planned, settings = insert(statement, script, planner, where, paths), session.settings()
            table = with_state_ttl(planned.table, settings, statement, where)
            script.inserts.append(replace(planned, table=table, settings=settings))
        elif isinstance(statement, (exp.Select, exp.Union, exp.Subquery)):
            script.query = with_state_ttl(planner.query(statement), session.settings(), statement, where)
        else:
            raise where.error(statement, f"{type(statement).__name__} statements are not supported; CREATE TABLE, "
                                         "CREATE VIEW, INSERT INTO, queries, SET and RESET are")
    script.settings = session.settings()
    return script


def with_state_ttl(table: Table, settings: Settings, statement: exp.Expr, where: Located) -> Table:
    """``table`` with the TTL of SET 'table.exec.state.ttl' in effect at ``statement`` given to every
    operator keeping state per key that has none of its own (as Flink plans the job of a statement
    with the session's TTL, views and all); what cannot take it is refused at the statement."""
    ttl = settings.state_ttl_ms
    if ttl is None:
        return table
    try:
        return Table(state_ttl_applied(table.plan, ttl))
    except DarwinError as e:
        raise where.error(statement, f"SET 'table.exec.state.ttl' ({settings.where['table.exec.state.ttl']}) "
                                     f"cannot apply to this statement: {e}") from None


def table_spec(node: exp.Create, where: Located, paths: PathRule | None = None) -> TableSpec:
    schema = node.this
    if not isinstance(schema, exp.Schema):
        raise where.error(node, "CREATE TABLE needs its columns: CREATE TABLE t (a BIGINT, ...) WITH (...)")
    name = schema.this.name
    columns, time_column, delay = [], None, None
    proctime: list[str] = []
    computed_names: list[str] = []  # `price2 AS price * 2`: computed_columns() plans them
    primary_key: tuple[str, ...] | None = None
    metadata: list[tuple[str, str]] = []
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            constraint = item.find(exp.PrimaryKeyColumnConstraint)
            if constraint is not None:  # `id BIGINT PRIMARY KEY NOT ENFORCED`
                primary_key = _primary_key(primary_key, (item.name,), constraint, where)
            if item.args.get("kind") is None:
                computed = item.find(exp.ComputedColumnConstraint)
                if computed is not None and isinstance(computed.this, exp.Anonymous) \
                        and str(computed.this.this).upper() == "PROCTIME":
                    proctime.append(item.name)
                    continue
                if computed is None:
                    raise where.error(item, f"column {item.name!r} needs a type, or AS an expression")
                computed_names.append(item.name)
                continue
            columns.append((item.name, sql_type(item.args["kind"], where)))
            meta = item.find(Metadata)
            if meta is not None:  # `ts TIMESTAMP(3) METADATA FROM 'timestamp'`: the key defaults to the name
                metadata.append((item.name, meta.this.name if meta.this is not None else item.name))
        elif isinstance(item, Watermark):
            time_column, delay = item.this.name, watermark_delay(item, where)
        elif isinstance(item, exp.PrimaryKey):  # `PRIMARY KEY (a, b) NOT ENFORCED`
            primary_key = _primary_key(primary_key, tuple(c.name for c in item.expressions), item, where)
        else:
            raise where.error(item, f"{item.sql(dialect=Flink)} is not supported in CREATE TABLE")
    options: dict[str, str] = {}
    partition: tuple[str, ...] = ()
    for prop in node.args["properties"].expressions if node.args.get("properties") else []:
        if isinstance(prop, exp.PartitionedByProperty):  # a Property too: first
            partition = tuple(c.name for c in prop.this.expressions)
        elif isinstance(prop, exp.Property) and isinstance(prop.this, exp.Literal) \
                and isinstance(prop.args.get("value"), exp.Literal):
            options[prop.name] = value = prop.args["value"].name
            if prop.name == "path" and paths is not None:
                try:
                    options["path"] = paths(value)
                except DarwinError as e:
                    raise where.error(prop, f"table {name}: {e}") from None
        else:
            raise where.error(prop, f"{prop.sql(dialect=Flink)} is not supported in CREATE TABLE")
    if "connector" not in options:
        raise where.error(node, f"table {name}: say where it is with WITH ('connector' = '...')")
    if time_column is not None and time_column not in dict(columns) and time_column not in computed_names:
        raise where.error(schema, f"WATERMARK FOR {time_column}: no such column in {name}")
    for column in primary_key or ():
        if column not in dict(columns):
            raise where.error(schema, f"PRIMARY KEY ({', '.join(primary_key or ())}): no column {column!r} in {name}")
    return TableSpec(name, tuple(columns), options, time_column, delay, partition, tuple(proctime), primary_key,
                     tuple(metadata))


def hinted_spec(spec: TableSpec, options: TableOptions, where: Located, paths: PathRule | None) -> TableSpec:
    """``spec`` with a reference's OPTIONS hints over its WITH options, read as CREATE TABLE reads
    them (a 'path' under ``paths``' rule); a key its connector does not read is refused at the hint."""
    values = dict(options.values)
    if "path" in values and paths is not None:
        try:
            values["path"] = paths(values["path"])
        except DarwinError as e:
            raise where.error(options.pairs["path"], f"table {spec.name}: {e}") from None
    merged = {**spec.options, **values}
    for key in values:
        problem = unknown_option(merged.get("connector", ""), [key])
        if problem is not None:
            raise where.error(options.pairs[key], f"OPTIONS of table {spec.name}: {problem}")
    return replace(spec, options=merged)


def built_at_hint(options: TableOptions, name: str, where: Located, build: Callable[[], T]) -> T:
    """``build()``'s result; its errors (a connector's) reported at the OPTIONS hint, naming its options."""
    try:
        return build()
    except DarwinError as e:
        if isinstance(e, SqlError) and str(e).startswith("line "):
            raise
        raise where.error(options.hint, f"{name} /*+ {options.sql()} */: {e}") from None


def computed_columns(node: exp.Create, spec: TableSpec, where: Located) -> Computed:
    """CREATE TABLE's computed columns (``price2 AS price * 2``, ``ts AS TO_TIMESTAMP(s)``), as Flink's: an
    expression of the table's declared columns, computed as rows are read and never written by an INSERT. Each
    is checked here, against the declared types, so a mistake is refused at the CREATE TABLE."""
    columns, order = [], []
    for item in node.this.expressions:
        if not isinstance(item, exp.ColumnDef) or item.name in spec.proctime:
            continue
        order.append(item.name)
        if item.args.get("kind") is None:
            constraint = item.find(exp.ComputedColumnConstraint)
            assert constraint is not None  # table_spec refused a column with neither
            columns.append((item.name, constraint.this))
    computed = Computed(tuple(columns), tuple(order))
    declared = Schema(tuple(Field(n, t) for n, t in spec.columns))  # as the source's rows will have them
    for name, expression in computed.columns:
        value = ExpressionTranslator(_scope(spec), where, declared)(expression)
        try:
            dtype = type_of(value.node, declared, f"computed column {name}").dtype
        except DarwinTypeError as e:
            raise where.error(expression, str(e)) from None
        if name == spec.time_column and dtype is not DType.TIMESTAMP:
            kind = "NULL" if dtype is None else dtype.value
            raise where.error(expression, f"WATERMARK FOR {name}: event time is a TIMESTAMP; {name} is {kind} "
                                          "(TO_TIMESTAMP, TO_TIMESTAMP_LTZ or CAST make one)")
    return computed


def with_computed(table: Table, spec: TableSpec, computed: Computed, where: Located) -> Table:
    """The source's table with its computed columns, every column in declared order. The event time,
    if computed, is computed as the source's rows are read (``ComputedTime``): its watermark is kept there."""
    translate = ExpressionTranslator(_scope(spec), where, table.plan.schema)
    columns = dict(computed.columns)
    if spec.time_column in columns:
        scan = table.plan
        while isinstance(scan, pn.Project):  # the connector's choice of the declared columns
            scan = scan.input
        assert isinstance(scan, pn.Scan)  # a connector's table is its scan's columns
        source = ComputedTime(scan.source, spec.time_column, translate(columns.pop(spec.time_column)).node)
        table = from_source(source, time=spec.time_column, max_delay=spec.max_delay_ms, primary_key=scan.primary_key)
    return table.with_columns(**{n: translate(e) for n, e in columns.items()}).select(*computed.order)


def _scope(spec: TableSpec) -> Scope:
    return Scope([Entry(spec.name, n, n) for n in spec.names])


def _primary_key(declared: tuple[str, ...] | None, columns: tuple[str, ...], node: exp.Expression,
                 where: Located) -> tuple[str, ...]:
    """A table's primary key: one per table, and, as in Flink, NOT ENFORCED (trusted, never checked)."""
    if declared is not None:
        raise where.error(node, "a table has one PRIMARY KEY")
    if "NOT ENFORCED" not in [str(o).upper() for o in node.args.get("options") or []]:
        raise where.error(node, "PRIMARY KEY must be declared NOT ENFORCED: Darwin, as Flink, does not own the "
                                "data and never checks it; it trusts that no two rows share a key")
    return columns


def watermark_delay(node: Watermark, where: Located) -> int:
    """``WATERMARK FOR ts AS ts - INTERVAL 'n' UNIT`` (or ``AS ts``): the delay in ms."""
    e = node.expression
    if isinstance(e, exp.Column) and e.name == node.this.name:
        return 0
    if isinstance(e, exp.Sub) and isinstance(e.this, exp.Column) and e.this.name == node.this.name:
        return interval_ms(e.expression, where)
    raise where.error(node, f"WATERMARK FOR {node.this.name} AS {node.this.name} - INTERVAL '...' SECOND is the "
                            "supported form")


def insert(node: exp.Insert, script: Script, planner: QueryPlanner, where: Located,
           paths: PathRule | None = None) -> Insert:
    target = node.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    spec = script.specs.get(target.name)
    if spec is None:
        raise where.error(target, f"INSERT INTO {target.name}: declare the table first with CREATE TABLE")
    options = table_options(target, where)
    if options is not None:
        spec = hinted_spec(spec, options, where, paths)
    declared_types = dict(spec.columns)
    listed = columns or []
    for name in listed:
        if name not in declared_types or listed.count(name) > 1:
            problem = "twice" if name in declared_types else f"but the table has {', '.join(spec.names)}"
            raise where.error(target, f"INSERT INTO {target.name} ({', '.join(listed)}): column {name} "
                                      f"is named {problem}")
    table = planner.query(node.expression)
    names = columns or spec.names
    if len(names) != len(table.columns):
        raise where.error(node.expression, f"INSERT INTO {target.name}: the query has {len(table.columns)} columns, "
                                           f"the table {len(names)}")
    declared = declared_types
    values: dict[str, Expr] = {}
    cast = False
    for name, produced in zip(names, table.plan.schema.fields):  # by position, as SQL does
        want, value = declared.get(name), col(produced.name)
        if want is not None and produced.dtype is not None and produced.dtype is not want:
            if not (want is DType.FLOAT64 and produced.dtype is DType.INT64):  # Flink's implicit widening
                raise where.error(node.expression, f"INSERT INTO {target.name}: column {name} is {want.value} in "
                                                   f"the table, the query gives {produced.dtype.value}")
            value, cast = value.cast(want), True
        values[name] = value
    if columns is not None:  # the table's own columns in its order; those not listed are NULL, as in Flink
        values = {n: values[n] if n in values else lit(None, t) for n, t in spec.columns}
    if cast or table.columns != list(values):
        table = table.select(**values)
    def sink_of() -> Sink:
        check_options(spec)
        return connector(spec.options["connector"], spec.name).sink(spec)

    sink = planner._located(target, sink_of if options is None
                            else lambda: built_at_hint(options, target.name, where, sink_of))
    return Insert(target.name, table, sink)


def _is_query(statement: Statement) -> TypeGuard[exp.Expr]:
    return isinstance(statement, (exp.Select, exp.Union, exp.Subquery))


def sql(text: str, tables: Mapping[str, Table] | None = None) -> Table:
    """The table of the query ending ``text`` (after any CREATE TABLE/VIEW statements), as Flink's
    ``sqlQuery``: an INSERT INTO, or a query before the last statement, is refused (its rows would go
    nowhere); ``sql_job`` runs INSERT INTO statements. A SET of a key that configures the run
    (``parallelism.default``, ...) is refused: the table runs with the ``Config`` its caller gives."""
    script = query_of_script(text, tables)
    for field_name, (_, key) in script.settings.config_changes().items():
        raise SqlError(f"{script.settings.where[key]}: SET '{key}': dw.sql() returns a table, which runs with the "
                       f"Config given to its collect(), execute() or sink(...).run(): give it there "
                       f"(dw.Config({field_name}=...)), or run the script's INSERT INTO with dw.sql_job(script, "
                       "config=...), which takes it")
    assert script.query is not None
    return script.query


def query_of_script(text: str, tables: Mapping[str, Table] | None = None, *, paths: PathRule | None = None,
                    insert_advice: str = SQL_INSERT_ADVICE) -> Script:
    """The planned script of ``sql`` (its query and settings), with ``paths`` as in ``plan_script``;
    ``insert_advice`` says where an INSERT INTO's rows would go instead. Nothing is planned (no
    source or sink made) before the statements are checked."""
    where, statements = Located(text), parse(text)
    for i, statement in enumerate(statements):
        if isinstance(statement, exp.Insert):
            target = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
            raise where.error(statement, f"INSERT INTO {target.name}: {insert_advice}")
        if _is_query(statement) and i < len(statements) - 1:
            raise where.error(statement, "only the last statement of the script may be a query (its table is the "
                                         "result); the rows of this one would go nowhere")
    if not statements or not _is_query(statements[-1]):
        raise SqlError("sql() needs a query as the last statement; run INSERT INTO scripts with sql_job()")
    script = _plan(statements, where, tables, paths)
    assert script.query is not None
    return script


def script_settings(text: str) -> Settings:
    """The settings ``text``'s SET and RESET statements leave in effect at its end (what its final
    query runs with), read without planning anything."""
    where, session = Located(text), Session()
    for statement in parse(text):
        if isinstance(statement, SessionStatement):
            session.apply(statement, where.error_at, where.at)
    return session.settings()


def sql_job(script: str, tables: Mapping[str, Table] | None = None, config: Config | None = None) -> list[JobResult]:
    """Run every INSERT INTO of ``script`` into its table's sink; the jobs' results in order. A query
    that is not an INSERT is refused (its rows would go nowhere), as in a Flink statement set. Each
    runs with ``config`` changed by the SET statements before it (SET wins, as over flink-conf.yaml)."""
    where, statements = Located(script), parse(script)
    for statement in statements:
        if _is_query(statement):
            raise where.error(statement, "sql_job() runs INSERT INTO statements, and the rows of this query would go "
                                         "nowhere; INSERT INTO a table, or get its table with dw.sql()")
    planned = _plan(statements, where, tables, None)
    if not planned.inserts:
        raise SqlError("sql_job() found no INSERT INTO statement to run")
    configs = [i.settings.applied(config) for i in planned.inserts]  # every one checked before any runs
    if len(configs) > 1:
        configs = [own_directories(c, f"insert-{n}") for n, c in enumerate(configs, 1)]
    return [i.table.sink(i.sink).run(c) for i, c in zip(planned.inserts, configs)]


def own_directories(config: Config, name: str) -> Config:
    """``config`` for one of a script's jobs: its checkpoints and state files in a directory ``name``
    under the config's, as Flink's jobs checkpoint under their own ids; sharing one, a job resumed
    another's checkpoint (refused as another query, or, the same query, finished: nothing written)."""
    paths = {key: os.path.join(getattr(config, key), name) for key in ("checkpoint_dir", "state_path")
             if getattr(config, key) is not None}
    return config.replace(**paths) if paths else config
