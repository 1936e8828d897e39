"""User-facing expressions: ``col``, ``lit``, ``when`` and the aggregate functions.

An ``Expr`` only wraps an immutable node of ``darwin.plan.exprs``; every operator
returns a new ``Expr``.

Examples
--------
>>> from darwin import col
>>> str(((col("price") > 10) & col("auction").isin([1, 2])).node)
"((col('price') > 10) & col('auction').isin([1, 2]))"
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from darwin.errors import DarwinTypeError, UnsupportedError
from darwin.plan import exprs as ex
from darwin.types import DType

IntoExpr = Any  # an Expr, a column name where a column is meant, or a Python literal


def _node(value: IntoExpr) -> ex.ExprNode:
    if isinstance(value, Expr):
        return value.node
    if isinstance(value, (Agg, OverAgg)):
        raise DarwinTypeError(f"aggregate {value.call} can only be used inside agg(), or with .over(...) "
                              "as a named column of with_columns/select")
    return ex.literal_of(value)


def _dtype(dtype: str | DType) -> DType:
    try:
        return dtype if isinstance(dtype, DType) else DType(dtype)
    except ValueError:
        raise DarwinTypeError(f"cast to unknown type {dtype!r}; use one of {[t.value for t in DType]}") from None


class Expr:
    """A column expression; build with ``col``/``lit`` and Python operators."""

    __slots__ = ("node", "name")

    def __init__(self, node: ex.ExprNode, name: str | None = None) -> None:
        self.node = node
        self.name = name if name is not None else (node.name if isinstance(node, ex.Column) else None)

    def alias(self, name: str) -> Expr:
        return Expr(self.node, name)

    def __repr__(self) -> str:
        return f"Expr({self.node})" + (f".alias({self.name!r})" if self.name else "")

    def __bool__(self) -> bool:
        raise DarwinTypeError("an expression has no truth value: use & | ~ instead of and/or/not, "
                              "and write a < b < c as (a < b) & (b < c)")

    __hash__ = None  # type: ignore[assignment]  # == builds an expression

    def _bin(self, op: str, other: IntoExpr, reflected: bool = False) -> Expr:
        left, right = (self.node, _node(other))
        return Expr(ex.Binary(op, right, left) if reflected else ex.Binary(op, left, right))

    def __add__(self, o: IntoExpr) -> Expr: return self._bin("add", o)
    def __radd__(self, o: IntoExpr) -> Expr: return self._bin("add", o, True)
    def __sub__(self, o: IntoExpr) -> Expr: return self._bin("sub", o)
    def __rsub__(self, o: IntoExpr) -> Expr: return self._bin("sub", o, True)
    def __mul__(self, o: IntoExpr) -> Expr: return self._bin("mul", o)
    def __rmul__(self, o: IntoExpr) -> Expr: return self._bin("mul", o, True)
    def __truediv__(self, o: IntoExpr) -> Expr: return self._bin("truediv", o)
    def __rtruediv__(self, o: IntoExpr) -> Expr: return self._bin("truediv", o, True)
    def __floordiv__(self, o: IntoExpr) -> Expr: return self._bin("floordiv", o)
    def __rfloordiv__(self, o: IntoExpr) -> Expr: return self._bin("floordiv", o, True)
    def __mod__(self, o: IntoExpr) -> Expr: return self._bin("mod", o)
    def __rmod__(self, o: IntoExpr) -> Expr: return self._bin("mod", o, True)
    def __eq__(self, o: IntoExpr) -> Expr: return self._bin("eq", o)  # type: ignore[override]
    def __ne__(self, o: IntoExpr) -> Expr: return self._bin("ne", o)  # type: ignore[override]
    def __lt__(self, o: IntoExpr) -> Expr: return self._bin("lt", o)
    def __le__(self, o: IntoExpr) -> Expr: return self._bin("le", o)
    def __gt__(self, o: IntoExpr) -> Expr: return self._bin("gt", o)
    def __ge__(self, o: IntoExpr) -> Expr: return self._bin("ge", o)
    def __and__(self, o: IntoExpr) -> Expr: return self._bin("and", o)
    def __rand__(self, o: IntoExpr) -> Expr: return self._bin("and", o, True)
    def __or__(self, o: IntoExpr) -> Expr: return self._bin("or", o)
    def __ror__(self, o: IntoExpr) -> Expr: return self._bin("or", o, True)
    def __invert__(self) -> Expr: return Expr(ex.Unary("not", self.node))
    def __neg__(self) -> Expr: return Expr(ex.Unary("neg", self.node))
    def __abs__(self) -> Expr: return self.abs()

    def abs(self) -> Expr:
        return Expr(ex.Unary("abs", self.node))

    # numeric functions, as Flink's (darwin.plan.numeric): NaN or an infinity where Java's Math gives one
    def _math(self, func: str, *others: IntoExpr) -> Expr:
        return Expr(ex.MathCall(func, (self.node, *(_node(o) for o in others))))

    def _double(self, func: str, *others: IntoExpr) -> Expr:
        return Expr(ex.MathCall(func, tuple(Expr(_node(v)).cast(DType.FLOAT64).node for v in (self, *others))))

    def floor(self) -> Expr:
        """The greatest whole number at or below the value, of its type."""
        return self._math("floor")

    def ceil(self) -> Expr:
        """The least whole number at or above the value, of its type."""
        return self._math("ceil")

    def round(self, places: int = 0) -> Expr:
        """Rounded HALF_UP (halves away from zero) to ``places`` decimals (-22 to 22; negative: tens, hundreds...),
        as Flink's ROUND: of the number as Java writes it, so 2.675 rounds to 2.68 to two places."""
        return self._math("round", places)

    def truncate(self, places: int = 0) -> Expr:
        """Cut toward zero to ``places`` decimals (-22 to 22; negative: tens, hundreds...), as Flink's TRUNCATE:
        of the number as Java writes it, so 0.29 cuts to 0.29 to two places (the double is below 0.29)."""
        return self._math("truncate", places)

    def sign(self) -> Expr:
        """1, -1 or 0, of the value's type (a DOUBLE's zero and NaN are themselves)."""
        return self._math("sign")

    def pow(self, exponent: IntoExpr) -> Expr: return self._double("power", exponent)
    def sqrt(self) -> Expr: return self._double("sqrt")
    def ln(self) -> Expr: return self._double("ln")
    def log10(self) -> Expr: return self._double("log10")
    def exp(self) -> Expr: return self._double("exp")

    def log(self, base: IntoExpr) -> Expr:
        """The logarithm to ``base``: ln(value) / ln(base), as Flink's LOG(base, value)."""
        return Expr(_node(base))._double("log", self)

    def is_null(self) -> Expr:
        return Expr(ex.Unary("is_null", self.node))

    def is_not_null(self) -> Expr:
        return Expr(ex.Unary("is_not_null", self.node))

    def isin(self, values: Iterable[Any]) -> Expr:
        """True where the value equals one of ``values``, compared as ``==`` compares (an int with a
        float in float64; NaN equals nothing). As SQL's IN: NULL where the value is NULL, and where
        nothing matches and ``values`` hold a None, so ``~isin([1, None])`` is never true."""
        if isinstance(values, (str, bytes)):
            raise DarwinTypeError("isin() takes a list of values, not a single string")
        return Expr(ex.IsIn(self.node, tuple(ex.literal_of(v) for v in values)))

    def between(self, low: IntoExpr, high: IntoExpr) -> Expr:
        """``low <= self <= high``, both ends inclusive (as in SQL)."""
        return (self >= low) & (self <= high)

    def cast(self, dtype: str | DType) -> Expr:
        """The value as ``dtype``, converted as Flink's CAST converts it. To a string: ``TRUE``/``FALSE``, a
        float as Java writes it (``1.0E7``), a timestamp as ``2015-07-15 00:00:00.000``. From a string: text
        that does not parse as ``dtype`` fails the query with a ``CastError`` (``try_cast`` gives NULL)."""
        return Expr(ex.Cast(self.node, _dtype(dtype)))

    def try_cast(self, dtype: str | DType) -> Expr:
        """As ``cast``, but NULL where a string does not parse as ``dtype`` (Flink's TRY_CAST)."""
        return Expr(ex.Cast(self.node, _dtype(dtype), safe=True))

    @property
    def dt(self) -> DateTimeNamespace:
        return DateTimeNamespace(self)

    @property
    def str(self) -> StringNamespace:
        return StringNamespace(self)


