"""Choosing the CPU Numba compiles for. Imports nothing that compiles, so it can run first."""

from __future__ import annotations

import os

from darwin.errors import ConfigError


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
