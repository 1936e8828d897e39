"""Checkpoints: numbered directories, each complete only once its manifest is in place.

A checkpoint ``chk-000042/`` holds the files the state backend wrote and
``MANIFEST.json``, written last and atomically (temporary file, fsync, rename). The
manifest lists every file with its size and CRC-32 and carries its own checksum,
so a torn or corrupt checkpoint is recognised and the previous complete one is
used instead. The two newest complete checkpoints are kept.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.json"
FORMAT = 1
KEEP = 2
_CHUNK = 1 << 24


def crc32_of(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def fsync_path(path: Path) -> None:
    """Make a file's contents, or a directory's entries, durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old or the new content, never a mix."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: its id, directory and manifest body."""

    id: int
    path: Path
    body: dict[str, Any]


class CheckpointStore:
    """The checkpoints of one job under ``root``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def directory(self, checkpoint_id: int) -> Path:
        """A fresh, empty directory for checkpoint ``checkpoint_id``'s files."""
        path = self.root / f"chk-{checkpoint_id:06d}"
        if path.exists():  # left by a run that crashed while writing it
            shutil.rmtree(path)
        path.mkdir()
        return path

    def commit(self, checkpoint_id: int, body: dict[str, Any], files: list[str] | None = None) -> Checkpoint:
        """Seal checkpoint ``checkpoint_id``: checksum ``files`` (names in its directory), write the manifest."""
        path = self.root / f"chk-{checkpoint_id:06d}"
        path.mkdir(exist_ok=True)
        listed = {}
        for name in files or []:
            f = path / name
            fsync_path(f)
            listed[name] = {"size": f.stat().st_size, "crc32": crc32_of(f)}
        fsync_path(path)
        manifest = {"format": FORMAT, "id": checkpoint_id, "files": listed, "body": body}
        text = json.dumps(manifest, sort_keys=True)
        manifest["checksum"] = zlib.crc32(text.encode())
        write_atomically(path / MANIFEST, json.dumps(manifest, sort_keys=True, indent=1).encode())
        self._prune(checkpoint_id)
        return Checkpoint(checkpoint_id, path, body)

    def latest(self) -> Checkpoint | None:
        """The newest checkpoint whose manifest and files check out; torn ones are skipped (and logged)."""
        for path in sorted(self.root.glob("chk-[0-9]*"), reverse=True):
            problem = _verify(path)
            if problem is None:
                manifest = json.loads((path / MANIFEST).read_text())
                return Checkpoint(manifest["id"], path, manifest["body"])
            log.warning("checkpoint %s is not usable (%s); trying an older one", path, problem)
        return None

    def ids(self) -> list[int]:
        return sorted(int(p.name[4:]) for p in self.root.glob("chk-[0-9]*") if p.name[4:].isdigit())

    def _prune(self, newest: int) -> None:
        """Delete all but the ``KEEP`` newest complete checkpoints, and anything newer than ``newest``."""
        complete = 0
        for path in sorted(self.root.glob("chk-[0-9]*"), reverse=True):
            number = int(path.name[4:]) if path.name[4:].isdigit() else -1
            if number > newest:
                shutil.rmtree(path, ignore_errors=True)
            elif complete < KEEP and (path / MANIFEST).exists():
                complete += 1
            else:
                shutil.rmtree(path, ignore_errors=True)



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
