"""One output directory of a file sink: its staged files, committed files and ownership.

Files are staged under ``<dir>/_darwin_staging/`` and committed by renaming them into place
once the checkpoint listing them (name, rows, CRC-32) is durable; a commit is idempotent, so
recovery repeats the commits of the checkpoint it resumes. Names are relative paths: a part of
a partitioned sink lives in its partition's directories (``dt=2015-07-15/part-000003.csv``).

An upsert sink's directory holds one visible file, ``snapshot.<ext>``, replaced atomically at
each commit, and keeps the snapshots of the last two checkpoints as Arrow files in
``<dir>/_darwin_versions/`` (a resume from the older of the two checkpoints needs its snapshot).

A fresh run writes only into an empty (or new) directory, which it marks with its job id
(``.darwin-sink.json``); a resumed run only into the directory its job marked. Darwin deletes
nothing there but its own files. Arrow and Spark readers skip the marker, the staging and the
versions directory (names starting with ``.`` and ``_``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from darwin.errors import RESET_HINT, SinkError
from darwin.files import crc32_of, ensure_directory, fsync_path, read_job_record, write_atomically

log = logging.getLogger(__name__)

STAGING = "_darwin_staging"
VERSIONS = "_darwin_versions"
MARKER = ".darwin-sink.json"
VERSIONS_KEPT = 2  # as many as the checkpoints kept (darwin.state.checkpoint.KEEP)
PART = re.compile(r"part-(\d{6})\.([a-z]+)")  # part-<epoch>.<extension>
SNAPSHOT = re.compile(r"snapshot\.([a-z]+)")  # an upsert sink's visible snapshot
VERSION = re.compile(r"snapshot-(\d{6})\.([a-z]+)")  # a staged or kept snapshot of one epoch


def epoch_of(name: str) -> int | None:
    """The epoch a part or snapshot version file belongs to, or None if it is neither."""
    m = PART.fullmatch(name) or VERSION.fullmatch(name)
    return None if m is None else int(m.group(1))


def is_partition(name: str) -> bool:
    """Whether a directory name is a partition's (``column=value``), which Darwin may have made."""
    return "=" in name and not name.startswith(("_", "."))


