"""Avro message values to and from Arrow in bulk: Numba-compiled loops over every message of a poll.

The writer schema (the user's, JSON text or a dict) is read once into a small table of field
kinds, an ``AvroLayout``. One compiled decoder walks all payloads of a poll, concatenated in one
buffer, and fills column arrays; one compiled encoder writes all rows of a batch into one buffer.
What changes between schemas is the layout's numbers, never the code: no user text is compiled.

Supported: a record of null, boolean, int, long, float, double, string, bytes and enum (read as
text) fields, the logical types date and timestamp-millis/-micros, and unions of null with one of
these (a nullable column). Nested records, arrays, maps, fixed and decimal are refused by name.
Optionally the Confluent wire format: magic byte 0 and a 4-byte big-endian schema id before the body.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from darwin.errors import SinkError, SourceError

WIRES = ("plain", "confluent")
_HEADER = 5  # confluent: magic byte 0, then the schema id as 4 big-endian bytes

# field kinds, as the compiled loops know them
NULL, BOOLEAN, INT, LONG, FLOAT, DOUBLE, STRING, BYTES, ENUM = range(9)
_PRIMITIVES = {"null": NULL, "boolean": BOOLEAN, "int": INT, "long": LONG, "float": FLOAT, "double": DOUBLE,
               "string": STRING, "bytes": BYTES}
_ARROW = {NULL: pa.null(), BOOLEAN: pa.bool_(), INT: pa.int32(), LONG: pa.int64(), FLOAT: pa.float32(),
          DOUBLE: pa.float64(), STRING: pa.string(), BYTES: pa.binary(), ENUM: pa.string()}
_LOGICAL = {(INT, "date"): pa.date32(), (LONG, "timestamp-millis"): pa.timestamp("ms"),
            (LONG, "timestamp-micros"): pa.timestamp("us"), (LONG, "local-timestamp-millis"): pa.timestamp("ms"),
            (LONG, "local-timestamp-micros"): pa.timestamp("us")}
_REFUSED_LOGICAL = ("decimal",)  # would read as garbage numbers if taken for their underlying type

# outcomes of the compiled loops (0: fine)
OK, TRUNCATED, BAD_VARINT, BAD_BRANCH, INT_RANGE, BAD_BOOLEAN, BAD_ENUM, BAD_LENGTH, TRAILING, BAD_MAGIC, \
    BAD_SCHEMA_ID, TOMBSTONE = range(12)
_PROBLEMS = {
    TRUNCATED: "ends before its record does (truncated)",
    BAD_VARINT: "holds a malformed varint (more than 10 bytes, or past 64 bits)",
    BAD_BRANCH: "holds union branch {extra}, not one of the 2 branches of [null, T]",
    INT_RANGE: "holds {extra}, outside the 32-bit range of an Avro int",
    BAD_BOOLEAN: "holds byte {extra} for a boolean (0 or 1 expected)",
    BAD_ENUM: "holds enum index {extra}, outside the enum's symbols",
    BAD_LENGTH: "holds a negative length {extra}",
    TRAILING: "has {extra} byte(s) left after its record (not this schema?)",
    BAD_MAGIC: "does not start with the Confluent magic byte 0 (byte 0 is {extra})",
    BAD_SCHEMA_ID: "carries schema id {extra}",
    TOMBSTONE: "has no value (a tombstone), and not every field is nullable",
}


@dataclass(frozen=True)
class AvroField:
    """One field of the record: its kind, where null sits in its union (-1: not nullable), its Arrow type."""

    name: str
    kind: int
    null_branch: int
    arrow: pa.DataType
    symbols: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class AvroLayout:
    """An Avro record schema as the compiled loops read it."""

    fields: tuple[AvroField, ...]
    wire: str
    schema_id: int

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.arrow, f.null_branch >= 0 or f.kind == NULL) for f in self.fields])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        kinds = np.array([f.kind for f in self.fields], np.int64)
        nulls = np.array([f.null_branch for f in self.fields], np.int64)
        symbols = np.array([len(f.symbols) for f in self.fields], np.int64)
        return kinds, nulls, symbols


def layout(avro_schema: str | dict[str, Any] | None, wire: str, schema_id: int | None, where: str,
           error: type[Exception]) -> AvroLayout:
    """The layout of a user's Avro record schema, refusing what does not map to flat Arrow columns."""
    if avro_schema is None:
        raise error(f"{where}(format='avro') needs avro_schema=...: the writer's Avro record schema, as JSON text "
                    "or a dict")
    if wire not in WIRES:
        raise error(f"{where}(avro_wire={wire!r}): use 'plain' (the Avro body only) or 'confluent' (magic byte 0 "
                    "and a 4-byte schema id first)")
    if wire == "confluent" and (not isinstance(schema_id, int) or not 0 <= schema_id < 2**31):
        raise error(f"{where}(avro_wire='confluent') needs avro_schema_id=<the registry's id of the schema, "
                    f"0..2**31-1>, got {schema_id!r}")
    if isinstance(avro_schema, str):
        try:
            avro_schema = json.loads(avro_schema)
        except json.JSONDecodeError as e:
            raise error(f"{where}(avro_schema=...): not JSON text: {e}") from None
    if not isinstance(avro_schema, dict) or avro_schema.get("type") != "record" \
            or not isinstance(avro_schema.get("fields"), list):
        raise error(f"{where}(avro_schema=...): the top level must be a record "
                    "({'type': 'record', 'name': ..., 'fields': [...]})")
    record = avro_schema.get("name")
    space = avro_schema.get("namespace") or (record.rpartition(".")[0] if isinstance(record, str) else "")
    named: dict[str, AvroField] = {}  # enums defined earlier by full name, which later fields may name
    fields = []
    for spec in avro_schema["fields"]:
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or "type" not in spec:
            raise error(f"{where}(avro_schema=...): a field must be {{'name': ..., 'type': ...}}, got {spec!r}")
        fields.append(_field(spec["name"], spec["type"], named, space if isinstance(space, str) else "", where,
                             error))
    names = [f.name for f in fields]
    if len(set(names)) != len(names) or not names:
        raise error(f"{where}(avro_schema=...): the record needs fields with distinct names, got {names}")
    return AvroLayout(tuple(fields), wire, schema_id or 0)


