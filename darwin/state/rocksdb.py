"""The ``rocksdb`` backend: an in-memory delta table in front of RocksDB (through ``rocksdict``).

Compiled kernels aggregate into the delta, an ordinary ``HashTableState`` of at most
``state_delta_limit`` entries that stays as a write-back cache. When the cache would pass
that limit, and at a checkpoint, what changed goes into RocksDB with one ``WriteBatch``
(grouped writes, never one put per record); entries new to the cache are first combined
with what RocksDB holds for them, with one multi-get. A window fires from the cache when
the cache holds all of it, so a window that opens and fires between two checkpoints never
reaches RocksDB. Keys are the window start and the group key as order-preserving
big-endian bytes, so a window the cache lost entries of is one range scan, joined with
what the cache holds of it. A value holds the entry's first-seen sequence number, so
fired windows drain in the same order as on the other backends, then the raw
accumulators. Checkpoints are RocksDB checkpoints whose files are copies, never hard
links shared with the live database or another checkpoint, each listed with its
checksum in the manifest: a damaged file breaks one checkpoint, and the one before
it still restores.
"""

from __future__ import annotations

import logging
import shutil
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np
import rocksdict

from darwin.codegen.aggregates import AggLayout
from darwin.errors import CheckpointError, StateError
from darwin.state.hash_table import HashTableState
from darwin.state.join_rows import SPILLING_PENDING_ROWS, JoinRows
from darwin.state.merge import combine
from darwin.state.ownership import StatePath
from darwin.state.placement import MappedFiles
from darwin.types import Schema

log = logging.getLogger(__name__)
SIGN = np.uint64(1 << 63)
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
MAX_KEY = b"\xff" * 1024
INITIAL_CAPACITY = 1024
WRITE_BUFFER = 128 << 20  # bytes of memtable before RocksDB flushes to an SST file


class RocksBackend:
    name = "rocksdb"

    def __init__(self, owned: StatePath, delta_limit: int) -> None:
        self.owned, self.delta_limit = owned, delta_limit

    def hash_table(self, name: str, lay: AggLayout, new: bool = False) -> RocksTable:
        return RocksTable(self.owned.table(name, new), name, lay, self.delta_limit)

    def stored_tables(self) -> list[str]:
        return self.owned.tables()

    def drop_table(self, name: str) -> None:
        self.owned.drop_table(name)

    def join_rows(self, name: str, schema: Schema, key_width: int) -> JoinRows:
        from darwin.state.rocksdb_join import BlockColumns

        directory = self.owned.table(name)
        return JoinRows(name, schema, key_width, MappedFiles(directory), BlockColumns(directory, schema,
                                                                                         self.delta_limit),
                         pending_limit=SPILLING_PENDING_ROWS)

    def scratch(self, name: str) -> MappedFiles:
        return MappedFiles(self.owned.table(name, new=True))  # a restore copies the checkpoint back: start empty

    def close(self) -> None:
        self.owned.close()


@contextmanager
def rocksdb_errors(directory: Path) -> Iterator[None]:
    """RocksDB's own errors (rocksdict raises bare ``Exception``) as a ``StateError`` naming the database."""
    try:
        yield
    except Exception as e:
        if type(e) is not Exception:  # a Python error of Darwin's, not one RocksDB reported
            raise
        raise StateError(f"RocksDB state in {str(directory)!r} failed: {e}. A restart of the job resumes from "
                         "its last checkpoint, which holds its own copy of the database") from None


def encode_keys(keys: list[np.ndarray]) -> list[bytes]:
    """Each row's key columns as bytes whose lexicographic order is the columns' numeric order."""
    return _row_bytes(_ordered_key_columns(keys))


FIRE_CHUNK = 1 << 16  # entries a window's read holds as bytes objects before it decodes them into arrays


def decode_keys(encoded: list[bytes], width: int) -> list[np.ndarray]:
    rows = _rows(encoded, ">u8", width)
    return [(rows[:, j] ^ SIGN).astype(np.uint64).view(np.int64) for j in range(width)]


