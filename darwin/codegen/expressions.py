"""Emits fused-loop code for expressions: each value is a (value, valid) pair of locals.

Validity is tracked statically: a sub-expression that cannot be NULL carries no
validity code at all, so non-nullable queries pay nothing for SQL null semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from darwin.codegen.layout import CAST_FAILED, NEEDS_PAIR, NEEDS_STRING
from darwin.codegen.source import SourceBuilder, number
from darwin.errors import UnsupportedError
from darwin.plan import exprs as ex
from darwin.plan.aggregates import TEXT_ARRAYS
from darwin.plan.strings import FUNCTIONS, PARSERS, expands
from darwin.plan.timeformat import unit_ms
from darwin.types import DType, Schema

Value = tuple[str, str | None]  # (value code, validity code or None = never null)
Env = dict[str, Value]

_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ZERO: dict[DType | None, str] = {DType.FLOAT64: "0.0", DType.BOOL: "False"}  # else np.int64(0)
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # the order seen from the other side
ISIN_INLINE_LIMIT = 16


@dataclass
class Params:
    """Values passed to a kernel as arguments instead of being written into its source."""

    strings: list[str] = field(default_factory=list)  # literal strings, passed as dictionary codes
    arrays: list[tuple[str, list[Any]]] = field(default_factory=list)  # (numpy dtype, sorted values)
    string_sets: list[tuple[str, ...]] = field(default_factory=list)  # passed as sorted dictionary codes
    lookups: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)  # string functions by code
    # the most string functions applied one to the result of another (str.lower().str.trim(): 2)
    lookup_depth: int = 1
    formats: list[str] = field(default_factory=list)  # strftime formats: a table of codes by time unit each
    # strings made as kernels ask (NEEDS_PAIR), by a pair of codes: ("join", separator) joins the two;
    # ("call", function, arguments) applies a string function that expands strings to the first
    pairs: list[tuple[Any, ...]] = field(default_factory=list)
    # the kernel makes strings through formats' and pair tables (formatted timestamps, numbers' texts,
    # concatenations, expanding functions): it can run as a scout (``ctl.SCOUT``), which records the strings
    # those tables lack in ``ptm`` (a table and two keys each), so that the runtime makes them all at once
    scouting: bool = False

    def string(self, value: str) -> str:
        if value not in self.strings:
            self.strings.append(value)
        return f"ps{self.strings.index(value)}"

    def array(self, dtype: str, values: list[Any]) -> str:
        """Sorted distinct values for a binary search; NaN is left out, as it equals nothing."""
        self.arrays.append((dtype, sorted({v for v in values if v == v})))
        return f"pa{len(self.arrays) - 1}"

    def string_set(self, values: list[str]) -> str:
        """Strings whose codes the runtime resolves and sorts into one array (``isin`` of many strings)."""
        self.string_sets.append(tuple(dict.fromkeys(values)))
        return f"pc{len(self.string_sets) - 1}"

    def lookup(self, func: str, args: tuple[Any, ...], depth: int = 1) -> int:
        """Index of a lookup table (values ``plv{i}``, validity ``plm{i}``) for a string function applied to
        the results of ``depth - 1`` others, one after the other."""
        if (func, args) not in self.lookups:
            self.lookups.append((func, args))
        self.lookup_depth = max(self.lookup_depth, depth)
        return self.lookups.index((func, args))

    def format(self, fmt: str) -> int:
        """Index of the table (units ``pfk{i}``, codes ``pfc{i}``) of a strftime format's strings,
        which the runtime fills as kernels ask (``NEEDS_STRING``)."""
        if fmt not in self.formats:
            self.formats.append(fmt)
        return self.formats.index(fmt)

    def pair(self, spec: tuple[Any, ...]) -> int:
        """Index of the table (codes ``pqa{i}``, ``pqb{i}``, result ``pqc{i}``) of the strings ``spec`` makes
        of a pair of codes, which the runtime fills as kernels ask (``NEEDS_PAIR``)."""
        if spec not in self.pairs:
            self.pairs.append(spec)
        return self.pairs.index(spec)

    def names(self) -> list[str]:
        return ([f"ps{i}" for i in range(len(self.strings))] + [f"pa{i}" for i in range(len(self.arrays))]
                + [f"pc{i}" for i in range(len(self.string_sets))]
                + [name for i in range(len(self.lookups)) for name in (f"plv{i}", f"plm{i}")]
                + [name for i in range(len(self.formats)) for name in (f"pfk{i}", f"pfc{i}")]
                + [name for i in range(len(self.pairs)) for name in (f"pqa{i}", f"pqb{i}", f"pqc{i}")]
                + (["ptm"] if self.scouting else []))

    def keyed_by_codes(self, site: int) -> bool:
        """Whether pair table ``site`` is keyed by string codes (a concatenation's, a function's), not by a
        number (a text table's: the value, a float's bits)."""
        return bool(self.pairs[site][0] != "text")


def _call_depth(e: ex.ExprNode) -> int:
    """The most string functions ``e`` applies one to the result of another."""
    inner = max((_call_depth(c) for c in ex.children(e)), default=0)
    return inner + 1 if isinstance(e, ex.StringCall) else inner


def _can_fail(e: ex.ExprNode, schema: Schema) -> bool:
    """Whether ``e`` holds a string's CAST that fails the query on text that does not parse."""
    if isinstance(e, ex.Cast) and not e.safe and e.dtype is not DType.STRING \
            and ex.type_of(e.operand, schema).dtype is DType.STRING:
        return True
    return any(_can_fail(c, schema) for c in ex.children(e))


