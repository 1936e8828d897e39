"""Darwin's column types and schemas, and their mapping to Arrow and numpy."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from darwin.errors import PlanError, SchemaError


class DType(enum.Enum):
    INT64 = "int64"
    FLOAT64 = "float64"
    BOOL = "bool"
    TIMESTAMP = "timestamp"  # int64 milliseconds of event time, UTC
    STRING = "string"  # dictionary codes (int64) inside compiled code

    def __repr__(self) -> str:
        return self.value

    @property
    def is_numeric(self) -> bool:
        return self in (DType.INT64, DType.FLOAT64)

    @property
    def numpy(self) -> np.dtype:
        """The dtype of this column's values inside compiled code."""
        return np.dtype(np.float64 if self is DType.FLOAT64 else np.bool_ if self is DType.BOOL else np.int64)

    @property
    def arrow(self) -> pa.DataType:
        return _TO_ARROW[self]


_TO_ARROW = {
    DType.INT64: pa.int64(),
    DType.FLOAT64: pa.float64(),
    DType.BOOL: pa.bool_(),
    DType.TIMESTAMP: pa.timestamp("ms"),
    DType.STRING: pa.string(),
}


# The type of a column Arrow types ``null`` (every value NULL, so no type was inferred): string, as
# Spark infers such a CSV column; a column cast or a query reads it as any other string column.
NULL_COLUMN = DType.STRING


def dtype_from_arrow(t: pa.DataType, where: str) -> DType:
    """Map an Arrow type onto a Darwin type; ``where`` names the column for errors."""
    dtype = _dtype_of(t)
    if dtype is None:
        raise _unsupported(where, str(t))
    return dtype


def _dtype_of(t: pa.DataType) -> DType | None:
    if pa.types.is_null(t):  # a column of only NULLs, as pandas and Arrow type it: see NULL_COLUMN
        return NULL_COLUMN
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return DType.INT64
    if pa.types.is_floating(t):
        return DType.FLOAT64
    if pa.types.is_boolean(t):
        return DType.BOOL
    if pa.types.is_timestamp(t):
        return DType.TIMESTAMP
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return DType.STRING
    return None


def _unsupported(name: str, arrow_type: str, operation: str | None = None) -> SchemaError:
    used = "" if operation is None else f", used in {operation}"
    return SchemaError(f"column {name!r} has Arrow type {arrow_type}, which Darwin does not support "
                       f"(supported: integers, floats, bool, timestamp, string){used}")


@dataclass(frozen=True)
class Field:
    name: str
    dtype: DType
    nullable: bool = True


@dataclass(frozen=True)
class Schema:
    """An ordered set of uniquely named fields."""

    fields: tuple[Field, ...]
    # (name, Arrow type) of source columns of unsupported types, set aside: an error only once read.
    # Derived schemas carry them, so any operation reading one names its type, not "unknown column".
    unsupported: tuple[tuple[str, str], ...] = dataclasses.field(default=(), compare=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for f in self.fields:
            if f.name in seen:
                raise PlanError(f"duplicate column name {f.name!r} in schema {self.names}")
            seen.add(f.name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def __contains__(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def field(self, name: str, operation: str = "query") -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        self.refuse_unsupported(name, operation)
        raise PlanError(f"unknown column {name!r} in {operation}; available columns: {list(self.names)}")

    def refuse_unsupported(self, name: str, operation: str) -> None:
        """Raise if ``name`` is a column set aside for its type, naming the type, not "unknown column"."""
        for n, arrow_type in self.unsupported:
            if n == name:
                raise _unsupported(name, arrow_type, operation)

    def select(self, names: tuple[str, ...]) -> Schema:
        return Schema(tuple(self.field(n) for n in names), self.unsupported)

    def to_arrow(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype.arrow, nullable=f.nullable) for f in self.fields])

    @staticmethod
    def from_arrow(schema: pa.Schema, non_null: frozenset[str] = frozenset()) -> Schema:
        """Darwin schema of an Arrow schema; ``non_null`` lists columns known to hold no nulls.

        Columns of unsupported types are set aside, not refused: a source may hold them (Spark, too,
        reads only what a query needs), and only a query that reads one fails, naming it.
        """
        dtypes = [(f, _dtype_of(f.type)) for f in schema]
        return Schema(tuple(Field(f.name, dtype, f.nullable and f.name not in non_null)
                            for f, dtype in dtypes if dtype is not None),
                      tuple((f.name, str(f.type)) for f, dtype in dtypes if dtype is None))

    def __str__(self) -> str:
        return ", ".join(f"{f.name}: {f.dtype.value}{'' if f.nullable else ' not null'}" for f in self.fields)
