"""The ``mmap`` backend: hash tables whose arrays are memory-mapped files under ``state_path``.

In the spirit of the Viper key-value store, the entries (keys and accumulators)
form a persistent record log in mapped files, and the index over them is volatile:
it is rebuilt from the keys on recovery. State can be larger than the process's
memory: the kernel works on the mappings and the OS pages them.

A checkpoint flushes the mappings and records only the entry count. To get back
to exactly that state after a crash, the table keeps an undo log, also mapped:
before an entry that existed at the last checkpoint changes for the first time in
an epoch, the kernel (or the compaction that follows a firing) appends its old
contents. Recovery rolls those entries back and drops entries added since.

``meta`` = [entry count, undo rows, undo base, undo epoch]: entries below the
base existed at the checkpoint ``undo epoch``; the undo rows restore them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen.aggregates import AggLayout
from darwin.codegen.hashtable import compact, rebuild_index
from darwin.errors import CheckpointError
from darwin.state.hash_table import HashTableState

COUNT, UNDO_ROWS, UNDO_BASE, UNDO_EPOCH = range(4)
VOLATILE = ("index", "logged")  # rebuilt on recovery, never flushed


class MmapBackend:
    name = "mmap"

    def __init__(self, path: Path, fresh: bool = True) -> None:
        self.path, self.fresh = path, fresh

    def hash_table(self, name: str, lay: AggLayout) -> MmapHashTable:
        directory = self.path / name
        if self.fresh and directory.exists():  # files of an earlier run this one does not resume
            shutil.rmtree(directory)
        if not self.fresh and not (directory / "meta.bin").exists():
            raise CheckpointError(f"the checkpoint's mmap state for {name} is not in state_path "
                                  f"{str(self.path)!r}; resume with the state_path the job ran with")
        return MmapHashTable(directory, name, lay.key_width, lay.value_dtypes)

    def close(self) -> None:
        pass


class MmapHashTable(HashTableState):
    def __init__(self, directory: Path, name: str, key_width: int, value_dtypes: Sequence[np.dtype],
                 capacity: int = 1024) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        for part in VOLATILE:  # whatever a crashed run left in them means nothing now
            (directory / f"{part}.bin").unlink(missing_ok=True)
        super().__init__(name, key_width, value_dtypes, capacity)
        self._allocate_undo(capacity)

    # -- placement ------------------------------------------------------------------------------
    def _array(self, part: str, length: int, dtype: np.dtype) -> np.ndarray:
        """``length`` elements of the file for ``part``, extended with zeros if shorter; content kept."""
        path = self.directory / f"{part}.bin"
        nbytes = max(length, 1) * dtype.itemsize
        with open(path, "ab") as f:
            if f.tell() < nbytes:
                f.truncate(nbytes)
        return np.memmap(path, dtype=dtype, mode="r+", shape=(max(length, 1),))

    def _allocate(self, capacity: int) -> None:
        """On growth the flags of slots already logged this epoch stay: a slot is logged once."""
        super()._allocate(capacity)
        self.logged = self._array("logged", capacity, np.dtype(np.uint8))

    def _resize(self, capacity: int) -> None:
        """Remap the same files, longer: entries stay where they are, only the volatile index is rebuilt."""
        self._allocate(capacity)
        rebuild_index(self.index, self.keys, self.count)

    def _allocate_undo(self, rows: int) -> None:
        self.undo_slot = self._array("undo_slot", rows, np.dtype(np.int64))
        self.undo_keys = [self._array(f"undo_key{j}", rows, np.dtype(np.int64)) for j in range(self.key_width)]
        self.undo_values = [self._array(f"undo_value{j}", rows, d) for j, d in enumerate(self.value_dtypes)]

    def _reserve_undo(self, rows: int) -> None:
        size = self.undo_slot.shape[0]
        while size < self.meta[UNDO_ROWS] + rows:
            size *= 2
        if size != self.undo_slot.shape[0]:
            self._allocate_undo(size)

    def _persistent(self) -> list[np.memmap]:
        return [self.meta, *self.keys, *self.values, self.undo_slot, *self.undo_keys, *self.undo_values]

    # -- what kernels see -----------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        if name == "logged":
            return self.logged
        if name == "uslot":
            return self.undo_slot
        if name[:2] in ("uk", "uv"):
            return (self.undo_keys if name[1] == "k" else self.undo_values)[int(name[2:])]
        return super().array(name)

    def grow(self, needed: int) -> None:
        super().grow(needed)
        self._reserve_undo(needed)

    # -- the undo log ---------------------------------------------------------------------------
    def _compact(self, keep: np.ndarray) -> int:
        self._reserve_undo(self.count)
        undo = tuple(a.view(np.int64) for a in self.undo_keys + self.undo_values)
        return compact(keep, self._columns(), self.count, self.meta, self.logged, self.undo_slot, undo)

    # -- checkpoints ----------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        for m in self._persistent():
            m.flush()
        return {"count": self.count, "capacity": self.capacity, "path": str(self.directory)}, []

    def after_checkpoint(self, checkpoint_id: int) -> None:
        """The checkpoint is durable: start an empty undo log relative to it.

        Only the slots the log names were flagged, so this costs the epoch's changes, not the table.
        """
        self.logged[self.undo_slot[: self.meta[UNDO_ROWS]]] = 0
        self.meta[UNDO_ROWS] = 0
        self.meta[UNDO_BASE] = self.count
        self.meta[UNDO_EPOCH] = checkpoint_id

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        tag = int(self.meta[UNDO_EPOCH])
        if tag > checkpoint_id:
            raise CheckpointError(f"state files in {str(self.directory)!r} have moved past checkpoint "
                                  f"{checkpoint_id} (they belong to checkpoint {tag}, whose manifest is damaged); "
                                  "this state cannot be rolled back: delete state_path and checkpoint_dir to "
                                  "start over")
        if meta["path"] != str(self.directory):
            raise CheckpointError(f"the checkpoint's mmap state lives in {meta['path']!r}, not in "
                                  f"{str(self.directory)!r}; resume with the state_path the job ran with")
        capacity, count = int(meta["capacity"]), int(meta["count"])
        parts = [f"key{j}" for j in range(self.key_width)] + [f"value{j}" for j in range(len(self.values))]
        for part, a in zip(parts, self.keys + self.values):  # drop what grew after the checkpoint
            os.truncate(self.directory / f"{part}.bin", capacity * a.dtype.itemsize)
        if capacity > self.capacity:
            self._allocate(capacity)
        if tag == checkpoint_id:  # roll back what changed after the checkpoint
            rows = int(self.meta[UNDO_ROWS])
            self._reserve_undo(rows)
            slots = self.undo_slot[:rows]
            for a, log in zip(self.keys + self.values, self.undo_keys + self.undo_values):
                a[slots] = log[:rows]
        # else the crash came after the manifest and before the undo log restarted: the files are the checkpoint
        for a in self.keys + self.values:
            a[count:] = 0
        self.meta[COUNT] = count
        rebuild_index(self.index, self.keys, count)
        self.after_checkpoint(checkpoint_id)
