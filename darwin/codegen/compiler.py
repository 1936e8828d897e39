"""Writes generated source to a content-addressed file and compiles it with Numba.

Because the file name is the hash of its content and its mtime never changes,
Numba's on-disk cache (``cache=True``) finds the machine code again in the next
process: a second run of the same query compiles nothing.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from darwin.codegen.generate import KernelSource
from darwin.errors import ConfigError

log = logging.getLogger(__name__)
_LOADED: dict[tuple[str, str], Any] = {}


def ensure_target(target: str) -> None:
    """Make Numba compile for ``target`` ('host' or 'generic').

    Numba fixes its CPU target when it first compiles in a process, so the target
    can be chosen only before then; asking for the other one later is an error.
    """
    from numba.core import config as numba_config
    from numba.core.registry import cpu_target

    current = "generic" if os.environ.get("NUMBA_CPU_NAME") == "generic" else "host"
    if "_toplevel_target_context" in cpu_target.__dict__:
        if current != target:
            raise ConfigError(f"config key 'target': this process already compiles for {current!r}; Numba fixes "
                              f"the CPU target per process, so run target={target!r} in a new process "
                              "(e.g. set NUMBA_CPU_NAME=generic before starting it)")
        return
    if target == "generic":
        os.environ["NUMBA_CPU_NAME"] = "generic"
        os.environ["NUMBA_CPU_FEATURES"] = ""
    else:
        os.environ.pop("NUMBA_CPU_NAME", None)
        os.environ.pop("NUMBA_CPU_FEATURES", None)
    numba_config.reload_config()


def kernel_path(ks: KernelSource, cache_dir: str) -> Path:
    return Path(cache_dir) / "kernels" / f"k_{ks.key[:32]}.py"


def load_kernel(ks: KernelSource, cache_dir: str) -> Any:
    """The Numba dispatcher of a generated kernel (compiled lazily at first call, or from cache)."""
    memo = (ks.key, cache_dir)
    if memo in _LOADED:
        return _LOADED[memo]
    path = kernel_path(ks, cache_dir)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(ks.source)
        os.replace(tmp, path)  # atomic: readers never see half a module
        log.debug("wrote kernel %s", path)
    spec = importlib.util.spec_from_file_location(f"darwin_kernel_{ks.key[:32]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED[memo] = module.kernel
    return module.kernel
