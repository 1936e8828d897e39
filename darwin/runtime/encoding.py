"""The Arrow boundary: record batches to typed numpy columns and back.

Strings become int64 codes of one append-only pool per run, so codes are stable
across batches and comparable across columns; sinks decode them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.errors import SchemaError, SourceError
from darwin.plan.strings import apply_arrow
from darwin.types import DType, Field, Schema, dtype_from_arrow

FIRST_CHUNK_BYTES = 1 << 16
CHUNK_BYTES = 1 << 26  # chunks double up to this size; a longer string gets a chunk of its own
CODES_GROWTH = 4  # per-code arrays grow fourfold: a third of doubling's copying, untouched room costs no memory


KNOWN_DICTIONARIES = 16  # dictionaries whose codes a pool remembers


class StringPool:
    """Every string a run has seen, each under an int64 code; the bytes in chunks that are never moved.

    Interned strings (``encode``) have one code each, so equal codes mean equal strings: a compiled
    hash table over the bytes interns a whole column at once, with no Python object per string.
    Strings only ever decoded are appended (``append``) without a lookup. Growing the pool adds a
    chunk and copies nothing; decoding a batch copies only that batch's bytes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # encoders add strings one at a time; decoders read what is published
        self._count = 0
        self._interned = 0  # codes in the hash table (the rest were appended)
        self._starts = np.zeros(1024, dtype=np.int64)  # per code: chunk << 32 | position, and the end
        self._ends = np.zeros(1024, dtype=np.int64)
        self._hashes = np.zeros(1024, dtype=np.uint64)
        self._slots = np.full(2048, -1, dtype=np.int64)
        self._chunks: list[np.ndarray] = []  # never shrinks: kernels reach chunks by address
        self._bases = np.zeros(0, dtype=np.int64)
        self._sizes = np.zeros(0, dtype=np.int64)
        self._position = 0  # bytes used in the last chunk
        # the codes of dictionaries seen lately, by their buffers' addresses (each held, so no address is
        # reused): a source repeats one dictionary in every batch, and codes never change
        self._dictionaries: dict[tuple[int, ...], tuple[pa.Array, np.ndarray]] = {}
        self._publish()

    def __len__(self) -> int:
        return self._count

    def code(self, value: str) -> int:
        return int(self.encode(pa.array([value], type=pa.large_string()))[0])

    def value(self, code: int) -> str:
        value: str = self.decode(np.array([code], dtype=np.int64), None)[0].as_py()
        return value

    def encode(self, arr: pa.Array) -> np.ndarray:
        """Codes of a string array (nulls get code 0; validity is kept separately)."""
        if pa.types.is_dictionary(arr.type):
            return _through_dictionary(arr, self._dictionary_codes)
        from darwin.codegen.strings import intern_strings, rehash_strings  # Numba fixes its target lazily

        in_offsets, in_data = _string_buffers(arr)
        n = len(arr)
        present = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(n, dtype=np.bool_)
        codes = np.empty(n, dtype=np.int64)
        with self._lock:
            self._room(n)
            if len(self._slots) < 2 * (self._interned + n):
                size = len(self._slots)
                while size < 2 * (self._interned + n):
                    size *= 2
                self._slots = rehash_strings(self._hashes, self._count, size)
            if not self._chunks:
                self._add_chunk(0)
            row = 0
            while True:
                row, count, self._position = intern_strings(
                    in_offsets, in_data, present, codes, self._slots, self._hashes, self._starts, self._ends,
                    self._bases, self._sizes, self._position, self._count, row)
                self._interned += count - self._count
                self._count = count
                if row == n:
                    break
                self._add_chunk(int(in_offsets[row + 1] - in_offsets[row]))
            self._publish()
        return codes

    def _dictionary_codes(self, dictionary: pa.Array) -> np.ndarray:
        """Codes of a dictionary array's dictionary: interned once, then found by its buffers."""
        key = (dictionary.offset, len(dictionary), *(b.address if b is not None else 0 for b in dictionary.buffers()))
        with self._lock:
            known = self._dictionaries.get(key)
        if known is not None:
            return known[1]
        codes = self.encode(dictionary)
        with self._lock:
            if len(self._dictionaries) >= KNOWN_DICTIONARIES:
                del self._dictionaries[next(iter(self._dictionaries))]
            self._dictionaries[key] = (dictionary, codes)
        return codes

    def append(self, arr: pa.Array) -> np.ndarray:
        """New codes for the strings of ``arr`` (nulls get code 0), without looking any of them up.

        For columns whose codes are only ever decoded (``darwin.plan.inspected``): a code then
        no longer stands for its string alone, but appending costs a copy of the bytes. A
        dictionary array's dictionary is interned instead: it repeats from batch to batch, and
        interning it costs a lookup per distinct value, not per row, and grows the pool only by
        values it has not seen.
        """
        if pa.types.is_dictionary(arr.type):
            return _through_dictionary(arr, self._dictionary_codes)
        in_offsets, in_data = _string_buffers(arr)
        with self._lock:
            first = self._append(in_offsets, in_data)
            self._publish()
        codes = np.arange(first, first + len(arr), dtype=np.int64)
        if arr.null_count:
            codes[~arr.is_valid().to_numpy(zero_copy_only=False)] = 0
        return codes

    def _append(self, in_offsets: np.ndarray, in_data: np.ndarray) -> int:
        """Copy strings into the chunks as new codes, filling each chunk; the first new code."""
        n = len(in_offsets) - 1
        first = self._count
        self._room(n)
        if not self._chunks:
            self._add_chunk(0)
        i = 0
        while i < n:
            room = self._sizes[-1] - self._position
            fit = int(np.searchsorted(in_offsets[i:], in_offsets[i] + room, side="right")) - 1 + i
            fit = min(fit, n)
            if fit == i:  # the next string does not fit in the last chunk
                self._add_chunk(int(in_offsets[i + 1] - in_offsets[i]))
                continue
            low, high = int(in_offsets[i]), int(in_offsets[fit])
            self._chunks[-1][self._position:self._position + high - low] = in_data[low:high]
            codes = slice(first + i, first + fit)
            self._starts[codes] = ((len(self._chunks) - 1) << 32) | (self._position + in_offsets[i:fit] - low)
            self._ends[codes] = self._starts[codes] + (in_offsets[i + 1:fit + 1] - in_offsets[i:fit])
            self._position += high - low
            i = fit
        self._hashes[first:first + n] = 0  # appended: not in the hash table
        self._count = first + n
        return first

    def _room(self, n: int) -> None:
        """Per-code arrays with room for ``n`` more strings."""
        most = self._count + n
        self._starts = _room(self._starts, most)
        self._ends = _room(self._ends, most)
        self._hashes = _room(self._hashes, most)

    def _add_chunk(self, at_least: int) -> None:
        """A new last chunk for at least ``at_least`` bytes (twice the last one, up to CHUNK_BYTES)."""
        size = FIRST_CHUNK_BYTES if not self._chunks else min(2 * len(self._chunks[-1]), CHUNK_BYTES)
        chunk = np.empty(max(size, at_least), dtype=np.uint8)
        self._chunks.append(chunk)
        self._bases = np.append(self._bases, np.int64(chunk.ctypes.data))  # new arrays: snapshots keep theirs
        self._sizes = np.append(self._sizes, np.int64(len(chunk)))
        self._position = 0

    def to_arrow(self) -> pa.Array:
        """Every string, in code order."""
        return self.contents()[0]

    def interned(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """Per code (of ``start`` .. ``end`` - 1): whether it was interned (it stands for its string
        alone) or appended."""
        hashes = self._laid_out[2]
        return hashes[start:len(hashes) if end is None else end] != 0

    def contents(self) -> tuple[pa.Array, np.ndarray]:
        """Every string in code order and whether each was interned, as one consistent picture
        (the reader thread may be adding strings meanwhile)."""
        laid_out = self._laid_out
        starts, hashes = laid_out[0], laid_out[2]
        offsets, data, _ = self._gather(laid_out, np.arange(len(starts), dtype=np.int64), None)
        strings = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), data)
        return strings, hashes != 0

    def restore(self, values: pa.Array, interned: np.ndarray) -> None:
        """Make this pool the one ``contents()`` described: every code as it was.

        What the pool holds already (the query's constants, interned as the engine was built, as
        they were before the checkpoint) must be where the checkpoint begins. Raises ``ValueError``
        when it is not, or when an interned string is there twice.
        """
        from darwin.codegen.strings import hash_strings, rehash_strings

        held, held_interned = self.contents()
        if len(held) > len(values) or not values.slice(0, len(held)).cast(pa.large_string()).equals(held) \
                or not np.array_equal(held_interned, interned[:len(held)]):
            raise ValueError("it does not begin with the strings the query interned as it was built (its constants)")
        in_offsets, in_data = _string_buffers(values)
        n = len(values)
        with self._lock:
            self._dictionaries.clear()  # codes are kept, but remembering none is the safe side
            self._count = 0
            self._append(in_offsets, in_data)
            self._hashes[:n] = hash_strings(self._starts[:n], self._ends[:n], self._bases, self._sizes, interned)
            self._interned = int(np.count_nonzero(interned))
            size = len(self._slots)
            while size < 2 * self._interned:
                size *= 2
            self._slots = rehash_strings(self._hashes, n, size)
            self._publish()
        if not np.array_equal(self.encode(values.filter(pa.array(interned))), np.flatnonzero(interned)) \
                or len(self) != n:
            raise ValueError("an interned string is there twice")

    def _publish(self) -> None:
        """Make the strings so far visible to decoders, in one assignment (never half of it): the
        per-code arrays below the count are never written again, a grown one is a copy, and chunks
        stay where they are."""
        n = self._count
        self._laid_out = (self._starts[:n], self._ends[:n], self._hashes[:n], self._bases, self._sizes,
                          self._chunks)

    def text_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What generated code compares strings by (``darwin.codegen.strings.text_less``): each
        code's address and end, and the chunks' base addresses, as published (never changed after)."""
        starts, ends, _, bases, _, _ = self._laid_out
        return starts, ends, bases

    def decode(self, codes: np.ndarray, valid: np.ndarray | None) -> pa.Array:
        """The strings of ``codes`` as an Arrow string array (NULL where not ``valid``)."""
        offsets, data, bitmap = self._gather(self._laid_out, codes, valid)
        if offsets[-1] < 2**31:  # Arrow's string type: int32 offsets
            return pa.StringArray.from_buffers(len(codes), pa.py_buffer(offsets.astype(np.int32)), data, bitmap)
        strings = pa.LargeStringArray.from_buffers(len(codes), pa.py_buffer(offsets), data, bitmap)
        return strings.cast(pa.string())  # more than 2 GiB of text in one batch: Arrow refuses it here

    @staticmethod
    def _gather(laid_out: tuple, codes: np.ndarray, valid: np.ndarray | None) \
            -> tuple[np.ndarray, pa.Buffer, pa.Buffer | None]:
        """Arrow large-string offsets, bytes and validity bitmap of the strings ``codes``; the bytes
        in a buffer of Arrow's memory pool (see ``copy_strings``)."""
        from darwin.codegen.strings import copy_strings, string_offsets  # Numba fixes its target at the first kernel

        starts, ends, _, bases, _, _ = laid_out
        present = np.ones(len(codes), dtype=np.bool_) if valid is None else valid
        offsets = string_offsets(starts, ends, codes, present)
        data = pa.allocate_buffer(int(offsets[-1]))
        if data.size:
            copy_strings(starts, bases, codes, present, offsets, np.frombuffer(data, dtype=np.uint8))
        bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
        return offsets, data, bitmap


