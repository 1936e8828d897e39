"""One frozen configuration object holding every default, and hardware detection.

A YAML file overrides only the keys it sets; unknown keys are an error so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from darwin.durations import to_millis
from darwin.errors import ConfigError

MODES = ("compiled", "interpreted")
TARGETS = ("host", "generic")
STATE_BACKENDS = ("memory", "mmap", "rocksdb")


def _default_cache_dir() -> str:
    base = os.environ.get("DARWIN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "darwin")
    return base


@dataclass(frozen=True)
class Config:
    """How a query runs. Every default lives here.

    Examples
    --------
    >>> Config(mode="interpreted").mode
    'interpreted'
    """

    mode: str = "compiled"
    target: str = "host"
    batch_size: int = 65_536
    prefetch: int = 2  # batches a reader thread decodes ahead of the compiled loop (0: read inline)
    max_delay: str | int = "0s"  # watermark delay for sources that do not set their own
    state: str = "memory"
    state_path: str | None = None
    checkpoint_dir: str | None = None
    checkpoint_interval: str | int | None = None  # a duration ("10s") or a number of input batches
    state_delta_limit: int = 1 << 20  # rocksdb: entries of the in-memory cache before it is written out
    cache_dir: str = field(default_factory=_default_cache_dir)
    parallelism: int = 1

    def __post_init__(self) -> None:
        self._check_choice("mode", MODES)
        self._check_choice("target", TARGETS)
        self._check_choice("state", STATE_BACKENDS)
        for name, least in (("batch_size", 1), ("parallelism", 1), ("prefetch", 0), ("state_delta_limit", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigError(f"config key {name!r}: expected an integer >= {least}, got {value!r}")
        if self.parallelism != 1:
            raise ConfigError("config key 'parallelism': parallel workers are not built yet; use 1")
        to_millis(self.max_delay, "config key 'max_delay'")
        if self.state != "memory" and not self.state_path:
            raise ConfigError(f"config key 'state_path': state backend {self.state!r} keeps its files there; "
                              "set it to a directory")
        if self.checkpoint_interval is not None and not self.checkpoint_dir:
            raise ConfigError("config key 'checkpoint_interval' needs 'checkpoint_dir', where checkpoints go")
        _interval(self.checkpoint_interval)

    @property
    def checkpoint_every(self) -> tuple[str, int] | None:
        """("batches", n) or ("ms", n) between checkpoints; None when checkpoints are off."""
        return _interval(self.checkpoint_interval) if self.checkpoint_dir else None

    def _check_choice(self, name: str, choices: tuple[str, ...]) -> None:
        value = getattr(self, name)
        if value not in choices:
            raise ConfigError(f"config key {name!r}: expected one of {list(choices)}, got {value!r}")

    @property
    def max_delay_ms(self) -> int:
        return to_millis(self.max_delay, "config key 'max_delay'")

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], base: Config | None = None) -> Config:
        """A config that overrides ``base`` (the defaults) with what the file sets."""
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise ConfigError(f"cannot read config file {str(p)!r}: {e.strerror}") from e
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {str(p)!r} is not valid YAML: {e}") from e
        return cls.from_dict(data or {}, where=str(p), base=base)

    @classmethod
    def from_dict(cls, data: Any, where: str = "config", base: Config | None = None) -> Config:
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping of config keys, got {type(data).__name__}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ConfigError(f"{where}: unknown config key(s) {unknown}; known keys: {sorted(known)}")
        try:
            return dataclasses.replace(base or cls(), **data)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None

    @staticmethod
    def detect() -> HardwareInfo:
        return HardwareInfo.detect()


DEFAULT_CHECKPOINT_MS = 10_000


def _interval(value: str | int | None) -> tuple[str, int]:
    """An integer is a number of input batches; a string with a unit is a duration."""
    if value is None:
        return ("ms", DEFAULT_CHECKPOINT_MS)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ConfigError(f"config key 'checkpoint_interval': expected at least 1 batch, got {value}")
        return ("batches", value)
    ms = to_millis(value, "config key 'checkpoint_interval'")
    if ms < 1:
        raise ConfigError(f"config key 'checkpoint_interval': expected a positive duration, got {value!r}")
    return ("ms", ms)


@dataclass(frozen=True)
class HardwareInfo:
    """What Darwin found out about the machine it runs on."""

    cpu_name: str
    cpu_features: tuple[str, ...]
    cores: int
    memory_bytes: int

    @staticmethod
    def detect() -> HardwareInfo:
        import llvmlite.binding as llvm

        features = tuple(sorted(f for f, on in llvm.get_host_cpu_features().items() if on))
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            memory = 0
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return HardwareInfo(llvm.get_host_cpu_name(), features, cores, memory)

    def describe(self) -> str:
        simd = [f for f in self.cpu_features if f.startswith(("avx", "sse4", "fma", "neon", "sve"))]
        return (f"cpu: {self.cpu_name}\ncores: {self.cores}\n"
                f"memory: {self.memory_bytes / 2**30:.1f} GiB\nsimd: {' '.join(simd) or '-'}\n"
                f"features: {len(self.cpu_features)} enabled")
