"""Writes generated source to a content-addressed file and compiles it with Numba.

Because the file name is the hash of its content and its mtime never changes,
Numba's on-disk cache (``cache=True``) finds the machine code again in the next
process: a second run of the same query compiles nothing. The hash covers
Darwin's own source too: Numba's cache does not notice that a helper a kernel
calls (and inlines) has changed, so another Darwin must not find this one's code.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
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


def load_kernel(ks: KernelSource, cache_dir: str) -> Any:
    """The Numba dispatcher of a generated kernel (compiled lazily at first call, or from cache)."""
    memo = (ks.key, cache_dir)
    if memo in _LOADED:
        return _LOADED[memo]
    name = kernel_name(ks)
    path = Path(cache_dir) / "kernels" / f"{name}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
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
