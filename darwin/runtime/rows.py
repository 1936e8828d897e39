"""Rows held by stream operators as columns, and what they do with them: sort rows by partition,
sort keys and arrival, and match retractions with the rows they take back."""

from __future__ import annotations

import numpy as np

from darwin.plan import nodes as pn
from darwin.runtime.encoding import Column, EncodedBatch, StringPool, concat_columns
from darwin.types import DType, Field

ADDS = (pn.ChangeKind.INSERT, pn.ChangeKind.UPDATE_AFTER)  # change kinds that add a row
CANONICAL_NAN = np.int64(0x7FF8000000000000)
MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


class Rows:
    """Rows as columns (values and validity), indexed together."""

    def __init__(self, fields: list[Field], columns: dict[str, Column], length: int) -> None:
        self.fields, self.columns, self.length = fields, columns, length

    @staticmethod
    def of(fields: list[Field], source: Rows | EncodedBatch) -> Rows:
        """The columns ``fields`` of a batch or of other rows, as rows: views, nothing copied."""
        return Rows(fields, {f.name: source.columns[f.name] for f in fields}, source.length)

    @staticmethod
    def empty(fields: list[Field], length: int = 0) -> Rows:
        return Rows(fields, {f.name: Column(np.zeros(length, f.dtype.numpy),
                                             np.zeros(length, np.bool_) if f.nullable else None)
                              for f in fields}, length)

    def take(self, at: np.ndarray) -> Rows:
        return Rows(self.fields, {n: Column(c.values[at], None if c.valid is None else c.valid[at])
                                   for n, c in self.columns.items()}, len(at))

    def put(self, at: np.ndarray, rows: Rows, source: np.ndarray) -> None:
        for f in self.fields:
            mine, theirs = self.columns[f.name], rows.columns[f.name]
            mine.values[at] = theirs.values[source]
            if mine.valid is not None:
                mine.valid[at] = True if theirs.valid is None else theirs.valid[source]

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        fields = parts[0].fields
        columns = {}
        for f in fields:
            c = concat_columns([p.columns[f.name] for p in parts])
            columns[f.name] = Column(c.values.astype(f.dtype.numpy, copy=False), c.valid)
        return Rows(fields, columns, sum(p.length for p in parts))

    def resized(self, length: int) -> Rows:
        grown = Rows.empty(self.fields, length)
        n = min(length, self.length)
        for f in self.fields:
            mine, theirs = grown.columns[f.name], self.columns[f.name]
            mine.values[:n] = theirs.values[:n]
            if mine.valid is not None:
                mine.valid[:n] = True if theirs.valid is None else theirs.valid[:n]
        return grown


def sort_rows(rows: Rows, types: dict[str, DType], order: tuple[pn.SortKey, ...], latest_first: bool,
              part: np.ndarray, seq: np.ndarray, among: np.ndarray, parts: int, pool: StringPool) \
        -> tuple[np.ndarray, np.ndarray]:
    """The rows ``among`` sorted by (partition, sort keys, arrival: the later first if
    ``latest_first``), and each one's position in its partition (partitions are 0..parts-1)."""
    keys = [-seq[among] if latest_first else seq[among], *reversed(order_components(rows, types, order, among, pool)),
            part[among]]
    ranked = among[np.lexsort(keys)]
    sorted_part = part[ranked]
    first = np.searchsorted(sorted_part, np.arange(parts))
    return ranked, np.arange(len(ranked)) - first[sorted_part]


def order_components(rows: Rows, types: dict[str, DType], order: tuple[pn.SortKey, ...], among: np.ndarray,
                     pool: StringPool) -> list[np.ndarray]:
    """Integer components ordering the rows ``among`` by the sort keys, most significant first:
    for each key where its NULLs go (if it has any), then its value."""
    components: list[np.ndarray] = []
    for k in order:
        value, nulls = order_key(rows.columns[k.column], types[k.column], k.descending, among, pool)
        components += [value] if nulls is None else [nulls, value]
    return components


def order_key(c: Column, dtype: DType, descending: bool, among: np.ndarray, pool: StringPool) \
        -> tuple[np.ndarray, np.ndarray | None]:
    """Integers ordering as the column's values do (NaN above every number, -0.0 equal to 0.0,
    strings by their text), reversed when descending; and where NULLs go (None: there are none)."""
    v = c.values[among]
    if dtype is DType.FLOAT64:
        bits = np.where(np.isnan(v), CANONICAL_NAN, (v + 0.0).view(np.int64))
        key = np.where(bits < 0, bits ^ MAGNITUDE, bits)
    elif dtype is DType.STRING:
        text = np.array([pool.value(int(code)) for code in v], dtype=object)
        key = np.unique(text, return_inverse=True)[1].astype(np.int64) if len(text) else v.astype(np.int64)
    else:
        key = v.astype(np.int64)
    if descending:
        key = ~key
    if c.valid is None:
        return key, None
    valid = c.valid[among]
    return np.where(valid, key, 0), (~valid if descending else valid).astype(np.int8)


def first_seen(ids: np.ndarray) -> np.ndarray:
    """The distinct ids in the order they first appear."""
    unique, first = np.unique(ids, return_index=True)
    return unique[np.argsort(first, kind="stable")]


def retracted(held: Rows, seq: np.ndarray, gone: Rows) -> np.ndarray:
    """Which held rows the retractions ``gone`` take back: per distinct row, as many of its equals
    as are retracted, the earliest arrivals first."""
    both = Rows.concat([held, gone])
    matrix = np.stack([bits for c in both.columns.values() for bits in row_bits(c, both.length)], axis=1)
    _, group = np.unique(matrix, axis=0, return_inverse=True)
    group = group.ravel()
    mine, theirs = group[:held.length], group[held.length:]
    wanted = np.bincount(theirs, minlength=group.max() + 1)
    order = np.lexsort([seq, mine])
    sorted_groups = mine[order]
    nth = np.arange(len(order)) - np.searchsorted(sorted_groups, sorted_groups)
    out = np.zeros(held.length, np.bool_)
    out[order] = nth < wanted[sorted_groups]
    return out


def row_bits(c: Column, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A column as int64 components that are equal where its values are the same (NULLs equal to
    each other, NaN to NaN, -0.0 not to 0.0): a retraction takes back the row emitted, bit for bit,
    never an equal-comparing other one."""
    valid = valid_mask(c, n)
    values = c.values if c.values.dtype != np.float64 else np.where(np.isnan(c.values), np.nan, c.values).view(np.int64)
    return np.where(valid, values, 0), valid.astype(np.int64)


def same_values(a: tuple[np.ndarray, np.ndarray | None], b: tuple[np.ndarray, np.ndarray | None], n: int) \
        -> np.ndarray:
    """Row by row, whether two (values, validity) columns hold the same: NaN equal to NaN, NULL to
    NULL, -0.0 not to 0.0. An unchanged result is not emitted again, and the operator keeps the new
    one: only a result bit for bit the one emitted may stand for it, or a later retraction would
    not be the row it takes back."""
    (av, am), (bv, bm) = a, b
    a_valid = np.ones(n, np.bool_) if am is None else am
    b_valid = np.ones(n, np.bool_) if bm is None else bm
    if av.dtype.kind == "f":
        equal = (av == bv) & (np.signbit(av) == np.signbit(bv))
        equal |= np.isnan(av) & np.isnan(bv)
    else:
        equal = av == bv
    return (a_valid == b_valid) & (equal | ~a_valid)


def valid_mask(c: Column, n: int) -> np.ndarray:
    return np.ones(n, np.bool_) if c.valid is None else c.valid