def _text_literal(e: ex.ExprNode) -> bool:
    return isinstance(e, ex.Literal) and isinstance(e.value, str)


def _and(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return f"({a} & {b})"


# (status, table index, locals holding the missing key: a time unit, or two codes): emits a stop
MissHandler = Callable[[int, int, tuple[str, ...]], None]


class ExprEmitter:
    """``on_miss`` emits what a kernel does when a formatted timestamp's string has no code yet:
    hand the row back to the runtime, which formats it and calls the kernel again from that row."""

    def __init__(self, src: SourceBuilder, params: Params, on_miss: MissHandler | None = None) -> None:
        self.src, self.params, self.on_miss = src, params, on_miss
        self.guard: str | None = None  # where the code being emitted counts (``_guarded``); None: every row
        self.compares_text = False  # the code orders two strings by their bytes: the kernel takes ``TEXT_ARRAYS``

    def emit(self, e: ex.ExprNode, env: Env, schema: Schema) -> Value:
        """Code computing ``e`` for the current row, assigned to fresh locals."""
        t = ex.type_of(e, schema)
        val, ok = self._emit(e, env, schema, t.dtype)
        if isinstance(e, (ex.Column, ex.Literal)):
            return val, ok
        name = self.src.fresh()
        self.src.line(f"{name} = {val}")
        if ok is not None and ok not in ("True", "False"):
            self.src.line(f"{name}_ok = {ok}")
            ok = f"{name}_ok"
        return name, ok

    def _emit(self, e: ex.ExprNode, env: Env, schema: Schema, dtype: DType | None) -> Value:
        if isinstance(e, ex.Column):
            return env[e.name]
        if isinstance(e, ex.Literal):
            return self._literal(e, dtype)
        if isinstance(e, ex.Binary):
            return self._binary(e, env, schema)
        if isinstance(e, ex.Unary):
            v, ok = self.emit(e.operand, env, schema)
            if e.op == "is_null":
                return ("False" if ok is None else f"(not {ok})"), None
            if e.op == "is_not_null":
                return ("True" if ok is None else ok), None
            code = {"neg": f"(-{v})", "abs": f"abs({v})", "not": f"(not {v})"}[e.op]
            return code, ok
        if isinstance(e, ex.IsIn):
            return self._isin(e, env, schema)
        if isinstance(e, ex.Cast):
            return self._cast(e, env, schema)
        if isinstance(e, ex.Case):
            return self._case(e, env, schema, dtype)
        if isinstance(e, ex.DatePart):
            v, ok = self.emit(e.operand, env, schema)
            return f"dt_{e.part}({v})", ok
        if isinstance(e, ex.TimeFloor):  # the unit is one of ex.FLOOR_UNITS (checked when the node was built)
            v, ok = self.emit(e.operand, env, schema)
            if e.unit in ex.FIXED_UNITS_MS:
                return f"dt_floor_length({v}, {number(ex.FIXED_UNITS_MS[e.unit])})", ok
            return f"dt_floor_{e.unit}({v})", ok
        if isinstance(e, ex.MathCall):
            return self._math(e, env, schema)
        if isinstance(e, ex.StringCall) and expands(e.func, e.args):
            return self._expanding(e, env, schema)
        if isinstance(e, ex.StringCall):
            v, ok = self.emit(e.operand, env, schema)
            i = self.params.lookup(e.func, e.args, _call_depth(e))
            nullable = FUNCTIONS[e.func].gives_null(e.args)
            return f"plv{i}[{v}]", (_and(ok, f"plm{i}[{v}]") if nullable else ok)
        if isinstance(e, ex.Strftime):
            return self._strftime(e, env, schema)
        if isinstance(e, ex.Concat):
            return self._concat(e, env, schema)
        raise UnsupportedError(f"the compiled engine cannot evaluate {e}")

    def _math(self, e: ex.MathCall, env: Env, schema: Schema) -> Value:
        """A numeric function of ``darwin.codegen.functions`` (``math_<name>``, the func checked when the node was
        built): FLOOR, CEIL, ROUND and SIGN have one for each argument type, and FLOOR and CEIL of an integer
        are the integer."""
        values = [self.emit(a, env, schema) for a in e.args]
        ok = None
        for _, valid in values:
            ok = _and(ok, valid)
        if e.func in ("floor", "ceil", "sign", "round", "truncate"):
            if ex.type_of(e.args[0], schema).dtype is DType.INT64:
                if e.func in ("floor", "ceil"):
                    return values[0][0], ok
                return f"math_{e.func}_int({', '.join(v for v, _ in values)})", ok
            return f"math_{e.func}_float({', '.join(v for v, _ in values)})", ok
        return f"math_{e.func}({', '.join(v for v, _ in values)})", ok

    def _strftime(self, e: ex.Strftime, env: Env, schema: Schema) -> Value:
        """The code of the string of the value's time unit, from the format's table (``pfk``/``pfc``)
        through a one-entry cache (``pfl``/``pfv``: rows of one unit follow each other)."""
        if self.on_miss is None:
            raise UnsupportedError(f"the compiled engine cannot evaluate {e} here")
        v, ok = self.emit(e.operand, env, schema)
        i = self.params.format(e.format)
        b = self.src
        unit = b.fresh("unit")
        b.line(f"{unit} = {v} // {number(unit_ms(e.format))}")
        with b.block(f"if {unit} != pfl{i}:"):
            b.line(f"pfv{i} = format_code(pfk{i}, pfc{i}, {unit})")
            b.line(f"pfl{i} = {unit}")
        with b.block(f"if pfv{i} < 0" + ("" if ok is None else f" and {ok}") + ":"):
            self.on_miss(NEEDS_STRING, i, (unit,))
        return f"pfv{i}", ok

    def _concat(self, e: ex.Concat, env: Env, schema: Schema) -> Value:
        """The code of the parts joined, pair by pair from the left, through the tables of strings joined
        (``pqa``/``pqb``/``pqc``): each distinct pair is joined and interned once, by the runtime, when a
        kernel first meets it. CONCAT_WS leaves NULL parts out and gives '' where all are NULL."""
        if self.on_miss is None:
            raise UnsupportedError(f"the compiled engine cannot evaluate {e} here")
        b = self.src
        acc, acc_ok = b.fresh("cat"), b.fresh("cat_ok")
        first, first_ok = self.emit(e.parts[0], env, schema)
        b.line(f"{acc} = {first}")
        b.line(f"{acc_ok} = {first_ok or 'True'}")
        i = self.params.pair(("join", "" if e.separator is None else e.separator))
        for part in e.parts[1:]:
            v, ok = self.emit(part, env, schema)
            if e.separator is None:  # a NULL part makes the result NULL: no pair to look up after it
                b.line(f"{acc_ok} = {acc_ok} and {ok or 'True'}")
                with b.block(f"if {acc_ok}:"):
                    self._pair(i, acc, v)
                continue
            with b.block(f"if {ok or 'True'}:"):
                with b.block(f"if {acc_ok}:"):
                    self._pair(i, acc, v)
                with b.block("else:"):
                    b.line(f"{acc} = {v}")
                    b.line(f"{acc_ok} = True")
        if e.separator is None:
            return acc, acc_ok
        with b.block(f"if not {acc_ok}:"):  # every part NULL: ''
            b.line(f"{acc} = {self.params.string('')}")
        return acc, None

    def _expanding(self, e: ex.StringCall, env: Env, schema: Schema) -> Value:
        """A string function that may lengthen strings without end: computed for each value a kernel meets
        (a table of pairs whose second code is 0), not for every string of the pool (``LookupTable``)."""
        if self.on_miss is None:
            raise UnsupportedError(f"the compiled engine cannot evaluate {e} here")
        v, ok = self.emit(e.operand, env, schema)
        i = self.params.pair(("call", e.func, e.args))
        b = self.src
        made = b.fresh("made")
        b.line(f"{made} = pair_code(pqa{i}, pqb{i}, pqc{i}, {v}, np.int64(0))")
        with b.block(f"if {made} < 0" + ("" if ok is None else f" and {ok}") + ":"):
            self.on_miss(NEEDS_PAIR, i, (v, "np.int64(0)"))
        return made, ok

    def _pair(self, i: int, acc: str, v: str) -> None:
        assert self.on_miss is not None
        b = self.src
        joined = b.fresh("pair")
        b.line(f"{joined} = pair_code(pqa{i}, pqb{i}, pqc{i}, {acc}, {v})")
        with b.block(f"if {joined} < 0:"):
            self.on_miss(NEEDS_PAIR, i, (acc, v))
        b.line(f"{acc} = {joined}")

    def _literal(self, e: ex.Literal, dtype: DType | None) -> Value:
        if e.value is None:
            return _ZERO.get(dtype, "np.int64(0)"), "False"
        if e.dtype is DType.STRING:
            return self.params.string(e.value), None
        if e.dtype is DType.FLOAT64 or dtype is DType.FLOAT64:
            return number(float(e.value)), None
        return number(e.value), None

    def _binary(self, e: ex.Binary, env: Env, schema: Schema) -> Value:
        if e.op in _FLIPPED and DType.STRING in (ex.type_of(e.left, schema).dtype, ex.type_of(e.right, schema).dtype):
            return self._text_order(e, env, schema)
        lv, lok = self.emit(e.left, env, schema)
        if e.op in ("and", "or") and _can_fail(e.right, schema):  # the right side counts where the left does not decide
            deciding = f"not {lv}" if e.op == "and" else lv
            with self._guarded(f"not ({deciding})" if lok is None else f"not ({lok} and {deciding})"):
                rv, rok = self.emit(e.right, env, schema)
        else:
            rv, rok = self.emit(e.right, env, schema)
        ok = _and(lok, rok)
        if e.op == "and":
            if lok is None and rok is None:
                return f"({lv} & {rv})", None
            val = f"({lok or 'True'} & {lv} & {rok or 'True'} & {rv})"
            false_l = f"({lok} & (not {lv}))" if lok else f"(not {lv})"
            false_r = f"({rok} & (not {rv}))" if rok else f"(not {rv})"
            return val, f"({val} | {false_l} | {false_r})"
        if e.op == "or":
            if lok is None and rok is None:
                return f"({lv} | {rv})", None
            val = f"(({lok or 'True'} & {lv}) | ({rok or 'True'} & {rv}))"
            return val, f"({val} | {_and(lok, rok)})"
        lt = ex.type_of(e.left, schema).dtype
        rt = ex.type_of(e.right, schema).dtype
        floats = DType.FLOAT64 in (lt, rt)
        if floats or e.op == "truediv":
            lv, rv = f"np.float64({lv})", f"np.float64({rv})"
        if e.op in _CMP:
            return f"({lv} {_CMP[e.op]} {rv})", ok
        if e.op in _ARITH:  # integers wrap, computed so LLVM cannot assume otherwise (``add_int``)
            return (f"({lv} {_ARITH[e.op]} {rv})" if floats else f"{e.op}_int({lv}, {rv})"), ok
        nonzero = f"({rv} != 0)"
        ok = _and(ok, nonzero)
        if e.op == "truediv":
            return f"(({lv} / {rv}) if {rv} != 0.0 else 0.0)", ok
        if floats:
            sym = "//" if e.op == "floordiv" else "%"
            return f"(({lv} {sym} {rv}) if {rv} != 0.0 else 0.0)", ok
        fn = "floordiv_int" if e.op == "floordiv" else "mod_int"
        return f"{fn}({lv}, {rv})", ok

    def _text_order(self, e: ex.Binary, env: Env, schema: Schema) -> Value:
        """Two strings compared by order, as Flink's ``BinaryStringData.compareTo`` (UTF-8 bytes, unsigned). Codes
        are in arrival order, not in text order: against a literal, the comparison is a string function of the
        value (``text_lt``, ... of ``darwin.plan.strings``), once per distinct value into a lookup table;
        between two values, the kernel compares their bytes in the pool (``text_less``)."""
        left, op, right = e.left, e.op, e.right
        if _text_literal(left):
            left, op, right = right, _FLIPPED[op], left
        if _text_literal(right):
            assert isinstance(right, ex.Literal)
            v, ok = self.emit(left, env, schema)
            i = self.params.lookup(f"text_{op}", (right.value,), _call_depth(left) + 1)
            return f"plv{i}[{v}]", ok
        lv, lok = self.emit(left, env, schema)
        rv, rok = self.emit(right, env, schema)
        ok = _and(lok, rok)
        self.compares_text = True
        smaller, larger = (lv, rv) if op in ("lt", "ge") else (rv, lv)
        less = f"text_less({smaller}, {larger}, {', '.join(TEXT_ARRAYS)})"
        test = less if op in ("lt", "gt") else f"(not {less})"
        return (test if ok is None else f"({test} if {ok} else False)"), ok  # a NULL's code may be no string's

    def _isin(self, e: ex.IsIn, env: Env, schema: Schema) -> Value:
        v, ok = self.emit(e.operand, env, schema)
        operand_type = ex.type_of(e.operand, schema).dtype
        values = [lit for lit in e.values if lit.value is not None]
        has_null = len(values) < len(e.values)
        as_float = operand_type is DType.FLOAT64 or any(lit.dtype is DType.FLOAT64 for lit in values)
        if operand_type is DType.STRING and len(values) > ISIN_INLINE_LIMIT:
            tests = [f"sorted_contains({self.params.string_set([lit.value for lit in values])}, {v})"]
        elif operand_type is DType.STRING:
            tests = [f"({v} == {self.params.string(lit.value)})" for lit in values]
        elif len(values) > ISIN_INLINE_LIMIT:
            kind = "float64" if as_float else ("bool" if operand_type is DType.BOOL else "int64")
            arr = self.params.array(kind, [float(x.value) if as_float else x.value for x in values])
            tests = [f"sorted_contains({arr}, {v})"]
        else:
            conv = (lambda x: number(float(x))) if as_float else number
            tests = [f"({v} == {conv(lit.value)})" for lit in values]
        found = "(" + " | ".join(tests) + ")" if tests else "False"
        if has_null:  # x IN (..., NULL) is NULL when nothing matched
            ok = _and(ok, found)
        return found, ok

    def _cast(self, e: ex.Cast, env: Env, schema: Schema) -> Value:
        v, ok = self.emit(e.operand, env, schema)
        src = ex.type_of(e.operand, schema).dtype
        dst = e.dtype
        if src is DType.STRING and dst is not DType.STRING:
            return self._parsed(e, v, ok)
        if dst is DType.STRING and src not in (DType.STRING, None):
            return self._text(src, v, ok)
        if src == dst or {src, dst} <= {DType.INT64, DType.TIMESTAMP} or src is None:
            return v, ok
        if dst is DType.FLOAT64:
            return f"np.float64({v})", ok
        if dst is DType.BOOL:
            return f"({v} != 0)", ok
        if src is DType.FLOAT64:  # to int64 / timestamp
            return f"float_to_int({v})", _and(ok, f"float_to_int_ok({v})")
        return f"np.int64({v})", ok

    def _parsed(self, e: ex.Cast, v: str, ok: str | None) -> Value:
        """A string's CAST: the value of its code in the lookup table of its parse (``plv``/``plm``). Text that
        does not parse is NULL for TRY_CAST; for CAST a row that reaches it stops the kernel (``CAST_FAILED``),
        and the runtime fails the query naming the text."""
        args = (e.bits,) if e.dtype is DType.INT64 else ()
        i = self.params.lookup(PARSERS[e.dtype], args, _call_depth(e.operand) + 1)
        if e.safe:
            return f"plv{i}[{v}]", _and(ok, f"plm{i}[{v}]")
        if self.on_miss is None:
            raise UnsupportedError(f"the compiled engine cannot evaluate {e} here")
        reached = " and ".join(c for c in (self.guard, ok) if c is not None)
        with self.src.block(f"if {reached + ' and ' if reached else ''}not plm{i}[{v}]:"):
            self.on_miss(CAST_FAILED, i, (v,))
        return f"plv{i}[{v}]", ok

    def _text(self, src: DType, v: str, ok: str | None) -> Value:
        """A value cast to a string: TRUE or FALSE, or the code of a number's or a timestamp's text, from a table
        of the values kernels met (``pqa``/``pqc``, a float by its bits), which the runtime fills on a miss
        (``NEEDS_PAIR``): each distinct value's text is made once per run (``darwin.plan.casts.to_text``)."""
        if src is DType.BOOL:
            return f"({self.params.string('TRUE')} if {v} else {self.params.string('FALSE')})", ok
        if self.on_miss is None:
            raise UnsupportedError(f"the compiled engine cannot cast {src.value} to string here")
        b = self.src
        key = b.fresh("key")
        b.line(f"{key} = {f'float_bits({v})' if src is DType.FLOAT64 else f'np.int64({v})'}")
        i = self.params.pair(("text", src.value))
        made = b.fresh("text")
        b.line(f"{made} = pair_code(pqa{i}, pqb{i}, pqc{i}, {key}, np.int64(0))")
        with b.block(f"if {made} < 0" + ("" if ok is None else f" and {ok}") + ":"):
            self.on_miss(NEEDS_PAIR, i, (key, "np.int64(0)"))
        return made, ok

    @contextmanager
    def _guarded(self, condition: str) -> Iterator[None]:
        """Code emitted inside runs for every row but counts only where ``condition`` holds: a failing CAST
        there fails the query only then (a CASE arm not taken, the right side of an AND whose left is false)."""
        saved = self.guard
        self.guard = condition if saved is None else f"({saved} and {condition})"
        try:
            yield
        finally:
            self.guard = saved

    def _case(self, e: ex.Case, env: Env, schema: Schema, dtype: DType | None) -> Value:
        if _can_fail(e, schema):
            return self._guarded_case(e, env, schema, dtype)
        arms = []
        for cond, value in e.whens:
            c, cok = self.emit(cond, env, schema)
            v, vok = self.emit(value, env, schema)
            arms.append((c if cok is None else f"({cok} & {c})", *self._unified(v, vok, value, schema, dtype)))
        val, ok = self._unified(*self.emit(e.otherwise, env, schema), e.otherwise, schema, dtype)
        return self._arms(arms, val, ok)

    def _guarded_case(self, e: ex.Case, env: Env, schema: Schema, dtype: DType | None) -> Value:
        """A CASE holding a CAST that may fail: each condition counts only where no arm before it was taken,
        each value only where its arm is, as Flink evaluates them."""
        b = self.src
        arms = []
        open_ = b.fresh("open")  # no arm taken yet
        b.line(f"{open_} = True")
        for cond, value in e.whens:
            with self._guarded(open_):
                c, cok = self.emit(cond, env, schema)
            taken = b.fresh("taken")
            b.line(f"{taken} = {open_} and {c if cok is None else f'({cok} & {c})'}")
            with self._guarded(taken):
                v, vok = self.emit(value, env, schema)
            b.line(f"{open_} = {open_} and not {taken}")
            arms.append((c if cok is None else f"({cok} & {c})", *self._unified(v, vok, value, schema, dtype)))
        with self._guarded(open_):
            val, ok = self._unified(*self.emit(e.otherwise, env, schema), e.otherwise, schema, dtype)
        return self._arms(arms, val, ok)

    @staticmethod
    def _arms(arms: list[tuple[str, str, str | None]], val: str, ok: str | None) -> Value:
        nullable = ok is not None or any(vok is not None for _, _, vok in arms)
        ok = ok or "True"
        for c, v, vok in reversed(arms):
            val = f"({v} if {c} else {val})"
            ok = f"({vok or 'True'} if {c} else {ok})"
        return val, (ok if nullable else None)

    @staticmethod
    def _unified(v: str, ok: str | None, e: ex.ExprNode, schema: Schema, dtype: DType | None) -> Value:
        if dtype is DType.FLOAT64 and ex.type_of(e, schema).dtype is not DType.FLOAT64:
            return f"np.float64({v})", ok
        return v, ok
