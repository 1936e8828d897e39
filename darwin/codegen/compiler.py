"""Writes generated source to a content-addressed file and compiles it with Numba.

Because the file name is the hash of its content and its mtime never changes,
Numba's on-disk cache (``cache=True``) finds the machine code again in the next
process: a second run of the same query compiles nothing. The hash covers
Darwin's own source too: Numba's cache does not notice that a helper a kernel
calls (and inlines) has changed, so another Darwin must not find this one's code.
Each Darwin build keeps its kernels in a directory of its own, so that the kernels of builds nobody
runs any more (every upgrade leaves a set behind) can be removed whole.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol


class KernelSource(Protocol):
    """Generated source of a module defining ``kernel``, and a hash of it."""

    @property
    def source(self) -> str: ...

    @property
    def key(self) -> str: ...

log = logging.getLogger(__name__)
_LOADED: dict[tuple[str, str], Any] = {}


# what a kernel's code can reach: the layers up to code generation (tests/unit/test_layering.py checks it)
KERNEL_REACH = ("darwin.errors", "darwin.types", "darwin.durations", "darwin.timestamps", "darwin.files",
                "darwin.config", "darwin.io", "darwin.plan", "darwin.graph", "darwin.codegen", "darwin.state")


@functools.cache
def darwin_fingerprint() -> str:
    """A hash of the modules a kernel can reach in the installed Darwin, read once a process."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for unit in KERNEL_REACH:
        path = package / unit.removeprefix("darwin.")
        for module in sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]:
            digest.update(module.relative_to(package).as_posix().encode() + b"\0" + module.read_bytes())
    return digest.hexdigest()


def kernel_name(ks: KernelSource) -> str:
    return "k_" + hashlib.sha256(f"{darwin_fingerprint()}:{ks.key}".encode()).hexdigest()[:32]


UNUSED_BUILD_DAYS = 7  # another Darwin build's kernels go once no process has used them for this long
IN_USE = "in-use"  # a file in each build's directory, touched by every process that loads a kernel from it
REMOVING = ".removing-"  # a build directory renamed so, then removed
LOOKED = "looked-for-unused"  # touched when a process looked for unused builds: one looks a day


@functools.cache
def build_directory(cache_dir: str) -> Path:
    """This Darwin build's kernel directory, marked as used now; other builds' directories unused for
    UNUSED_BUILD_DAYS (and kernels of the older flat layout as old) are removed, looked for once a day."""
    kernels = Path(cache_dir) / "kernels"
    directory = kernels / darwin_fingerprint()[:16]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / IN_USE).touch()
    looked, now = kernels / LOOKED, time.time()
    if not looked.exists() or looked.stat().st_mtime < now - 86_400:
        looked.touch()
        remove_unused_builds(kernels, keep=directory, before=now - UNUSED_BUILD_DAYS * 86_400)
    return directory


def remove_unused_builds(kernels: Path, keep: Path, before: float) -> None:
    """Remove the build directories under ``kernels`` last used before ``before`` (a time), and files there
    of the flat layout older Darwins wrote (kernels and Numba's cache of them) last written before it."""
    flat = [kernels / "__pycache__"] if (kernels / "__pycache__").is_dir() else []
    for entry in [*kernels.iterdir(), *(f for d in flat for f in d.iterdir())]:
        try:
            if entry == keep or entry in flat or entry.name == LOOKED:
                continue
            if entry.name.startswith(REMOVING):  # a removal another process did not finish
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.is_dir():
                marker = entry / IN_USE
                if (marker if marker.exists() else entry).stat().st_mtime < before:
                    unused = entry.with_name(f"{REMOVING}{entry.name}-{os.getpid()}")
                    entry.rename(unused)  # at once: no process finds half a build
                    shutil.rmtree(unused, ignore_errors=True)
            elif entry.stat().st_mtime < before:
                entry.unlink()
        except OSError as e:  # another process removed it first, or cannot be helped: the cache stays usable
            log.debug("kernel cache: %s not removed: %s", entry, e)


def load_kernel(ks: KernelSource, cache_dir: str) -> Any:
    """The Numba dispatcher of a generated kernel (compiled lazily at first call, or from cache)."""
    memo = (ks.key, cache_dir)
    if memo in _LOADED:
        return _LOADED[memo]
    name = kernel_name(ks)
    path = build_directory(cache_dir) / f"{name}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)  # again: a long-running process's may have been removed
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(ks.source)
        os.replace(tmp, path)  # atomic: readers never see half a module
        log.debug("wrote kernel %s", path)
    spec = importlib.util.spec_from_file_location(f"darwin_kernel_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Numba's cache refers to the module by name when it loads machine code
    spec.loader.exec_module(module)
    _LOADED[memo] = module.kernel
    return module.kernel
