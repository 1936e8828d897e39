"""The rows one side of a join keeps: columns, keys, and what decides when a row leaves.

Rows are appended in arrival order and indexed by key (``darwin.codegen.join_index``); freed
rows are marked dead and dropped when they outnumber the live ones. Per row: its key
components, its bound (freed once the other side's watermark passes it), the watermark at its
arrival (state TTL) and how many rows it has matched (outer joins).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import join_index as ji
from darwin.types import Schema

BOOKKEEPING = ("next", "matches", "alive", "bound", "stamp")


class JoinRows:
    def __init__(self, name: str, schema: Schema, key_width: int, capacity: int = 1024) -> None:
        self.name, self.schema, self.key_width = name, schema, key_width
        self.count = 0
        self.dead = 0
        self.distinct = 0
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        self.columns = {f.name: (np.zeros(capacity, dtype=f.dtype.numpy), np.zeros(capacity, dtype=np.bool_))
                        for f in self.schema.fields}
        self.keys = np.zeros((capacity, self.key_width), dtype=np.int64)
        self.next = np.full(capacity, ji.EMPTY, dtype=np.int64)
        self.matches = np.zeros(capacity, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.bound = np.zeros(capacity, dtype=np.int64)
        self.stamp = np.zeros(capacity, dtype=np.int64)
        self._index(capacity)

    def _index(self, capacity: int) -> None:
        size = 16
        while size < 2 * capacity:
            size *= 2
        self.slot_first = np.full(size, ji.EMPTY, dtype=np.int64)
        self.slot_last = np.full(size, ji.EMPTY, dtype=np.int64)

    @property
    def capacity(self) -> int:
        return len(self.next)

    @property
    def live(self) -> int:
        return self.count - self.dead

    def _arrays(self) -> dict[str, np.ndarray]:
        out = {f"value:{n}": v for n, (v, _) in self.columns.items()}
        out.update({f"valid:{n}": m for n, (_, m) in self.columns.items()})
        out.update(keys=self.keys, next=self.next, matches=self.matches, alive=self.alive, bound=self.bound,
                   stamp=self.stamp)
        return out

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        if capacity == self.capacity:
            return
        old, count = self._arrays(), self.count
        self._allocate(capacity)
        for name, array in self._arrays().items():
            array[:count] = old[name][:count]
        ji.rebuild(self.slot_first, self.slot_last, self.keys, self.next, count)

    def append(self, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray,
               keys: np.ndarray, hashes: np.ndarray, bound: np.ndarray, stamp: int, matches: np.ndarray) -> None:
        """Keep batch rows ``rows`` (indices into ``columns``/``keys``/``hashes``/``bound``/``matches``)."""
        n = len(rows)
        if n == 0:
            return
        first = self.count
        self._grow(first + n)
        end = first + n
        for f in self.schema.fields:
            values, valid = self.columns[f.name]
            new_values, new_valid = columns[f.name]
            values[first:end] = new_values[rows]
            valid[first:end] = True if new_valid is None else new_valid[rows]
        self.keys[first:end] = keys[rows]
        self.matches[first:end] = matches[rows]
        self.alive[first:end] = True
        self.bound[first:end] = bound[rows]
        self.stamp[first:end] = stamp
        self.distinct += ji.append_rows(self.slot_first, self.slot_last, self.keys, self.next, keys, hashes, rows,
                                        first)
        self.count = end

    def probe(self, keys: np.ndarray, hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.live == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        return ji.probe_rows(self.slot_first, self.keys, self.next, self.alive, keys, hashes, rows)

    def gather(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and validity of column ``name`` for kept rows ``rows`` (-1: NULL)."""
        values, valid = self.columns[name]
        present = rows >= 0
        safe = np.where(present, rows, 0)
        return values[safe], present & valid[safe]

    def free(self, expired: np.ndarray) -> np.ndarray:
        """Mark live rows where ``expired`` (over rows 0..count-1) dead; the freed rows, in order."""
        freed = np.flatnonzero(expired & self.alive[:self.count])
        self.alive[freed] = False
        self.dead += len(freed)
        return freed

    def compact(self) -> None:
        """Drop dead rows once they outnumber the live ones (after the caller is done with them)."""
        if self.dead == 0 or self.dead < self.live:
            return
        keep = np.flatnonzero(self.alive[:self.count])
        for name, array in self._arrays().items():
            if name != "next":
                array[:len(keep)] = array[keep]
        self.count, self.dead = len(keep), 0
        self.alive[self.count:] = False
        ji.rebuild(self.slot_first, self.slot_last, self.keys, self.next, self.count)

    # -- checkpoints ----------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        self.compact()
        path = directory / f"{self.name}.npz"
        arrays = {name.replace(":", "__"): a[:self.count] for name, a in self._arrays().items()}
        with open(path, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stubs: a str-keyed ** might be allow_pickle
        return {"count": self.count, "dead": self.dead, "file": path.name}, [path.name]

    def restore(self, directory: Path, meta: dict[str, Any]) -> None:
        count = int(meta["count"])
        self.count, self.dead = 0, 0
        self._grow(max(count, 1))
        with np.load(directory / meta["file"]) as saved:
            for name, array in self._arrays().items():
                array[:count] = saved[name.replace(":", "__")]
        self.count, self.dead = count, int(meta["dead"])
        ji.rebuild(self.slot_first, self.slot_last, self.keys, self.next, count)
