"""Message values to and from Arrow in bulk: one parser call over a batch's concatenated payloads.

confluent-kafka hands messages over one by one; what is done per message here is only taking
its bytes. Parsing (JSON, CSV) runs in Arrow's C++ readers over the joined payloads, and
encoding builds each row's text with Arrow compute kernels over whole columns.

Avro has its own Numba-compiled decoder and encoder (``darwin.io.kafka.avro``): no well-kept
library decodes Avro messages into Arrow in bulk (fastavro decodes to Python dicts, row by row).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from darwin.errors import SinkError, SourceError
from darwin.io.file_sources import CSV_NULLS, csv_problem
from darwin.io.java_floats import WORDS

FORMATS = ("json", "csv", "raw", "avro")
RAW_COLUMN = "value"  # the one value column of format 'raw': the payload as UTF-8 text


def check_format(fmt: str, where: str, error: type[Exception]) -> None:
    if fmt not in FORMATS:
        raise error(f"{where}(format={fmt!r}): unknown value format; use 'json' (one object per message), "
                    "'csv' (one line per message, columns in schema order), 'avro' (with avro_schema=...) or 'raw' "
                    f"(the payload as text in column {RAW_COLUMN!r})")


def value_schema(fmt: str, schema: pa.Schema | None, where: str) -> pa.Schema:
    """The columns a message's value becomes."""
    if fmt == "raw":
        if schema is not None:
            raise SourceError(f"{where}(format='raw') reads the payload as one text column {RAW_COLUMN!r}; "
                              "drop schema=, or use format='json' or 'csv' to parse columns out of it")
        return pa.schema([pa.field(RAW_COLUMN, pa.string())])
    if schema is None or len(schema) == 0:
        raise SourceError(f"{where}(format={fmt!r}) needs schema=pyarrow.schema([...]): the columns of a "
                          "message's value and their types")
    return schema


def decode(fmt: str, payloads: Sequence[bytes | None], schema: pa.Schema,
           where_of: Callable[[int], str]) -> pa.RecordBatch:
    """The values of ``payloads`` (one message each) as a record batch of ``schema``, parsed in one call;
    ``where_of(i)`` names message ``i`` (topic, partition, offset) for an error about it."""
    try:
        table = _parse(fmt, payloads, schema)
    except pa.ArrowInvalid:
        table = None
    if table is None or table.num_rows != len(payloads):
        raise _first_bad(fmt, payloads, schema, where_of)
    table = table.select(schema.names).cast(schema)
    return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema)


def _parse(fmt: str, payloads: Sequence[bytes | None], schema: pa.Schema) -> pa.Table:
    """Every payload's rows, in one parser call (Arrow's error if one does not parse)."""
    if fmt == "raw":
        return pa.table([pa.array(payloads, pa.binary()).cast(pa.string())], schema=schema)
    if fmt == "json":
        try:
            return _parse_json(payloads, schema)
        except pa.ArrowInvalid:
            special = _quoted_specials(payloads, schema)
            if special is None:
                raise
        table = _parse_json(special.payloads, schema)
        for name, (where, values) in special.values.items():
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, pc.if_else(where, values, table.column(i)))
        return table
    data = b"".join(b"\n" if p is None else p.rstrip(b"\r\n") + b"\n" for p in payloads)
    read = pacsv.ReadOptions(column_names=schema.names, block_size=max(1 << 20, len(data) + 1))
    convert = pacsv.ConvertOptions(column_types=schema, **CSV_NULLS)
    return pacsv.read_csv(io.BytesIO(data), read_options=read, convert_options=convert,
                          parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False))


def _parse_json(payloads: Sequence[bytes | None], schema: pa.Schema) -> pa.Table:
    data = b"\n".join(b"{}" if p is None else p for p in payloads)  # a null value (tombstone): null columns
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=True)
    return pajson.read_json(io.BytesIO(data), parse_options=options)


