"""Darwin's column types and schemas, and their mapping to Arrow and numpy."""

from __future__ import annotations

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


def dtype_from_arrow(t: pa.DataType, where: str) -> DType:
    """Map an Arrow type onto a Darwin type; ``where`` names the column for errors."""
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
    raise SchemaError(f"column {where!r} has Arrow type {t}, which Darwin does not support "
                      "(supported: integers, floats, bool, timestamp, string)")


@dataclass(frozen=True)
class Field:
    name: str
    dtype: DType
    nullable: bool = True


@dataclass(frozen=True)
class Schema:
    """An ordered set of uniquely named fields."""

    fields: tuple[Field, ...]

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
        raise PlanError(f"unknown column {name!r} in {operation}; available columns: {list(self.names)}")

    def select(self, names: tuple[str, ...]) -> Schema:
        return Schema(tuple(self.field(n) for n in names))

    def to_arrow(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype.arrow, nullable=f.nullable) for f in self.fields])

    @staticmethod
    def from_arrow(schema: pa.Schema, non_null: frozenset[str] = frozenset()) -> Schema:
        """Darwin schema of an Arrow schema; ``non_null`` lists columns known to hold no nulls."""
        return Schema(tuple(
            Field(f.name, dtype_from_arrow(f.type, f.name), f.nullable and f.name not in non_null)
            for f in schema))

    def __str__(self) -> str:
        return ", ".join(f"{f.name}: {f.dtype.value}{'' if f.nullable else ' not null'}" for f in self.fields)