def _full(name: str, space: str) -> str:
    """A type's full name: as given if dotted, else in ``space`` (Avro's namespace rules)."""
    return name if "." in name or not space else f"{space}.{name}"


def _field(name: str, spec: Any, named: dict[str, AvroField], space: str, where: str,
           error: type[Exception]) -> AvroField:
    null_branch = -1
    if isinstance(spec, list):
        others = [t for t in spec if t != "null"]
        if len(spec) == 1 and spec[0] == "null":
            spec = "null"
        elif len(spec) != 2 or len(others) != 1:
            raise error(f"{where}(avro_schema=...): field {name!r} is the union {json.dumps(spec)}; only unions of "
                        "null with one type ([null, T], a nullable column) are supported")
        else:
            null_branch, spec = spec.index("null"), others[0]
    if isinstance(spec, str) and _full(spec, space) in named:
        return AvroField(name, ENUM, null_branch, pa.string(), named[_full(spec, space)].symbols)
    if isinstance(spec, str):
        spec = {"type": spec}
    kind_name = spec.get("type") if isinstance(spec, dict) else None
    if isinstance(kind_name, (dict, list)):  # {"type": {"type": "long", ...}}: the inner schema
        inner = kind_name if null_branch < 0 else ["null", kind_name] if null_branch == 0 else [kind_name, "null"]
        return _field(name, inner, named, space, where, error)
    if kind_name == "enum":
        symbols = spec.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols) or not symbols:
            raise error(f"{where}(avro_schema=...): enum field {name!r} needs a list of symbols")
        f = AvroField(name, ENUM, null_branch, pa.string(), tuple(symbols))
        if isinstance(spec.get("name"), str):  # later fields may name it
            own = spec.get("namespace")
            named[_full(spec["name"], own if isinstance(own, str) else space)] = f
        return f
    if kind_name not in _PRIMITIVES:
        raise error(f"{where}(avro_schema=...): field {name!r} has type {json.dumps(kind_name)}, which is not "
                    "supported (records nested, arrays, maps and fixed are not; use flat fields of null, boolean, "
                    "int, long, float, double, string, bytes, enum, or [null, T] of these)")
    kind = _PRIMITIVES[kind_name]
    logical = spec.get("logicalType")
    if logical in _REFUSED_LOGICAL:
        raise error(f"{where}(avro_schema=...): field {name!r} has logical type {logical!r}, which is not "
                    "supported")
    return AvroField(name, kind, null_branch, _LOGICAL.get((kind, logical), _ARROW[kind]))


