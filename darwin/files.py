"""File helpers every layer uses: checksums, durable writes, and directories Darwin may write into."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import zlib
from pathlib import Path
from typing import IO, Any

from darwin.errors import DarwinError

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


def ensure_directory(path: str | os.PathLike[str], what: str, error: type[DarwinError]) -> Path:
    """``path`` as an existing directory (created if missing); ``error`` naming ``what`` if it cannot be one."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise error(f"{what} {str(p)!r} is a file, not a directory; give a directory path")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise error(f"{what} {str(p)!r}: a part of this path is a file, not a directory") from None
    except OSError as e:
        raise error(f"{what} {str(p)!r} cannot be created: {e.strerror}") from None
    return p


def exclusive_lock(directory: Path, name: str, what: str, error: type[DarwinError]) -> IO[bytes]:
    """Hold an exclusive ``flock`` on ``directory/name`` until the returned file is closed.

    Another process holding it means another job is using ``directory``: ``error`` says so.
    The lock goes with the process, so a crashed job never leaves it behind.
    """
    f = open(directory / name, "ab")  # noqa: SIM115 - the caller closes it to release the lock
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise error(f"{what} {str(directory)!r} is in use by another running job") from None
    return f


def read_job_record(path: Path) -> dict[str, Any] | None:
    """A JSON record Darwin wrote naming a job (``{"job": ...}``), or None if missing or unreadable."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "job" in record else None


def remove_files(paths: list[Path]) -> list[Path]:
    """Delete those of ``paths`` that exist; the ones deleted."""
    removed = [p for p in paths if p.exists()]
    for p in removed:
        p.unlink()
    return removed


def fresh_marked_directory(path: Path, marker: str, where: str, error: type[DarwinError]) -> Path:
    """``path`` as a new, empty directory holding the file ``marker``, which says Darwin made it.

    An earlier one carrying the marker is replaced, and so is an empty one (a process killed
    between making the directory and marking it leaves that; an empty directory holds nothing to
    lose). Anything else there is not Darwin's to delete: ``error``, suggesting a directory of its
    own for ``where``.
    """
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()
    if path.exists():
        if not (path / marker).exists():
            raise error(f"{str(path)!r} exists but was not made by Darwin; give {where} a directory of its own "
                        "(Darwin deletes only what it made)")
        shutil.rmtree(path)
    path.mkdir()
    (path / marker).touch()
    return path
