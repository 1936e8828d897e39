"""The rows one side of a join keeps: columns, keys, and what decides when a row leaves.

Rows are appended in arrival order and indexed by key (``darwin.codegen.join_index``); freed
rows are marked dead and dropped when they outnumber the live ones. Per row: its key
components, its bound (freed once the other side's watermark passes it), the watermark at its
arrival (state TTL) and how many rows it has matched (outer joins).

Where the arrays live is the backend's choice: the bookkeeping arrays come from a
``Placement`` (DRAM, or memory-mapped files), the column values from a ``ColumnStore`` (arrays
from the same placement, or blocks in RocksDB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np

from darwin.codegen import join_index as ji
from darwin.state.pending_rows import PendingRows
from darwin.state.placement import InMemory, Placement, copy_rows
from darwin.state.snapshot import load_arrays, save_arrays
from darwin.types import Schema

PER_ROW = ("keys", "matches", "alive", "bound", "stamp")  # moved by compaction, saved by checkpoints
OPTIONAL = ("matches", "bound", "stamp")  # kept only where the join needs them (``JoinRows.track``)
INT64_MAX = np.iinfo(np.int64).max


def column_parts(schema: Schema) -> list[tuple[str, np.dtype]]:
    """How a column store names and types its arrays: ``value:<column>`` and ``valid:<column>``."""
    return [p for f in schema.fields
            for p in ((f"value:{f.name}", np.dtype(f.dtype.numpy)), (f"valid:{f.name}", np.dtype(np.bool_)))]


class ColumnStore(Protocol):
    """The column values of a join side's rows, by row number."""

    def grow(self, capacity: int, count: int) -> None:
        """Room for rows 0..capacity-1, keeping rows 0..count-1."""
    def write(self, first: int, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray) -> None:
        """Rows first, first+1, ... take the values of batch rows ``rows``."""
    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Values and validity of column ``name`` at kept rows ``rows`` (all >= 0); None: all valid."""
    def keep(self, rows: np.ndarray) -> None:
        """Compaction: rows 0, 1, ... become the rows ``rows`` (ascending)."""
    def snapshot(self, directory: Path, table: str, count: int) -> list[str]: ...
    def restore(self, directory: Path, table: str, count: int) -> None: ...
    def close(self) -> None: ...


class ArrayColumns:
    """Column values in arrays of a ``Placement``: one values array per column, and one validity
    array per column that may hold NULLs (a NOT NULL column's rows are all valid: nothing to keep)."""

    def __init__(self, schema: Schema, placement: Placement) -> None:
        self.schema, self.placement = schema, placement
        self.arrays: dict[str, np.ndarray] = {}

    def grow(self, capacity: int, count: int) -> None:
        for part, dtype in self._parts():
            new = self.placement.allocate(part, (capacity,), dtype)
            old = self.arrays.get(part)
            if old is not None and count:
                new[:count] = old[:count]
            self.arrays[part] = new

    def write(self, first: int, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray) -> None:
        end = first + len(rows)
        for f in self.schema.fields:
            values, valid = columns[f.name]
            self.arrays[f"value:{f.name}"][first:end] = taken(values, rows)
            if f.nullable:
                self.arrays[f"valid:{f.name}"][first:end] = True if valid is None else taken(valid, rows)

    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        valid = self.arrays.get(f"valid:{name}")
        return self.arrays[f"value:{name}"][rows], None if valid is None else valid[rows]

    def _parts(self) -> list[tuple[str, np.dtype]]:
        nullable = {f.name for f in self.schema.fields if f.nullable}
        return [(part, dtype) for part, dtype in column_parts(self.schema)
                if not part.startswith("valid:") or part[len("valid:"):] in nullable]

    def keep(self, rows: np.ndarray) -> None:
        for array in self.arrays.values():
            array[:len(rows)] = array[rows]

    def snapshot(self, directory: Path, table: str, count: int) -> list[str]:
        return save_arrays(directory, table, {_file_part(p): a[:count] for p, a in self.arrays.items()})

    def restore(self, directory: Path, table: str, count: int) -> None:
        parts = list(self.arrays)
        for part, saved in zip(parts, load_arrays(directory, table, [_file_part(p) for p in parts], mmap=True)):
            copy_rows(self.arrays[part], saved, count)

    def close(self) -> None:
        pass


def taken(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` for ascending distinct ``rows``: the array itself when they are all of its
    rows (a join usually keeps a whole batch), so copying it in is a slice copy, not a gather."""
    return array if len(rows) == len(array) else array[rows]


def _file_part(part: str) -> str:
    return part.replace(":", "__")


GROWTH = 4  # rows grow fourfold: a third of doubling's copying, and untouched room costs no memory
SCANS_PER_INDEX = 8  # pending rows are indexed once probes' scans have read this many times as many rows
CHUNK_SCAN_ROWS = 1024  # what scanning one more chunk costs in Python, in rows scanned
SPILLING_PENDING_ROWS = 1 << 18  # rows a backend keeping state on disk lets wait unindexed in memory


class JoinRows:
    # the per-row arrays (``PER_ROW``), placed by ``_grow``; the key index over them (``slots``, and
    # ``next`` chaining a key's rows), rebuilt from ``keys``
    keys: np.ndarray
    next: np.ndarray
    matches: np.ndarray
    alive: np.ndarray
    bound: np.ndarray
    stamp: np.ndarray

    def __init__(self, name: str, schema: Schema, key_width: int, placement: Placement | None = None,
                 columns: ColumnStore | None = None, capacity: int = 1024, pending_limit: int | None = None) -> None:
        """``pending_limit``: how many rows may wait unindexed in memory (``darwin.state.pending_rows``)
        before they are indexed; None: any number (the rows would be in memory anyway)."""
        self.name, self.schema, self.key_width = name, schema, key_width
        self.placement = placement if placement is not None else InMemory()
        self.columns = columns if columns is not None else ArrayColumns(schema, self.placement)
        self.pending = PendingRows(schema)
        self.pending_limit = pending_limit
        self.defer = False  # whether rows wait unindexed (``track``)
        self.scanned = 0  # pending rows scanned by probes since pending rows were last indexed
        self.count = 0  # rows numbered: rows 0..stored-1 indexed, stored..count-1 pending
        self.stored = 0
        self._last_split: tuple[np.ndarray, int, tuple[tuple[np.ndarray, np.ndarray], ...]] | None = None
        self.dead = 0
        self.distinct = 0
        self.capacity = 0
        self.lowest_bound = INT64_MAX  # no live row's bound is below it: frees below it need no scan
        self.slots = np.zeros((0, 1 + key_width), dtype=np.int64)  # the key index, sized by _index_room
        self.per_row: tuple[str, ...] = PER_ROW
        for part in OPTIONAL:
            setattr(self, part, np.zeros(0, dtype=np.int64))
        self._grow(capacity)
        self._index_room(capacity)

    def track(self, matches: bool, bound: bool, stamp: bool, withdrawn: bool = False) -> None:
        """Keep per row only what the join reads again, before any row arrives: how many rows it
        matched (an outer side), its bound (an interval or window join), its arrival watermark (a
        state TTL). A regular inner join keeps none of them: 24 bytes a row less to write.

        Rows wait unindexed (``darwin.state.pending_rows``) unless the join updates them in place
        (match counts, stamps) or takes them back (``withdrawn``: an updating input's retractions)."""
        assert self.count == 0, "a join side's bookkeeping is chosen before it keeps rows"
        self.defer = not (matches or stamp or withdrawn) and self.pending_limit != 0
        wanted = {"matches": matches, "bound": bound, "stamp": stamp}
        self.per_row = tuple(p for p in PER_ROW if wanted.get(p, True))
        for part in OPTIONAL:
            if not wanted[part]:
                setattr(self, part, np.zeros(0, dtype=np.int64))

    def _grow(self, needed: int) -> None:
        """Room for ``needed`` rows: arrays of twice the size, the kept rows copied (row numbers, so
        the index, stay as they are)."""
        capacity = max(self.capacity, 1)
        while capacity < needed:
            capacity *= GROWTH
        if capacity == self.capacity:
            return
        count = self.stored
        for part, shape, dtype in (("keys", (capacity, self.key_width), np.int64), ("next", (capacity,), np.int64),
                                   ("matches", (capacity,), np.int64), ("alive", (capacity,), np.bool_),
                                   ("bound", (capacity,), np.int64), ("stamp", (capacity,), np.int64)):
            if part != "next" and part not in self.per_row:
                continue
            new = self.placement.allocate(part, shape, np.dtype(dtype))
            if count:
                new[:count] = getattr(self, part)[:count]
            setattr(self, part, new)
        self.columns.grow(capacity, count)
        self.capacity = capacity

    def _index_room(self, keys: int) -> None:
        """A key index of at least twice ``keys`` slots; the keys move into a larger one."""
        size = max(16, len(self.slots))
        if len(self.slots) >= 2 * keys:
            return
        while size < 2 * keys:
            size *= 2
        old = self.slots
        self.slots = self.placement.allocate("slots", (size, 1 + self.key_width), np.dtype(np.int64))
        self.slots[:, 0] = ji.EMPTY
        ji.move_slots(old, self.slots)

    def _reindex(self) -> None:
        """Index the rows again (they were renumbered or restored)."""
        self.slots = np.zeros((0, 1 + self.key_width), dtype=np.int64)
        self._index_room(max(self.stored, 1))
        self.distinct = ji.rebuild(self.slots, self.keys, self.next, self.stored)

    @property
    def live(self) -> int:
        return self.stored - self.dead + self.pending.live

    def append(self, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray,
               keys: np.ndarray, hashes: np.ndarray, bound: np.ndarray, stamp: int, matches: np.ndarray) -> None:
        """Keep batch rows ``rows`` (ascending indices into ``columns``/``keys``/``hashes``/``bound``/``matches``),
        numbered ``count``, ``count`` + 1, ... in order."""
        if len(rows) == 0:
            return
        if not self.defer:
            self._store(columns, rows, keys, hashes, bound, stamp, matches)
            self.count = self.stored
            return
        self.pending.add(columns, rows, keys, hashes, bound if "bound" in self.per_row else None)
        self.lowest_bound = min(self.lowest_bound, self.pending.lowest_bound)
        self.count = self.stored + self.pending.rows
        if self.pending_limit is not None and self.pending.rows > self.pending_limit:
            self.index_pending()

    def index_pending(self) -> None:
        """Move the pending rows into the arrays and the index, numbers unchanged (dead ones too, as dead rows)."""
        for chunk in self.pending.take():
            first = self.stored
            n = chunk.rows
            every = np.arange(n)
            self._store(chunk.columns, every, chunk.keys, chunk.hashes, chunk.bound, 0, np.zeros(0, np.int64))
            if chunk.dead:
                self.alive[first + np.flatnonzero(~chunk.alive)] = False
                self.dead += chunk.dead
        self.scanned = 0
        assert self.stored == self.count

    def _store(self, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray,
               keys: np.ndarray, hashes: np.ndarray, bound: np.ndarray, stamp: int, matches: np.ndarray) -> None:
        """Write batch rows ``rows`` into the arrays as rows ``stored``, ``stored`` + 1, ... and index them."""
        n = len(rows)
        first = self.stored
        self._grow(first + n)
        end = first + n
        self.columns.write(first, columns, rows)
        self.keys[first:end] = taken(keys, rows)
        self.alive[first:end] = True
        if "matches" in self.per_row:
            self.matches[first:end] = taken(matches, rows)
        if "bound" in self.per_row:
            bounds = taken(bound, rows)
            self.bound[first:end] = bounds
            self.lowest_bound = min(self.lowest_bound, int(bounds.min()))
        if "stamp" in self.per_row:
            self.stamp[first:end] = stamp
        done = 0
        while done < n:  # the index grows with the keys added, not by the batch's rows
            self._index_room(self.distinct + 1)
            done, added = ji.append_rows(self.slots, self.next, keys, hashes, rows, first, done,
                                         len(self.slots) // 2 - self.distinct)
            self.distinct += added
            if done < n:
                self._index_room(2 * self.distinct)
        self.stored = end

    def probe(self, keys: np.ndarray, hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (batch row, kept row) of equal keys, in the order of ``rows``, each one's kept rows in
        arrival order; pending rows are scanned, or indexed first once scans have cost about as much."""
        empty = np.zeros(0, dtype=np.int64)
        if self.live == 0 or not len(rows):
            return empty, empty
        if self.pending.live:
            # a scan indexes the probe's rows and reads every pending one
            self.scanned += len(rows) + self.pending.rows + CHUNK_SCAN_ROWS * len(self.pending.chunks)
            if self.scanned > SCANS_PER_INDEX * self.pending.rows:
                self.index_pending()
        stored = ji.probe_rows(self.slots, self.next, self.alive, keys, hashes, rows) \
            if self.stored > self.dead else (empty, empty)
        if not self.pending.live:
            return stored
        positions, found = self.pending.scan(keys, hashes, rows)
        if not len(positions):
            return stored
        # the indexed rows of a batch row before its pending ones, each in arrival order
        position_of = np.empty(int(rows.max()) + 1, dtype=np.int64)
        position_of[rows] = np.arange(len(rows))
        order, _ = ji.grouped_order(np.concatenate((position_of[stored[0]], positions)), len(rows))
        return (np.concatenate((stored[0], rows[positions]))[order],
                np.concatenate((stored[1], found + self.stored))[order])

    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Values and validity of column ``name`` for kept rows ``rows`` (-1: NULL); None: all valid."""
        present = rows >= 0
        if self.pending.rows and (rows >= self.stored).any():
            return self._gather_both(name, rows, present)
        if present.all():
            return self.columns.gather(name, rows)
        values = np.zeros(len(rows), dtype=self.schema.field(name).dtype.numpy)
        valid = np.zeros(len(rows), dtype=np.bool_)
        if present.any():
            values[present], got = self.columns.gather(name, rows[present])
            valid[present] = True if got is None else got
        return values, valid

    def _gather_both(self, name: str, rows: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``gather`` of rows some of which are pending."""
        values = np.zeros(len(rows), dtype=self.schema.field(name).dtype.numpy)
        valid = np.zeros(len(rows), dtype=np.bool_)
        (stored, at_stored), (pending, at_pending) = self._split(rows, present)
        for part, got in ((stored, self.columns.gather(name, at_stored) if len(at_stored) else None),
                          (pending, self.pending.gather(name, at_pending))):
            if got is not None:
                values[part] = got[0]
                valid[part] = True if got[1] is None else got[1]
        if present.all() and name not in self.pending.nullable:
            return values, None
        return values, valid

    def _split(self, rows: np.ndarray, present: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Which of ``rows`` are indexed and which pending, each with their numbers there; found
        once for every column gathered at the same rows."""
        if self._last_split is not None and self._last_split[0] is rows and self._last_split[1] == self.stored:
            return self._last_split[2]
        stored, pending = present & (rows < self.stored), rows >= self.stored
        split = ((stored, rows[stored]), (pending, rows[pending] - self.stored))
        self._last_split = (rows, self.stored, split)
        return split

    def free(self, expired: np.ndarray) -> np.ndarray:
        """Mark live rows where ``expired`` (over rows 0..count-1) dead; the freed rows, in order."""
        self.index_pending()
        freed = np.flatnonzero(expired & self.alive[:self.count])
        self.alive[freed] = False
        self.dead += len(freed)
        return freed

    def taken_back(self, rows: np.ndarray) -> None:
        """Rows ``rows``, already marked dead by the retractions that took them back, are counted dead."""
        self.dead += len(rows)

    def free_below(self, watermark: int) -> np.ndarray:
        """Free the live rows whose bound is below ``watermark``; the freed rows, in order."""
        if watermark <= self.lowest_bound:
            return np.zeros(0, dtype=np.int64)
        stored = self.stored
        freed = np.flatnonzero((self.bound[:stored] < watermark) & self.alive[:stored])
        self.alive[freed] = False
        self.dead += len(freed)
        if self.pending.rows:
            freed = np.concatenate((freed, self.pending.free_below(watermark) + stored))
        self._find_lowest_bound()
        return freed

    def _find_lowest_bound(self) -> None:
        if "bound" not in self.per_row:
            self.lowest_bound = INT64_MAX
            return
        live = self.bound[:self.stored][self.alive[:self.stored]]
        self.lowest_bound = min(int(live.min()) if len(live) else INT64_MAX, self.pending.lowest_bound)

    def compact(self) -> None:
        """Drop dead rows once they outnumber the live ones (after the caller is done with them):
        the indexed rows are renumbered and indexed again, pending rows only renumbered."""
        self.pending.compact()
        if self.dead and self.dead >= self.stored - self.dead:
            keep = np.flatnonzero(self.alive[:self.stored])
            for part in self.per_row:
                array = getattr(self, part)
                array[:len(keep)] = array[keep]
            self.columns.keep(keep)
            self.stored, self.dead = len(keep), 0
            self.alive[self.stored:] = False
            self._reindex()
        self.count = self.stored + self.pending.rows

    # -- checkpoints ----------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        self.index_pending()  # a checkpoint's files are the arrays', as before pending rows were kept
        self.compact()
        count = self.count
        files = save_arrays(directory, self.name, {p: getattr(self, p)[:count] for p in self.per_row})
        files += self.columns.snapshot(directory, self.name, count)
        return {"count": count, "dead": self.dead}, files

    def restore(self, directory: Path, meta: dict[str, Any]) -> None:
        count = int(meta["count"])
        self.pending.take()
        self.count = self.stored = self.dead = self.scanned = 0
        self._grow(max(count, 1))
        for part, saved in zip(self.per_row, load_arrays(directory, self.name, list(self.per_row), mmap=True)):
            copy_rows(getattr(self, part), saved, count)
        self.columns.restore(directory, self.name, count)
        self.count = self.stored = count
        self.dead = int(meta["dead"])
        self._find_lowest_bound()
        self._reindex()

    def close(self) -> None:
        self.columns.close()
        self.placement.close()
