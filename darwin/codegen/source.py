"""A small builder of Python source with indentation and fresh identifiers.

Identifiers are generated (``t0``, ``a3``, ``p1``); nothing from the user's query
text is ever written into the source.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


class SourceBuilder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self._counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def fresh(self, prefix: str = "t") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def number(value: int | float | bool) -> str:
    """Source text of a numeric constant, after checking it really is one."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return f"np.int64({int(value)!r})"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "np.nan"
        if math.isinf(v):
            return "np.inf" if v > 0 else "-np.inf"
        return repr(v)
    raise TypeError(f"not a number: {value!r}")