class OutputDirectory:
    """Staged and committed files of one kind of rows (results or late rows) in ``directory``;
    ``depth`` is the number of partition directories above each part."""

    def __init__(self, directory: Path, extension: str, depth: int = 0) -> None:
        self.directory, self.extension, self.depth = directory, extension, depth
        self.staging = directory / STAGING
        self.versions = directory / VERSIONS
        self.visible = directory / f"snapshot.{extension}"

    # -- names -------------------------------------------------------------------------
    def part_name(self, epoch: int, partition: str = "") -> str:
        name = f"part-{epoch:06d}.{self.extension}"
        return f"{partition}/{name}" if partition else name

    def staged(self, name: str) -> Path:
        """Where file ``name`` is staged; its partition directories are made."""
        path = self._inside(self.staging, name)
        self._make_parents(self.staging, path)
        return path

    def _is_part(self, name: str) -> bool:
        m = PART.fullmatch(name)
        return m is not None and m.group(2) == self.extension

    def _inside(self, root: Path, name: str) -> Path:
        """``root/name`` for a relative name a checkpoint or this sink made; never outside ``root``."""
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts) or "\0" in name:
            raise SinkError(f"output file name {name!r} would leave the output directory {str(root)!r}")
        return root.joinpath(*parts)

    def _make_parents(self, root: Path, path: Path) -> None:
        """Make the partition directories between ``root`` and ``path``, durably; a link among them is refused."""
        d = root
        for part in path.relative_to(root).parts[:-1]:
            d = d / part
            try:
                if d.is_symlink() or (d.exists() and not d.is_dir()):
                    raise SinkError(f"partition directory {str(d)!r} is a link or a file; Darwin writes only into "
                                    "directories it made inside the output directory")
                if not d.exists():
                    d.mkdir()
                    fsync_path(d.parent)
            except OSError as e:  # e.g. a value too long for a directory name
                raise SinkError(f"cannot make partition directory {str(d)!r}: {e.strerror}") from None

    # -- listing -----------------------------------------------------------------------
    def committed(self) -> list[Path]:
        """The committed part files, partitions first, in name order."""
        return sorted(p for p in self._tree(self.directory, self.depth) if self._is_part(p.name))

    def _tree(self, d: Path, depth: int) -> Iterator[Path]:
        """Files ``depth`` partition directories below ``d``."""
        if not d.is_dir():
            return
        for p in d.iterdir():
            if depth == 0 and p.is_file():
                yield p
            elif depth > 0 and is_partition(p.name) and p.is_dir() and not p.is_symlink():
                yield from self._tree(p, depth - 1)

    # -- a run's start -----------------------------------------------------------------
    def check_claim(self, resume: bool, job: str) -> None:
        """Refuse (``SinkError``) a directory this run cannot claim, changing nothing: a fresh run's must be
        empty (or new), a resumed run's its job's."""
        if self.directory.exists() and not self.directory.is_dir():
            raise SinkError(f"output directory {str(self.directory)!r} is a file, not a directory; give a "
                            "directory path")
        if resume:
            if read_marker(self.directory) != job:
                raise SinkError(f"output directory {str(self.directory)!r} was not written by the job these "
                                "checkpoints belong to; resume with the output directory the job ran with "
                                f"({RESET_HINT})")
            return
        if not self.directory.is_dir():
            return
        if self.committed() or self.visible.exists():
            raise SinkError(f"output directory {str(self.directory)!r} already holds part files (or a snapshot) of "
                            "another run; give an empty directory. If that run took checkpoints, resume it with "
                            "its checkpoint_dir, or discard it with `darwin reset <its checkpoint_dir>`; if it took "
                            "none, delete its files (`darwin run job.yaml --fresh` does, for a deployment file)")
        ours = {MARKER, STAGING, VERSIONS} if read_marker(self.directory) is not None else set()
        others = sorted(p.name for p in self.directory.iterdir() if p.name not in ours)
        if others:
            raise SinkError(f"output directory {str(self.directory)!r} is not empty (it holds "
                            f"{', '.join(map(repr, others[:5]))}{', ...' if len(others) > 5 else ''}); Darwin "
                            "writes into an empty directory, so its output is never mixed with other files")

    def claim(self, resume: bool, job: str) -> None:
        """Make the directory this run's: a fresh run's must be empty; a resumed run's its job's."""
        self.check_claim(resume, job)
        ensure_directory(self.directory, "output directory", SinkError)
        if not resume:
            write_atomically(self.directory / MARKER, json.dumps({"job": job}).encode())

    def tidy(self, last_epoch: int) -> None:
        """After the resumed checkpoint's commits: drop what later epochs left, staged or committed."""
        for stale in self.committed():  # committed after a checkpoint that turned out damaged
            if (epoch_of(stale.name) or 0) > last_epoch:
                log.warning("removing %s: the checkpoint that committed it is not usable; it is written again",
                            stale)
                stale.unlink()
                _remove_empty_partitions(stale.parent, self.directory)
        self.drop_versions(last_epoch)
        self.staging.mkdir(exist_ok=True)
        for staged in list(_files_below(self.staging)):  # staged by a run that did not reach its checkpoint
            if epoch_of(staged.name) is not None:
                staged.unlink()
                _remove_empty_partitions(staged.parent, self.staging)
        _remove_empty_partition_dirs(self.staging)  # made by a run killed before it wrote the part

    # -- commits -----------------------------------------------------------------------
    def commit_part(self, entry: dict[str, Any]) -> None:
        """Rename a staged part into place (nothing to do if that is done)."""
        self._move(entry, self._inside(self.directory, entry["name"]))

    def _move(self, entry: dict[str, Any], final: Path) -> None:
        staged = self._inside(self.staging, entry["name"])
        if staged.exists():
            _verify(staged, entry)
            self._make_parents(self.directory, final)
            os.replace(staged, final)
            fsync_path(final.parent)
            _remove_empty_partitions(staged.parent, self.staging)
        elif not final.exists():
            raise SinkError(f"output {str(final)!r}, which a checkpoint recorded, is missing from both the "
                            "staging and the output directory")

    def commit_snapshot(self, entry: dict[str, Any], rewrite: Callable[[Path, pa.Table], None]) -> Path:
        """Make an upsert snapshot visible: keep its version, replace ``snapshot.<ext>`` with it, and
        drop versions more than ``VERSIONS_KEPT`` epochs old; the kept version's path.

        Recovery may find the visible file already replaced, or replaced by a later epoch whose
        checkpoint is not usable: then it is written again from the kept version by ``rewrite``."""
        version = entry["version"]
        self.versions.mkdir(exist_ok=True)
        kept = self._inside(self.versions, version["name"])
        self._move(version, kept)
        staged = self._inside(self.staging, entry["name"])
        if staged.exists():
            _verify(staged, entry)
            os.replace(staged, self.visible)
            fsync_path(self.directory)
        elif not (self.visible.exists() and crc32_of(self.visible) == entry["crc32"]):
            log.info("writing %s again from the snapshot of epoch %d", self.visible, entry["epoch"])
            tmp = self.directory / f".{self.visible.name}.tmp"
            rewrite(tmp, self.read_version(version))
            fsync_path(tmp)
            os.replace(tmp, self.visible)
            fsync_path(self.directory)
        for old in self.versions.iterdir():
            epoch = epoch_of(old.name)
            if epoch is not None and epoch <= entry["epoch"] - VERSIONS_KEPT:
                old.unlink()
        return kept

    def read_version(self, version: dict[str, Any]) -> pa.Table:
        """A kept snapshot, checked against the checksum its checkpoint recorded."""
        path = self._inside(self.versions, version["name"])
        if not path.exists():
            raise SinkError(f"the snapshot {str(path)!r}, which a checkpoint recorded, is missing ({RESET_HINT})")
        _verify(path, version)
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all()

    def drop_versions(self, last_epoch: int) -> None:
        """Kept snapshots of epochs after ``last_epoch`` (their checkpoint is not usable)."""
        if self.versions.is_dir():
            for v in self.versions.iterdir():
                if (epoch_of(v.name) or 0) > last_epoch:
                    v.unlink()


