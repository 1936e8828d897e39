"""A join side's column values in RocksDB, in blocks of rows, behind a bounded cache.

Rows are numbered densely (``darwin.state.join_rows``), so block ``b`` holds rows
``b * BLOCK_ROWS ...``: one RocksDB value per block (each column's values, then its validity),
keyed by the block number as big-endian bytes. A probe's matches are gathered block by block:
missing blocks come in with one multi-get, and the cache keeps at most ``cache_rows`` rows'
blocks, writing a changed block back when it leaves. New rows are appended to the last block,
so a stream's recent rows, the ones probes mostly find, stay cached.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import cast

import numpy as np
import rocksdict

from darwin.errors import StateError
from darwin.state.join_rows import column_parts
from darwin.state.rocksdb import checkpoint_db, empty_db, restore_db, rocksdb_errors
from darwin.types import Schema

BLOCK_SHIFT = 12
BLOCK_ROWS = 1 << BLOCK_SHIFT

Block = dict[str, np.ndarray]  # part ("value:<column>" / "valid:<column>") -> BLOCK_ROWS entries


class BlockColumns:
    def __init__(self, directory: Path, schema: Schema, cache_rows: int) -> None:
        self.directory = directory
        self.names = schema.names
        self.parts = column_parts(schema)
        self.cache_blocks = max(2, cache_rows >> BLOCK_SHIFT)
        self.cache: OrderedDict[int, Block] = OrderedDict()  # least recently used first
        self.dirty: set[int] = set()
        self.extent = 0  # rows 0..extent-1 are in RocksDB or the cache; blocks past it are new
        self.db = empty_db(directory)
        self._plan: tuple[np.ndarray, list[tuple[int, np.ndarray, np.ndarray]]] | None = None

    # -- blocks in and out of RocksDB ---------------------------------------------------------------
    def _encode(self, block: Block) -> bytes:
        return b"".join(block[part].tobytes() for part, _ in self.parts)

    def _decode(self, data: bytes) -> Block:
        block, at = {}, 0
        for part, dtype in self.parts:
            size = BLOCK_ROWS * dtype.itemsize
            block[part] = np.frombuffer(data, dtype=dtype, count=BLOCK_ROWS, offset=at).copy()
            at += size
        return block

    def _new(self) -> Block:
        return {part: np.zeros(BLOCK_ROWS, dtype=dtype) for part, dtype in self.parts}

    def _blocks(self, wanted: np.ndarray) -> list[Block]:
        """The blocks ``wanted`` (distinct numbers), loading the missing ones with one multi-get."""
        missing = [int(b) for b in wanted if int(b) not in self.cache and int(b) << BLOCK_SHIFT < self.extent]
        if missing:
            with rocksdb_errors(self.directory):
                got = cast(list[bytes | None], self.db.get([_block_key(b) for b in missing]))
            for b, data in zip(missing, got):
                if data is None:
                    raise StateError(f"RocksDB state in {str(self.directory)!r} has lost block {b} of a join's "
                                     "rows. A restart of the job resumes from its last checkpoint")
                self.cache[b] = self._decode(data)
        out = []
        for b in wanted.tolist():
            if b not in self.cache:
                self.cache[b] = self._new()
            self.cache.move_to_end(b)
            out.append(self.cache[b])
        self._evict(keep=len(wanted))
        return out

    def _evict(self, keep: int) -> None:
        """Shrink the cache to its limit (never below the ``keep`` blocks just used), writing changed blocks."""
        excess = len(self.cache) - max(self.cache_blocks, keep)
        if excess <= 0:
            return
        leaving = [b for b, _ in zip(self.cache, range(excess))]
        self._write([b for b in leaving if b in self.dirty])
        for b in leaving:
            del self.cache[b]

    def _write(self, blocks: list[int]) -> None:
        if not blocks:
            return
        batch = rocksdict.WriteBatch(raw_mode=True)
        for b in sorted(blocks):
            batch.put(_block_key(b), self._encode(self.cache[b]))
        with rocksdb_errors(self.directory):
            self.db.write(batch)
        self.dirty.difference_update(blocks)

    # -- the ColumnStore protocol -----------------------------------------------------------------
    def grow(self, capacity: int, count: int) -> None:
        pass  # blocks come as rows are written

    def write(self, first: int, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray) -> None:
        end = first + len(rows)
        numbers = np.arange(first >> BLOCK_SHIFT, ((end - 1) >> BLOCK_SHIFT) + 1)
        for b, block in zip(numbers.tolist(), self._blocks(numbers)):
            low, high = max(first, b << BLOCK_SHIFT), min(end, (b + 1) << BLOCK_SHIFT)
            source = rows[low - first:high - first]
            at = slice(low - (b << BLOCK_SHIFT), high - (b << BLOCK_SHIFT))
            for name in self.names:
                values, valid = columns[name]
                block[f"value:{name}"][at] = values[source]
                block[f"valid:{name}"][at] = True if valid is None else valid[source]
            self.dirty.add(b)
        self.extent = max(self.extent, end)
        self._plan = None

    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        groups = self._groups(rows)
        values = np.empty(len(rows), dtype=dict(self.parts)[f"value:{name}"])
        valid = np.empty(len(rows), dtype=np.bool_)
        for b, at, offsets in groups:
            block = self.cache[b] if b in self.cache else self._blocks(np.array([b]))[0]
            values[at] = block[f"value:{name}"][offsets]
            valid[at] = block[f"valid:{name}"][offsets]
        return values, valid

    def _groups(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Rows by block: (block, positions in ``rows``, offsets in the block); the blocks loaded.
        Every column of one output gathers the same rows: the grouping is kept for the next call."""
        if self._plan is not None and self._plan[0] is rows:
            return self._plan[1]
        numbers = rows >> BLOCK_SHIFT
        order = np.argsort(numbers, kind="stable")
        distinct, starts = np.unique(numbers[order], return_index=True)
        self._blocks(distinct)
        bounds = [*starts.tolist(), len(rows)]
        groups = [(int(b), order[bounds[i]:bounds[i + 1]], rows[order[bounds[i]:bounds[i + 1]]] & (BLOCK_ROWS - 1))
                  for i, b in enumerate(distinct.tolist())]
        self._plan = (rows, groups)
        return groups

    def keep(self, rows: np.ndarray) -> None:
        """Compaction in place, block by block: new block ``b`` takes its rows from old blocks ``>= b``
        (``rows`` ascend), so writing it never overwrites a row still to be moved."""
        count = len(rows)
        new_blocks, old_blocks = _blocks_holding(count), _blocks_holding(self.extent)
        for b in range(new_blocks):
            source = rows[b << BLOCK_SHIFT:(b + 1) << BLOCK_SHIFT]
            block = self._new()
            for name in self.names:
                block[f"value:{name}"][:len(source)], block[f"valid:{name}"][:len(source)] = \
                    self.gather(name, source)
            self.cache[b] = block
            self.cache.move_to_end(b)
            self.dirty.add(b)
            self._plan = None
        if old_blocks > new_blocks:
            with rocksdb_errors(self.directory):
                self.db.delete_range(_block_key(new_blocks), _block_key(old_blocks))
            for b in range(new_blocks, old_blocks):
                self.cache.pop(b, None)
                self.dirty.discard(b)
        self.extent = count
        self._plan = None
        self._evict(keep=0)

    def snapshot(self, directory: Path, table: str, count: int) -> list[str]:
        self._write(list(self.dirty))
        return checkpoint_db(self.db, self.directory, directory, table)

    def restore(self, directory: Path, table: str, count: int) -> None:
        self.db = restore_db(self.db, self.directory, directory, table)
        self.cache.clear()
        self.dirty.clear()
        self.extent, self._plan = count, None

    def close(self) -> None:
        self.db.close()


def _blocks_holding(rows: int) -> int:
    """How many blocks rows 0..rows-1 take."""
    return (rows + BLOCK_ROWS - 1) >> BLOCK_SHIFT


def _block_key(block: int) -> bytes:
    return int(block).to_bytes(8, "big")