def _row_bytes(rows: np.ndarray) -> list[bytes]:
    """Each row of a 2-D array as one bytes value."""
    buf, width = rows.tobytes(), rows.shape[1] * rows.itemsize
    return [buf[i:i + width] for i in range(0, len(buf), width)]


def _key_rows(keys: list[np.ndarray]) -> np.ndarray:
    """Each row's key columns as one opaque value (numpy's void) ordered as its RocksDB key: comparable and
    searchable in bulk."""
    return _ordered_key_columns(keys).view(np.dtype((np.void, 8 * len(keys)))).ravel()


def _ordered_key_columns(keys: list[np.ndarray]) -> np.ndarray:
    """The key columns side by side, big-endian with the sign bit flipped: bytes ordered as the numbers."""
    rows = np.empty((len(keys[0]), len(keys)), dtype=">u8")
    for j, k in enumerate(keys):
        rows[:, j] = k.view(np.uint64) ^ SIGN
    return rows


def _rows(encoded: list[bytes], dtype: str, width: int) -> np.ndarray:
    """The inverse of ``_row_bytes``: ``width`` columns of ``dtype``."""
    return np.frombuffer(b"".join(encoded), dtype=dtype).reshape(len(encoded), width)


def open_db(directory: Path, in_place_updates: bool = False) -> rocksdict.Rdict:
    """The live database under ``directory``, without a write-ahead log: recovery goes back to a
    RocksDB checkpoint, never to the live files."""
    with rocksdb_errors(directory):
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_write_buffer_size(WRITE_BUFFER)
        if in_place_updates:
            # every batch rewrites the same open windows' entries with values of the same size: update
            # them in the memtable in place (no snapshots are used; it needs single-writer memtables)
            options.set_allow_concurrent_memtable_write(False)
            options.set_inplace_update_support(True)
        db = rocksdict.Rdict(str(directory / "db"), options)
        write = rocksdict.WriteOptions()
        # (the rocksdict stubs declare disable_wal a method; at run time it is a bool property)
        write.disable_wal = True  # type: ignore[method-assign, assignment]
        db.set_write_options(write)
        return db


def empty_db(directory: Path, in_place_updates: bool = False) -> rocksdict.Rdict:
    """A table's live database, empty: a fresh run has none, and a resumed one copies its checkpoint's
    over it (``restore_db``), so the live files a killed run left (maybe damaged) are never opened."""
    shutil.rmtree(directory / "db", ignore_errors=True)
    return open_db(directory, in_place_updates)


def checkpoint_db(db: rocksdict.Rdict, live: Path, directory: Path, name: str) -> list[str]:
    """A RocksDB checkpoint ``<name>.rocksdb`` in ``directory`` whose files are all its own (copies,
    not hard links shared with the live database); its files, relative to ``directory``."""
    target = directory / f"{name}.rocksdb"
    with rocksdb_errors(live):
        db.flush()
        rocksdict.Checkpoint(db).create_checkpoint(str(target))
    for f in target.iterdir():
        if f.stat().st_nlink > 1:  # shared with the live database: give the checkpoint its own copy
            copy = f.with_name(f.name + ".copy")
            shutil.copyfile(f, copy)
            copy.replace(f)
    return sorted(str(p.relative_to(directory)) for p in target.iterdir())


def restore_db(db: rocksdict.Rdict, live: Path, directory: Path, name: str, in_place_updates: bool = False) \
        -> rocksdict.Rdict:
    """Close ``db`` and copy the checkpoint's database into its place: the live files never share a
    block with the checkpoint. The reopened database."""
    saved = directory / f"{name}.rocksdb"
    if not saved.is_dir():
        raise CheckpointError(f"checkpoint {str(directory)!r} has no RocksDB checkpoint for {name}")
    db.close()
    shutil.rmtree(live / "db", ignore_errors=True)
    shutil.copytree(saved, live / "db", copy_function=shutil.copyfile)
    return open_db(live, in_place_updates)