def _verify(path: Path, entry: dict[str, Any]) -> None:
    if crc32_of(path) != entry["crc32"]:
        raise SinkError(f"output {str(path)!r} does not match the checksum its checkpoint recorded; it was "
                        "changed or damaged")


def _files_below(d: Path) -> Iterator[Path]:
    if d.is_dir():
        for p in d.iterdir():
            if p.is_dir() and not p.is_symlink():
                yield from _files_below(p)
            elif p.is_file():
                yield p


def _remove_empty_partitions(d: Path, root: Path) -> None:
    """Remove ``d`` and its parents up to ``root`` while they are empty partition directories."""
    while d != root and is_partition(d.name) and d.is_dir() and not any(d.iterdir()):
        d.rmdir()
        d = d.parent


def _remove_empty_partition_dirs(d: Path) -> None:
    """Remove the empty partition directories below ``d``, deepest first."""
    for p in list(d.iterdir()):
        if p.is_dir() and not p.is_symlink() and is_partition(p.name):
            _remove_empty_partition_dirs(p)
            if not any(p.iterdir()):
                p.rmdir()


def read_marker(directory: Path) -> str | None:
    """The job that marked output ``directory`` as its own, or None."""
    marker = read_job_record(directory / MARKER)
    return None if marker is None else marker["job"]


def remove_output(directory: Path, job: str) -> list[Path]:
    """Delete what job ``job`` wrote in ``directory``: its parts (in any partition), snapshots, staged
    files and marker, and the partition directories that are left empty; what was deleted."""
    if read_marker(directory) != job:
        return []
    removed: list[Path] = []
    for top in sorted(directory.iterdir()):
        if top.name in (STAGING, VERSIONS):
            removed += _remove_tree(top, lambda p: epoch_of(p.name) is not None)
        elif is_partition(top.name) and top.is_dir() and not top.is_symlink():
            removed += _remove_tree(top, lambda p: PART.fullmatch(p.name) is not None)
        elif PART.fullmatch(top.name) or SNAPSHOT.fullmatch(top.name):
            top.unlink()
            removed.append(top)
    (directory / MARKER).unlink()
    return [*removed, directory / MARKER]


def _remove_tree(d: Path, ours: Callable[[Path], bool]) -> list[Path]:
    """Delete the files ``ours`` picks below ``d`` (through partition directories), then the
    directories left empty, ``d`` too."""
    removed: list[Path] = []
    for p in sorted(d.iterdir()):
        if p.is_dir() and not p.is_symlink() and is_partition(p.name):
            removed += _remove_tree(p, ours)
        elif p.is_file() and ours(p):
            p.unlink()
            removed.append(p)
    if not any(d.iterdir()):
        d.rmdir()
        removed.append(d)
    return removed