def _through_dictionary(arr: pa.DictionaryArray, codes_of: Callable[[pa.Array], np.ndarray]) -> np.ndarray:
    """Codes of a dictionary array: of its dictionary's strings, taken by its indices (nulls: 0)."""
    mapping = codes_of(arr.dictionary)
    indices = arr.indices
    indices = (indices.fill_null(0) if indices.null_count else indices).to_numpy(zero_copy_only=False)
    return mapping[indices] if len(mapping) else np.zeros(len(arr), dtype=np.int64)


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (one more than rows, into the bytes) and the bytes of a string array, zero-copy."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    n = len(arr)
    _, offsets_buffer, data_buffer = arr.buffers()
    offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=arr.offset + n + 1)[arr.offset:] \
        if n else np.zeros(1, dtype=offset_type)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None and data_buffer.size \
        else np.zeros(0, dtype=np.uint8)
    return offsets.astype(np.int64, copy=False), data


def _room(array: np.ndarray, needed: int) -> np.ndarray:
    """``array``, or a copy ``CODES_GROWTH`` times as long (or more) when it holds fewer than ``needed``
    elements. A pool of appended payload strings (Nexmark's ``extra``, a code per row) grows to tens of
    millions of codes in the reader thread, which a join query keeping every row waits on."""
    if len(array) >= needed:
        return array
    size = max(1, len(array))
    while size < needed:
        size *= CODES_GROWTH
    grown = np.zeros(size, dtype=array.dtype)
    grown[:len(array)] = array
    return grown