class RocksTable:
    """RocksDB behind a bounded write-back cache that compiled kernels update in place.

    The cache is a ``HashTableState`` whose kernel-visible value columns are followed by
    hidden ones that move with each entry: the values as last written to RocksDB, the
    entry's first-seen sequence number, and whether RocksDB holds it. ``merge`` writes the
    entries that changed, as one ``WriteBatch``; entries new to the cache are first combined
    with what RocksDB holds for them (one multi-get). When the cache would pass
    ``delta_limit`` entries it is merged and emptied; a checkpoint merges it too. The live
    database is never read back after a crash (recovery restores a checkpoint), so it needs
    to be current where a checkpoint copies it; a window's range scan is joined with the cache.

    Aggregates whose partial accumulators do not merge exactly (float sums and averages: a
    combine is not the fold the rows would have had; min/max of strings, whose codes only kernels
    order) are never combined: the cache keeps every
    live entry, past ``delta_limit`` if it must, and a restore loads them all back, so each
    entry is folded row by row from its first row as on the other backends. RocksDB then
    holds them for checkpoints only.
    """

    def __init__(self, directory: Path, name: str, lay: AggLayout, delta_limit: int) -> None:
        self.directory, self.name, self.lay = directory, name, lay
        self.delta_limit = delta_limit
        self.width = len(lay.value_dtypes)
        hidden = [*lay.value_dtypes, np.dtype(np.int64), np.dtype(np.int64)]  # written values, seq, stored
        self.delta = HashTableState(name, lay.key_width, [*lay.value_dtypes, *hidden],
                                    min(INITIAL_CAPACITY, delta_limit))
        self.stored = 0  # entries in RocksDB
        self.next_seq = 0  # first-seen sequence number of the next new entry
        self.evicted: set[int] | None = set()  # window starts with entries in RocksDB but not in the cache
        self.over_limit = False  # the cache passed delta_limit (entries that cannot be combined)
        self.db = self._open()

    def _open(self) -> rocksdict.Rdict:
        return empty_db(self.directory, in_place_updates=True)

    # -- what kernels see -----------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        return self.delta.array(name)

    def is_empty(self) -> bool:
        return self.delta.is_empty() and self.stored == 0

    def grow(self, needed: int) -> None:
        if self.delta.count + needed > self.delta_limit and not self.lay.merges_exactly:
            if not self.over_limit:
                self.over_limit = True
                log.warning("state %s on rocksdb: its aggregates (float sums, averages or min/max of strings) "
                            "cannot be folded in parts, so its %d entries stay in memory, past "
                            "state_delta_limit=%d", self.name,
                            self.delta.count + needed, self.delta_limit)
        elif self.delta.count + needed > self.delta_limit:
            self.merge()
            if self.evicted is not None:
                self.evicted.update(np.unique(self.delta.keys[0][: self.delta.count]).tolist())
            self.delta.clear()  # every entry is in RocksDB now: the cache starts over
        self.delta.grow(needed)

    def end_batch(self) -> None:
        """Nothing to write: the cache is written back when it is emptied and at a checkpoint."""

    # -- the cache into RocksDB -------------------------------------------------------------------
    def merge(self) -> None:
        """Write what changed since the last merge to RocksDB: one multi-get, one write batch."""
        with rocksdb_errors(self.directory):
            self._merge()

    def _merge(self) -> None:
        count, m = self.delta.count, self.width
        if count == 0:
            return
        columns = [c[:count] for c in self.delta.values]
        values, written, seq, stored = columns[:m], columns[m:2 * m], columns[2 * m], columns[2 * m + 1]
        keys = [k[:count] for k in self.delta.keys]
        new = stored == 0
        dirty = new.copy()
        for v, w in zip(values, written):
            dirty |= v.view(np.int64) != w.view(np.int64)
        changed = np.flatnonzero(dirty)
        if not len(changed):
            return
        changed = changed[np.lexsort([k[changed] for k in reversed(keys)])]  # RocksDB inserts sorted keys faster
        encoded = encode_keys([k[changed] for k in keys])
        fresh = np.flatnonzero(new[changed])
        if len(fresh):
            self._load(changed[fresh], [encoded[i] for i in fresh], keys, values, seq)
            stored[changed[fresh]] = 1
        batch = rocksdict.WriteBatch(raw_mode=True)
        deque(map(batch.put, encoded, self._encode_values(seq[changed], [v[changed] for v in values])), maxlen=0)
        self.db.write(batch)
        for v, w in zip(values, written):
            w[changed] = v[changed]

    def _load(self, new: np.ndarray, encoded: list[bytes], keys: list[np.ndarray], values: list[np.ndarray],
              seq: np.ndarray) -> None:
        """Entries new to the cache: fold in what RocksDB holds for them, or number them as first seen.

        Only entries of windows that lost entries from the cache can be in RocksDB already
        (``evicted``; None after a restore: any window may), so only those are looked up.
        """
        found: list[bytes | None] = [None] * len(new)
        if self.stored:
            maybe = np.ones(len(new), dtype=np.bool_) if self.evicted is None else \
                np.isin(keys[0][new], np.fromiter(self.evicted, dtype=np.int64, count=len(self.evicted)))
            lookups: list[int] = np.flatnonzero(maybe).tolist()
            got = cast(list[bytes | None], self.db.get([encoded[i] for i in lookups]))  # a multi-get: one per key
            for i, f in zip(lookups, got):
                found[i] = f
        present = np.fromiter((f is not None for f in found), dtype=np.bool_, count=len(new))
        fresh = np.sort(new[~present])  # cache order is first-seen order
        seq[fresh] = self.next_seq + np.arange(len(fresh), dtype=np.int64)
        self.next_seq += len(fresh)
        self.stored += len(fresh)
        if present.any():
            at = new[present]
            old_seq, old_values = self._decode_values([f for f in found if f is not None])
            seq[at] = old_seq
            for v, merged in zip(values, combine(self.lay, old_values, [v[at] for v in values])):
                v[at] = merged

    def _encode_values(self, seq: np.ndarray, values: list[np.ndarray]) -> list[bytes]:
        rows = np.empty((len(seq), 1 + len(values)), dtype="<i8")
        rows[:, 0] = seq
        for j, v in enumerate(values):
            rows[:, 1 + j] = v.view(np.int64)
        return _row_bytes(rows)

    def _decode_values(self, encoded: list[bytes]) -> tuple[np.ndarray, list[np.ndarray]]:
        rows = _rows(encoded, "<i8", 1 + self.width)
        return rows[:, 0].copy(), [rows[:, 1 + j].copy().view(d) for j, d in enumerate(self.lay.value_dtypes)]

    # -- firing windows ---------------------------------------------------------------------------
    def fire(self, watermark: int, size_ms: int, final: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """The windows with end <= watermark (all if ``final``), by window then first seen; their
        entries leave the cache and RocksDB. Nothing is written: a window the cache wholly holds (no
        entry of it was evicted) fires from the cache, the others from one range scan joined with what
        the cache holds of them.

        Yields one chunk per window (entries sorted by first-seen order need the whole window).
        """
        last = INT64_MAX if final else watermark - size_ms
        with rocksdb_errors(self.directory):
            scanned = self.evicted is None or any(s <= last for s in self.evicted)
            yield from self._fire(last, scanned)

    def _fire(self, last: int, scanned: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        count = self.delta.count
        starts = self.delta.keys[0][:count]
        fired = np.flatnonzero(starts <= last)
        fired = fired[np.argsort(starts[fired], kind="stable")]  # by window, then cache order
        bounds = np.flatnonzero(np.diff(starts[fired])) + 1
        cached = {int(starts[w[0]]): w for w in np.split(fired, bounds) if len(w)}
        end = MAX_KEY if last == INT64_MAX else encode_keys([np.array([last + 1], dtype=np.int64)])[0]
        removed = 0
        for start, stored in self._scan(end) if scanned else ():
            for earlier in [s for s in cached if s < start]:
                yield self._joined(None, cached.pop(earlier))
            removed += len(stored[0])
            yield self._joined(stored, cached.pop(start, fired[:0]))
        for window in cached.values():
            yield self._joined(None, window)
        if self.stored:  # copies a checkpoint wrote of windows the cache held, and what was scanned
            self.db.delete_range(encode_keys([np.array([INT64_MIN], dtype=np.int64)])[0], end)
            m = self.width
            self.stored -= removed if scanned else int(self.delta.values[2 * m + 1][fired].sum())
        self.delta.retain(starts > last)
        if self.evicted is not None:
            self.evicted = {s for s in self.evicted if s > last}
        elif self.stored == 0:
            self.evicted = set()

    def _scan(self, end: bytes) -> Iterator[tuple[int, tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]]]:
        """Each window RocksDB holds entries of below ``end``: its start, and its entries (sequence
        numbers, keys, values) in key order, decoded a chunk at a time as they come."""
        keys: list[bytes] = []
        values: list[bytes] = []
        window: list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]] = []  # its entries decoded so far
        start, boundary = 0, b""
        for k, v in cast(Iterable[tuple[bytes, bytes]], self.db.items()):  # raw mode: keys and values are bytes
            if k >= end:
                break
            if k >= boundary:  # the first key of a window: the previous one is complete
                if keys or window:
                    yield start, self._concatenated(window, keys, values)
                    keys, values, window = [], [], []
                start = int(decode_keys([k[:8]], 1)[0][0])
                boundary = encode_keys([np.array([start + 1], dtype=np.int64)])[0]
            keys.append(k)
            values.append(v)
            if len(keys) == FIRE_CHUNK:  # decoded as they come: a bytes object per entry costs ~5x its array row
                window.append(self._decoded(keys, values))
                keys, values = [], []
        if keys or window:
            yield start, self._concatenated(window, keys, values)

    def _decoded(self, keys: list[bytes], values: list[bytes]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        seq, value_columns = self._decode_values(values)
        return seq, decode_keys(keys, self.lay.key_width), value_columns

    def _concatenated(self, decoded: list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]], keys: list[bytes],
                      values: list[bytes]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """A window's chunks decoded, then the rest, as one."""
        if keys:
            decoded = [*decoded, self._decoded(keys, values)]
        return (np.concatenate([d[0] for d in decoded]),
                [np.concatenate([d[1][j] for d in decoded]) for j in range(self.lay.key_width)],
                [np.concatenate([d[2][j] for d in decoded]) for j in range(self.width)])

    def _joined(self, stored: tuple[np.ndarray, list[np.ndarray], list[np.ndarray]] | None, cached: np.ndarray) \
            -> tuple[list[np.ndarray], list[np.ndarray]]:
        """A window's entries in first-seen order: those RocksDB holds (``stored``, in key order) and the
        cache's (positions ``cached``, in cache order). A cache entry RocksDB holds a written copy of
        supersedes it; one the cache took up again after losing it (never written since) is combined
        with its stored part and keeps its number; one never written is numbered after every other."""
        m = self.width
        seq = self.delta.values[2 * m][cached]
        written = self.delta.values[2 * m + 1][cached] == 1
        keys = [k[cached] for k in self.delta.keys]
        values = [v[cached] for v in self.delta.values[:m]]
        found = np.zeros(len(cached), dtype=np.bool_)
        if stored is not None and len(stored[0]):
            stored_seq, stored_keys, stored_values = stored
            at = np.minimum(np.searchsorted(_key_rows(stored_keys), _key_rows(keys)), len(stored_seq) - 1)
            found = _key_rows([k[at] for k in stored_keys]) == _key_rows(keys)
            again = np.flatnonzero(found & ~written)
            if len(again):
                old = at[again]
                for v, merged in zip(values, combine(self.lay, [v[old] for v in stored_values],
                                                     [v[again] for v in values])):
                    v[again] = merged
                seq[again] = stored_seq[old]
            alone = np.ones(len(stored_seq), dtype=np.bool_)
            alone[at[found]] = False
            seq = np.concatenate([stored_seq[alone], seq])
            keys = [np.concatenate([s[alone], k]) for s, k in zip(stored_keys, keys)]
            values = [np.concatenate([s[alone], v]) for s, v in zip(stored_values, values)]
            found = np.concatenate([np.ones(int(alone.sum()), dtype=np.bool_), found])
            written = np.concatenate([np.ones(int(alone.sum()), dtype=np.bool_), written])
        new = np.flatnonzero(~found & ~written)  # in cache order, which is first-seen order
        seq[new] = self.next_seq + np.arange(len(new), dtype=np.int64)
        self.next_seq += len(new)
        order = np.argsort(seq, kind="stable")
        return [k[order] for k in keys], [v[order] for v in values]

    # -- state moving between workers ------------------------------------------------------------
    def entries(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Every entry, by window, then first-seen order (as the other backends' tables hold them)."""
        with rocksdb_errors(self.directory):
            self._merge()
            items = cast(list[tuple[bytes, bytes]], list(self.db.items()))
        keys = decode_keys([k for k, _ in items], self.lay.key_width)
        seq, values = self._decode_values([v for _, v in items])
        order = np.lexsort((seq, keys[0]))
        return [k[order] for k in keys], [v[order] for v in values]

    def add_entries(self, keys: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Entries the table does not hold, first seen after its own in the order given: written to
        RocksDB in one batch (entries that cannot be combined go into the cache too, as after a restore)."""
        n = len(keys[0])
        if not n:
            return
        seq = self.next_seq + np.arange(n, dtype=np.int64)
        encoded = encode_keys([np.asarray(k, dtype=np.int64) for k in keys])
        with rocksdb_errors(self.directory):
            self._merge()  # the cache's changes first: it may be emptied below
            batch = rocksdict.WriteBatch(raw_mode=True)
            deque(map(batch.put, encoded, self._encode_values(seq, [np.asarray(v) for v in values])), maxlen=0)
            self.db.write(batch)
            self.next_seq += n
            self.stored += n
            self.evicted = None  # any window may have entries in RocksDB that the cache does not hold
            if not self.lay.merges_exactly:
                self.delta.clear()
                self._load_all()

    def min_start(self) -> int | None:
        cached = self.delta.min_start()  # None when the cache is empty
        starts = [] if cached is None else [cached]
        if self.stored:
            with rocksdb_errors(self.directory):
                it = self.db.iter()
                it.seek_to_first()
                if it.valid():
                    starts.append(int(decode_keys([it.key()], self.lay.key_width)[0][0]))
        return min(starts) if starts else None

    # -- checkpoints ------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        self.merge()
        files = checkpoint_db(self.db, self.directory, directory, self.name)
        return {"stored": self.stored, "next_seq": self.next_seq}, files

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        self.db = restore_db(self.db, self.directory, directory, self.name, in_place_updates=True)
        self.delta.clear()
        self.stored, self.next_seq = int(meta["stored"]), int(meta["next_seq"])
        self.evicted = None if self.stored else set()  # the cache starts empty: anything may be stored
        if not self.lay.merges_exactly and self.stored:
            with rocksdb_errors(self.directory):
                self._load_all()

    def _load_all(self) -> None:
        """Every stored entry back into the cache, in first-seen order, as written (nothing to combine later)."""
        items = cast(list[tuple[bytes, bytes]], list(self.db.items()))
        keys = decode_keys([k for k, _ in items], self.lay.key_width)
        seq, values = self._decode_values([v for _, v in items])
        order = np.argsort(seq, kind="stable")
        values = [v[order] for v in values]
        stored = np.ones(len(items), np.int64)
        self.delta.add_entries([k[order] for k in keys], [*values, *(v.copy() for v in values), seq[order], stored])
        self.evicted = set()

    def after_checkpoint(self, checkpoint_id: int) -> None:
        pass

    def close(self) -> None:
        self.db.close()
