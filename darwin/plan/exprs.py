"""Expression nodes: frozen, hashable values with type inference against a schema.

The user-facing wrapper with operator overloading is ``darwin.expr.Expr``; plan
nodes hold these bare nodes so a plan compares and hashes by value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC
from functools import cached_property
from typing import Any

from darwin.errors import DarwinError, DarwinTypeError, PlanError
from darwin.types import DType, Schema

ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod")
COMPARISON = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("and", "or")
UNARY = ("neg", "not", "abs", "is_null", "is_not_null")
DATE_PARTS = ("year", "month", "day", "hour", "minute", "second", "millisecond", "day_of_week", "day_of_year",
              "week")
# the units a timestamp floors to: those of a fixed length, in milliseconds, then the calendar's
FIXED_UNITS_MS = {"second": 1_000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}
FLOOR_UNITS = (*FIXED_UNITS_MS, "week", "month", "quarter", "year")
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
           "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
           "and": "&", "or": "|"}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Column:
    name: str

    def __str__(self) -> str:
        return f"col({self.name!r})"


@dataclass(frozen=True)
class Literal:
    """A constant; ``dtype`` None is an untyped NULL that takes its type from context."""

    value: Any
    dtype: DType | None

    def __post_init__(self) -> None:
        v, t = self.value, self.dtype
        if v is None:
            return
        ok = t is not None and {
            DType.BOOL: isinstance(v, bool),
            DType.INT64: isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX,
            DType.TIMESTAMP: isinstance(v, int) and not isinstance(v, bool),
            DType.FLOAT64: isinstance(v, float),
            DType.STRING: isinstance(v, str)}.get(t, False)
        if not ok:
            raise DarwinTypeError(f"literal {v!r} is not a valid {t!r} value")

    def __str__(self) -> str:
        return "null" if self.value is None else repr(self.value)


@dataclass(frozen=True)
class Binary:
    op: str
    left: ExprNode
    right: ExprNode

    def __str__(self) -> str:
        return f"({self.left} {SYMBOLS[self.op]} {self.right})"


@dataclass(frozen=True)
class Unary:
    op: str
    operand: ExprNode

    def __str__(self) -> str:
        return f"{self.op}({self.operand})"


ISIN_SHOWN = 8  # a longer isin list is shown as its first values, its length and a digest


@dataclass(frozen=True)
class IsIn:
    operand: ExprNode
    values: tuple[Literal, ...]

    def __str__(self) -> str:
        """Short for long lists (explain, error messages), yet distinct for distinct lists.

        Plan text is hashed into checkpoint identity, so an abbreviated list carries a digest
        of all its values (stable across processes, unlike ``hash``).
        """
        if len(self.values) <= ISIN_SHOWN:
            return f"{self.operand}.isin([{', '.join(map(str, self.values))}])"
        shown = ", ".join(map(str, self.values[:ISIN_SHOWN]))
        return f"{self.operand}.isin([{shown}, ... ({len(self.values)} values, sha256 {self.digest[:16]})])"

    @cached_property
    def digest(self) -> str:
        h = hashlib.sha256()
        for v in self.values:
            h.update(f"{v.dtype and v.dtype.value}:{v.value!r}\x00".encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Cast:
    """``operand`` converted to ``dtype``. From a string, text that does not parse fails the query
    (``CastError``), or is NULL where ``safe`` (TRY_CAST); ``bits`` narrows a string's integer to
    INT, SMALLINT or TINYINT's range (SQL), past which it does not parse (``darwin.plan.casts``)."""

    operand: ExprNode
    dtype: DType
    safe: bool = False
    bits: int = 64

    def __post_init__(self) -> None:
        from darwin.plan.casts import INTEGER_BITS

        if self.bits not in INTEGER_BITS or (self.bits != 64 and self.dtype is not DType.INT64):
            raise DarwinTypeError(f"cast to {self.dtype.value} of {self.bits} bits: an integer has 8, 16, 32 or 64")

    def __str__(self) -> str:
        bits = "" if self.bits == 64 else f", {self.bits} bits"
        return f"{'try_cast' if self.safe else 'cast'}({self.operand}, {self.dtype.value}{bits})"