class DateTimeNamespace:
    """Parts of a timestamp in UTC: ``col("ts").dt.hour()``."""

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def _part(self, part: str) -> Expr:
        return Expr(ex.DatePart(part, self._expr.node))

    def year(self) -> Expr: return self._part("year")
    def month(self) -> Expr: return self._part("month")
    def day(self) -> Expr: return self._part("day")
    def hour(self) -> Expr: return self._part("hour")
    def minute(self) -> Expr: return self._part("minute")
    def second(self) -> Expr: return self._part("second")
    def millisecond(self) -> Expr: return self._part("millisecond")

    def day_of_week(self) -> Expr:
        """ISO day of the week: 1 is Monday, 7 is Sunday."""
        return self._part("day_of_week")

    def day_of_year(self) -> Expr:
        """The day of the year: 1 is January 1st."""
        return self._part("day_of_year")

    def week(self) -> Expr:
        """ISO 8601 week of the year, 1 to 53: weeks start on Monday, and week 1 holds the year's first
        Thursday (so January 1st can be in week 52 or 53 of the year before, December 31st in week 1)."""
        return self._part("week")

    def quarter(self) -> Expr:
        """The quarter of the year, 1 to 4."""
        return (self.month() + 2) // 3

    def floor(self, unit: str) -> Expr:
        """The start of the ``unit`` holding the timestamp, in UTC (Flink's ``FLOOR(ts TO unit)``): ``"second"``,
        ``"minute"``, ``"hour"``, ``"day"``, ``"week"`` (from Sunday, as Flink's), ``"month"``, ``"quarter"`` or
        ``"year"``. A time before 1970 floors too (Flink's MONTH, QUARTER, YEAR and WEEK cut it toward 1970)."""
        return Expr(ex.TimeFloor(unit, self._expr.node))

    def ceil(self, unit: str) -> Expr:
        """The first start of a ``unit`` at or after the timestamp (Flink's ``CEIL(ts TO unit)``). For a week, month,
        quarter or year, at or after the timestamp's day, as Flink reads the day only: the ceiling of
        2018-03-01 21:00:01 to the month is 2018-03-01 00:00:00."""
        if unit in ex.FIXED_UNITS_MS:
            start = self.floor(unit)
            return when(start == self._expr, start).otherwise(start + ex.FIXED_UNITS_MS[unit])
        day = self.floor("day")
        start = day.dt.floor(unit)
        # a span past which the next week, month, quarter or year has begun, and the one after has not
        span = {"week": 7, "month": 31, "quarter": 92, "year": 366}[unit] * ex.FIXED_UNITS_MS["day"]
        return when(start == day, start).otherwise((start + span).dt.floor(unit))

    def strftime(self, fmt: str) -> Expr:
        """The timestamp as a string in UTC: ``%Y %y %m %d %j %H %M %S %F %T %%`` and literal text,
        e.g. ``"%Y-%m-%d"`` (Flink's ``DATE_FORMAT(ts, 'yyyy-MM-dd')``); see ``darwin.plan.timeformat``.
        An unknown directive is refused here."""
        return Expr(ex.Strftime(self._expr.node, fmt))


