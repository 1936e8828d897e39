"""Column types written as text (``int64``, ``string``, ``timestamp[ms]``), as CSV and Kafka schemas
in deployment files and ``dw.read_csv(schema={...})`` give them, parsed into Arrow types.

Examples
--------
>>> arrow_type("timestamp[ms]")
TimestampType(timestamp[ms])
>>> arrow_schema({"id": "int64", "name": "string"}).names
['id', 'name']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from darwin.errors import SchemaError

TYPES: dict[str, pa.DataType] = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(), "bigint": pa.int64(),
    "int": pa.int32(), "integer": pa.int32(), "float32": pa.float32(), "float": pa.float32(),
    "float64": pa.float64(), "double": pa.float64(), "string": pa.string(), "str": pa.string(),
    "varchar": pa.string(), "utf8": pa.string(), "bool": pa.bool_(), "boolean": pa.bool_(),
    "timestamp": pa.timestamp("ms"),
}
_TIMESTAMP = re.compile(r"^timestamp\[(s|ms|us|ns)\]$")


def arrow_type(name: Any, where: str = "type") -> pa.DataType:
    """The Arrow type named ``name``; a ``SchemaError`` naming ``where`` and the known names otherwise."""
    if isinstance(name, str):
        text = name.strip().lower()
        if text in TYPES:
            return TYPES[text]
        unit = _TIMESTAMP.match(text)
        if unit:
            return pa.timestamp(unit.group(1))
    raise SchemaError(f"{where}: unknown type {name!r}; known types: {', '.join(known_names())}")


def known_names() -> list[str]:
    return [*TYPES, "timestamp[s]", "timestamp[ms]", "timestamp[us]", "timestamp[ns]"]


def arrow_schema(columns: Mapping[str, Any] | pa.Schema, where: str = "schema") -> pa.Schema:
    """A schema from a mapping column -> type name (or Arrow type), in the mapping's order."""
    if isinstance(columns, pa.Schema):
        return columns
    if not isinstance(columns, Mapping) or not columns:
        raise SchemaError(f"{where}: expected a mapping of column -> type, e.g. {{id: int64, ts: timestamp[ms]}}, "
                          f"got {columns!r}")
    fields = []
    for name, t in columns.items():
        if not isinstance(name, str) or not name:
            raise SchemaError(f"{where}: a column name is a non-empty string, got {name!r}")
        fields.append(pa.field(name, t if isinstance(t, pa.DataType) else arrow_type(t, f"{where}.{name}")))
    return pa.schema(fields)