@dataclass(frozen=True)
class Case:
    whens: tuple[tuple[ExprNode, ExprNode], ...]
    otherwise: ExprNode

    def __str__(self) -> str:
        arms = " ".join(f"when {c} then {v}" for c, v in self.whens)
        return f"case {arms} else {self.otherwise} end"


@dataclass(frozen=True)
class DatePart:
    part: str
    operand: ExprNode

    def __str__(self) -> str:
        return f"{self.operand}.dt.{self.part}()"


@dataclass(frozen=True)
class TimeFloor:
    """A timestamp floored to the start of its ``unit`` in UTC (Flink's ``FLOOR(ts TO unit)``): a week starts on
    Sunday, as Flink's (Calcite's) FLOOR TO WEEK has it; a time before 1970 floors, too."""

    unit: str
    operand: ExprNode

    def __post_init__(self) -> None:
        if self.unit not in FLOOR_UNITS:
            raise DarwinTypeError(f"a timestamp floors to one of {', '.join(FLOOR_UNITS)}, not {self.unit!r}")

    def __str__(self) -> str:
        return f"{self.operand}.dt.floor({self.unit!r})"


@dataclass(frozen=True)
class MathCall:
    """A numeric function of ``darwin.plan.numeric`` (Flink's FLOOR, ROUND, POWER, LN...): those of DOUBLEs take
    DOUBLE arguments (the fluent API casts integers), ROUND and TRUNCATE take places as an integer literal."""

    func: str
    args: tuple[ExprNode, ...]

    def __post_init__(self) -> None:
        from darwin.plan.numeric import FUNCTIONS, MAX_DECIMALS

        fn = FUNCTIONS.get(self.func)
        if fn is None or len(self.args) != fn.arity:
            raise DarwinTypeError(f"{self.func} with {len(self.args)} arguments is no numeric function")
        if self.func in ("round", "truncate"):
            places = self.args[1]
            if not (isinstance(places, Literal) and places.dtype is DType.INT64 and places.value is not None
                    and -MAX_DECIMALS <= places.value <= MAX_DECIMALS):
                raise DarwinTypeError(f"{self.func}'s places are an integer from -{MAX_DECIMALS} to "
                                      f"{MAX_DECIMALS}, not {places}")

    def __str__(self) -> str:
        return f"{self.func}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class StringCall:
    """A string function of ``darwin.plan.strings`` with constant arguments."""

    func: str
    operand: ExprNode
    args: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{self.operand}.str.{self.func}({', '.join(map(repr, self.args))})"


@dataclass(frozen=True)
class Strftime:
    """A timestamp formatted as a string in UTC (``darwin.plan.timeformat``)."""

    operand: ExprNode
    format: str

    def __post_init__(self) -> None:
        from darwin.plan.timeformat import parse

        parse(self.format)  # an unknown directive fails when the query is built

    def __str__(self) -> str:
        return f"{self.operand}.dt.strftime({self.format!r})"


@dataclass(frozen=True)
class Concat:
    """Strings joined (``dw.concat``, ``dw.concat_ws``), of two or more columns or expressions: NULL where a
    part is NULL without a ``separator``; with one, NULL parts are left out (CONCAT_WS)."""

    parts: tuple[ExprNode, ...]
    separator: str | None

    def __str__(self) -> str:
        parts = ", ".join(map(str, self.parts))
        return f"concat({parts})" if self.separator is None else f"concat_ws({self.separator!r}, {parts})"


ExprNode = Column | Literal | Binary | Unary | IsIn | Cast | Case | DatePart | TimeFloor | MathCall | StringCall \
    | Strftime | Concat


