"""String functions. They run once per distinct string (DESIGN §2), never per row:
compiled kernels read their results from lookup tables indexed by dictionary code.

Each function is plain Python over one value, shared by the reference
interpreter and the lookup-table builder, so both engines agree by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from darwin.errors import DarwinTypeError
from darwin.types import DType


@dataclass(frozen=True)
class StringFunction:
    result: DType
    always_nullable: bool  # may give NULL for a non-NULL input
    arg_types: tuple[type, ...]
    impl: Callable[..., Any]


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _regexp_extract(s: str, pattern: str, group: int) -> str | None:
    """The ``group`` of the first match; NULL without a match and for a group the pattern does not
    have, a negative one too (Flink's REGEXP_EXTRACT: Java's ``group(-1)`` throws, and Flink gives NULL)."""
    m = _regex(pattern).search(s)
    if m is None or not 0 <= group <= m.re.groups:
        return None
    return m.group(group)


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


FUNCTIONS: dict[str, StringFunction] = {
    "lower": StringFunction(DType.STRING, False, (), str.lower),
    "upper": StringFunction(DType.STRING, False, (), str.upper),
    "length": StringFunction(DType.INT64, False, (), len),
    "count_char": StringFunction(DType.INT64, False, (str,), lambda s, c: s.count(c)),
    "contains": StringFunction(DType.BOOL, False, (str,), lambda s, sub: sub in s),
    "starts_with": StringFunction(DType.BOOL, False, (str,), str.startswith),
    "regexp_extract": StringFunction(DType.STRING, True, (str, int), _regexp_extract),
    "split_index": StringFunction(DType.STRING, True, (str, int), _split_index),
    "map": StringFunction(DType.STRING, True, (tuple,), _map),
}


def _arrow(name: str, args: tuple[Any, ...], arr: Any) -> Any:
    import pyarrow.compute as pc

    if name == "count_char":
        return pc.count_substring(arr, pattern=args[0])
    if name == "length":
        return pc.utf8_length(arr)
    if name == "contains":
        return pc.match_substring(arr, pattern=args[0])
    return pc.starts_with(arr, pattern=args[0])


VECTORIZED = frozenset({"count_char", "length", "contains", "starts_with"})


def apply_arrow(name: str, args: tuple[Any, ...], arr: Any) -> Any:
    """A function of ``VECTORIZED`` over a whole Arrow string array, with the same results as ``apply``
    (used where values are mostly distinct, so once-per-value would mean once per row in Python)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        return _arrow(name, args, arr.dictionary).take(arr.indices)
    return _arrow(name, args, arr)


def check_args(name: str, args: tuple[Any, ...]) -> None:
    fn = FUNCTIONS[name]
    if len(args) != len(fn.arg_types) or not all(
            isinstance(a, t) and not isinstance(a, bool) for a, t in zip(args, fn.arg_types)):
        want = ", ".join(t.__name__ for t in fn.arg_types) or "no arguments"
        raise DarwinTypeError(f"str.{name}() takes ({want}), got {args!r}")
    if name == "regexp_extract":
        try:
            _regex(args[0])
        except re.error as e:
            raise DarwinTypeError(f"str.regexp_extract(): invalid pattern {args[0]!r}: {e}") from None
    if name == "map" and not all(isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                 for p in args[0]):
        raise DarwinTypeError("str.map() takes a dict from strings to strings")
    if name == "split_index" and not args[0]:  # Python's split refused it per row; Spark gave the whole value
        raise DarwinTypeError("str.split_index() takes a separator of at least one character, got ''")
    if name == "count_char" and len(args[0]) != 1:
        raise DarwinTypeError(f"str.count_char() counts one character, got {args[0]!r}")


def apply(name: str, args: tuple[Any, ...], value: str | None) -> Any:
    return None if value is None else FUNCTIONS[name].impl(value, *args)
