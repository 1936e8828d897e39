"""A kernel's signature: what generated code expects the runtime to pass after ``(start, n)``.

The code generator produces it and the runtime binds it argument by argument, matching on
the argument's type, so the two sides cannot drift apart by convention: an argument kind
the runtime cannot bind is an error naming it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Buffer(enum.Enum):
    """The row buffers a kernel reads or writes."""

    INPUT = "in"  # the batch being processed
    OUTPUT = "out"  # rows the pipeline emits
    LATE = "late"  # late rows, when the query keeps them


class Part(enum.Enum):
    VALUES = "values"
    VALID = "valid"  # a column's validity mask (only nullable columns have one)


@dataclass(frozen=True)
class ColumnArg:
    """One part of one column of a buffer."""

    buffer: Buffer
    column: str
    part: Part


@dataclass(frozen=True)
class ParamArg:
    """A constant the runtime prepares once (interned strings, sorted value sets, lookup tables)."""

    name: str


@dataclass(frozen=True)
class ControlArg:
    """The ``ctl`` array of scalars kernels and runtime share (``darwin.codegen.layout``)."""


@dataclass(frozen=True)
class StateArg:
    """An array of the pipeline's operator state, by the name the state gives it."""

    name: str


@dataclass(frozen=True)
class LookupArg:
    """An array of a lookup join's static index: ``part`` of lookup table ``lookup``
    (``slot_key{j}``, ``slot_start``, ``slot_count``, ``column:<name>``, ``valid:<name>``)."""

    lookup: int
    part: str


@dataclass(frozen=True)
class TextArg:
    """One of the string pool's arrays that order codes by their text (``TEXT_ARRAYS``: ``part`` 0
    the codes' addresses, 1 their ends, 2 the chunks' bases), as the pool holds them when called."""

    part: int


@dataclass(frozen=True)
class SelectionArg:
    """The rows of the batch this worker runs (a keyed-parallel kernel walks ``sel[start:n]``)."""


KernelArg = ColumnArg | ParamArg | ControlArg | StateArg | LookupArg | SelectionArg | TextArg


@dataclass(frozen=True)
class KernelSignature:
    """The kernel's parameters after ``(start, n)``: generated names and what each one is."""

    names: tuple[str, ...]
    args: tuple[KernelArg, ...]