class StringNamespace:
    """String functions, computed once per distinct value: ``col("url").str.split_index("/", 3)``."""

    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def _call(self, func: str, *args: Any) -> Expr:
        from darwin.plan.strings import check_args

        check_args(func, args)
        return Expr(ex.StringCall(func, self._expr.node, args))

    def lower(self) -> Expr: return self._call("lower")
    def upper(self) -> Expr: return self._call("upper")
    def length(self) -> Expr: return self._call("length")
    def count_char(self, char: str) -> Expr: return self._call("count_char", char)
    def contains(self, substring: str) -> Expr: return self._call("contains", substring)
    def starts_with(self, prefix: str) -> Expr: return self._call("starts_with", prefix)

    def regexp_extract(self, pattern: str, group: int = 0) -> Expr:
        """Group ``group`` of the first match of ``pattern``; NULL when nothing matches and for a group the
        pattern does not have (a negative one too), as Flink's REGEXP_EXTRACT."""
        return self._call("regexp_extract", pattern, group)

    def regexp_replace(self, pattern: str, replacement: str) -> Expr:
        """Every match of ``pattern`` replaced by ``replacement`` taken literally (``$1`` is two characters), as
        Flink's REGEXP_REPLACE."""
        return self._call("regexp_replace", pattern, replacement)

    def regexp(self, pattern: str) -> Expr:
        """Whether ``pattern`` matches anywhere in the value (never for the empty pattern), as Flink's REGEXP."""
        return self._call("regexp", pattern)

    def repeat(self, count: int) -> Expr:
        """The value ``count`` times over ('' for a count below 1), as Flink's REPEAT."""
        return self._call("repeat", count)

    def reverse(self) -> Expr:
        """The value's characters (code points) in reverse order, as Flink's REVERSE."""
        return self._call("reverse")

    def map(self, mapping: dict[str, str]) -> Expr:
        """The value ``mapping`` gives each string, NULL where it has none: a join with a small static
        table, computed once per distinct value."""
        if not isinstance(mapping, dict):
            raise DarwinTypeError(f"str.map() takes a dict, got {type(mapping).__name__}")
        return self._call("map", tuple(sorted(mapping.items())))

    def split_index(self, separator: str, index: int) -> Expr:
        """Part ``index`` (from 0) of the value split at ``separator``, as Flink's SPLIT_INDEX; NULL past the
        last part, for a negative ``index`` and for the empty string, which has no parts."""
        return self._call("split_index", separator, index)

    def ends_with(self, suffix: str) -> Expr: return self._call("ends_with", suffix)
    def initcap(self) -> Expr:
        """Each word's first letter in upper case, its others in lower case, as Flink's INITCAP: a word is a
        run of ASCII letters and digits; other characters are kept as they are."""
        return self._call("initcap")

    def substring(self, start: int, length: int | None = None) -> Expr:
        """``length`` code points from position ``start`` (from 1; 0 is 1 too; a negative one counts from the
        end), to the end without ``length``, as Flink's SUBSTRING: '' where ``start`` is past either end,
        NULL for a negative ``length``."""
        return self._call("substring", start, length)

    def trim(self, chars: str = " ") -> Expr:
        """Without the ``chars`` (each of them; spaces by default) at both ends, as Flink's TRIM."""
        return self._call("trim", chars)

    def ltrim(self, chars: str = " ") -> Expr: return self._call("ltrim", chars)
    def rtrim(self, chars: str = " ") -> Expr: return self._call("rtrim", chars)

    def replace(self, old: str, new: str) -> Expr:
        """Every ``old`` (not a pattern) replaced by ``new``, left to right, as Flink's REPLACE."""
        return self._call("replace", old, new)

    def lpad(self, length: int, pad: str = " ") -> Expr:
        """``pad`` repeated before the value up to ``length`` code points, or the value's first ``length``, as
        Flink's LPAD; NULL for a negative ``length`` or an empty ``pad``."""
        return self._call("lpad", length, pad)

    def rpad(self, length: int, pad: str = " ") -> Expr:
        """As ``lpad``, with ``pad`` after the value (Flink's RPAD)."""
        return self._call("rpad", length, pad)

    def locate(self, substring: str, start: int = 1) -> Expr:
        """The position (from 1) of the first ``substring`` at or after position ``start``, 0 if there is none,
        as Flink's LOCATE and POSITION; the empty ``substring`` is at 1."""
        return self._call("locate", substring, start)

    def like(self, pattern: str, escape: str | None = None) -> Expr:
        """SQL's LIKE, case-sensitive: ``%`` any run of characters, ``_`` exactly one; ``escape`` (one
        character) makes the next ``%``, ``_`` or itself literal. A pattern that is a prefix, suffix,
        infix or exact text is computed as ``starts_with``, ``ends_with``, ``contains`` or ``==``."""
        from darwin.plan.strings import like_tokens

        general = self._call("like", pattern, _escape_char(escape, "LIKE"))  # checks the pattern
        simple = _simple_like(self._expr, like_tokens(pattern, escape or ""))
        return general if simple is None else simple

    def ilike(self, pattern: str, escape: str | None = None) -> Expr:
        """``like`` without regard to case: LIKE of the value and the pattern in lower case, as Spark's and
        PostgreSQL's ILIKE (Flink's SQL has none)."""
        return self._call("ilike", pattern, _escape_char(escape, "ILIKE"))

    def similar_to(self, pattern: str, escape: str | None = None) -> Expr:
        """SQL's SIMILAR TO, as Flink's: a SQL regular expression (``_`` one character, ``%`` any run, ``|``,
        ``*``, ``+``, ``?``, ``{m,n}``, ``(...)``, ``[...]``) that must match the whole value; ``escape`` makes the
        next special character literal. See ``darwin.plan.similar``."""
        return self._call("similar_to", pattern, _escape_char(escape, "SIMILAR TO"))

    def to_timestamp(self, pattern: str) -> Expr:
        """The text as a timestamp, read with a Java pattern (``"yyyy-MM-dd HH:mm:ss"``, ``"dd/MM/yyyy"``) as
        Flink's TO_TIMESTAMP reads it; NULL where it does not parse (see ``darwin.plan.javatime``). Without a
        pattern, Flink's TO_TIMESTAMP is ``try_cast("timestamp")``."""
        return self._call("to_timestamp", pattern)

    def unix_timestamp(self, pattern: str = "yyyy-MM-dd HH:mm:ss") -> Expr:
        """Seconds since the epoch of the text read with a Java pattern, as Flink's UNIX_TIMESTAMP (a lenient
        SimpleDateFormat); -9223372036854775808 (Long.MIN_VALUE) where it does not parse, as in Flink."""
        return self._call("unix_timestamp", pattern)

    def concat(self, *others: IntoExpr) -> Expr:
        """The value followed by ``others`` (strings or string columns): ``dw.concat(self, *others)``."""
        return concat(self._expr, *others)