@dataclass(frozen=True)
class AggCall:
    """An aggregate function applied to an expression (``arg`` None for ``count()``), over the rows
    where ``filter`` is true if one is given (SQL's ``AGG(x) FILTER (WHERE p)``)."""

    func: str
    arg: ExprNode | None
    filter: ExprNode | None = None

    def __str__(self) -> str:
        call = f"{self.func}({'' if self.arg is None else self.arg})"
        return call if self.filter is None else f"{call} filter (where {self.filter})"

    @property
    def input(self) -> ExprNode | None:
        """What the aggregate folds, in every engine: its argument where the filter is true and NULL
        elsewhere (``count()`` with a filter counts the rows where it is true). Aggregates skip NULLs,
        so this is the filter's meaning; a NULL predicate counts as false, as in a WHERE clause."""
        if self.filter is None:
            return self.arg
        value = Literal(1, DType.INT64) if self.arg is None else self.arg
        return Case(((self.filter, value),), Literal(None, None))


AGG_FUNCS = ("count", "sum", "min", "max", "avg", "count_distinct")


def children(e: ExprNode) -> tuple[ExprNode, ...]:
    if isinstance(e, Binary):
        return (e.left, e.right)
    if isinstance(e, (Unary, IsIn, Cast, DatePart, TimeFloor, StringCall, Strftime)):
        return (e.operand, *getattr(e, "values", ()))
    if isinstance(e, Case):
        return tuple(x for pair in e.whens for x in pair) + (e.otherwise,)
    if isinstance(e, Concat):
        return e.parts
    if isinstance(e, MathCall):
        return e.args
    return ()


def conjuncts(e: ExprNode) -> list[ExprNode]:
    """The terms of a chain of ANDs, left to right (the expression itself if it is not one)."""
    if isinstance(e, Binary) and e.op == "and":
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]


def columns_of(e: ExprNode | AggCall | None) -> frozenset[str]:
    """Names of the columns an expression reads."""
    if e is None:
        return frozenset()
    if isinstance(e, AggCall):
        return columns_of(e.arg) | columns_of(e.filter)
    if isinstance(e, Column):
        return frozenset((e.name,))
    out: frozenset[str] = frozenset()
    for c in children(e):
        out |= columns_of(c)
    return out


def literal_of(value: Any) -> Literal:
    """Literal for a Python value, with the Darwin type it implies."""
    from datetime import datetime

    if value is None:
        return Literal(None, None)
    if isinstance(value, bool):
        return Literal(value, DType.BOOL)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise DarwinTypeError(f"integer literal {value} does not fit in int64")
        return Literal(value, DType.INT64)
    if isinstance(value, float):
        return Literal(value, DType.FLOAT64)
    if isinstance(value, str):
        return Literal(value, DType.STRING)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return Literal(int(value.timestamp() * 1000), DType.TIMESTAMP)
    raise DarwinTypeError(f"cannot use {value!r} of type {type(value).__name__} as a literal")


# ----------------------------------------------------------------------------- typing

@dataclass(frozen=True)
class Typed:
    dtype: DType | None  # None only for an untyped NULL literal
    nullable: bool


def _unify(a: DType | None, b: DType | None, what: str) -> DType | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} == {DType.INT64, DType.FLOAT64}:
        return DType.FLOAT64
    raise DarwinTypeError(f"{what}: cannot combine {a.value} and {b.value}")


