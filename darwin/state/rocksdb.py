"""The ``rocksdb`` backend: an in-memory delta table in front of RocksDB (through ``rocksdict``).

Compiled kernels aggregate into the delta, an ordinary ``HashTableState`` of at most
``state_delta_limit`` entries. The runtime merges the delta into RocksDB with one
``WriteBatch`` (a multi-get of the stored partials, a vectorised combine, one
write) when it is full, before windows fire and at checkpoints: grouped writes,
never one put per record. Keys are the window start and the group key as
order-preserving big-endian bytes, so the windows that fire are one range scan
from the first key. A value holds the entry's first-seen sequence number, so
fired windows drain in the same order as on the other backends, then the raw
accumulators. Checkpoints are RocksDB checkpoints (hard links to the SST files).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import rocksdict

from darwin.codegen.aggregates import AggLayout
from darwin.errors import CheckpointError
from darwin.state.hash_table import HashTableState
from darwin.state.merge import combine

SIGN = np.uint64(1 << 63)
MAX_KEY = b"\xff" * 1024
INITIAL_CAPACITY = 1024


class RocksBackend:
    name = "rocksdb"

    def __init__(self, path: Path, delta_limit: int, fresh: bool = True) -> None:
        self.path, self.delta_limit, self.fresh = path, delta_limit, fresh

    def hash_table(self, name: str, lay: AggLayout) -> RocksTable:
        directory = self.path / name
        if self.fresh and directory.exists():
            shutil.rmtree(directory)
        return RocksTable(directory, name, lay, self.delta_limit)

    def close(self) -> None:
        pass


def encode_keys(keys: list[np.ndarray]) -> list[bytes]:
    """Each row's key columns as bytes whose lexicographic order is the columns' numeric order."""
    n, width = len(keys[0]), 8 * len(keys)
    rows = np.empty((n, len(keys)), dtype=">u8")
    for j, k in enumerate(keys):
        rows[:, j] = k.view(np.uint64) ^ SIGN
    buf = rows.tobytes()
    return [buf[i:i + width] for i in range(0, n * width, width)]


def decode_keys(encoded: list[bytes], width: int) -> list[np.ndarray]:
    rows = np.frombuffer(b"".join(encoded), dtype=">u8").reshape(len(encoded), width)
    return [(rows[:, j] ^ SIGN).astype(np.uint64).view(np.int64) for j in range(width)]


class RocksTable:
    undo = False

    def __init__(self, directory: Path, name: str, lay: AggLayout, delta_limit: int) -> None:
        self.directory, self.name, self.lay = directory, name, lay
        self.delta_limit = delta_limit
        self.delta = HashTableState(name, lay.key_width, lay.value_dtypes, min(INITIAL_CAPACITY, delta_limit))
        self.stored = 0  # entries in RocksDB
        self.next_seq = 0  # first-seen sequence number of the next new entry
        self.merges = 0
        self.db = self._open()

    def _open(self) -> rocksdict.Rdict:
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        db = rocksdict.Rdict(str(self.directory / "db"), options)
        write = rocksdict.WriteOptions()
        write.disable_wal = True  # recovery goes back to a RocksDB checkpoint, never to the live files
        db.set_write_options(write)
        return db

    # -- what kernels see -----------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        return self.delta.array(name)

    def is_empty(self) -> bool:
        return self.delta.is_empty() and self.stored == 0

    def grow(self, needed: int) -> None:
        if self.delta.count + needed > self.delta_limit:
            self.merge()
        self.delta.grow(needed)

    # -- the delta into RocksDB -------------------------------------------------------------------
    def merge(self) -> None:
        """Fold the delta into RocksDB with one multi-get and one write batch, and empty it."""
        count = self.delta.count
        if count == 0:
            return
        keys = [k[:count] for k in self.delta.keys]
        values = [v[:count] for v in self.delta.values]
        encoded = encode_keys(keys)
        found = self.db.get(encoded)
        present = np.fromiter((v is not None for v in found), dtype=np.bool_, count=count)
        seq = np.empty(count, dtype=np.int64)
        fresh = ~present
        seq[fresh] = self.next_seq + np.arange(int(fresh.sum()), dtype=np.int64)
        self.next_seq += int(fresh.sum())
        if present.any():
            at = np.flatnonzero(present)
            old_seq, old_values = self._decode_values([found[i] for i in at])
            seq[at] = old_seq
            merged = combine(self.lay, old_values, [v[at] for v in values])
            values = [v.copy() for v in values]
            for v, m in zip(values, merged):
                v[at] = m
        batch = rocksdict.WriteBatch(raw_mode=True)
        for k, v in zip(encoded, self._encode_values(seq, values)):
            batch.put(k, v)
        self.db.write(batch)
        self.stored += int(fresh.sum())
        self.merges += 1
        self.delta.clear()

    def _encode_values(self, seq: np.ndarray, values: list[np.ndarray]) -> list[bytes]:
        rows = np.empty((len(seq), 1 + len(values)), dtype="<i8")
        rows[:, 0] = seq
        for j, v in enumerate(values):
            rows[:, 1 + j] = v.view(np.int64)
        width = 8 * rows.shape[1]
        buf = rows.tobytes()
        return [buf[i:i + width] for i in range(0, len(buf), width)]

    def _decode_values(self, encoded: list[bytes]) -> tuple[np.ndarray, list[np.ndarray]]:
        rows = np.frombuffer(b"".join(encoded), dtype="<i8").reshape(len(encoded), 1 + len(self.lay.value_dtypes))
        return rows[:, 0].copy(), [rows[:, 1 + j].copy().view(d) for j, d in enumerate(self.lay.value_dtypes)]

    # -- firing windows ---------------------------------------------------------------------------
    def fire(self, watermark: int, size_ms: int, final: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """Merge, then one range scan from the first key up to the first window still open.

        Yields one chunk per window (entries sorted by first-seen order need the whole window).
        """
        self.merge()
        end = MAX_KEY if final else encode_keys([np.array([watermark - size_ms + 1], dtype=np.int64)])[0]
        keys: list[bytes] = []
        values: list[bytes] = []
        first, removed = None, 0
        for k, v in self.db.items():
            if k >= end:
                break
            removed += 1
            if first is None:
                first = k
            elif keys and k[:8] != keys[0][:8]:  # the next window starts
                yield self._window(keys, values)
                keys, values = [], []
            keys.append(k)
            values.append(v)
        if keys:
            yield self._window(keys, values)
        if first is not None:
            self.db.delete_range(first, end)
            self.stored -= removed

    def _window(self, keys: list[bytes], values: list[bytes]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        key_columns = decode_keys(keys, self.lay.key_width)
        seq, value_columns = self._decode_values(values)
        order = np.argsort(seq, kind="stable")  # first-seen order, as on the other backends
        return [k[order] for k in key_columns], [v[order] for v in value_columns]

    def min_start(self) -> int | None:
        starts = [] if self.delta.is_empty() else [self.delta.min_start()]
        if self.stored:
            it = self.db.iter()
            it.seek_to_first()
            if it.valid():
                starts.append(int(decode_keys([it.key()], self.lay.key_width)[0][0]))
        return min(starts) if starts else None

    # -- checkpoints ------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        self.merge()
        self.db.flush()
        target = directory / f"{self.name}.rocksdb"
        rocksdict.Checkpoint(self.db).create_checkpoint(str(target))
        small = sorted(str(p.relative_to(directory)) for p in target.iterdir() if p.suffix != ".sst")
        return {"stored": self.stored, "next_seq": self.next_seq}, small  # SST files carry their own checksums

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        saved = directory / f"{self.name}.rocksdb"
        if not saved.is_dir():
            raise CheckpointError(f"checkpoint {str(directory)!r} has no RocksDB checkpoint for {self.name}")
        self.db.close()
        live = self.directory / "db"
        shutil.rmtree(live, ignore_errors=True)
        live.mkdir(parents=True)
        for f in saved.iterdir():  # SST files never change: link them; the rest RocksDB rewrites
            (os.link if f.suffix == ".sst" else shutil.copy2)(f, live / f.name)
        self.db = self._open()
        self.delta.clear()
        self.stored, self.next_seq = int(meta["stored"]), int(meta["next_seq"])

    def after_checkpoint(self, checkpoint_id: int) -> None:
        pass

    def close(self) -> None:
        self.db.close()