def _escape_char(escape: str | None, what: str) -> str:
    """A pattern's ESCAPE as the registry takes it: one character, or '' for none."""
    if escape is not None and (not isinstance(escape, str) or len(escape) != 1):
        raise DarwinTypeError(f"{what}'s escape is one character, got {escape!r}")
    return escape or ""


def _simple_like(value: Expr, tokens: list[tuple[str, str]]) -> Expr | None:
    """A LIKE pattern without ``_`` whose ``%`` are only at its ends, as an equality or a string test."""
    kinds = [kind for kind, _ in tokens]
    if "one" in kinds:
        return None
    lead = kinds[:1] == ["any"]
    trail = len(kinds) > 1 and kinds[-1] == "any"
    body = tokens[int(lead):len(tokens) - int(trail)]
    if any(kind != "text" for kind, _ in body):
        return None
    text = "".join(c for _, c in body)
    if lead and trail:
        return value.str.contains(text)
    if lead:
        return value.str.ends_with(text)
    if trail:
        return value.str.starts_with(text)
    return value == text


def _string_parts(values: tuple[IntoExpr, ...], what: str) -> list[ex.ExprNode]:
    """The nodes of ``concat``'s values; literals must be strings (or None)."""
    if not values:
        raise DarwinTypeError(f"{what}() takes at least one value")
    nodes = [_node(v) for v in values]
    for n in nodes:
        if isinstance(n, ex.Literal) and n.value is not None and n.dtype is not DType.STRING:
            raise DarwinTypeError(f"{what}() joins strings, got {n}; cast it or write it as a string")
    return nodes


