"""Flink SQL as a ``sqlglot`` dialect: the generic parser, extended with what Flink adds.

Flink's identifiers are backticked and case-sensitive, its strings single-quoted. On top of
sqlglot's generic parser this dialect parses the windowing table-valued functions
(``TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))``, ``HOP``, ``CUMULATE``,
``SESSION``), the group window ``SESSION(ts, INTERVAL ...)`` of ``GROUP BY``, and
``WATERMARK FOR ts AS ...`` and metadata columns (``ts TIMESTAMP(3) METADATA FROM 'timestamp'``)
in ``CREATE TABLE``. ``FOR SYSTEM_TIME AS OF``, ``FILTER (WHERE ...)``,
``OVER (...)`` and ``WITH ('k' = 'v')`` are sqlglot's own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.helper import seq_get
from sqlglot.tokenizer_core import TokenizerCore
from sqlglot.tokens import TokenType

WINDOW_FUNCTIONS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
TABLE_HINTS = "table_hints"  # the arg of an exp.Table holding the hints written after its name


class WindowFunction(exp.Expression):
    """A windowing function: ``TUMBLE``/``HOP``/``CUMULATE``/``SESSION`` with its arguments (a
    ``TableArgument``, a ``Descriptor``, intervals); a table-valued function inside ``TABLE(...)``,
    a group window in ``GROUP BY``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expressions": True}

    @property
    def kind(self) -> str:
        return str(self.this)


class TableArgument(exp.Expression):
    """``TABLE name [PARTITION BY col | (col, ...)]``: the table a windowing function reads."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "partition_by": False}


class Descriptor(exp.Expression):
    """``DESCRIPTOR(col, ...)``: the columns a windowing function is told to use."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": True}


