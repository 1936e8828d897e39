"""The ``mmap`` backend: hash tables whose arrays are memory-mapped files under ``state_path``.

In the spirit of the Viper key-value store, the entries (keys and accumulators)
form a persistent record log in mapped files, and the index over them is volatile:
it is rebuilt from the keys on recovery. State can be larger than the process's
memory: the kernel works on the mappings and the OS pages them.

A checkpoint flushes the mappings and records the entry count, the capacity and a
checksum of the entries — no copy. To get back to a checkpoint after a crash the table
keeps undo logs, also mapped: before an entry that existed at the last checkpoint
changes for the first time in an epoch, the kernel (or the compaction that follows a
firing) appends its old contents to the *current* log. At each checkpoint the current
log becomes the *previous* one and a new log starts, so the two kept checkpoints are
both reachable: the newest by rolling back the current log, the one before it by
rolling back the previous log too. After rolling back, the entries must match the
checkpoint's checksum, and the files must carry the job's id in their header: state
files that were truncated, replaced by a stale copy or written by another job are a
``CheckpointError``, never adopted.

``meta`` (int64 slots, below): the kernel reads and writes the first three.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from darwin.codegen.aggregates import AggLayout
from darwin.codegen.hashtable import checksum, compact, rebuild_index
from darwin.errors import RESET_HINT, CheckpointError
from darwin.state.hash_table import HashTableState
from darwin.state.join_rows import SPILLING_PENDING_ROWS, JoinRows
from darwin.state.ownership import StatePath
from darwin.state.placement import MappedFiles
from darwin.types import Schema

# entry count; the current undo log: rows, base (entries below it existed at its checkpoint), that
# checkpoint's id, which of the two file sets it is in; the previous log: rows, base, checkpoint id;
# the header: magic number and the owning job's id
COUNT, UNDO_ROWS, UNDO_BASE, UNDO_EPOCH, UNDO_SET, PREV_ROWS, PREV_BASE, PREV_EPOCH, MAGIC, JOB_HI, JOB_LO = \
    range(11)
META_SLOTS = 11
MAGIC_NUMBER = 0x44_41_52_57_4D_4D_41_50  # "DARWMMAP"
NO_EPOCH = -1
VOLATILE = ("index", "logged")  # rebuilt on recovery, never flushed


def job_words(job: str) -> tuple[int, int]:
    """A job id (32 hex digits) as the two int64 words the header stores."""
    value = int(job, 16)
    hi, lo = np.array([value >> 64, value & (2**64 - 1)], dtype=np.uint64).view(np.int64)
    return int(hi), int(lo)


class MmapBackend:
    name = "mmap"

    def __init__(self, owned: StatePath, job: str) -> None:
        self.owned, self.job = owned, job

    def hash_table(self, name: str, lay: AggLayout, new: bool = False) -> MmapHashTable:
        directory = self.owned.table(name, new)
        return MmapHashTable(directory, name, lay.key_width, lay.value_dtypes, job_words(self.job),
                             self.owned.fresh or new)

    def stored_tables(self) -> list[str]:
        return self.owned.tables()

    def drop_table(self, name: str) -> None:
        self.owned.drop_table(name)

    def join_rows(self, name: str, schema: Schema, key_width: int) -> JoinRows:
        return JoinRows(name, schema, key_width, MappedFiles(self.owned.table(name)),
                        pending_limit=SPILLING_PENDING_ROWS)

    def scratch(self, name: str) -> MappedFiles:
        return MappedFiles(self.owned.table(name, new=True))  # a restore copies the checkpoint back: start empty

    def close(self) -> None:
        self.owned.close()


class MmapHashTable(HashTableState):
    meta_slots = META_SLOTS

    def __init__(self, directory: Path, name: str, key_width: int, value_dtypes: Sequence[np.dtype],
                 job: tuple[int, int], fresh: bool, capacity: int = 1024) -> None:
        self.directory, self.job = directory, job
        for part in VOLATILE:  # whatever a crashed run left in them means nothing now
            (directory / f"{part}.bin").unlink(missing_ok=True)
        self.data_parts = [(f"key{j}", np.dtype(np.int64)) for j in range(key_width)] + \
            [(f"value{j}", np.dtype(d)) for j, d in enumerate(value_dtypes)]
        self.found = {part: self._size(part) for part, _ in self.data_parts}  # before mapping extends anything
        if not fresh and self._size("meta") < META_SLOTS * 8:
            raise CheckpointError(f"mmap state in {str(directory)!r} has no complete header (meta.bin is missing "
                                  f"or truncated); {RESET_HINT}")
        super().__init__(name, key_width, value_dtypes, capacity)
        if fresh:
            self.meta[:] = 0  # the current log is relative to the empty start, "checkpoint 0", and logs nothing
            self.meta[PREV_EPOCH] = NO_EPOCH
            self.meta[MAGIC], (self.meta[JOB_HI], self.meta[JOB_LO]) = MAGIC_NUMBER, job
        self._allocate_undo(capacity)

    # -- placement ------------------------------------------------------------------------------
    def _size(self, part: str) -> int:
        path = self.directory / f"{part}.bin"
        return path.stat().st_size if path.exists() else 0

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

    def _undo_arrays(self, which: int, rows: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """Undo log file set ``which`` (0 or 1) mapped for ``rows`` rows: slots, then entry columns."""
        slots = self._array(f"undo{which}_slot", rows, np.dtype(np.int64))
        return slots, [self._array(f"undo{which}_{part}", rows, d) for part, d in self.data_parts]

    def _allocate_undo(self, rows: int) -> None:
        self.undo_slot, undo = self._undo_arrays(int(self.meta[UNDO_SET]), rows)
        self.undo_keys, self.undo_values = undo[: self.key_width], undo[self.key_width:]

    def _reserve_undo(self, rows: int) -> None:
        size = self.undo_slot.shape[0]
        while size < self.meta[UNDO_ROWS] + rows:
            size *= 2
        if size != self.undo_slot.shape[0]:
            self._allocate_undo(size)

    def _persistent(self) -> list[np.memmap]:
        """The flushed arrays: entries and undo logs (``_array`` maps each one, so each is a ``memmap``)."""
        arrays = [self.meta, *self.keys, *self.values, self.undo_slot, *self.undo_keys, *self.undo_values]
        return cast(list[np.memmap], arrays)

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
        return {"count": self.count, "capacity": self.capacity,
                "checksum": int(checksum(self._columns(), self.count))}, []

    def after_checkpoint(self, checkpoint_id: int) -> None:
        """The checkpoint is durable: the current undo log becomes the previous one, a new one starts.

        Only the slots the log names were flagged, so this costs the epoch's changes, not the
        table. The order of the writes makes a crash at any point recoverable (see ``_logs_back_to``).
        """
        meta, which, rows = self.meta, int(self.meta[UNDO_SET]), int(self.meta[UNDO_ROWS])
        closed = int(meta[UNDO_EPOCH])
        meta[PREV_EPOCH] = NO_EPOCH
        meta[PREV_ROWS], meta[PREV_BASE] = rows, meta[UNDO_BASE]
        self.logged[self.undo_slot[:rows]] = 0
        meta[UNDO_ROWS], meta[UNDO_BASE] = 0, self.count
        meta[UNDO_SET] = 1 - which
        meta[UNDO_EPOCH] = checkpoint_id
        meta[PREV_EPOCH] = closed
        self._allocate_undo(self.undo_slot.shape[0])

    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None:
        where = f"mmap state in {str(self.directory)!r}"
        if int(self.meta[MAGIC]) != MAGIC_NUMBER or (int(self.meta[JOB_HI]), int(self.meta[JOB_LO])) != self.job:
            raise CheckpointError(f"{where} was not written by the job this checkpoint belongs to (its header "
                                  f"names another job, or none); {RESET_HINT}")
        capacity, count = int(meta["capacity"]), int(meta["count"])
        for part, dtype in self.data_parts:
            if self.found[part] < capacity * dtype.itemsize:
                raise CheckpointError(f"{where}: {part}.bin holds {self.found[part]} bytes, but checkpoint "
                                      f"{checkpoint_id} needs {capacity * dtype.itemsize}; the file was truncated or "
                                      f"replaced. {RESET_HINT}")
        length = min(self.found[part] // dtype.itemsize for part, dtype in self.data_parts)
        self._allocate(length)
        for which, rows in self._logs_back_to(checkpoint_id, where):  # newest first
            self._roll_back(which, rows, length, where)
        for part, dtype in self.data_parts:  # drop what grew after the checkpoint
            os.truncate(self.directory / f"{part}.bin", capacity * dtype.itemsize)
        self._allocate(capacity)
        for a in self.keys + self.values:
            a[count:] = 0
        if int(checksum(self._columns(), count)) != int(meta["checksum"]):
            raise CheckpointError(f"{where} does not match checkpoint {checkpoint_id} (checksum of its {count} "
                                  f"entries differs): the files were changed, damaged or replaced. {RESET_HINT}")
        self.meta[COUNT] = count
        rebuild_index(self.index, self.keys, count)
        self.meta[PREV_EPOCH] = NO_EPOCH  # the logs are spent: log afresh relative to this checkpoint
        self.meta[UNDO_ROWS], self.meta[UNDO_BASE] = 0, count
        self.meta[UNDO_EPOCH] = checkpoint_id
        self.logged[:] = 0
        for m in self._persistent():
            m.flush()

    def _logs_back_to(self, checkpoint_id: int, where: str) -> list[tuple[int, int]]:
        """The undo logs (file set, rows) that lead back to ``checkpoint_id``, newest first.

        The current log is relative to checkpoint ``UNDO_EPOCH``, the previous one to
        ``PREV_EPOCH`` (the checkpoint before). A crash after a checkpoint's manifest and
        before its log restarted leaves the files exactly at that checkpoint, one past
        ``UNDO_EPOCH``: nothing to roll back.
        """
        current, previous = int(self.meta[UNDO_EPOCH]), int(self.meta[PREV_EPOCH])
        now = (int(self.meta[UNDO_SET]), int(self.meta[UNDO_ROWS]))
        if checkpoint_id == current:
            return [now]
        if checkpoint_id == previous != NO_EPOCH:
            return [now, (1 - now[0], int(self.meta[PREV_ROWS]))]
        if checkpoint_id == current + 1:
            return []
        reach = [e for e in (current, previous) if e != NO_EPOCH]
        raise CheckpointError(f"{where} cannot be rolled back to checkpoint {checkpoint_id}: its undo logs lead "
                              f"back to checkpoint(s) {reach or 'none'} only (a stale copy, or files of another "
                              f"run). {RESET_HINT}")

    def _roll_back(self, which: int, rows: int, length: int, where: str) -> None:
        """Put back the old contents undo log ``which`` recorded (idempotent: a crash may repeat it)."""
        needed = {"slot": np.dtype(np.int64)} | {part: d for part, d in self.data_parts}
        for part, dtype in needed.items():
            if self._size(f"undo{which}_{part}") < rows * dtype.itemsize:
                raise CheckpointError(f"{where}: undo log file undo{which}_{part}.bin is shorter than the "
                                      f"{rows} rows its header records. {RESET_HINT}")
        slots, columns = self._undo_arrays(which, rows)
        slots = slots[:rows]
        if rows and (slots.min() < 0 or slots.max() >= length):
            raise CheckpointError(f"{where}: undo log {which} names entries outside the table. {RESET_HINT}")
        for a, log in zip(self.keys + self.values, columns):
            a[slots] = log[:rows]