def concat(*values: IntoExpr) -> Expr:
    """The strings joined, as Flink's CONCAT and ``||``: NULL where any of them is NULL. Values are string
    columns or expressions, or Python strings; each distinct combination of values is joined once."""
    nodes = _string_parts(values, "concat")
    if any(isinstance(n, ex.Literal) and n.value is None for n in nodes):
        return Expr(ex.Literal(None, DType.STRING))
    parts: list[ex.ExprNode] = []
    for n in nodes:  # adjacent literals joined
        if isinstance(n, ex.Literal) and parts and isinstance(parts[-1], ex.Literal):
            parts[-1] = ex.Literal(parts[-1].value + n.value, DType.STRING)
        else:
            parts.append(n)
    if len(parts) == 1:
        return Expr(parts[0])
    return Expr(ex.Concat(tuple(parts), None))


def concat_ws(separator: str | None, *values: IntoExpr) -> Expr:
    """The values that are not NULL joined with ``separator`` between them, as Flink's CONCAT_WS: '' where all
    are NULL, NULL where the separator is."""
    nodes = _string_parts(values, "concat_ws")
    if separator is None:
        return Expr(ex.Literal(None, DType.STRING))
    if not isinstance(separator, str):
        raise DarwinTypeError(f"concat_ws() takes a string separator, got {separator!r}")
    parts = [n for n in nodes if not (isinstance(n, ex.Literal) and n.value is None)]
    if all(isinstance(p, ex.Literal) for p in parts):
        return lit(separator.join(p.value for p in parts if isinstance(p, ex.Literal)))
    return Expr(ex.Concat(tuple(parts), separator))


def col(name: str) -> Expr:
    """A column of the table the expression is used on."""
    if not isinstance(name, str):
        raise DarwinTypeError(f"col() takes a column name, got {name!r}")
    return Expr(ex.Column(name))