def type_of(e: ExprNode, schema: Schema, where: str = "expression") -> Typed:
    """Type and nullability of ``e`` over ``schema``; raises naming the offending part."""
    if isinstance(e, Column):
        f = schema.field(e.name, where)
        return Typed(f.dtype, f.nullable)
    if isinstance(e, Literal):
        return Typed(e.dtype, e.value is None)
    if isinstance(e, Binary):
        return _type_binary(e, schema, where)
    if isinstance(e, Unary):
        t = type_of(e.operand, schema, where)
        if e.op in ("is_null", "is_not_null"):
            return Typed(DType.BOOL, False)
        if e.op == "not":
            _expect(t, (DType.BOOL,), e, where)
            return Typed(DType.BOOL, t.nullable)
        _expect(t, (DType.INT64, DType.FLOAT64), e, where)
        return Typed(t.dtype, t.nullable)
    if isinstance(e, IsIn):
        t = type_of(e.operand, schema, where)
        for dtype in {v.dtype for v in e.values if v.value is not None}:  # one check per type, not per value
            _comparable(t.dtype, dtype, "eq", f"{where}: {e}")
        # x IN (..., NULL) is NULL when nothing matched
        return Typed(DType.BOOL, t.nullable or any(v.value is None for v in e.values))
    if isinstance(e, Cast):
        t = type_of(e.operand, schema, where)
        if e.bits != 64 and t.dtype not in (DType.STRING, None):
            raise DarwinTypeError(f"{where}: {e}: a narrower integer is parsed from a string only, "
                                  f"not from {t.dtype.value}")
        if t.dtype is DType.STRING and e.dtype is not DType.STRING:  # text that does not parse: NULL or a failure
            return Typed(e.dtype, t.nullable or e.safe)
        return Typed(e.dtype, t.nullable or (t.dtype is DType.FLOAT64 and e.dtype not in (DType.FLOAT64, DType.BOOL,
                                                                                        DType.STRING)))
    if isinstance(e, Case):
        result: DType | None = None
        nullable = False
        for cond, value in e.whens:
            _expect(type_of(cond, schema, where), (DType.BOOL,), cond, where)
            tv = type_of(value, schema, where)
            result = _unify(result, tv.dtype, f"{where}: {e}")
            nullable |= tv.nullable
        to = type_of(e.otherwise, schema, where)
        result = _unify(result, to.dtype, f"{where}: {e}")
        return Typed(result, nullable or to.nullable)
    if isinstance(e, DatePart):
        t = type_of(e.operand, schema, where)
        _expect(t, (DType.TIMESTAMP,), e, where)
        return Typed(DType.INT64, t.nullable)
    if isinstance(e, TimeFloor):
        t = type_of(e.operand, schema, where)
        _expect(t, (DType.TIMESTAMP,), e, where)
        return Typed(DType.TIMESTAMP, t.nullable)
    if isinstance(e, MathCall):
        return _type_math(e, schema, where)
    if isinstance(e, Strftime):
        t = type_of(e.operand, schema, where)
        _expect(t, (DType.TIMESTAMP,), e, where)
        return Typed(DType.STRING, t.nullable)
    if isinstance(e, StringCall):
        from darwin.plan.strings import FUNCTIONS

        t = type_of(e.operand, schema, where)
        _expect(t, (DType.STRING,), e, where)
        fn = FUNCTIONS[e.func]
        return Typed(fn.result, t.nullable or fn.gives_null(e.args))
    if isinstance(e, Concat):
        parts = [type_of(p, schema, where) for p in e.parts]
        for p, t in zip(e.parts, parts):
            _expect(t, (DType.STRING,), p, f"{where}: {e}")
        return Typed(DType.STRING, e.separator is None and any(t.nullable for t in parts))
    raise PlanError(f"{where}: not an expression: {e!r}")


def _type_math(e: MathCall, schema: Schema, where: str) -> Typed:
    from darwin.plan.numeric import FUNCTIONS

    fn = FUNCTIONS[e.func]
    floats = fn.floats
    types = [type_of(a, schema, where) for a in e.args]
    if fn.integers:
        for t, a in zip(types, e.args, strict=True):
            _expect(t, (DType.INT64,), a, f"{where}: {e}")
        return Typed(DType.INT64, any(t.nullable for t in types))
    for t, a in zip(types, e.args, strict=True):
        _expect(t, (DType.FLOAT64,) if floats else (DType.INT64, DType.FLOAT64), a, f"{where}: {e}")
    return Typed(DType.FLOAT64 if floats else types[0].dtype, any(t.nullable for t in types))


