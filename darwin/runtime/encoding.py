"""The Arrow boundary: record batches to typed numpy columns and back.

Strings become int64 codes of one append-only pool per run, so codes are stable
across batches and comparable across columns; sinks decode them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.errors import SchemaError, SourceError
from darwin.plan.strings import apply_arrow
from darwin.types import DType, Field, Schema, dtype_from_arrow


class StringPool:
    """Append-only dictionary of every string a run has seen.

    Besides the Python dictionary that encodes, the strings are kept as one Arrow-layout buffer
    (int64 offsets and bytes, grown by doubling; each string converted once), so decoding a
    batch copies only that batch's bytes, however large the pool has grown.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the prefetch thread encodes while the main thread decodes
        self._codes: dict[str, int] = {}
        self._values: list[str] = []
        self._offsets = np.zeros(1024, dtype=np.int64)
        self._data = np.zeros(1 << 16, dtype=np.uint8)
        self._laid_out = 0  # strings in _offsets/_data

    def __len__(self) -> int:
        return len(self._values)

    def code(self, value: str) -> int:
        code = self._codes.get(value)
        if code is None:
            with self._lock:
                code = self._codes.get(value)
                if code is None:
                    code = self._codes[value] = len(self._values)
                    self._values.append(value)
        return code

    def value(self, code: int) -> str:
        return self._values[code]

    def encode(self, arr: pa.Array) -> np.ndarray:
        """Codes of a string array (nulls get code 0; validity is kept separately)."""
        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        local = arr.dictionary.to_pylist()
        mapping = np.fromiter((self.code(v) for v in local), dtype=np.int64, count=len(local))
        idx = arr.indices.fill_null(0).to_numpy(zero_copy_only=False)
        return mapping[idx] if len(mapping) else np.zeros(len(arr), dtype=np.int64)

    def _layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Offsets and bytes of every string so far (the new ones laid out first)."""
        with self._lock:
            n, done = len(self._values), self._laid_out
            if done < n:
                new = pa.array(self._values[done:n], type=pa.large_string())
                _, offsets_buffer, data_buffer = new.buffers()
                offsets = np.frombuffer(offsets_buffer, dtype=np.int64, count=n - done + 1)
                base = self._offsets[done]
                size = int(offsets[-1])
                self._offsets = _room(self._offsets, n + 1)
                self._data = _room(self._data, int(base) + size)
                self._data[base:base + size] = np.frombuffer(data_buffer, dtype=np.uint8, count=size) \
                    if size else self._data[:0]
                self._offsets[done + 1:n + 1] = base + offsets[1:]
                self._laid_out = n
            return self._offsets[:n + 1], self._data[:int(self._offsets[n])]

    def to_arrow(self) -> pa.Array:
        """Every string, in code order."""
        offsets, data = self._layout()
        return pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))

    def decode(self, codes: np.ndarray, valid: np.ndarray | None) -> pa.Array:
        from darwin.codegen.strings import gather_strings  # Numba fixes its target at the first kernel

        offsets, data = self._layout()
        present = np.ones(len(codes), dtype=np.bool_) if valid is None else valid
        out_offsets, out_data = gather_strings(offsets, data, codes, present)
        bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
        if out_offsets[-1] < 2**31:  # Arrow's string type: int32 offsets
            return pa.StringArray.from_buffers(len(codes), pa.py_buffer(out_offsets.astype(np.int32)),
                                               pa.py_buffer(out_data), bitmap)
        strings = pa.LargeStringArray.from_buffers(len(codes), pa.py_buffer(out_offsets), pa.py_buffer(out_data),
                                                   bitmap)
        return strings.cast(pa.string())  # more than 2 GiB of text in one batch: Arrow refuses it here


def _room(array: np.ndarray, needed: int) -> np.ndarray:
    """``array``, or a copy twice as long (or more) when it holds fewer than ``needed`` elements."""
    if len(array) >= needed:
        return array
    size = max(1, len(array))
    while size < needed:
        size *= 2
    grown = np.zeros(size, dtype=array.dtype)
    grown[:len(array)] = array
    return grown


@dataclass
class Column:
    values: np.ndarray
    valid: np.ndarray | None  # None: no nulls


@dataclass
class EncodedBatch:
    columns: dict[str, Column]
    length: int
    arrow: pa.RecordBatch | None = None  # the source batch, for string columns carried as row indices


def encode(batch: pa.RecordBatch, schema: Schema, pool: StringPool, source: str,
           as_row_index: frozenset[str] = frozenset(),
           computed: tuple[tuple[str, str, tuple, str], ...] = ()) -> EncodedBatch:
    """Typed columns of a batch; string columns in ``as_row_index`` carry row numbers, not codes, and
    ``computed`` columns are string functions of source columns evaluated by Arrow."""
    columns = {}
    derived = {name: (func, args, column) for name, func, args, column in computed}
    for f in schema.fields:
        if f.name in derived:
            func, args, column = derived[f.name]
            columns[f.name] = _encode_column(apply_arrow(func, args, batch.column(column)), f, pool, source)
            continue
        try:
            arr = batch.column(f.name)
        except KeyError:
            raise SchemaError(f"source {source!r}: a batch lacks column {f.name!r}") from None
        if f.name in as_row_index:
            _check_column(arr, f, source)
            valid = arr.is_valid().to_numpy(zero_copy_only=False) if f.nullable else None
            columns[f.name] = Column(np.arange(batch.num_rows, dtype=np.int64), valid)
        else:
            columns[f.name] = _encode_column(arr, f, pool, source)
    return EncodedBatch(columns, batch.num_rows, batch if as_row_index else None)


def _check_column(arr: pa.Array, f: Field, source: str) -> None:
    got = dtype_from_arrow(arr.type, f.name)
    if got is not f.dtype:
        raise SchemaError(f"source {source!r}: column {f.name!r} has type {arr.type} in this batch, "
                          f"but the query was built for {f.dtype.value}")
    if arr.null_count > 0 and not f.nullable:
        raise SchemaError(f"source {source!r}: column {f.name!r} holds nulls, but the query was built "
                          "with it as NOT NULL (the source declared no nulls)")


def _encode_column(arr: pa.Array, f: Field, pool: StringPool, source: str) -> Column:
    _check_column(arr, f, source)
    has_nulls = arr.null_count > 0
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if f.nullable else None
    if f.dtype is DType.STRING:
        return Column(pool.encode(arr), valid)
    if f.dtype in (DType.INT64, DType.TIMESTAMP):
        arr = to_int64(arr, source, f.name)
    elif arr.type != f.dtype.arrow:
        arr = pc.cast(arr, f.dtype.arrow)
    if has_nulls:
        arr = arr.fill_null(False if f.dtype is DType.BOOL else 0)
    values = arr.to_numpy(zero_copy_only=False)
    return Column(np.ascontiguousarray(values, dtype=f.dtype.numpy), valid)


INT64_MAX = 2**63 - 1
_TICKS_PER_MS = {"us": 1_000, "ns": 1_000_000}


def to_int64(arr: pa.Array, source: str, column: str) -> pa.Array:
    """Darwin's int64 values of an integer or timestamp column, nulls kept; both engines convert through here.

    Timestamps become UTC milliseconds whatever their unit or time zone (Arrow stores the instant as
    UTC ticks; the zone only labels it), floored so that -1 µs is -1 ms, inside the window holding it.
    Arrow's own cast truncates toward zero. A value int64 cannot hold is a ``SourceError``.
    """
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not pa.types.is_timestamp(arr.type):
        if arr.type == pa.int64():
            return arr
        try:
            return pc.cast(arr, pa.int64())
        except pa.ArrowInvalid:  # only uint64 holds integers int64 cannot
            bad = pc.filter(arr, pc.greater(arr, pa.scalar(INT64_MAX, arr.type)))[0].as_py()
            raise _does_not_fit(source, column, bad, "int64") from None
    ticks = arr.view(pa.int64())
    unit = arr.type.unit
    if unit == "ms":
        return ticks
    values = ticks.fill_null(0).to_numpy(zero_copy_only=False)
    if unit == "s":
        limit = INT64_MAX // 1000
        out_of_range = np.flatnonzero((values > limit) | (values < -limit))
        if len(out_of_range):
            raise _does_not_fit(source, column, f"{values[out_of_range[0]]} s", "int64 milliseconds")
        values = values * 1000
    else:
        values = np.floor_divide(values, _TICKS_PER_MS[unit])
    mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return pa.array(values, pa.int64(), mask=mask)


def _does_not_fit(source: str, column: str, value: object, what: str) -> SourceError:
    return SourceError(f"source {source!r}: column {column!r} holds {value}, which does not fit Darwin's {what}")


def decode(batch: EncodedBatch, schema: Schema, pool: StringPool, source: EncodedBatch | None = None,
           row_indexed: dict[str, str] | None = None) -> pa.RecordBatch:
    """Arrow batch of typed columns; ``row_indexed`` maps output columns to ``source`` columns they index."""
    arrow = schema.to_arrow()
    arrays = []
    for f, af in zip(schema.fields, arrow):
        c = batch.columns[f.name]
        valid = c.valid if f.nullable else None
        if row_indexed and f.name in row_indexed:
            assert source is not None and source.arrow is not None  # encode() keeps the batch row indices index
            values = source.arrow.column(row_indexed[f.name]).take(pa.array(c.values, type=pa.int64()))
            arrays.append(values if values.type == af.type else pc.cast(values, af.type))
        elif f.dtype is DType.STRING:
            arrays.append(pool.decode(c.values, valid))
        else:
            mask = None if valid is None or valid.all() else ~valid
            arrays.append(pa.array(c.values, type=af.type, mask=mask))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)