# -- decoding ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _read_long(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, int]:
    """A zigzag varint at ``pos``: (value, position after it, outcome)."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while True:
        if pos >= end:
            return 0, pos, TRUNCATED
        b = np.uint64(buf[pos])
        pos += 1
        if shift == np.uint64(63) and b > np.uint64(1):
            return 0, pos, BAD_VARINT
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            break
        shift += np.uint64(7)
    value = np.int64(result >> np.uint64(1)) ^ -np.int64(result & np.uint64(1))
    return int(value), pos, OK


@njit(cache=True, nogil=True)
def _decode(buf: np.ndarray, starts: np.ndarray, present: np.ndarray, kinds: np.ndarray, nulls: np.ndarray,
            nsymbols: np.ndarray, header: bool, schema_id: int, values: np.ndarray, lengths: np.ndarray,
            valid: np.ndarray) -> tuple[int, int, int, int]:
    """Every message's record into ``values`` (numbers, float bits, enum indexes, byte positions), ``lengths``
    (of strings and bytes) and ``valid``; returns (outcome, message, field, detail) of the first problem."""
    n = len(starts) - 1
    nf = len(kinds)
    for r in range(n):
        pos = starts[r]
        end = starts[r + 1]
        if not present[r]:
            for f in range(nf):
                if nulls[f] < 0 and kinds[f] != NULL:
                    return TOMBSTONE, r, f, 0
                valid[f, r] = 0
            continue
        if header:
            if end - pos < _HEADER:
                return TRUNCATED, r, -1, 0
            if buf[pos] != 0:
                return BAD_MAGIC, r, -1, int(buf[pos])
            sid = (np.int64(buf[pos + 1]) << 24) | (np.int64(buf[pos + 2]) << 16) | (np.int64(buf[pos + 3]) << 8) \
                | np.int64(buf[pos + 4])
            if sid != schema_id:
                return BAD_SCHEMA_ID, r, -1, int(sid)
            pos += _HEADER
        for f in range(nf):
            kind = kinds[f]
            if nulls[f] >= 0:
                branch, pos, outcome = _read_long(buf, pos, end)
                if outcome != OK:
                    return outcome, r, f, 0
                if branch == nulls[f]:
                    valid[f, r] = 0
                    continue
                if branch != 1 - nulls[f]:
                    return BAD_BRANCH, r, f, branch
            valid[f, r] = 1
            if kind == NULL:
                valid[f, r] = 0
            elif kind == BOOLEAN:
                if pos >= end:
                    return TRUNCATED, r, f, 0
                if buf[pos] > 1:
                    return BAD_BOOLEAN, r, f, int(buf[pos])
                values[f, r] = buf[pos]
                pos += 1
            elif kind == INT or kind == LONG or kind == ENUM:
                v, pos, outcome = _read_long(buf, pos, end)
                if outcome != OK:
                    return outcome, r, f, 0
                if kind == INT and (v < -(2**31) or v >= 2**31):
                    return INT_RANGE, r, f, v
                if kind == ENUM and (v < 0 or v >= nsymbols[f]):
                    return BAD_ENUM, r, f, v
                values[f, r] = v
            elif kind == FLOAT or kind == DOUBLE:
                width = 4 if kind == FLOAT else 8
                if end - pos < width:
                    return TRUNCATED, r, f, 0
                bits = np.int64(0)
                for i in range(width):
                    bits |= np.int64(buf[pos + i]) << (8 * i)
                values[f, r] = bits
                pos += width
            else:  # STRING, BYTES
                size, pos, outcome = _read_long(buf, pos, end)
                if outcome != OK:
                    return outcome, r, f, 0
                if size < 0:
                    return BAD_LENGTH, r, f, size
                if end - pos < size:
                    return TRUNCATED, r, f, 0
                values[f, r] = pos
                lengths[f, r] = size
                pos += size
        if pos != end:
            return TRAILING, r, -1, end - pos
    return OK, -1, -1, 0


@njit(cache=True, nogil=True)
def _gather(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    for r in range(len(starts)):
        o = offsets[r]
        s = starts[r]
        for i in range(lengths[r]):
            out[o + i] = buf[s + i]


def decode(plan: AvroLayout, payloads: Sequence[bytes | None], where_of: Callable[[int], str]) -> pa.RecordBatch:
    """The records of ``payloads`` (one message each) as a record batch of ``plan.schema``; ``where_of(i)`` names
    message ``i`` in errors."""
    n = len(payloads)
    if None in payloads:  # tombstones: rare, so the loops in C below are the usual way
        present = np.fromiter((p is not None for p in payloads), np.bool_, n)
        bodies = [b"" if p is None else p for p in payloads]
    else:
        present = np.ones(n, np.bool_)
        bodies = cast(list[bytes], payloads)
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, bodies), np.int64, n), out=starts[1:])
    buf = np.frombuffer(b"".join(bodies), np.uint8)
    kinds, nulls, nsymbols = plan.arrays()
    nf = len(kinds)
    values = np.zeros((nf, n), np.int64)
    lengths = np.zeros((nf, n), np.int64)
    valid = np.zeros((nf, n), np.uint8)
    outcome, row, f, detail = _decode(buf, starts, present, kinds, nulls, nsymbols, plan.wire == "confluent",
                                      plan.schema_id, values, lengths, valid)
    if outcome != OK:
        field = "" if f < 0 else f" in field {plan.fields[f].name!r}"
        problem = _PROBLEMS[outcome].format(extra=detail)
        if outcome == BAD_SCHEMA_ID:
            problem += f", not the expected {plan.schema_id}"
        raise SourceError(f"{where_of(row)}: the Avro value{field} {problem}")
    columns = [_column(plan.fields[i], buf, values[i], lengths[i], valid[i].view(np.bool_), where_of)
               for i in range(nf)]
    return pa.record_batch(columns, schema=plan.schema)


def _column(field: AvroField, buf: np.ndarray, values: np.ndarray, lengths: np.ndarray, valid: np.ndarray,
            where_of: Callable[[int], str]) -> pa.Array:
    n = len(values)
    mask = None if valid.all() else ~valid
    kind = field.kind
    if kind == NULL:
        return pa.nulls(n)
    if kind == BOOLEAN:
        return pa.array(values.astype(np.bool_), pa.bool_(), mask=mask)
    if kind == INT:
        return pa.array(values.astype(np.int32), pa.int32(), mask=mask).cast(field.arrow)
    if kind == LONG:
        return pa.array(values, pa.int64(), mask=mask).cast(field.arrow)
    if kind == FLOAT:
        return pa.array(values.astype(np.uint32).view(np.float32), pa.float32(), mask=mask)
    if kind == DOUBLE:
        return pa.array(values.view(np.float64), pa.float64(), mask=mask)
    if kind == ENUM:
        indexes = pa.array(values.astype(np.int32), pa.int32(), mask=mask)
        return pc.take(pa.array(field.symbols, pa.string()), indexes)
    sizes = np.where(valid, lengths, 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    _gather(buf, values, sizes, offsets, data)
    bitmap = None if mask is None else pa.array(valid, pa.bool_()).buffers()[1]
    large = pa.large_string() if kind == STRING else pa.large_binary()
    array = pa.Array.from_buffers(large, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)])
    if kind == STRING:
        try:
            array.validate(full=True)
        except pa.ArrowInvalid:
            bad = next(i for i in range(n) if valid[i] and not _is_utf8(data[offsets[i]:offsets[i + 1]]))
            raise SourceError(f"{where_of(bad)}: the Avro value in field {field.name!r} holds a string that is not "
                              "UTF-8") from None
    return array.cast(field.arrow)


def _is_utf8(data: np.ndarray) -> bool:
    try:
        data.tobytes().decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# -- encoding ------------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _write_long(out: np.ndarray, pos: int, value: int) -> int:
    u = np.uint64((value << 1) ^ (value >> 63))
    while u >= np.uint64(0x80):
        out[pos] = np.uint8((u & np.uint64(0x7F)) | np.uint64(0x80))
        u >>= np.uint64(7)
        pos += 1
    out[pos] = np.uint8(u)
    return pos + 1


@njit(cache=True, nogil=True)
def _encode(kinds: np.ndarray, nulls: np.ndarray, header: bool, schema_id: int, values: np.ndarray,
            lengths: np.ndarray, valid: np.ndarray, data: np.ndarray, out: np.ndarray, ends: np.ndarray) -> None:
    """Every row into ``out``, row ``r`` ending at ``ends[r]``; ``out`` is large enough for the worst case."""
    nf, n = values.shape
    pos = 0
    for r in range(n):
        if header:
            out[pos] = 0
            for i in range(4):
                out[pos + 1 + i] = np.uint8((schema_id >> (8 * (3 - i))) & 0xFF)
            pos += _HEADER
        for f in range(nf):
            kind = kinds[f]
            if nulls[f] >= 0:
                if not valid[f, r]:
                    pos = _write_long(out, pos, nulls[f])
                    continue
                pos = _write_long(out, pos, 1 - nulls[f])
            v = values[f, r]
            if kind == NULL:
                pass
            elif kind == BOOLEAN:
                out[pos] = np.uint8(v)
                pos += 1
            elif kind == INT or kind == LONG or kind == ENUM:
                pos = _write_long(out, pos, v)
            elif kind == FLOAT or kind == DOUBLE:
                width = 4 if kind == FLOAT else 8
                for i in range(width):
                    out[pos + i] = np.uint8((v >> (8 * i)) & 0xFF)
                pos += width
            else:
                size = lengths[f, r]
                pos = _write_long(out, pos, size)
                for i in range(size):
                    out[pos + i] = data[v + i]
                pos += size
        ends[r] = pos


def check_columns(plan: AvroLayout, names: Sequence[str], where: str) -> None:
    """A result must have a column for every field of the record, and no others."""
    missing = [f.name for f in plan.fields if f.name not in names]
    extra = [n for n in names if n not in {f.name for f in plan.fields}]
    if missing or extra:
        raise SinkError(f"{where}(format='avro'): the result's columns {list(names)} must be the Avro record's "
                        f"fields {[f.name for f in plan.fields]}" + (f"; missing {missing}" if missing else "")
                        + (f"; not in the record {extra}" if extra else ""))


def encode(plan: AvroLayout, batch: pa.RecordBatch, where: str) -> list[bytes]:
    """One Avro payload per row of ``batch``, whose columns are the record's fields."""
    check_columns(plan, batch.schema.names, where)
    n = batch.num_rows
    if n == 0:
        return []
    kinds, nulls, _ = plan.arrays()
    nf = len(kinds)
    values = np.zeros((nf, n), np.int64)
    lengths = np.zeros((nf, n), np.int64)
    valid = np.ones((nf, n), np.uint8)
    chunks: list[np.ndarray] = []
    base = 0
    for i, field in enumerate(plan.fields):
        column = batch.column(field.name)
        is_valid = column.is_valid().to_numpy(zero_copy_only=False)
        if field.kind != NULL and field.null_branch < 0 and not is_valid.all():
            raise SinkError(f"{where}: column {field.name!r} holds a null at row {int(np.argmin(is_valid))}, and its "
                            "Avro type is not nullable (use [\"null\", T])")
        valid[i] = is_valid
        try:
            numbers, data = _to_numbers(field, column, where)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SinkError(f"{where}: column {field.name!r} ({column.type}) does not fit its Avro type: {e}") \
                from None
        if data is not None:
            lengths[i] = np.where(is_valid, np.diff(numbers), 0)
            values[i] = numbers[:-1] + base
            chunks.append(data)
            base += len(data)
        else:
            values[i] = numbers
    data_all = np.concatenate(chunks) if chunks else np.empty(0, np.uint8)
    header = plan.wire == "confluent"
    out = np.empty(n * (_HEADER + 20 * nf) + int(lengths.sum()), np.uint8)
    ends = np.empty(n, np.int64)
    _encode(kinds, nulls, header, plan.schema_id, values, lengths, valid, data_all, out, ends)
    raw = out[:int(ends[-1])].tobytes()
    starts = [0, *ends[:-1].tolist()]
    return [raw[s:e] for s, e in zip(starts, ends.tolist())]