def widened(a: ExprNode, b: ExprNode, a_schema: Schema, b_schema: Schema) -> tuple[ExprNode, ExprNode]:
    """Two keys a join compares for equality, an integer one beside a float one cast to float (Flink
    compares BIGINT = DOUBLE as DOUBLE, as ``==`` does here). Others are left for the join to judge."""
    try:
        types = (type_of(a, a_schema).dtype, type_of(b, b_schema).dtype)
    except DarwinError:
        return a, b  # the join refuses the key, naming its side
    if types == (DType.INT64, DType.FLOAT64):
        return Cast(a, DType.FLOAT64), b
    if types == (DType.FLOAT64, DType.INT64):
        return a, Cast(b, DType.FLOAT64)
    return a, b


def _expect(t: Typed, allowed: tuple[DType, ...], e: Any, where: str) -> None:
    if t.dtype is not None and t.dtype not in allowed:
        names = " or ".join(a.value for a in allowed)
        raise DarwinTypeError(f"{where}: {e} expects {names}, got {t.dtype.value}")


def _comparable(a: DType | None, b: DType | None, op: str, what: str) -> None:
    if a is None or b is None:
        return
    numeric = {DType.INT64, DType.FLOAT64}
    if a == b or (a in numeric and b in numeric) or {a, b} == {DType.TIMESTAMP, DType.INT64}:
        return  # booleans order FALSE first, as Flink's BOOLEAN
    raise DarwinTypeError(f"{what}: cannot compare {a.value} with {b.value}")


def _time_arithmetic(op: str, a: DType | None, b: DType | None, what: str) -> DType:
    """The type of arithmetic on a timestamp: ``ts + n``, ``n + ts`` and ``ts - n`` are the timestamp ``n``
    milliseconds away, ``ts - ts`` the milliseconds between; nothing else is a time (``ts + ts`` and
    ``n - ts`` added and negated milliseconds since the epoch)."""
    if op == "sub" and a == b == DType.TIMESTAMP:
        return DType.INT64
    if (op == "add" and {a, b} in ({DType.TIMESTAMP, DType.INT64}, {DType.TIMESTAMP, None})) or \
            (op == "sub" and a is DType.TIMESTAMP and b in (DType.INT64, None)):
        return DType.TIMESTAMP
    raise DarwinTypeError(f"{what}: timestamps support only ts + n, n + ts and ts - n of integer milliseconds n, "
                          "and ts - ts")


def _type_binary(e: Binary, schema: Schema, where: str) -> Typed:
    lt, rt = type_of(e.left, schema, where), type_of(e.right, schema, where)
    a, b = lt.dtype, rt.dtype
    nullable = lt.nullable or rt.nullable
    what = f"{where}: {e}"
    if e.op in LOGICAL:
        _expect(lt, (DType.BOOL,), e.left, what)
        _expect(rt, (DType.BOOL,), e.right, what)
        return Typed(DType.BOOL, nullable)
    if e.op in COMPARISON:
        _comparable(a, b, e.op, what)
        return Typed(DType.BOOL, nullable)
    # arithmetic
    for t, side in ((a, e.left), (b, e.right)):
        if t in (DType.BOOL, DType.STRING):
            raise DarwinTypeError(f"{what}: arithmetic {SYMBOLS[e.op]} on {t.value} operand {side}")
    if e.op in ("truediv", "floordiv", "mod"):
        divisor_safe = isinstance(e.right, Literal) and e.right.value not in (None, 0, 0.0)
        nullable = nullable or not divisor_safe
    if DType.TIMESTAMP in (a, b):
        return Typed(_time_arithmetic(e.op, a, b, what), nullable)
    if e.op == "truediv":
        return Typed(DType.FLOAT64, nullable)
    if a is None and b is None:
        return Typed(None, True)
    return Typed(_unify(a, b, what), nullable)
