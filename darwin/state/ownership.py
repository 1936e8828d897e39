"""Who owns a ``state_path``: one job at a time, and only the directories Darwin made in it.

Persistent backends (mmap, rocksdb) keep their files under ``state_path``. Two jobs sharing
it would silently adopt or destroy each other's state, so a job:

- holds an exclusive lock (``LOCK``, ``flock``) on it while it runs: a second running job
  is refused;
- records itself in ``OWNER`` (job id and checkpoint_dir). A fresh job refuses a state_path
  whose owner can still resume (its checkpoint_dir holds a checkpoint of that job); a
  resuming job refuses one that another job has taken over;
- marks each table directory it makes with ``TABLE_MARKER``, and deletes only marked ones.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import IO, Any

from darwin.errors import RESET_HINT, CheckpointError
from darwin.files import (
    ensure_directory,
    exclusive_lock,
    fresh_marked_directory,
    read_job_record,
    remove_files,
    write_atomically,
)
from darwin.state.checkpoint import has_checkpoint_of

OWNER = "DARWIN-STATE.json"
LOCK = ".darwin-state.lock"
TABLE_MARKER = ".darwin-table"


class StatePath:
    """``state_path`` claimed by job ``job``: locked while open, owned, holding marked table directories."""

    def __init__(self, path: str | os.PathLike[str], job: str, checkpoint_dir: str | None, fresh: bool) -> None:
        self.path = ensure_directory(path, "state_path", CheckpointError)
        self.job, self.fresh = job, fresh
        self._lock: IO[bytes] | None = exclusive_lock(self.path, LOCK, "state_path", CheckpointError)
        owner = read_owner(self.path)
        if fresh:
            if owner is not None and owner["job"] != job and owner.get("checkpoint_dir") \
                    and has_checkpoint_of(owner["checkpoint_dir"], owner["job"]):
                self.close()
                raise CheckpointError(
                    f"state_path {str(self.path)!r} holds the state of another job, which can still resume from "
                    f"checkpoint_dir {owner['checkpoint_dir']!r}; give this job its own state_path, or {RESET_HINT}")
            write_atomically(self.path / OWNER, json.dumps({"job": job, "checkpoint_dir": checkpoint_dir}).encode())
        elif owner is None or owner["job"] != job:
            self.close()
            whose = "no job" if owner is None else \
                f"job {owner['job']} (checkpoint_dir {owner.get('checkpoint_dir')!r})"
            raise CheckpointError(f"state_path {str(self.path)!r} now holds the state of {whose}, not of the job "
                                  f"these checkpoints belong to ({job}); resume with the state_path the job ran with, "
                                  f"or {RESET_HINT}")

    def table(self, name: str, new: bool = False) -> Path:
        """The directory of table ``name``: emptied and marked for a fresh job or a ``new`` table (one a
        resumed run starts empty: state moving to another number of workers), required to exist otherwise."""
        directory = self.path / name
        if self.fresh or new:
            fresh_marked_directory(directory, TABLE_MARKER, "state_path", CheckpointError)
        elif not (directory / TABLE_MARKER).exists():
            raise CheckpointError(f"the checkpoint's state for {name} is not in state_path {str(self.path)!r}; "
                                  f"resume with the state_path the job ran with, or {RESET_HINT}")
        return directory

    def tables(self) -> list[str]:
        """The names of the table directories Darwin made here."""
        return sorted(d.name for d in self.path.iterdir() if (d / TABLE_MARKER).exists())

    def drop_table(self, name: str) -> None:
        """Delete table ``name``'s directory, if Darwin made it (a table no checkpoint needs any more)."""
        directory = self.path / name
        if (directory / TABLE_MARKER).exists():
            shutil.rmtree(directory, ignore_errors=True)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()  # releases the flock
            self._lock = None


def read_owner(path: Path) -> dict[str, Any] | None:
    return read_job_record(path / OWNER)


def remove_state(path: Path, job: str) -> list[Path]:
    """Delete what job ``job`` made in ``path`` (marked tables, the owner record); what was deleted."""
    owner = read_owner(path)
    if owner is None or owner["job"] != job:
        return []
    removed = []
    for table in sorted(path.iterdir()):
        if table.is_dir() and (table / TABLE_MARKER).exists():
            shutil.rmtree(table)
            removed.append(table)
    return removed + remove_files([path / OWNER, path / LOCK])