class _Specials:
    """Payloads with their float fields' quoted NaN and infinities taken out (null), and per such
    column where they were and what they are."""

    def __init__(self, payloads: list[bytes | None], values: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        self.payloads, self.values = payloads, values


_QUOTED_WORDS = tuple(f'"{w}"'.encode() for w in WORDS)


def _quoted_specials(payloads: Sequence[bytes | None], schema: pa.Schema) -> _Specials | None:
    """A float field written as Jackson (Flink, Spark, Darwin's sink) writes NaN and infinities, "NaN",
    "Infinity" or "-Infinity", which Arrow's reader refuses in a number column: the messages holding
    one are parsed again one by one (Python's json), the rest stay as they are. None if none does."""
    floats = [f.name for f in schema if pa.types.is_floating(f.type)]
    if not floats:
        return None
    out = list(payloads)
    where = {name: np.zeros(len(payloads), np.bool_) for name in floats}
    values = {name: np.zeros(len(payloads)) for name in floats}
    for i, payload in enumerate(payloads):
        if payload is None or not any(word in payload for word in _QUOTED_WORDS):
            continue
        try:
            record = json.loads(payload)
        except ValueError:
            continue  # Arrow's parse names the problem
        if not isinstance(record, dict):
            continue
        for name in floats:
            value = record.get(name)
            if isinstance(value, str) and value in WORDS:
                where[name][i], values[name][i], record[name] = True, WORDS[value], None
        out[i] = json.dumps(record).encode()
    found = {name: (where[name], values[name]) for name in floats if where[name].any()}
    return _Specials(out, found) if found else None


_ARROW_ROW = re.compile(r" in row \d+$")  # the end of Arrow's JSON errors
_WHAT = {"raw": "UTF-8 text", "json": "a JSON object of the schema's columns",
         "csv": "a CSV line of the schema's columns"}


def _first_bad(fmt: str, payloads: Sequence[bytes | None], schema: pa.Schema,
               where_of: Callable[[int], str]) -> SourceError:
    """The error naming the first message that is not one record: found message by message, once
    the parse of them all has failed. Each is parsed with a null value after it, which a quote it
    leaves open would swallow (alone, Arrow takes the end of the data as the quote's end)."""
    for i, payload in enumerate(payloads):
        try:
            rows = _parse(fmt, [payload, None], schema).num_rows - 1
        except pa.ArrowInvalid as e:
            problem = _ARROW_ROW.sub("", str(e)).strip()  # its row in a parse of one message says nothing
            if fmt == "csv":
                column, problem = csv_problem(problem, schema.names)
                problem = problem if column is None else f"column {column!r}: {problem}"
            return SourceError(f"{where_of(i)}: the value {_shown(payload)} is not {_WHAT[fmt]} "
                               f"(format={fmt!r}): {problem}")
        if rows != 1:
            if rows > 1:
                problem = f"it holds {rows} {fmt} records; each message must hold exactly one"
            elif fmt == "json":  # a null value is a row of nulls, an empty one holds no object
                problem = "it holds no JSON object (an empty value; a message without a value is a row of nulls)"
            else:
                problem = "a quote in it is not closed"
            return SourceError(f"{where_of(i)}: the value {_shown(payload)} is not {_WHAT[fmt]}: {problem}")
    return SourceError(f"{where_of(0)} to {where_of(len(payloads) - 1)}: the {len(payloads)} values do not parse "
                       f"together as {fmt}, though each does alone")


def _shown(payload: bytes | None) -> str:
    """A message's value as quoted in an error: its start, if it is long."""
    shown = repr(payload)
    return shown if len(shown) <= 120 else f"{shown[:120]}... ({len(payload or b'')} bytes)"


def encode(fmt: str, batch: pa.RecordBatch) -> list[bytes]:
    """One payload per row of ``batch``."""
    if fmt == "raw":
        if batch.num_columns != 1:
            raise SinkError(f"a KafkaSink with format='raw' writes one text column as the message value; the "
                            f"result has {batch.schema.names}. Select one column, or use format='json'")
        return [b"" if v is None else v.encode() for v in text(batch.column(0)).to_pylist()]
    if fmt == "csv":
        return _csv_lines(batch)
    return _json_lines(batch)


def text(column: pa.Array) -> pa.Array:
    """Each value's text as Flink's json and csv formats write it, before a JSON string's or a CSV field's quotes
    (``true``; a float as Java's ``Double.toString``: ``1.0``, ``2.5E20``, ``NaN``; a timestamp in Flink's SQL
    format: ``2015-07-15 00:00:01.5``), which the JSON and CSV readers parse back; NULL stays NULL. Keys and raw
    values are this text, so a key reads as its column does in the value."""
    t = column.type
    if pa.types.is_floating(t):
        from darwin.io.float_texts import java_float_texts  # Numba: loaded at the first float written

        return java_float_texts(column)
    if pa.types.is_timestamp(t):
        return _flink_timestamp(column)
    return column.cast(pa.string())


def _flink_timestamp(column: pa.Array) -> pa.Array:
    """'2015-07-15 00:00:01.500' as Flink's SQL timestamp format writes it: '2015-07-15 00:00:01.5', and
    '2015-07-15 00:00:01' for a whole second (the fraction's trailing zeros left out)."""
    arrow = column.cast(pa.string())
    return pc.replace_substring_regex(pc.replace_substring_regex(arrow, r"(\.\d*?)0+$", r"\1"), r"\.$", "")


# Jackson's escapes in a JSON string (Flink's json format): quote, backslash, the short forms of five control
# characters, and \u00XX (upper-case hex) for the other controls; nothing else (not '/', DEL or non-ASCII).
# The backslash comes first: replacing it after the others would double their backslashes.
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_JSON_ESCAPES = {**_SHORT_ESCAPES,
                 **{chr(c): f"\\u{c:04X}" for c in range(0x20) if chr(c) not in _SHORT_ESCAPES}}
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
_OTHER_CONTROL = r"[\x00-\x07\x0b\x0e-\x1f]"


def _json_name(name: str) -> str:
    """A column's name as Jackson writes a field name: quoted, escaped as a string is."""
    return '"' + "".join(_JSON_ESCAPES.get(c, c) for c in name) + '"'


def _json_strings(texts: pa.Array) -> pa.Array:
    """Texts as Jackson writes JSON strings, quoted and escaped (``_JSON_ESCAPES``). A column without a
    character to escape, the usual one, costs one scan; the rare controls without a short form one more."""
    if pc.any(pc.match_substring_regex(texts, _NEEDS_ESCAPE)).as_py():
        rare = pc.any(pc.match_substring_regex(texts, _OTHER_CONTROL)).as_py()
        for old, new in _JSON_ESCAPES.items():
            if old in _SHORT_ESCAPES or rare:
                texts = pc.replace_substring(texts, old, new)
    return pc.binary_join_element_wise('"', texts, '"', "")


def _json_literal(column: pa.Array) -> pa.Array:
    """Each value of ``column`` as Flink's json format writes it (Jackson): numbers and booleans bare, a float
    as Java's ``Double.toString`` (``1.0``, ``2.5E20``) and NaN and infinities quoted (``"NaN"``), text and
    timestamps as strings; null for NULL."""
    t = column.type
    words = text(column)
    if pa.types.is_boolean(t) or pa.types.is_integer(t):
        literal = words
    elif pa.types.is_floating(t):
        literal = pc.if_else(pc.is_finite(column), words, pc.binary_join_element_wise('"', words, '"', ""))
    else:
        literal = _json_strings(words)
    return pc.fill_null(literal, "null")


def _json_lines(batch: pa.RecordBatch) -> list[bytes]:
    """Each row as Flink's json format writes it: one object, the fields in column order, no spaces."""
    if batch.num_rows == 0:
        return []
    parts: list[pa.Array | str] = []
    for i, name in enumerate(batch.schema.names):
        parts.append(("{" if i == 0 else ",") + _json_name(name) + ":")
        parts.append(_json_literal(batch.column(i)))
    parts.append("}")
    return pc.binary_join_element_wise(*parts, "").cast(pa.binary()).to_pylist()


def _csv_lines(batch: pa.RecordBatch) -> list[bytes]:
    """Each row as one line of Flink's csv format (Jackson's CsvMapper), fields joined by commas."""
    if batch.num_rows == 0:
        return []
    fields = [_csv_field(c) for c in batch.columns]
    return [v.encode() for v in pc.binary_join_element_wise(*fields, ",").to_pylist()]


def _csv_field(column: pa.Array) -> pa.Array:
    """Each value as Flink's csv format writes it: numbers and booleans bare (a float as Java's
    ``Double.toString``: ``1.0``, ``1.0E7``, ``NaN``), text quoted where Jackson quotes it, a timestamp as
    Flink's SQL format (``2015-07-15 00:00:01.5``, no fraction when it is 0); NULL an empty field and the
    empty string ``""``, so the two read back apart (where Flink writes both empty)."""
    t = column.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        field = text(column)
    else:
        field = _jackson_quoted(text(column))
    return pc.fill_null(field, "")


_JACKSON_UNSAFE = r'[\x00-,\\]'  # below ',' + 1 (a space, a quote, a comma, a line break...) or a backslash
_JACKSON_LONGEST_BARE = 24  # Jackson's CsvEncoder.MAX_QUOTE_CHECK: a longer text is quoted without a look


def _jackson_quoted(texts: pa.Array) -> pa.Array:
    """Texts as Jackson's CsvGenerator writes a string (its default, loose check, which Flink's csv format keeps):
    quoted, quotes doubled, if longer than 24 UTF-16 units or holding a character below '-' or a backslash; else
    bare. The empty string is quoted (Jackson leaves it bare, which reads back as NULL)."""
    units = pc.add(pc.utf8_length(texts), pc.count_substring_regex(texts, r"[\x{10000}-\x{10FFFF}]"))
    unsafe = pc.or_(pc.match_substring_regex(texts, _JACKSON_UNSAFE), pc.equal(units, 0))
    quote = pc.or_(pc.greater(units, _JACKSON_LONGEST_BARE), unsafe)
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(texts, '"', '""'), '"', "")
    return pc.if_else(quote, quoted, texts)

