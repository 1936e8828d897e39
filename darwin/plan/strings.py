"""String functions. They run once per distinct string (DESIGN §2), never per row:
compiled kernels read their results from lookup tables indexed by dictionary code.

Each function is plain Python over one value, shared by the reference
interpreter and the lookup-table builder, so both engines agree by construction.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from darwin.errors import DarwinTypeError
from darwin.plan import javatime
from darwin.plan.casts import parse_bool, parse_float, parse_integer, parse_timestamp
from darwin.plan.javaregex import UnsupportedRegex, java_regex
from darwin.plan.similar import similar_regex
from darwin.types import DType

JAVA_INT_MAX = 2**31 - 1  # Flink's lengths and positions are INT


@dataclass(frozen=True)
class StringFunction:
    result: DType
    # may give NULL for a non-NULL input: always, never, or for the arguments a predicate holds for
    may_give_null: bool | Callable[..., bool]
    arg_types: tuple[type | tuple[type, ...], ...]
    impl: Callable[..., Any]

    def gives_null(self, args: tuple[Any, ...]) -> bool:
        """Whether the function may give NULL for a non-NULL value with these arguments."""
        if callable(self.may_give_null):
            return bool(self.may_give_null(*args))
        return self.may_give_null


def _regexp_extract(s: str, pattern: str, group: int) -> str | None:
    """The ``group`` of the first match; NULL without a match and for a group the pattern does not
    have, a negative one too (Flink's REGEXP_EXTRACT: Java's ``group(-1)`` throws, and Flink gives NULL)."""
    m = java_regex(pattern).search(s)
    if m is None or not 0 <= group <= m.re.groups:
        return None
    return m.group(group)


def _regexp_replace(s: str, pattern: str, replacement: str) -> str:
    """Flink's REGEXP_REPLACE: every match of ``pattern`` replaced by ``replacement`` as it is written (Flink quotes
    it with Java's ``Matcher.quoteReplacement``, so ``$1`` and a backslash are plain characters, not group
    references). The matches are Java's ``replaceAll``'s: after an empty match the next search starts a character
    on (``Matcher.find``), where Python's ``sub`` would take a longer match at the same place ('|b' of 'abc')."""
    regex = java_regex(pattern)
    out: list[str] = []
    copied = at = 0
    while at <= len(s) and (m := regex.search(s, at)) is not None:
        out += (s[copied:m.start()], replacement)
        copied = m.end()
        at = m.end() + (m.start() == m.end())
    out.append(s[copied:])
    return "".join(out)


def _regexp(s: str, pattern: str) -> bool:
    """Flink's REGEXP: whether ``pattern`` matches anywhere in ``s``; the empty pattern matches nothing."""
    return bool(pattern) and java_regex(pattern).search(s) is not None


def _split_index(s: str, sep: str, index: int) -> str | None:
    """Flink's SPLIT_INDEX: the ``index``-th piece of ``s`` split at every ``sep``, empty pieces kept; NULL
    past the last piece, for a negative index, and for an empty ``s``, which has no pieces (Flink splits
    with commons-lang's splitByWholeSeparatorPreserveAllTokens, which gives none for '')."""
    if not s:
        return None
    parts = s.split(sep)
    return parts[index] if 0 <= index < len(parts) else None


def _map(s: str, pairs: tuple[tuple[str, str], ...]) -> str | None:
    return _mapping(pairs).get(s)


