"""Checkpoints: numbered directories, each complete only once its manifest is in place.

A checkpoint ``chk-000042/`` holds the files the engine wrote and ``MANIFEST.json``,
written last and atomically (temporary file, fsync, rename). The manifest lists every
file with its size and CRC-32 and carries its own checksum, so each checkpoint can be
verified on its own; a torn or damaged one is passed over for the previous one. The two
newest complete checkpoints are kept, and they share no file.

Darwin marks what it creates: a checkpoint directory holds ``MARKER`` from the moment it
is made, and ``JOB.json`` at the root records the job (its id, state path and outputs) for
``darwin reset``. Nothing else in ``checkpoint_dir`` is ever touched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from darwin.errors import CheckpointError
from darwin.files import (
    crc32_of,
    ensure_directory,
    exclusive_lock,
    fresh_marked_directory,
    fsync_path,
    read_job_record,
    write_atomically,
)

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.json"
MARKER = ".darwin-checkpoint"  # in every checkpoint directory Darwin made
JOB = "JOB.json"  # the job whose checkpoints these are
LOCK = ".darwin-checkpoints.lock"  # held by the job while it runs
FORMAT = 2  # 2: job ids, the layout in the identity, every file of a checkpoint its own
KEEP = 2
_NAME = re.compile(r"chk-(\d{6})")


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: its id, directory and manifest body."""

    id: int
    path: Path
    body: dict[str, Any]


class CheckpointStore:
    """The checkpoints of one job under ``root``."""

    def __init__(self, root: str | os.PathLike[str], create: bool = True) -> None:
        """``create``: make ``root`` if missing (a store only read, e.g. to check who owns a path, does not)."""
        self.root = ensure_directory(root, "checkpoint_dir", CheckpointError) if create else Path(root)

    def lock(self) -> IO[bytes]:
        """Hold ``checkpoint_dir`` for one running job (closing the result releases it)."""
        return exclusive_lock(self.root, LOCK, "checkpoint_dir", CheckpointError)

    def directory(self, checkpoint_id: int) -> Path:
        """A fresh, empty, marked directory for checkpoint ``checkpoint_id``'s files."""
        # one left by a run that crashed while writing it is replaced
        return fresh_marked_directory(self.root / f"chk-{checkpoint_id:06d}", MARKER, "checkpoint_dir",
                                      CheckpointError)

    def commit(self, checkpoint_id: int, body: dict[str, Any], files: list[str] | None = None) -> Checkpoint:
        """Seal checkpoint ``checkpoint_id``: checksum ``files`` (paths in its directory), write the manifest."""
        path = self.root / f"chk-{checkpoint_id:06d}"
        listed = {}
        for name in files or []:
            f = path / name
            fsync_path(f)
            listed[name] = {"size": f.stat().st_size, "crc32": crc32_of(f)}
        for d in {(path / name).parent for name in files or []} | {path}:
            fsync_path(d)
        manifest = {"format": FORMAT, "id": checkpoint_id, "files": listed, "body": body}
        text = json.dumps(manifest, sort_keys=True)
        manifest["checksum"] = zlib.crc32(text.encode())
        write_atomically(path / MANIFEST, json.dumps(manifest, sort_keys=True, indent=1).encode())
        self._prune(checkpoint_id)
        return Checkpoint(checkpoint_id, path, body)

    def complete(self) -> Iterator[Checkpoint]:
        """The checkpoints whose manifest and files verify, newest first; damaged ones are logged and skipped."""
        for _, path in sorted(self._ours(), reverse=True):
            problem = _verify(path)
            if problem is None:
                manifest = json.loads((path / MANIFEST).read_text())
                yield Checkpoint(manifest["id"], path, manifest["body"])
            else:
                log.warning("checkpoint %s is not usable (%s); trying an older one", path, problem)

    def latest(self) -> Checkpoint | None:
        """The newest checkpoint that verifies, or None."""
        return next(self.complete(), None)

    def ids(self) -> list[int]:
        return sorted(number for number, _ in self._ours())

    def _ours(self) -> list[tuple[int, Path]]:
        """Checkpoint directories Darwin made: named ``chk-<6 digits>`` and marked."""
        found = []
        for p in self.root.iterdir():
            m = _NAME.fullmatch(p.name)
            if m and p.is_dir() and (p / MARKER).exists():
                found.append((int(m.group(1)), p))
        return found

    def _prune(self, newest: int) -> None:
        """Delete all but the ``KEEP`` newest complete checkpoints, and anything newer than ``newest``."""
        complete = 0
        for number, path in sorted(self._ours(), reverse=True):
            if number > newest:
                shutil.rmtree(path, ignore_errors=True)
            elif complete < KEEP and (path / MANIFEST).exists():
                complete += 1
            else:
                shutil.rmtree(path, ignore_errors=True)

    # -- the job record -----------------------------------------------------------------------------
    def write_job(self, record: dict[str, Any]) -> None:
        write_atomically(self.root / JOB, json.dumps(record, sort_keys=True, indent=1).encode())

    def read_job(self) -> dict[str, Any] | None:
        """The job record, or None if there is none (or it is unreadable)."""
        return read_job_record(self.root / JOB)


def has_checkpoint_of(root: str | os.PathLike[str], job: str) -> bool:
    """Whether ``root`` still holds a complete checkpoint of job ``job`` (without creating anything)."""
    if not Path(root).is_dir():
        return False
    return any(c.body.get("job") == job for c in CheckpointStore(root, create=False).complete())


def _verify(path: Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be used, or None if it is complete and intact."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except FileNotFoundError:
        return "no manifest: it was not finished"
    except (OSError, ValueError) as e:
        return f"unreadable manifest: {e}"
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return "manifest of an unknown format"
    checksum = manifest.pop("checksum", None)
    if zlib.crc32(json.dumps(manifest, sort_keys=True).encode()) != checksum:
        return "manifest checksum mismatch"
    for name, info in manifest["files"].items():
        f = path / name
        if not f.exists():
            return f"file {name} is missing"
        if f.stat().st_size != info["size"] or crc32_of(f) != info["crc32"]:
            return f"file {name} does not match its checksum"
    return None