@dataclass
class Column:
    values: np.ndarray
    valid: np.ndarray | None  # None: no nulls


def concat_columns(parts: list[Column]) -> Column:
    """Columns one after another; with a validity mask if any part has one."""
    values = np.concatenate([c.values for c in parts])
    if all(c.valid is None for c in parts):
        return Column(values, None)
    return Column(values, np.concatenate([np.ones(len(c.values), np.bool_) if c.valid is None else c.valid
                                          for c in parts]))


@dataclass
class EncodedBatch:
    columns: dict[str, Column]
    length: int
    arrow: pa.RecordBatch | None = None  # the source batch, for string columns carried as row indices


def encode(batch: pa.RecordBatch, schema: Schema, pool: StringPool, source: str,
           as_row_index: frozenset[str] = frozenset(),
           computed: tuple[tuple[str, str, tuple, str], ...] = (), payload: frozenset[str] = frozenset(),
           done: dict[tuple[Field, str], Column] | None = None) -> EncodedBatch:
    """Typed columns of a batch; string columns in ``as_row_index`` carry row numbers, not codes,
    those in ``payload`` are appended to the pool uninterned, and ``computed`` columns are string
    functions of source columns evaluated by Arrow. ``done`` shares columns already encoded from
    the same batch (for another pipeline reading it), so each is encoded once."""
    columns = {}
    done = {} if done is None else done
    derived = {name: (func, args, column) for name, func, args, column in computed}
    for f in schema.fields:
        if f.name in derived:
            func, args, column = derived[f.name]
            columns[f.name] = _encode_column(apply_arrow(func, args, batch.column(column)), f, pool, source)
            continue
        how = "row" if f.name in as_row_index else "payload" if f.name in payload else "value"
        if (f, how) in done:
            columns[f.name] = done[f, how]
            continue
        try:
            arr = batch.column(f.name)
        except KeyError:
            raise SchemaError(f"source {source!r}: a batch lacks column {f.name!r}") from None
        if how == "row":
            _check_column(arr, f, source)
            valid = arr.is_valid().to_numpy(zero_copy_only=False) if f.nullable else None
            columns[f.name] = Column(np.arange(batch.num_rows, dtype=np.int64), valid)
        else:
            columns[f.name] = _encode_column(arr, f, pool, source, uninterned=how == "payload")
        done[f, how] = columns[f.name]
    return EncodedBatch(columns, batch.num_rows, batch if as_row_index else None)


def _check_column(arr: pa.Array, f: Field, source: str) -> None:
    got = f.dtype if pa.types.is_null(arr.type) else dtype_from_arrow(arr.type, f.name)
    if got is not f.dtype:
        raise SchemaError(f"source {source!r}: column {f.name!r} has type {arr.type} in this batch, "
                          f"but the query was built for {f.dtype.value}")
    if arr.null_count > 0 and not f.nullable:
        raise SchemaError(f"source {source!r}: column {f.name!r} holds nulls, but the query was built "
                          "with it as NOT NULL (the source declared no nulls)")


def _encode_column(arr: pa.Array, f: Field, pool: StringPool, source: str, uninterned: bool = False) -> Column:
    _check_column(arr, f, source)
    if pa.types.is_null(arr.type):  # only NULLs: a column of any type holds them
        arr = arr.cast(f.dtype.arrow)
    has_nulls = arr.null_count > 0
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if f.nullable else None
    if f.dtype is DType.STRING:
        return Column(pool.append(arr) if uninterned else pool.encode(arr), valid)
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