@lru_cache(maxsize=64)
def _mapping(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return dict(pairs)


def _substring(s: str, start: int, length: int | None) -> str | None:
    """Flink's SUBSTRING (BinaryStringDataUtil.substringSQL), over code points: ``start`` from 1, 0 is 1 too, a
    negative one counts from the end (past the start: ''); ``length`` None runs to the end, past it stops
    there, and a negative one gives NULL."""
    if length is not None and length < 0:
        return None
    first = start - 1 if start > 0 else len(s) + start if start < 0 else 0
    if first < 0 or first >= len(s):
        return ""
    return s[first:] if length is None else s[first:first + length]


def _pad(s: str, length: int, pad: str, left: bool) -> str | None:
    """Flink's LPAD/RPAD: ``s`` padded with ``pad`` repeated (its last copy cut) to ``length`` code points,
    or cut to its first ``length``; NULL for a negative ``length`` and for an empty ``pad``."""
    if length < 0 or not pad:
        return None
    if len(s) >= length:
        return s[:length]
    fill = (pad * ((length - len(s)) // len(pad) + 1))[:length - len(s)]
    return fill + s if left else s + fill


def _locate(s: str, sub: str, start: int) -> int:
    """Flink's LOCATE/POSITION: the 1-based position of ``sub`` in ``s`` from position ``start`` (below 1: from
    the first), 0 if it is not there; the empty ``sub`` is at 1, whatever ``start`` is."""
    if not sub:
        return 1
    return s.find(sub, max(start - 1, 0)) + 1


def _is_word(c: str) -> bool:
    return "0" <= c <= "9" or "A" <= c <= "Z" or "a" <= c <= "z"


def _initcap(s: str) -> str:
    """Flink's INITCAP (Calcite's): a word is a run of ASCII letters and digits; its first letter is upper
    case and the others lower case. Any other character, a non-ASCII letter too, ends a word and is kept."""
    out = []
    starts_word = True
    for c in s:
        if _is_word(c):
            out.append(c.upper() if starts_word else c.lower())
            starts_word = False
        else:
            out.append(c)
            starts_word = True
    return "".join(out)


def like_tokens(pattern: str, escape: str) -> list[tuple[str, str]]:
    """A LIKE pattern as ('any', '%'), ('one', '_') and ('text', c) tokens; ``escape`` ('' for none) makes the
    next %, _ or escape literal, as in Flink, which refuses it before anything else and at the end."""
    tokens = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape:
            if i + 1 == len(pattern) or pattern[i + 1] not in ("%", "_", escape):
                raise DarwinTypeError(f"LIKE pattern {pattern!r}: the escape {escape!r} at position {i + 1} must "
                                      f"be followed by %, _ or {escape!r}")
            tokens.append(("text", pattern[i + 1]))
            i += 2
            continue
        tokens.append(("any", c) if c == "%" else ("one", c) if c == "_" else ("text", c))
        i += 1
    return tokens


def _tokens_regex(tokens: list[tuple[str, str]]) -> re.Pattern[str]:
    """The regular expression of a LIKE pattern's tokens: % any run, _ one code point (a line end too)."""
    body = "".join(".*" if kind == "any" else "." if kind == "one" else re.escape(c) for kind, c in tokens)
    return re.compile(body, re.DOTALL)


@lru_cache(maxsize=256)
def _like_regex(pattern: str, escape: str) -> re.Pattern[str]:
    return _tokens_regex(like_tokens(pattern, escape))


def _like(s: str, pattern: str, escape: str) -> bool:
    """SQL's LIKE, case-sensitive: % any run of code points, _ exactly one (a line end too)."""
    return _like_regex(pattern, escape).fullmatch(s) is not None


def ilike_tokens(pattern: str, escape: str) -> list[tuple[str, str]]:
    """``like_tokens`` with the text in lower case: ILIKE is LIKE of the lower-case value and pattern, as in
    Spark and PostgreSQL (the escape is read before the case changes, so an escape 'A' stays one)."""
    return [(kind, c.lower() if kind == "text" else c) for kind, c in like_tokens(pattern, escape)]


@lru_cache(maxsize=256)
def _ilike_regex(pattern: str, escape: str) -> re.Pattern[str]:
    return _tokens_regex(ilike_tokens(pattern, escape))


def _ilike(s: str, pattern: str, escape: str) -> bool:
    """ILIKE: LIKE of the value and the pattern in lower case (Python's str.lower, Java's toLowerCase)."""
    return _ilike_regex(pattern, escape).fullmatch(s.lower()) is not None


@lru_cache(maxsize=256)
def _similar_regex(pattern: str, escape: str) -> re.Pattern[str]:
    return re.compile(similar_regex(pattern, escape))


def _similar_to(s: str, pattern: str, escape: str) -> bool:
    """SQL's SIMILAR TO as Flink's: the pattern's regular expression matches the whole value."""
    return _similar_regex(pattern, escape).fullmatch(s) is not None


FUNCTIONS: dict[str, StringFunction] = {
    "lower": StringFunction(DType.STRING, False, (), str.lower),
    "upper": StringFunction(DType.STRING, False, (), str.upper),
    "length": StringFunction(DType.INT64, False, (), len),
    "count_char": StringFunction(DType.INT64, False, (str,), lambda s, c: s.count(c)),
    "contains": StringFunction(DType.BOOL, False, (str,), lambda s, sub: sub in s),
    "starts_with": StringFunction(DType.BOOL, False, (str,), str.startswith),
    "regexp_extract": StringFunction(DType.STRING, True, (str, int), _regexp_extract),
    "regexp_replace": StringFunction(DType.STRING, False, (str, str), _regexp_replace),
    "regexp": StringFunction(DType.BOOL, False, (str,), _regexp),
    "split_index": StringFunction(DType.STRING, True, (str, int), _split_index),
    # Flink's REPEAT (EncodingUtils.repeat: '' for a count below 1) and REVERSE (of code points)
    "repeat": StringFunction(DType.STRING, False, (int,), lambda s, n: s * max(n, 0)),
    "reverse": StringFunction(DType.STRING, False, (), lambda s: s[::-1]),
    "map": StringFunction(DType.STRING, True, (tuple,), _map),
    "ends_with": StringFunction(DType.BOOL, False, (str,), str.endswith),
    "substring": StringFunction(DType.STRING, lambda start, length: length is not None and length < 0,
                                (int, (int, type(None))), _substring),
    "trim": StringFunction(DType.STRING, False, (str,), str.strip),
    "ltrim": StringFunction(DType.STRING, False, (str,), str.lstrip),
    "rtrim": StringFunction(DType.STRING, False, (str,), str.rstrip),
    "replace": StringFunction(DType.STRING, False, (str, str), str.replace),
    "lpad": StringFunction(DType.STRING, lambda n, pad: n < 0 or not pad, (int, str),
                           lambda s, n, pad: _pad(s, n, pad, True)),
    "rpad": StringFunction(DType.STRING, lambda n, pad: n < 0 or not pad, (int, str),
                           lambda s, n, pad: _pad(s, n, pad, False)),
    "locate": StringFunction(DType.INT64, False, (str, int), _locate),
    "initcap": StringFunction(DType.STRING, False, (), _initcap),
    "like": StringFunction(DType.BOOL, False, (str, str), _like),
    "ilike": StringFunction(DType.BOOL, False, (str, str), _ilike),
    "similar_to": StringFunction(DType.BOOL, False, (str, str), _similar_to),
    # a string's CAST (``darwin.plan.casts``, never a str method): NULL where the text does not parse
    "parse_integer": StringFunction(DType.INT64, True, (int,), parse_integer),
    "parse_float": StringFunction(DType.FLOAT64, True, (), parse_float),
    "parse_bool": StringFunction(DType.BOOL, True, (), parse_bool),
    "parse_timestamp": StringFunction(DType.TIMESTAMP, True, (), parse_timestamp),
    # a string's order against a literal (compiled code's tables for ``s < 'x'``, never a str method): Python
    # orders str by code points, as Flink's BinaryStringData.compareTo does by UTF-8 bytes and Arrow by bytes
    "text_lt": StringFunction(DType.BOOL, False, (str,), operator.lt),
    "text_le": StringFunction(DType.BOOL, False, (str,), operator.le),
    "text_gt": StringFunction(DType.BOOL, False, (str,), operator.gt),
    "text_ge": StringFunction(DType.BOOL, False, (str,), operator.ge),
    # Flink's TO_TIMESTAMP and UNIX_TIMESTAMP with a Java pattern (``darwin.plan.javatime``)
    "to_timestamp": StringFunction(DType.TIMESTAMP, True, (str,), javatime.to_timestamp),
    "unix_timestamp": StringFunction(DType.INT64, False, (str,), javatime.unix_timestamp),
}
PARSERS = {DType.INT64: "parse_integer", DType.FLOAT64: "parse_float", DType.BOOL: "parse_bool",
           DType.TIMESTAMP: "parse_timestamp"}  # the function of a string's CAST to each type


def _arrow(name: str, args: tuple[Any, ...], arr: Any) -> Any:
    import pyarrow.compute as pc

    order = {"text_lt": pc.less, "text_le": pc.less_equal, "text_gt": pc.greater, "text_ge": pc.greater_equal}

    if name == "count_char":
        return pc.count_substring(arr, pattern=args[0])
    if name == "length":
        return pc.utf8_length(arr)
    if name == "ends_with":
        return pc.ends_with(arr, pattern=args[0])
    if name == "contains":
        return pc.match_substring(arr, pattern=args[0])
    if name in order:
        return order[name](arr, args[0])
    return pc.starts_with(arr, pattern=args[0])


VECTORIZED = frozenset({"count_char", "length", "contains", "starts_with", "ends_with", "text_lt", "text_le",
                        "text_gt", "text_ge"})


def apply_arrow(name: str, args: tuple[Any, ...], arr: Any) -> Any:
    """A function of ``VECTORIZED`` over a whole Arrow string array, with the same results as ``apply``
    (used where values are mostly distinct, so once-per-value would mean once per row in Python)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        return _arrow(name, args, arr.dictionary).take(arr.indices)
    return _arrow(name, args, arr)


def _type_names(t: type | tuple[type, ...]) -> str:
    return " or ".join("None" if x is type(None) else x.__name__ for x in (t if isinstance(t, tuple) else (t,)))


def expands(name: str, args: tuple[Any, ...]) -> bool:
    """Whether the function's results, given to it again, can grow without end (``replace('a', 'ba')``):
    such a function is computed for the values a kernel meets, not for every string of the pool, which
    would apply it to its own results batch after batch."""
    if name == "repeat":
        return bool(args[0] > 1)
    if name == "regexp_replace":  # a match may be shorter than the replacement
        return bool(args[1])
    return name == "replace" and len(args[1]) > len(args[0])


def check_args(name: str, args: tuple[Any, ...]) -> None:
    fn = FUNCTIONS[name]
    if len(args) != len(fn.arg_types) or not all(
            isinstance(a, t) and not isinstance(a, bool) for a, t in zip(args, fn.arg_types)):
        want = ", ".join(_type_names(t) for t in fn.arg_types) or "no arguments"
        raise DarwinTypeError(f"str.{name}() takes ({want}), got {args!r}")
    if name == "repeat" and args[0] > JAVA_INT_MAX:  # Flink's count is an INT
        raise DarwinTypeError(f"str.repeat(): a count of at most {JAVA_INT_MAX} (Flink's INT), got {args[0]}")
    if name in ("lpad", "rpad") and args[0] > JAVA_INT_MAX:  # a string that long would not fit in memory
        raise DarwinTypeError(f"str.{name}(): a length of at most {JAVA_INT_MAX} (Flink's INT), got {args[0]}")
    if name in ("like", "ilike", "similar_to"):
        pattern, escape = args
        what = name.upper().replace("_", " ")
        if len(escape) > 1:
            raise DarwinTypeError(f"{what}'s escape is one character, got {escape!r}")
        if name == "similar_to":
            _similar_regex(pattern, escape)
        else:
            like_tokens(pattern, escape)
    if name in ("regexp_extract", "regexp_replace", "regexp"):  # a Java pattern, as Flink's (darwin.plan.javaregex)
        try:
            java_regex(args[0])
        except UnsupportedRegex as e:
            raise DarwinTypeError(f"str.{name}(): the Java pattern {args[0]!r} is refused: {e.problem} at position "
                                  f"{e.position + 1}") from None
    if name == "map" and not all(isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                 for p in args[0]):
        raise DarwinTypeError("str.map() takes a dict from strings to strings")
    if name == "split_index" and not args[0]:  # Python's split refused it per row; Spark gave the whole value
        raise DarwinTypeError("str.split_index() takes a separator of at least one character, got ''")
    if name in ("to_timestamp", "unix_timestamp"):
        javatime.compile_pattern(args[0], name == "unix_timestamp", name.upper())
    if name == "count_char" and len(args[0]) != 1:
        raise DarwinTypeError(f"str.count_char() counts one character, got {args[0]!r}")


def apply(name: str, args: tuple[Any, ...], value: str | None) -> Any:
    return None if value is None else FUNCTIONS[name].impl(value, *args)


def apply_all(name: str, args: tuple[Any, ...], values: list[str]) -> list[Any]:
    """``apply`` over many strings (none NULL), without a Python call of its own for each."""
    impl = FUNCTIONS[name].impl
    return list(map(impl, values)) if not args else [impl(value, *args) for value in values]
