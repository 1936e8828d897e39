"""SQL scalar expressions to Darwin expressions: a visitor over sqlglot's expression classes.

Each supported class has a ``visit_<Class>`` method; any other raises a ``SqlError`` naming
the construct, its line and column. Aggregates and group keys are not translated here: the
SELECT translator computes them first and hands their result columns in as ``replaced``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import ClassVar

from sqlglot import exp

import darwin.expr as dx
from darwin.errors import DarwinTypeError
from darwin.expr import Expr, col, lit, when
from darwin.plan import exprs as ex
from darwin.plan.exprs import type_of
from darwin.plan.rules import fold_expr
from darwin.sql.dialect import Flink
from darwin.sql.errors import Located
from darwin.sql.extremes import greatest_or_least
from darwin.sql.timefunctions import TIME_FUNCTIONS, add_months, timestampdiff
from darwin.types import DType, Schema

TYPES = {  # SQL type -> Darwin type
    exp.DataType.Type.BIGINT: DType.INT64, exp.DataType.Type.INT: DType.INT64, exp.DataType.Type.SMALLINT: DType.INT64,
    exp.DataType.Type.TINYINT: DType.INT64, exp.DataType.Type.DOUBLE: DType.FLOAT64,
    exp.DataType.Type.FLOAT: DType.FLOAT64, exp.DataType.Type.DECIMAL: DType.FLOAT64,
    exp.DataType.Type.BOOLEAN: DType.BOOL, exp.DataType.Type.VARCHAR: DType.STRING,
    exp.DataType.Type.TEXT: DType.STRING, exp.DataType.Type.CHAR: DType.STRING,
    exp.DataType.Type.TIMESTAMP: DType.TIMESTAMP, exp.DataType.Type.TIMESTAMPLTZ: DType.TIMESTAMP,
}
NARROW_BITS = {exp.DataType.Type.INT: 32, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.TINYINT: 8}
UNITS_MS = {"MILLISECOND": 1, "SECOND": 1_000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_INTERVAL_MS = 2**62  # timestamps are exact in int64 up to 2^62 ms (docs/decisions.md, Limits)
JAVA_TIME = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S", "DDD": "%j"}
# a run of one pattern letter, quoted text ('' inside it is a quote; '' alone is one too), a quote not
# closed, or other text
JAVA_PATTERN_RUN = re.compile(r"([A-Za-z])\1*|'((?:[^']|'')*)'|'|[^A-Za-z']+")
JAVA_RESERVED = "[]{}#"  # DateTimeFormatter's optional sections and reserved characters


@dataclass
class Entry:
    """A column visible in a scope: its table qualifier, its SQL name, the Darwin column holding it."""

    qualifier: str | None
    name: str
    column: str


@dataclass
class Scope:
    """The columns a clause can refer to, in order."""

    entries: list[Entry] = field(default_factory=list)
    ungrouped: frozenset[str] = frozenset()  # after GROUP BY: columns neither grouped nor aggregated
    proctime: frozenset[str] = frozenset()  # PROCTIME() attributes: only for FOR SYSTEM_TIME AS OF

    def lookup(self, name: str, qualifier: str | None) -> list[Entry]:
        return [e for e in self.entries if e.name == name and (qualifier is None or e.qualifier == qualifier)]

    def qualifiers(self) -> set[str | None]:
        return {e.qualifier for e in self.entries}


@dataclass
class Replaced:
    """The columns holding a SELECT's aggregates and computed group keys, found by what an expression
    computes: its SQL text with each column named by the input column it resolves to in ``scope`` (the
    scope GROUP BY reads), so that ``t1.k + 1`` in the select list is the key ``GROUP BY k + 1``, and
    ``SUM(t1.v)`` the aggregate ``SUM(v)``, as in Flink."""

    scope: Scope = field(default_factory=Scope)
    columns: dict[str, Expr] = field(default_factory=dict)

    def key(self, node: exp.Expr) -> str:
        def resolved(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                found = {e.column for e in self.scope.lookup(n.name, n.table or None)}
                if len(found) == 1:
                    return exp.column(found.pop(), quoted=True)
            return n
        return node.transform(resolved).sql(dialect=Flink)

    def __setitem__(self, node: exp.Expr, column: Expr) -> None:
        self.columns[self.key(node)] = column

    def get(self, node: exp.Expr) -> Expr | None:
        return self.columns.get(self.key(node)) if self.columns else None


def sql_type(node: exp.DataType, where: Located) -> DType:
    try:
        return TYPES[node.this]
    except KeyError:
        raise where.error(node, f"type {node.sql(dialect=Flink)} is not supported; use BIGINT, DOUBLE, "
                                "BOOLEAN, VARCHAR/STRING or TIMESTAMP(3)") from None


def interval_ms(node: exp.Expr, where: Located) -> int:
    """An ``INTERVAL 'n' UNIT`` literal in whole milliseconds, computed exactly ('1.001' SECOND is
    1001 ms); a value finer than a millisecond (Darwin's timestamps are ms) is refused."""
    if not isinstance(node, exp.Interval):
        raise where.error(node, f"expected an interval such as INTERVAL '10' SECOND, got {node.sql(dialect=Flink)}")
    unit = str(node.unit.this if isinstance(node.unit, exp.Var) else "").upper().rstrip("S")
    value = node.this.this if isinstance(node.this, exp.Literal) else None
    try:
        amount = Decimal(str(value).strip()) * UNITS_MS[unit]
    except (KeyError, InvalidOperation):
        raise where.error(node, f"interval {node.sql(dialect=Flink)}: give a number and one of "
                                f"{sorted(UNITS_MS)}") from None
    if not amount.is_finite():
        raise where.error(node, f"interval {node.sql(dialect=Flink)}: give a finite number")
    if amount != amount.to_integral_value():
        raise where.error(node, f"interval {node.sql(dialect=Flink)} is {amount.normalize():f} ms: Darwin's "
                                "timestamps are whole milliseconds, so an interval must be too")
    if not -MAX_INTERVAL_MS <= amount <= MAX_INTERVAL_MS:
        raise where.error(node, f"interval {node.sql(dialect=Flink)} is {amount:f} ms, past the 2^62 ms for "
                                "which timestamp arithmetic is exact")
    return int(amount)


MONTHS_IN = {"MONTH": 1, "YEAR": 12}  # the interval units of calendar months


def calendar_months(node: exp.Expr, where: Located) -> int | None:
    """The months of an ``INTERVAL 'n' MONTH`` or ``YEAR`` literal (a whole number, as Flink's), None for any other
    expression."""
    if not isinstance(node, exp.Interval):
        return None
    unit = str(node.unit.this if isinstance(node.unit, exp.Var) else "").upper().rstrip("S")
    if unit not in MONTHS_IN:
        return None
    text = str(node.this.this).strip() if isinstance(node.this, exp.Literal) else ""
    if not re.fullmatch(r"[+-]?\d{1,9}", text):
        raise where.error(node, f"interval {node.sql(dialect=Flink)}: give a whole number of {unit.lower()}s")
    return int(text) * MONTHS_IN[unit]


TIMESTAMP_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.(\d+))?)?)?)\s*(\S.*)?")