def lit(value: Any, dtype: str | DType | None = None) -> Expr:
    """A constant; ``dtype`` types a NULL or forces a type (e.g. ``lit(0, "timestamp")``)."""
    node = ex.literal_of(value)
    if dtype is not None:
        target = dtype if isinstance(dtype, DType) else DType(dtype)
        if value is None:
            node = ex.Literal(None, target)
        elif target != node.dtype:
            if target is DType.FLOAT64 and node.dtype is DType.INT64:
                node = ex.Literal(float(value), target)
            else:
                node = ex.Literal(node.value, target)
    return Expr(node)


class When:
    """``when(cond, value).when(...).otherwise(default)``; without otherwise the default is NULL."""

    def __init__(self, whens: tuple[tuple[ex.ExprNode, ex.ExprNode], ...]) -> None:
        self._whens = whens

    def when(self, condition: IntoExpr, value: IntoExpr) -> When:
        return When(self._whens + ((_node(condition), _node(value)),))

    def otherwise(self, value: IntoExpr) -> Expr:
        return Expr(ex.Case(self._whens, _node(value)))

    def end(self) -> Expr:
        return Expr(ex.Case(self._whens, ex.Literal(None, None)))


def when(condition: IntoExpr, value: IntoExpr) -> When:
    return When(((_node(condition), _node(value)),))


# ----------------------------------------------------------------------------- aggregates

class Agg:
    """An aggregate call, used as a keyword argument of ``agg()``."""

    __slots__ = ("call",)

    def __init__(self, call: ex.AggCall) -> None:
        self.call = call

    def __repr__(self) -> str:
        return f"Agg({self.call})"

    def over(self, partition_by: Any = (), order_by: Any = (), rows: tuple[int | None, int] = (None, 0)) -> OverAgg:
        """This aggregate over a window of rows, for ``with_columns``/``select``: per row, over the
        ``rows[0]`` rows before it in its partition and itself (``ROWS BETWEEN n PRECEDING AND
        CURRENT ROW``), in ``order_by`` (column names or dw.asc/dw.desc)."""
        preceding, following = rows
        if following != 0:
            raise UnsupportedError(f"over: rows=({preceding}, {following}); only frames ending at the current "
                                   "row (rows=(n, 0)) are supported")
        if preceding is None:
            raise UnsupportedError("over: UNBOUNDED PRECEDING is not supported yet; give a number of rows, "
                                   "rows=(n, 0)")
        return OverAgg(self.call, partition_by, order_by, preceding)


class OverAgg:
    """An aggregate over a window of rows (``Agg.over``); the API turns it into a ``pn.Over``."""

    __slots__ = ("call", "partition_by", "order_by", "preceding")

    def __init__(self, call: ex.AggCall, partition_by: Any, order_by: Any, preceding: int) -> None:
        self.call, self.partition_by, self.order_by, self.preceding = call, partition_by, order_by, preceding

    def __repr__(self) -> str:
        return f"OverAgg({self.call}, rows {self.preceding} preceding)"


def _agg(func: str, arg: IntoExpr | None, filter: IntoExpr | None = None) -> Agg:
    node = None if arg is None else ex.Column(arg) if isinstance(arg, str) else _node(arg)
    where = None if filter is None else _node(filter)
    return Agg(ex.AggCall(func, node, where))


def count(expr: IntoExpr | None = None, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A002 - SQL's FILTER
    """Rows in the group; with an argument, rows where it is not null. Every aggregate takes
    ``filter=``: it then sees only the rows where the predicate is true (SQL's ``FILTER (WHERE p)``;
    a NULL predicate counts as false)."""
    return _agg("count", expr, filter)


def count_distinct(expr: IntoExpr, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A002
    """Distinct non-null values in the group, counted exactly (SQL's ``COUNT(DISTINCT x)``); in
    aggregations without a window and in tumbling and sliding windows (beside aggregates that
    combine exactly from parts of a group: counts, integer sums, min, max)."""
    return _agg("count_distinct", expr, filter)


def sum(expr: IntoExpr, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A001, A002 - mirrors SQL/Polars naming
    return _agg("sum", expr, filter)


def min(expr: IntoExpr, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A001, A002
    return _agg("min", expr, filter)


def max(expr: IntoExpr, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A001, A002
    return _agg("max", expr, filter)


def avg(expr: IntoExpr, *, filter: IntoExpr | None = None) -> Agg:  # noqa: A002
    return _agg("avg", expr, filter)


mean = avg