class Watermark(exp.Expression):
    """``WATERMARK FOR col AS expr`` of ``CREATE TABLE``."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True, "expression": True}


class Metadata(exp.Expression, exp.ColumnConstraintKind):
    """``METADATA [FROM 'key'] [VIRTUAL]`` of a CREATE TABLE column: the column is the connector's
    metadata ``key`` (the column's name if not given), not a field of the record; VIRTUAL, read only."""

    arg_types: ClassVar[dict[str, bool]] = {"this": False, "virtual": False}


def _metadata(self: FlinkParser) -> Metadata:
    key = None
    if self._match(TokenType.FROM):
        key = self._parse_string()
        if not isinstance(key, exp.Literal):
            self.raise_error("METADATA FROM takes the metadata key as a string: METADATA FROM 'timestamp'")
    virtual = exp.true() if self._match_text_seq("VIRTUAL") else None
    return self.expression(Metadata(this=key, virtual=virtual))


def _timestampdiff(args: list[exp.Expr]) -> exp.Expr:
    """``TIMESTAMPDIFF(unit, t1, t2)``, the unit (a bare word, read as a column; sqlglot makes it a word) keeping
    where it was written."""
    if len(args) != 3:
        return exp.Anonymous(this="TIMESTAMPDIFF", expressions=args)
    unit = args[0]
    node = exp.TimestampDiff(this=args[2], expression=args[1], unit=unit)
    if isinstance(unit, exp.Column) and node.args.get("unit") is not unit:
        node.args["unit"].meta.update(unit.this.meta)
    return node


def _window_function(kind: str) -> Any:
    def parse(self: FlinkParser) -> WindowFunction:
        args = self._parse_csv(self._parse_window_argument)
        return self.expression(WindowFunction(this=kind, expressions=args))
    return parse


class FlinkParser(parser.Parser):
    FUNCTIONS: ClassVar[dict[str, Any]] = {
        **parser.Parser.FUNCTIONS,
        # Flink's third argument is the group to extract, not a position
        "REGEXP_EXTRACT": lambda args: exp.RegexpExtract(this=seq_get(args, 0), expression=seq_get(args, 1),
                                                         group=seq_get(args, 2)),
        # TIMESTAMPDIFF(unit, t1, t2) is t2 - t1 in units; sqlglot's generic reading takes (t2, t1, unit)
        "TIMESTAMPDIFF": lambda args: _timestampdiff(args),
    }
    FUNCTION_PARSERS: ClassVar[dict[str, Any]] = {
        **parser.Parser.FUNCTION_PARSERS,
        **{name: _window_function(name) for name in WINDOW_FUNCTIONS},
        "DESCRIPTOR": lambda self: self.expression(Descriptor(expressions=self._parse_csv(self._parse_column))),
    }
    CONSTRAINT_PARSERS: ClassVar[dict[str, Any]] = {
        **parser.Parser.CONSTRAINT_PARSERS,
        "WATERMARK": lambda self: self.expression(Watermark(
            this=self._match(TokenType.FOR) and self._parse_column(),
            expression=self._match(TokenType.ALIAS) and self._parse_disjunction())),
        "METADATA": _metadata,
    }
    SCHEMA_UNNAMED_CONSTRAINTS: ClassVar[set[str]] = {*parser.Parser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}

    def _parse_hint(self) -> exp.Hint | None:
        """``/*+ ... */``, its nodes placed where they are in the statement's text: sqlglot parses a
        hint's text on its own, so their offsets counted from the hint's first character."""
        token = self._curr
        hint = super()._parse_hint()
        if hint is not None and token is not None:
            base = token.start + len("/*+")  # the hint's text starts after its opening
            for node in hint.walk():
                for key in ("start", "end"):
                    if node.meta and key in node.meta:
                        node.meta[key] += base
            if not any(node.meta and "start" in node.meta for node in hint.walk()):
                hint.meta["start"] = token.start  # a hint sqlglot keeps as text: placed at its opening
        return hint

    def _parse_table_parts(self, schema: bool = False, is_db_reference: bool = False, wildcard: bool = False,
                           fast: bool = False) -> exp.Table | exp.Dot | None:
        """A table's name and the hints written right after it (``t /*+ OPTIONS('k' = 'v') */``), kept
        as its ``table_hints``: Flink's table hints, which sqlglot reads nowhere."""
        table = super()._parse_table_parts(schema=schema, is_db_reference=is_db_reference, wildcard=wildcard,
                                           fast=fast)
        hints = []
        while table is not None and self._curr is not None and self._curr.token_type is TokenType.HINT:
            hint = self._parse_hint()
            self._prev_comments = []  # the hint's text: not a comment of the node parsed next
            if hint is not None:
                hints.append(hint)
        if hints and table is not None:
            table.set(TABLE_HINTS, hints)
        return table

    def _parse_table_alias(self, alias_tokens: Any = None) -> exp.TableAlias | None:
        """A table's alias; a hint after it is refused saying where it goes, as Flink's parser refuses it."""
        alias = super()._parse_table_alias(alias_tokens)
        if alias is not None and self._curr is not None and self._curr.token_type is TokenType.HINT:
            self.raise_error("a table hint follows the table's name, before its alias: "
                             "FROM t /*+ OPTIONS('key' = 'value') */ AS alias")
        return alias

    def _parse_window_argument(self) -> exp.Expr | None:
        if self._match(TokenType.TABLE):
            table = self._parse_table_parts()
            partition = None  # one column, or several in parentheses: PARTITION BY (a, b)
            if self._match(TokenType.PARTITION_BY):
                partition = self._parse_wrapped_csv(self._parse_column) if self._match(TokenType.L_PAREN,
                                                                                       advance=False) \
                    else [self._parse_column()]
            return self.expression(TableArgument(this=table, partition_by=partition or None))
        return self._parse_assignment()


class HintTokenizerCore(TokenizerCore):
    """sqlglot's tokenizer, with every ``/*+`` a hint token placed at its opening. sqlglot makes a hint
    only after a token, so a script's leading hint was a comment, dropped unread; and it places the
    token where the hint ends, so an error at a hint of several lines named its last line."""

    __slots__ = ()

    def _scan_comment(self, comment_start: str) -> bool:
        line, col, before = self._line, self._col, len(self.tokens)
        if not super()._scan_comment(comment_start):
            return False
        if comment_start == self.hint_start and not before:  # the script's first token
            self._add(TokenType.HINT)
        if len(self.tokens) > before:
            self.tokens[-1].line, self.tokens[-1].col = line, col
        return True


class Flink(Dialect):
    """Flink SQL: parse with ``sqlglot.parse(text, read=Flink)``."""

    NORMALIZATION_STRATEGY = Dialect.NORMALIZATION_STRATEGY.CASE_SENSITIVE  # type: ignore[attr-defined]

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ["`"]  # type: ignore[misc]
        QUOTES: ClassVar[list[tuple[str, str] | str]] = ["'"]  # type: ignore[misc]
        # SESSION is a window function in Flink, not the keyword of SET SESSION
        KEYWORDS: ClassVar[dict[str, TokenType]] = {  # type: ignore[misc]
            k: v for k, v in tokens.Tokenizer.KEYWORDS.items() if k != "SESSION"}
        # `/*+` opens a hint wherever it is, as in Calcite: after SELECT a query hint, after a table's name
        # its table hints, elsewhere a syntax error (sqlglot took it for a comment there: dropped unread)
        TOKENS_PRECEDING_HINT: ClassVar[set[TokenType]] = set(TokenType)  # type: ignore[misc]

        def _init_core(self) -> TokenizerCore:
            core = super()._init_core()
            core.__class__ = HintTokenizerCore  # the same slots: sqlglot builds the core with many arguments
            return core

    Parser = FlinkParser

    class Generator(generator.Generator):
        """Writes what it reads back in Flink's order (error messages quote it)."""

        TRANSFORMS: ClassVar[dict[type[exp.Expr], Any]] = {  # type: ignore[misc]
            **generator.Generator.TRANSFORMS,
            exp.TimestampDiff: lambda self, e: self.func("TIMESTAMPDIFF", e.args.get("unit"), e.expression, e.this),
        }