def timestamp_ms(node: exp.Literal, where: Located, cut: bool = False) -> int:
    """A timestamp literal ('yyyy-MM-dd HH:mm:ss[.fff]', UTC) in ms since the epoch. A TIMESTAMP has
    no time zone (as in Flink), so an offset or zone is refused, not ignored; so are digits past the
    millisecond that are not zero (Darwin's timestamps are ms; Flink's literal keeps them), unless ``cut``
    (a CAST to TIMESTAMP(3), which cuts them in Flink too)."""
    text = str(node.this).strip()
    match = TIMESTAMP_TEXT.fullmatch(text)
    hint = "write 'yyyy-MM-dd HH:mm:ss[.fff]'"
    if match is None:
        raise where.error(node, f"TIMESTAMP '{node.this}': {hint}")
    body, fraction, rest = match.groups()
    if rest is not None:
        raise where.error(node, f"TIMESTAMP '{node.this}': {rest!r} after the time is not accepted; a TIMESTAMP has "
                                f"no time zone (as in Flink), so no offset or zone is applied: {hint} in UTC")
    if fraction is not None and fraction[3:].strip("0") and not cut:
        raise where.error(node, f"TIMESTAMP '{node.this}': .{fraction} is finer than a millisecond, and Darwin's "
                                f"timestamps are whole milliseconds (Flink's literal keeps the digits; CAST('{text}' "
                                "AS TIMESTAMP(3)) cuts them to milliseconds, as Flink's cast does)")
    if fraction is not None:
        body = body[:len(body) - len(fraction)] + (fraction[:3] + "000")[:3]
    try:
        moment = datetime.fromisoformat(body).replace(tzinfo=UTC)
    except ValueError:
        raise where.error(node, f"TIMESTAMP '{node.this}': {hint}") from None
    return (moment - EPOCH) // timedelta(milliseconds=1)


def java_time_format(pattern: str, node: exp.Expr, where: Located, function: str = "DATE_FORMAT") -> str:
    """Flink's DATE_FORMAT pattern (Java's DateTimeFormatter, ``yyyy-MM-dd HH:mm:ss``) as a strftime format.
    As in Java, text in single quotes is literal and ``''`` is one quote, inside quotes or out. A quote left
    open is refused, as Java refuses it; so are ``[ ] { } #`` outside quotes, which Java does not print
    (``[ ]`` bound optional sections, the others are reserved)."""
    out = []
    for run in JAVA_PATTERN_RUN.finditer(pattern):
        text, quoted = run.group(0), run.group(2)
        if quoted is not None:
            out.append((quoted.replace("''", "'") or "'").replace("%", "%%"))
        elif text == "'":
            raise where.error(node, f"{function}: the quote at position {run.start() + 1} of {pattern!r} is not "
                                    "closed; text in quotes is literal, and '' is a quote")
        elif text[0].isalpha():
            if text not in JAVA_TIME:
                raise where.error(node, f"{function}: pattern letter {text!r} is not supported; use "
                                        f"{', '.join(JAVA_TIME)}")
            out.append(JAVA_TIME[text])
        elif reserved := sorted(set(text) & set(JAVA_RESERVED)):
            raise where.error(node, f"{function}: {' '.join(reserved)} in {pattern!r}: Java's patterns do not "
                                    "print [ ] { } #; put them in quotes to print them")
        else:
            out.append(text.replace("%", "%%"))
    return "".join(out)