def _to_numbers(field: AvroField, column: pa.Array, where: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The column as the int64 the encoder writes (numbers, float bits, enum indexes), or for strings and bytes
    (offsets, data)."""
    kind = field.kind
    if kind == NULL:
        return np.zeros(len(column), np.int64), None
    if kind in (STRING, BYTES):
        if kind == STRING and not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = column.cast(pa.string())
        binary = column.cast(pa.large_binary())
        _, offsets_buf, data_buf = binary.buffers()
        offsets = np.frombuffer(offsets_buf, np.int64)[binary.offset:binary.offset + len(binary) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
        return offsets.astype(np.int64), data
    if kind == ENUM:
        text = column.cast(pa.string())
        indexes = pc.index_in(text, value_set=pa.array(field.symbols, pa.string()))
        unknown = pc.and_(pc.is_valid(text), pc.is_null(indexes))
        if pc.any(unknown).as_py():
            value = text.filter(unknown)[0].as_py()
            raise SinkError(f"{where}: column {field.name!r} holds {value!r}, not a symbol of its Avro enum "
                            f"{list(field.symbols)}")
        return _filled(indexes.cast(pa.int64())), None
    if kind == FLOAT:
        return _filled(column.cast(pa.float32())).astype(np.float32).view(np.uint32).astype(np.int64), None
    if kind == DOUBLE:
        return _filled(column.cast(pa.float64())).astype(np.float64).view(np.int64), None
    if kind == BOOLEAN:
        return _filled(column.cast(pa.bool_())).astype(np.int64), None
    if pa.types.is_timestamp(field.arrow) or pa.types.is_date(field.arrow):
        column = column.cast(field.arrow)
    return _filled(column.cast(pa.int32() if kind == INT else pa.int64()).cast(pa.int64())).astype(np.int64), None


def _filled(array: pa.Array) -> np.ndarray:
    zero = pa.scalar(False) if pa.types.is_boolean(array.type) else pa.scalar(0, array.type)
    return np.asarray(array.fill_null(zero).to_numpy(zero_copy_only=False))