class ExpressionTranslator:
    """Translates one clause's expressions over ``scope``; ``replaced`` finds the columns that hold
    the values of aggregates and group keys."""

    def __init__(self, scope: Scope, where: Located, schema: Schema, replaced: Replaced | None = None) -> None:
        self.scope, self.where, self.schema, self.replaced = scope, where, schema, replaced or Replaced()

    def __call__(self, node: exp.Expr) -> Expr:
        hit = self.replaced.get(node)
        if hit is not None:
            return hit
        method: Callable[[exp.Expr], Expr] | None = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise self.where.error(node, f"{type(node).__name__} ({node.sql(dialect=Flink)}) is not supported "
                                         "in Darwin's SQL")
        return method(node)

    # -- columns and literals ----------------------------------------------------------
    def visit_Column(self, node: exp.Column) -> Expr:
        if isinstance(node.this, exp.Star):
            raise self.where.error(node, "* is only allowed in the select list and COUNT(*)")
        name, qualifier = node.name, node.table or None
        found = self.scope.lookup(name, qualifier)
        if not found and name in self.scope.proctime:
            raise self.where.error(node, f"{node.sql(dialect=Flink)} is PROCTIME(): Darwin has no processing time; "
                                         "it only says when a FOR SYSTEM_TIME AS OF lookup happens")
        if not found and name in self.scope.ungrouped:
            raise self.where.error(node, f"column {node.sql(dialect=Flink)} is neither in GROUP BY nor inside an "
                                         "aggregate")
        if not found:
            known = sorted({e.name for e in self.scope.entries if qualifier is None or e.qualifier == qualifier})
            raise self.where.error(node, f"unknown column {node.sql(dialect=Flink)}; "
                                         f"columns here: {', '.join(known) or 'none'}")
        if len({e.column for e in found}) > 1:
            raise self.where.error(node, f"column {name!r} is ambiguous: it is in "
                                         f"{', '.join(str(e.qualifier) for e in found)}; qualify it")
        return col(found[0].column)

    def visit_Literal(self, node: exp.Literal) -> Expr:
        if node.is_string:
            return lit(node.this)
        return lit(self._number(node))

    def _number(self, node: exp.Literal, sign: int = 1) -> int | float:
        """A numeric literal's value, refused at its position where BIGINT or DOUBLE cannot hold it: Flink
        (Calcite) refuses a DOUBLE literal that overflows, and makes an integer past BIGINT a DECIMAL,
        which Darwin's DOUBLE would hold inexactly."""
        text = node.this
        try:
            whole = sign * int(text)
        except ValueError:
            number = sign * float(text)
            if math.isinf(number):
                raise self.where.error(node, f"numeric literal {text} is out of range of DOUBLE") from None
            return number
        if not ex.INT64_MIN <= whole <= ex.INT64_MAX:
            raise self.where.error(node, f"integer literal {text} is past BIGINT (int64); "
                                         "Darwin's DECIMAL is a DOUBLE, so write it as one (with a decimal point or "
                                         "an exponent) where an inexact value will do")
        return whole

    def visit_Boolean(self, node: exp.Boolean) -> Expr:
        return lit(bool(node.this))

    def visit_Null(self, node: exp.Null) -> Expr:
        return dx.Expr(dx.ex.Literal(None, None))

    def visit_Paren(self, node: exp.Paren) -> Expr:
        return self(node.this)

    def visit_Interval(self, node: exp.Interval) -> Expr:
        return lit(interval_ms(node, self.where))  # timestamps are milliseconds: ts - INTERVAL is ts - ms

    # -- operators -----------------------------------------------------------------------
    def _binary(self, node: exp.Expr, op: Callable[[Expr, Expr], Expr]) -> Expr:
        return op(self(node.this), self(node.expression))

    def visit_Add(self, n: exp.Add) -> Expr:
        for time, interval in ((n.this, n.expression), (n.expression, n.this)):
            shifted = self._plus_months(n, time, interval)
            if shifted is not None:
                return shifted
        return self._binary(n, lambda a, b: a + b)

    def visit_Sub(self, n: exp.Sub) -> Expr:
        shifted = self._plus_months(n, n.this, n.expression, -1)
        return self._binary(n, lambda a, b: a - b) if shifted is None else shifted

    def _plus_months(self, node: exp.Expr, time: exp.Expr, interval: exp.Expr, sign: int = 1) -> Expr | None:
        """``ts + INTERVAL 'n' MONTH`` (or YEAR, or minus): calendar months added as Flink adds them (Calcite's
        addMonths: the day cut to the month's last, so Jan 31 plus a month is Feb 28 or 29); None where ``interval``
        is no interval of months."""
        months = calendar_months(interval, self.where)
        if months is None:
            return None
        ts = self(time)
        dtype = type_of(ts.node, self.schema).dtype
        if dtype not in (None, DType.TIMESTAMP):
            raise self.where.error(node, f"{node.sql(dialect=Flink)}: an interval of months is added to a TIMESTAMP; "
                                         f"{time.sql(dialect=Flink)} is {dtype.value}")
        return add_months(ts, lit(sign * months))
    def visit_Mul(self, n: exp.Mul) -> Expr: return self._binary(n, lambda a, b: a * b)
    def visit_EQ(self, n: exp.EQ) -> Expr: return self._compared(n, lambda a, b: a == b)
    def visit_NEQ(self, n: exp.NEQ) -> Expr: return self._compared(n, lambda a, b: a != b)
    def visit_LT(self, n: exp.LT) -> Expr: return self._compared(n, lambda a, b: a < b)
    def visit_LTE(self, n: exp.LTE) -> Expr: return self._compared(n, lambda a, b: a <= b)
    def visit_GT(self, n: exp.GT) -> Expr: return self._compared(n, lambda a, b: a > b)
    def visit_GTE(self, n: exp.GTE) -> Expr: return self._compared(n, lambda a, b: a >= b)

    def _compared(self, node: exp.Expr, op: Callable[[Expr, Expr], Expr], left: exp.Expr | None = None,
                  right: exp.Expr | None = None) -> Expr:
        """``op`` of ``node``'s two operands (or ``left`` and ``right``), a TIMESTAMP with a number refused."""
        a, b = self(node.this if left is None else left), self(node.expression if right is None else right)
        self._check_time_comparison(node, a, b)
        return op(a, b)

    def _check_time_comparison(self, node: exp.Expr, *operands: Expr) -> None:
        """A TIMESTAMP compared with a number is refused, as Flink refuses it: Darwin would compare the
        number with milliseconds since the epoch, where a query written for Spark means seconds. (The
        fluent API compares timestamps with integer milliseconds, Darwin's representation.)"""
        dtypes = {type_of(e.node, self.schema).dtype for e in operands}
        if DType.TIMESTAMP in dtypes and dtypes & {DType.INT64, DType.FLOAT64}:
            raise self.where.error(node, f"{node.sql(dialect=Flink)}: a TIMESTAMP cannot be compared with a number "
                                         "(as in Flink): compare it with a TIMESTAMP '...' literal, or its "
                                         "milliseconds since the epoch, ts - TIMESTAMP '1970-01-01 00:00:00', "
                                         "with the number")
    def visit_And(self, n: exp.And) -> Expr: return self._binary(n, lambda a, b: a & b)
    def visit_Or(self, n: exp.Or) -> Expr: return self._binary(n, lambda a, b: a | b)

    def visit_Div(self, node: exp.Div) -> Expr:
        """Flink divides integers as Java does: BIGINT / BIGINT is a BIGINT truncated toward zero
        (-7 / 2 = -3, not the fluent API's floor -4); a divisor of 0 gives NULL, as everywhere in Darwin."""
        left, right = self(node.this), self(node.expression)
        return self._truncating(left, right, "div") if self._dtypes(left, right) == {DType.INT64} else left / right

    def visit_Mod(self, node: exp.Mod) -> Expr:
        """``a % b`` and ``MOD(a, b)`` as in Flink (Java's ``%``): the remainder has the sign of the
        dividend (-7 % 2 = -1, 7 % -2 = 1), of integers and of floats (C's fmod) alike; the fluent
        API's ``%`` floors (the sign of the divisor). A divisor of 0 gives NULL."""
        left, right = self(node.this), self(node.expression)
        dtypes = self._dtypes(left, right)
        if dtypes == {DType.INT64}:
            return self._truncating(left, right, "mod")
        if dtypes <= {DType.INT64, DType.FLOAT64}:  # |a| % |b| is exact; the sign is the dividend's
            dividend = left.cast(DType.FLOAT64)
            magnitude = dividend.abs() % right.cast(DType.FLOAT64).abs()
            # a zero dividend's remainder is that zero, its sign included (Java: -0.0 % 3.0 is -0.0)
            return when(dividend < 0, -magnitude).when((dividend == 0) & (magnitude == 0), dividend) \
                .otherwise(magnitude)
        return left % right  # no number: the type check names the problem

    def _dtype(self, operand: Expr) -> str:
        dtype = type_of(operand.node, self.schema).dtype
        return "NULL" if dtype is None else dtype.value

    def _dtypes(self, *operands: Expr) -> set[DType | None]:
        return {type_of(e.node, self.schema, "arithmetic").dtype for e in operands}

    def _truncating(self, left: Expr, right: Expr, op: str) -> Expr:
        """Integer division or remainder truncated toward zero, from the floor ones: where the
        floor remainder is not 0 and the operands' signs differ, the floor quotient is one less
        and the floor remainder has the divisor's sign (-7 // 2 = -4, -7 % 2 = 1: -3 and -1)."""
        quotient, remainder = left // right, left % right
        divisor = fold_expr(right.node)
        if isinstance(divisor, ex.Literal) and divisor.value in (None, 0):
            return quotient if op == "div" else remainder  # NULL
        if isinstance(divisor, ex.Literal):  # the divisor's sign is known: one comparison less
            signs_differ = left < 0 if divisor.value > 0 else left > 0
        else:
            signs_differ = (left < 0) != (right < 0)
        inexact = (remainder != 0) & signs_differ
        return when(inexact, quotient + 1).otherwise(quotient) if op == "div" \
            else when(inexact, remainder - right).otherwise(remainder)

    def visit_Not(self, node: exp.Not) -> Expr:
        if isinstance(node.this, exp.Is):
            return self(node.this.this).is_not_null() if isinstance(node.this.expression, exp.Null) \
                else ~self(node.this)
        return ~self(node.this)

    def visit_Neg(self, node: exp.Neg) -> Expr:
        literal = node.this
        if isinstance(literal, exp.Literal) and not literal.is_string and literal.this == str(-ex.INT64_MIN):
            return lit(self._number(literal, -1))  # -9223372036854775808 is a BIGINT, as in Flink
        return -self(node.this)

    def visit_Is(self, node: exp.Is) -> Expr:
        """``x IS NULL``; ``b IS TRUE`` and ``b IS FALSE``, which are never NULL (FALSE where ``b`` is), as Flink's.
        Their NOT forms are NOT of these (``visit_Not``)."""
        if isinstance(node.expression, exp.Null):
            return self(node.this).is_null()
        if not isinstance(node.expression, exp.Boolean):
            raise self.where.error(node, "only IS [NOT] NULL, IS [NOT] TRUE, IS [NOT] FALSE and IS [NOT] DISTINCT FROM "
                                         "are supported")
        value = self(node.this)
        dtype = type_of(value.node, self.schema).dtype
        if dtype not in (None, DType.BOOL):
            raise self.where.error(node.this, f"{node.sql(dialect=Flink)}: {node.this.sql(dialect=Flink)} is "
                                              f"{dtype.value}, not BOOLEAN")
        return when(value.is_null(), False).otherwise(value if node.expression.this else ~value)

    def visit_NullSafeEQ(self, node: exp.NullSafeEQ | exp.NullSafeNEQ) -> Expr:
        """``a IS NOT DISTINCT FROM b``: equal, a NULL equal to a NULL only; never NULL, as Flink's."""
        a, b = self(node.this), self(node.expression)
        equal = self._compared(node, lambda x, y: x == y)
        return when(a.is_null() & b.is_null(), True).when(a.is_null() | b.is_null(), False).otherwise(equal)

    def visit_NullSafeNEQ(self, node: exp.NullSafeNEQ) -> Expr:
        """``a IS DISTINCT FROM b``: NOT ``a IS NOT DISTINCT FROM b``."""
        return ~self.visit_NullSafeEQ(node)

    def visit_Between(self, node: exp.Between) -> Expr:
        """``x BETWEEN a AND b`` is ``a <= x <= b``; with SYMMETRIC, also ``b <= x <= a`` (Calcite's
        ``(x >= a AND x <= b) OR (x >= b AND x <= a)``, NULLs included)."""
        value, low, high = self(node.this), self(node.args["low"]), self(node.args["high"])
        self._check_time_comparison(node, value, low)
        self._check_time_comparison(node, value, high)
        inside = value.between(low, high)
        return inside | value.between(high, low) if node.args.get("symmetric") else inside

    def visit_In(self, node: exp.In) -> Expr:
        """``x IN (v, ...)`` is ``x = v OR ...`` in SQL's three-valued logic, as Flink (Calcite) has it:
        TRUE where a value matches, else NULL where ``x`` or a value is NULL, else FALSE (so ``x NOT IN
        (1, NULL)`` is never TRUE). Constants (literals, NULL, expressions of them such as -1 or 2 * 3)
        are folded into one ``isin``; columns and expressions of them are compared one by one."""
        if node.args.get("query") is not None:
            raise self.where.error(node, "IN (SELECT ...) is not supported")
        if not node.expressions:
            raise self.where.error(node, "IN () needs at least one value")
        operand = self(node.this)
        constants: list[ex.Literal] = []
        compared: list[Expr] = []
        for v in node.expressions:
            value = self(v)
            self._check_time_comparison(node, operand, value)
            equal = operand == value
            try:  # located at the value, not at the clause the plan would name
                type_of(equal.node, self.schema, "IN")
            except DarwinTypeError:
                raise self.where.error(v, f"IN: cannot compare {node.this.sql(dialect=Flink)} "
                                          f"({self._dtype(operand)}) with {v.sql(dialect=Flink)} "
                                          f"({self._dtype(value)})") from None
            folded = fold_expr(value.node)
            if isinstance(folded, ex.Literal):
                constants.append(folded)
            else:
                compared.append(equal)
        result = Expr(ex.IsIn(operand.node, tuple(constants))) if constants else compared.pop(0)
        for equal in compared:
            result = result | equal
        return result

    def visit_Case(self, node: exp.Case) -> Expr:
        operand = node.this
        builder = None
        for branch in node.args.get("ifs") or []:
            condition = self(branch.this) if operand is None else \
                self._compared(node, lambda a, b: a == b, operand, branch.this)
            value = self(branch.args["true"])
            builder = when(condition, value) if builder is None else builder.when(condition, value)
        if builder is None:
            raise self.where.error(node, "CASE needs at least one WHEN")
        default = node.args.get("default")
        return builder.otherwise(self(default)) if default is not None else builder.end()

    def visit_If(self, node: exp.If) -> Expr:
        other = node.args.get("false")
        w = when(self(node.this), self(node.args["true"]))
        return w.otherwise(self(other)) if other is not None else w.end()

    def visit_Cast(self, node: exp.Cast) -> Expr:
        target = sql_type(node.to, self.where)
        precision = self._timestamp_precision(node) if target is DType.TIMESTAMP else None
        if target is DType.TIMESTAMP and isinstance(node.this, exp.Literal) and node.this.is_string:
            cut = precision == 3  # TIMESTAMP '2015-07-15 00:00:00' is a CAST without one
            return lit(timestamp_ms(node.this, self.where, cut), "timestamp")
        value = self(node.this)
        self._check_time_cast(node, value, target)
        safe = isinstance(node, exp.TryCast)
        bits = NARROW_BITS.get(node.to.this)
        if type_of(value.node, self.schema, "CAST").dtype is DType.STRING and target is not DType.STRING:
            return Expr(ex.Cast(value.node, target, safe, bits or 64))  # parsed in the target's range
        if target is DType.STRING:
            return self._sized(node, Expr(ex.Cast(value.node, target, safe)))
        cast = Expr(ex.Cast(value.node, target, safe))
        return cast if bits is None else self._narrowed(value, bits)

    def _timestamp_precision(self, node: exp.Cast) -> int | None:
        """The precision a CAST to TIMESTAMP(p) names (None without one). Below 3 it is refused: Flink cuts a
        timestamp that is no time attribute to 10^-p seconds there (a time attribute it keeps whole), which
        Darwin's milliseconds do not say; silently keeping the milliseconds would differ from Flink."""
        params = node.to.expressions
        if not params:
            return None
        value = params[0].this
        if not isinstance(value, exp.Literal) or not value.is_int:
            raise self.where.error(node, f"{node.to.sql(dialect=Flink)}: the precision is a whole number")
        precision = int(value.this)
        if precision < 3:
            kind = "TIMESTAMP_LTZ" if node.to.this is exp.DataType.Type.TIMESTAMPLTZ else "TIMESTAMP"
            raise self.where.error(node, f"CAST to {kind}({precision}) is not supported: Darwin's "
                                         "timestamps are milliseconds, and Flink would cut the value to "
                                         f"{10 ** (3 - precision)} ms (unless it is a time attribute); write "
                                         "TIMESTAMP(3), or cut it with CAST(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') "
                                         "AS TIMESTAMP)")
        return precision

    def _sized(self, node: exp.Cast, text: Expr) -> Expr:
        """A cast to CHAR(n) or VARCHAR(n): the text cut to n code points, and a CHAR's padded with spaces to n,
        as Flink's cast does; CHAR alone is CHAR(1), VARCHAR alone and STRING have no limit (Flink's defaults)."""
        kind = node.to.this
        if kind not in (exp.DataType.Type.CHAR, exp.DataType.Type.VARCHAR):
            return text
        params = node.to.expressions
        if not params:
            return text.str.rpad(1, " ") if kind is exp.DataType.Type.CHAR else text
        length = params[0].this
        if not isinstance(length, exp.Literal) or not length.is_int or not 1 <= int(length.this) <= 2**31 - 1:
            raise self.where.error(node, f"{node.to.sql(dialect=Flink)}: the length is a whole number from 1 to "
                                         "2147483647")
        n = int(length.this)
        return text.str.rpad(n, " ") if kind is exp.DataType.Type.CHAR else text.str.substring(1, n)

    def _check_time_cast(self, node: exp.Cast, value: Expr, target: DType) -> None:
        """A CAST between TIMESTAMP and a number or BOOLEAN is refused, as Flink refuses it: Darwin's
        timestamps are milliseconds, Spark's cast counts seconds, and nothing in the cast says which
        one a number is, so the value would be read 1000 times off. The message gives the ways that say it."""
        source = type_of(value.node, self.schema).dtype
        if source is None or source is target or DType.TIMESTAMP not in (source, target):
            return
        if source is DType.STRING or target is DType.STRING:
            return  # the cast's own check names the problem
        what = f"CAST from {'TIMESTAMP' if source is DType.TIMESTAMP else source.value} to " \
               f"{node.to.sql(dialect=Flink)} is not allowed (as in Flink): "
        if source is DType.TIMESTAMP:
            raise self.where.error(node, what + "a timestamp is no number of seconds or milliseconds (Spark's cast "
                                               "counts seconds); for milliseconds since the epoch write "
                                               f"{node.this.sql(dialect=Flink)} - TIMESTAMP '1970-01-01 00:00:00'")
        raise self.where.error(node, what + "the cast does not say whether the number counts seconds or "
                                           "milliseconds (Spark's takes seconds); write TIMESTAMP '1970-01-01 "
                                           f"00:00:00' + {node.this.sql(dialect=Flink)} * INTERVAL '1' SECOND for "
                                           "seconds, INTERVAL '0.001' SECOND for milliseconds")

    def _narrowed(self, value: Expr, bits: int) -> Expr:
        """CAST to INT, SMALLINT or TINYINT: an int64 (Darwin's one integer type) holding a value of the
        target's range. An integer wraps to the target's bits, as Flink (Java's narrowing) and Spark do:
        CAST(3000000000 AS INT) is -1294967296. A float truncates toward zero and is NULL where that does
        not fit, as a float's cast to BIGINT is NULL past int64 (Flink saturates, and NaN gives 0)."""
        half = 2 ** (bits - 1)
        dtype = type_of(value.node, self.schema, "CAST").dtype
        if dtype is DType.FLOAT64:
            return when((value > float(-half - 1)) & (value < float(half)), value.cast(DType.INT64)).end()
        whole = value if dtype is DType.INT64 else value.cast(DType.INT64)
        return (whole + half) % (2 * half) - half  # int64 + wraps, and 2^64 is a multiple of 2 * half

    visit_TryCast = visit_Cast

    # -- functions -----------------------------------------------------------------------
    def _part(self, node: exp.Expr, part: str) -> Expr:
        return getattr(self(node.this).dt, part)()

    def visit_Year(self, n: exp.Year) -> Expr: return self._part(n, "year")
    def visit_Month(self, n: exp.Month) -> Expr: return self._part(n, "month")
    def visit_Day(self, n: exp.Day) -> Expr: return self._part(n, "day")
    def visit_Hour(self, n: exp.Hour) -> Expr: return self._part(n, "hour")
    def visit_Minute(self, n: exp.Minute) -> Expr: return self._part(n, "minute")
    def visit_Second(self, n: exp.Second) -> Expr: return self._part(n, "second")
    def visit_DayOfMonth(self, n: exp.DayOfMonth) -> Expr: return self._part(n, "day")
    def visit_DayOfYear(self, n: exp.DayOfYear) -> Expr: return self._part(n, "day_of_year")
    def visit_Quarter(self, n: exp.Quarter) -> Expr: return self._part(n, "quarter")

    def visit_Week(self, node: exp.Week) -> Expr:
        """WEEK(ts): the ISO 8601 week, as Flink's (EXTRACT(WEEK FROM ts)); it takes no mode."""
        if node.args.get("mode") is not None:
            raise self.where.error(node.args["mode"], "WEEK takes one argument, a TIMESTAMP, as in Flink")
        return self._part(node, "week")

    def visit_Floor(self, node: exp.Floor) -> Expr:
        return self._time_floor(node, "floor") if node.args.get("to") is not None else self._rounded(node, "floor")

    def visit_Ceil(self, node: exp.Ceil) -> Expr:
        return self._time_floor(node, "ceil") if node.args.get("to") is not None else self._rounded(node, "ceil")

    def _rounded(self, node: exp.Floor | exp.Ceil, direction: str) -> Expr:
        """FLOOR(x) and CEIL(x) of a number, of its type; Flink has no places for them (CEIL(x, 2))."""
        if node.args.get("decimals") is not None:
            raise self.where.error(node.args["decimals"], f"{direction.upper()} takes one number, as in Flink; "
                                                          "ROUND(x, places) takes places")
        return getattr(self._numeric(node.this, direction.upper()), direction)()

    def visit_Round(self, node: exp.Round) -> Expr:
        """ROUND(x[, places]): HALF_UP, of the number as Java writes it, as Flink's (darwin.plan.numeric)."""
        return self._numeric(node.this, "ROUND").round(self._places(node, "ROUND"))

    def _places(self, node: exp.Round | exp.Trunc, name: str) -> int:
        """ROUND's or TRUNCATE's places: an integer literal, 0 if not given."""
        from darwin.plan.numeric import MAX_DECIMALS

        places_node = node.args.get("decimals")
        places = 0 if places_node is None else self._integer(places_node, f"{name}'s places")
        if not -MAX_DECIMALS <= places <= MAX_DECIMALS:
            raise self.where.error(places_node, f"{name}'s places are from -{MAX_DECIMALS} to {MAX_DECIMALS} in "
                                                f"Darwin (10^{MAX_DECIMALS} is the largest power of ten a DOUBLE "
                                                f"holds); got {places}")
        return places

    def visit_Trunc(self, node: exp.Trunc) -> Expr:
        """TRUNCATE(x[, places]): cut toward zero, of the number as Java writes it, as Flink's (Calcite's
        struncate, darwin.plan.numeric)."""
        return self._numeric(node.this, "TRUNCATE").truncate(self._places(node, "TRUNCATE"))

    def visit_Sign(self, n: exp.Sign) -> Expr: return self._numeric(n.this, "SIGN").sign()
    def visit_Sqrt(self, n: exp.Sqrt) -> Expr: return self._numeric(n.this, "SQRT").sqrt()
    def visit_Ln(self, n: exp.Ln) -> Expr: return self._numeric(n.this, "LN").ln()
    def visit_Exp(self, n: exp.Exp) -> Expr: return self._numeric(n.this, "EXP").exp()

    def visit_Pow(self, node: exp.Pow) -> Expr:
        return self._numeric(node.this, "POWER").pow(self._numeric(node.expression, "POWER"))

    def visit_Log(self, node: exp.Log) -> Expr:
        """LN(x) as LOG(x); LOG(base, x), LOG10(x) and LOG2(x) as Math.log(x) / Math.log(base), as Flink's."""
        if node.expression is None:
            return self._numeric(node.this, "LOG").ln()
        base = node.this
        if isinstance(base, exp.Literal) and not base.is_string and base.this == "10":
            return self._numeric(node.expression, "LOG10").log10()
        return self._numeric(node.expression, "LOG").log(self._numeric(base, "LOG"))

    def _numeric(self, node: exp.Expr, what: str) -> Expr:
        """``node`` translated, refused at its position unless it is a number (or NULL)."""
        value = self(node)
        dtype = type_of(value.node, self.schema).dtype
        if dtype not in (None, DType.INT64, DType.FLOAT64):
            raise self.where.error(node, f"{what} takes numbers; {node.sql(dialect=Flink)} is {dtype.value}")
        return value

    def _time_floor(self, node: exp.Floor | exp.Ceil, direction: str) -> Expr:
        """FLOOR(ts TO unit) and CEIL(ts TO unit), as Flink's: MILLISECOND leaves Darwin's timestamps as they are;
        a week starts on Sunday; CEIL to a week, month, quarter or year ceils the timestamp's day."""
        name = direction.upper()
        unit = str(node.args["to"].name).upper()
        value = self(node.this)
        dtype = type_of(value.node, self.schema).dtype
        if dtype not in (None, DType.TIMESTAMP):
            raise self.where.error(node.this, f"{name}(... TO {unit}) takes a TIMESTAMP; "
                                              f"{node.this.sql(dialect=Flink)} is {dtype.value}")
        if unit == "MILLISECOND":
            return value
        if unit.lower() not in ex.FLOOR_UNITS:
            units = ", ".join(u.upper() for u in ("millisecond", *ex.FLOOR_UNITS))
            raise self.where.error(node.args["to"], f"{name}(... TO {unit}): Darwin's {name} takes one of {units}")
        return getattr(value.dt, direction)(unit.lower())

    def visit_Lower(self, n: exp.Lower) -> Expr: return self(n.this).str.lower()
    def visit_Upper(self, n: exp.Upper) -> Expr: return self(n.this).str.upper()
    def visit_Length(self, n: exp.Length) -> Expr: return self(n.this).str.length()

    def visit_Abs(self, n: exp.Abs) -> Expr:
        return self(n.this).abs()

    def visit_Extract(self, node: exp.Extract) -> Expr:
        part = str(node.this.this if isinstance(node.this, exp.Var) else node.this).lower()
        parts = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
        if part == "dow":
            return self._day_of_week(self(node.expression))
        if part == "isodow":
            return self(node.expression).dt.day_of_week()
        if part == "doy":
            return self(node.expression).dt.day_of_year()
        if part not in parts:
            raise self.where.error(node, f"EXTRACT({part.upper()} ...): one of "
                                         f"{', '.join(p.upper() for p in parts)}, DOY, DOW, ISODOW")
        return getattr(self(node.expression).dt, part)()

    def visit_DayOfWeek(self, node: exp.DayOfWeek) -> Expr:
        return self._day_of_week(self(node.this))

    @staticmethod
    def _day_of_week(ts: Expr) -> Expr:
        """Flink's (Calcite's, Spark's) DOW and DAYOFWEEK: 1 is Sunday .. 7 is Saturday, from the
        fluent ``dt.day_of_week()``, which is ISO (1 is Monday .. 7 is Sunday) as ISODOW is."""
        return ts.dt.day_of_week() % 7 + 1

    def visit_TimestampDiff(self, node: exp.TimestampDiff) -> Expr: return timestampdiff(self, node)
    def visit_Greatest(self, node: exp.Greatest) -> Expr: return greatest_or_least(self, node, greatest=True)
    def visit_Least(self, node: exp.Least) -> Expr: return greatest_or_least(self, node, greatest=False)

    def visit_Coalesce(self, node: exp.Coalesce) -> Expr:
        """The first of its arguments that is not NULL."""
        values = [self(node.this)] + [self(e) for e in node.expressions]
        builder = when(values[0].is_not_null(), values[0])
        for v in values[1:-1]:
            builder = builder.when(v.is_not_null(), v)
        return builder.otherwise(values[-1])

    def visit_Nullif(self, node: exp.Nullif) -> Expr:
        """NULLIF(a, b): NULL where a = b, else a (also where the comparison is NULL), as Flink's
        CASE WHEN a = b THEN NULL ELSE a END."""
        value = self(node.this)
        equal = self._compared(node, lambda a, b: a == b)
        try:
            type_of(equal.node, self.schema, "NULLIF")
        except DarwinTypeError:
            raise self.where.error(node, f"NULLIF: cannot compare {node.this.sql(dialect=Flink)} "
                                         f"({self._dtype(value)}) with {node.expression.sql(dialect=Flink)} "
                                         f"({self._dtype(self(node.expression))})") from None
        return when(equal.is_null() | ~equal, value).end()

    # LIKE, ILIKE and SIMILAR TO: the fluent method and the name each is written with in SQL
    PATTERN_MATCHES: ClassVar[dict[type, tuple[str, str]]] = {
        exp.Like: ("like", "LIKE"), exp.ILike: ("ilike", "ILIKE"), exp.SimilarTo: ("similar_to", "SIMILAR TO")}

    def visit_Like(self, node: exp.Like | exp.ILike | exp.SimilarTo, escape: exp.Expr | None = None) -> Expr:
        """LIKE, ILIKE and SIMILAR TO with a literal pattern (and ESCAPE), as in Flink: LIKE is case-sensitive,
        % any run of characters, _ one, and without ESCAPE a backslash is an ordinary character (Flink has no
        default escape); ILIKE is LIKE in lower case (Spark's, as Flink has none); SIMILAR TO is Flink's
        (``darwin.plan.similar``). A NULL pattern or escape gives NULL."""
        method, name = self.PATTERN_MATCHES[type(node)]
        value = self._string(node.this, name)
        if isinstance(node.expression, exp.Null) or isinstance(escape, exp.Null):
            return lit(None, DType.BOOL)
        pattern = self._pattern(node.expression, name)
        escape_char = None if escape is None else self._text(escape, f"{name}'s ESCAPE")
        at = escape if escape is not None and len(str(escape_char)) != 1 else node.expression
        result = self._checked(at, lambda: getattr(value.str, method)(pattern, escape_char))
        return ~result if node.args.get("negate") else result

    visit_ILike = visit_Like
    visit_SimilarTo = visit_Like

    def _pattern(self, node: exp.Expr, name: str) -> str:
        """A pattern's text; a pattern computed per row (a column), which Flink takes, is refused naming why."""
        if isinstance(node, exp.Literal) and node.is_string:
            return str(node.this)
        raise self.where.error(node, f"{name}'s pattern must be a string literal: Darwin matches each distinct "
                                     f"string against one pattern known when the query is built, so a pattern "
                                     f"from a column or an expression ({node.sql(dialect=Flink)}) is not supported")

    def visit_Escape(self, node: exp.Escape) -> Expr:
        if type(node.this) not in self.PATTERN_MATCHES:
            raise self.where.error(node, "ESCAPE is only supported after LIKE, ILIKE and SIMILAR TO: "
                                         f"{node.sql(dialect=Flink)}")
        return self.visit_Like(node.this, node.expression)

    def _checked(self, at: exp.Expr, build: Callable[[], Expr]) -> Expr:
        """``build()``, its argument errors located at ``at``."""
        try:
            return build()
        except DarwinTypeError as e:
            raise self.where.error(at, str(e)) from None

    def visit_Substring(self, node: exp.Substring) -> Expr:
        """SUBSTRING(s FROM start [FOR length]) and SUBSTR(s, start[, length]), as Flink's (code points; 0 or a
        negative start as there; a negative length gives NULL)."""
        start = self._integer(node.args["start"], "SUBSTRING's start")
        length = node.args.get("length")
        count = None if length is None else self._integer(length, "SUBSTRING's length")
        return self._string(node.this, "SUBSTRING").str.substring(start, count)

    def visit_Trim(self, node: exp.Trim) -> Expr:
        """TRIM([BOTH | LEADING | TRAILING] [chars] FROM s), LTRIM and RTRIM: spaces by default, as in Flink."""
        chars_node = node.args.get("expression")
        chars = " " if chars_node is None else self._text(chars_node, "TRIM's characters")
        position = str(node.args.get("position") or "BOTH").upper()
        func = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[position]
        return getattr(self._string(node.this, "TRIM").str, func)(chars)

    def visit_Replace(self, node: exp.Replace) -> Expr:
        return self._string(node.this, "REPLACE").str.replace(
            self._text(node.expression, "REPLACE's search string"),
            self._text(node.args["replacement"], "REPLACE's replacement"))

    def visit_Left(self, node: exp.Left) -> Expr:
        """LEFT(s, n): the first n characters, '' for n below 1, as Flink's."""
        count = self._integer(node.expression, "LEFT's length")
        return self._string(node.this, "LEFT").str.substring(1, max(count, 0))

    def visit_Right(self, node: exp.Right) -> Expr:
        """RIGHT(s, n): the last n characters, all of a shorter s, '' for n below 1, as Flink's."""
        count = self._integer(node.expression, "RIGHT's length")
        value = self._string(node.this, "RIGHT")
        if count < 1:
            return value.str.substring(1, 0)
        return when(value.str.length() <= count, value).otherwise(value.str.substring(-count))

    def visit_Repeat(self, node: exp.Repeat) -> Expr:
        """REPEAT(s, n): s n times over, '' for n below 1, as Flink's."""
        count = self._integer(node.args["times"], "REPEAT's count")
        value = self._string(node.this, "REPEAT")
        return self._checked(node.args["times"], lambda: value.str.repeat(count))

    def visit_Reverse(self, node: exp.Reverse) -> Expr:
        return self._string(node.this, "REVERSE").str.reverse()

    def visit_Pad(self, node: exp.Pad) -> Expr:
        name = "LPAD" if node.args.get("is_left") else "RPAD"
        length = self._integer(node.expression, f"{name}'s length")
        fill = node.args.get("fill_pattern")
        pad = " " if fill is None else self._text(fill, f"{name}'s pad")
        value = self._string(node.this, name)
        return self._checked(node.expression, lambda: getattr(value.str, name.lower())(length, pad))

    def visit_StrPosition(self, node: exp.StrPosition) -> Expr:
        """POSITION(sub IN s) and LOCATE(sub, s[, start]): from 1, 0 where ``sub`` is not there."""
        sub = self._text(node.args["substr"], "POSITION's substring")
        position = node.args.get("position")
        start = 1 if position is None else self._integer(position, "LOCATE's start")
        return self._string(node.this, "POSITION").str.locate(sub, start)

    def visit_Initcap(self, node: exp.Initcap) -> Expr:
        delimiters = node.args.get("expression")
        if delimiters is not None and not (isinstance(delimiters, exp.Literal)
                                           and delimiters.this == Flink.INITCAP_DEFAULT_DELIMITER_CHARS):
            raise self.where.error(delimiters, "INITCAP takes one argument, as in Flink")
        return self._string(node.this, "INITCAP").str.initcap()

    def visit_Concat(self, node: exp.Concat) -> Expr:
        """CONCAT(a, b, ...): NULL where any argument is NULL, as in Flink."""
        return dx.concat(*[self._string(a, "CONCAT") for a in node.expressions])

    def visit_DPipe(self, node: exp.DPipe) -> Expr:
        """``a || b || ...``, as CONCAT."""
        operands: list[exp.Expr] = []
        pending: list[exp.Expr] = [node]
        while pending:  # a || b || c is DPipe(DPipe(a, b), c): its operands in order
            n = pending.pop()
            if isinstance(n, exp.DPipe):
                pending += [n.expression, n.this]
            else:
                operands.append(n)
        return dx.concat(*[self._string(a, "||") for a in operands])

    def visit_ConcatWs(self, node: exp.ConcatWs) -> Expr:
        """CONCAT_WS(separator, a, ...): the arguments that are not NULL, joined; NULL for a NULL separator."""
        if len(node.expressions) < 2:
            raise self.where.error(node, "CONCAT_WS takes a separator and at least one string")
        first, *values = node.expressions
        separator = None if isinstance(first, exp.Null) else self._text(first, "CONCAT_WS's separator")
        return dx.concat_ws(separator, *[self._string(a, "CONCAT_WS") for a in values])

    def _string(self, node: exp.Expr, what: str) -> Expr:
        """``node`` translated, refused at its position unless it is a string (or NULL)."""
        value = self(node)
        dtype = type_of(value.node, self.schema).dtype
        if dtype not in (None, DType.STRING):
            raise self.where.error(node, f"{what} takes strings; {node.sql(dialect=Flink)} is {dtype.value}")
        return value

    def visit_RegexpExtract(self, node: exp.RegexpExtract) -> Expr:
        pattern = self._text(node.expression, "REGEXP_EXTRACT's pattern")
        group = node.args.get("group")
        index = 0 if group is None else self._integer(group, "REGEXP_EXTRACT's group")
        value = self(node.this)
        return self._checked(node.expression, lambda: value.str.regexp_extract(pattern, index))

    def visit_RegexpReplace(self, node: exp.RegexpReplace) -> Expr:
        """REGEXP_REPLACE(s, pattern, replacement) with a literal pattern and replacement, as Flink's: the replacement
        is taken as written ($1 is no group reference in Flink); NULL where any argument is NULL."""
        extra = [a for k, a in node.args.items() if k not in ("this", "expression", "replacement") and a is not None]
        if extra:
            raise self.where.error(extra[0], "REGEXP_REPLACE takes a string, a pattern and a replacement, as in Flink")
        value = self._string(node.this, "REGEXP_REPLACE")
        if isinstance(node.expression, exp.Null) or isinstance(node.args["replacement"], exp.Null):
            return lit(None, DType.STRING)
        pattern = self._pattern(node.expression, "REGEXP_REPLACE")
        replacement = self._text(node.args["replacement"], "REGEXP_REPLACE's replacement")
        return self._checked(node.expression, lambda: value.str.regexp_replace(pattern, replacement))

    def _regexp(self, node: exp.Anonymous) -> Expr:
        """REGEXP(s, pattern): whether the literal pattern matches anywhere in s, as Flink's (never for '')."""
        if len(node.expressions) != 2:
            raise self.where.error(node, "REGEXP takes a string and a pattern, as in Flink")
        text, pattern_node = node.expressions
        value = self._string(text, "REGEXP")
        if isinstance(pattern_node, exp.Null):
            return lit(None, DType.BOOL)
        pattern = self._pattern(pattern_node, "REGEXP")
        return self._checked(pattern_node, lambda: value.str.regexp(pattern))

    def visit_Anonymous(self, node: exp.Anonymous) -> Expr:
        name = str(node.this).upper()
        args = node.expressions
        if name in TIME_FUNCTIONS:
            return TIME_FUNCTIONS[name](self, node)
        if name == "DATE_FORMAT" and len(args) == 2:
            fmt = java_time_format(self._text(args[1], "DATE_FORMAT's format"), args[1], self.where)
            return self(args[0]).dt.strftime(fmt)
        if name == "SPLIT_INDEX" and len(args) == 3:
            return self(args[0]).str.split_index(self._text(args[1], "SPLIT_INDEX's separator"),
                                                 self._integer(args[2], "SPLIT_INDEX's index"))
        if name == "CHAR_LENGTH" and len(args) == 1:
            return self(args[0]).str.length()
        if name == "COUNT_CHAR" and len(args) == 2:  # Nexmark's UDF, a Darwin built-in
            return self(args[0]).str.count_char(self._text(args[1], "COUNT_CHAR's character"))
        if name == "PROCTIME":
            raise self.where.error(node, "PROCTIME(): Darwin has no processing time; PROCTIME() AS name in a select "
                                         "list or CREATE TABLE only names the time of a FOR SYSTEM_TIME AS OF lookup")
        if name == "REGEXP":
            return self._regexp(node)
        if name == "DAYOFWEEK" and len(args) == 1:
            return self._day_of_week(self(args[0]))
        raise self.where.error(node, f"function {name}({len(args)} arguments) is not supported in Darwin's SQL")

    def _text(self, node: exp.Expr, what: str) -> str:
        if isinstance(node, exp.Literal) and node.is_string:
            return str(node.this)
        raise self.where.error(node, f"{what} must be a string literal")

    def _integer(self, node: exp.Expr, what: str) -> int:
        """An integer literal's value; ``-1`` is parsed as the negation of the literal 1."""
        sign = 1
        literal = node
        if isinstance(node, exp.Neg):
            sign, literal = -1, node.this
        if isinstance(literal, exp.Literal) and not literal.is_string and literal.this.isdigit():
            return sign * int(literal.this)
        raise self.where.error(node, f"{what} must be an integer literal")

