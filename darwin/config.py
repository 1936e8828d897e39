"""One frozen configuration object holding every default, and hardware detection.

A YAML file overrides only the keys it sets; unknown keys are an error so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from darwin.durations import to_millis
from darwin.errors import ConfigError

MODES = ("compiled", "interpreted")
TARGETS = ("host", "generic")
ENGINES = ("darwin", "spark")  # who runs the plan: Darwin itself, or Spark (darwin.spark.engine)
EMIT = ("per_batch", "on_close")  # when an updating result's changes leave: after each batch, or at checkpoints


@dataclass(frozen=True)
class StateTraits:
    """What a state backend offers the operators keeping state in it (the operator graph reads these,
    never backend names)."""

    in_memory: bool  # tables live in DRAM: an operator may choose a DRAM-only structure (a window ring)
    undo_log: bool  # kernels log an entry's old contents before its first change in an epoch


STATE_TRAITS = {"memory": StateTraits(in_memory=True, undo_log=False),
                "mmap": StateTraits(in_memory=False, undo_log=True),
                "rocksdb": StateTraits(in_memory=False, undo_log=False)}
STATE_BACKENDS = tuple(STATE_TRAITS)
PATH_KEYS = ("state_path", "checkpoint_dir", "cache_dir")  # stored as str; only cache_dir is required


class BadKey(ConfigError):
    """A bad value of a key; ``keys`` (the keys to blame, in order) let a YAML file's error name a line."""

    def __init__(self, message: str, keys: tuple[str, ...]) -> None:
        super().__init__(message)
        self.keys = keys


def _bad(problem: str, *keys: str) -> BadKey:
    """The error for ``keys[0]``'s value; a file's error names the line of the first key it sets."""
    return BadKey(f"config key {keys[0]!r}: {problem}", keys)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
    state_path: str | None = None  # the path keys also take an os.PathLike, kept as its str
    checkpoint_dir: str | None = None
    checkpoint_interval: str | None = None  # a duration ("10s") or a count of input batches ("100 batches")
    state_delta_limit: int = 1 << 20  # rocksdb: entries of the in-memory cache before it is written out
    cache_dir: str = field(default_factory=_default_cache_dir)
    parallelism: int | str = 1  # worker threads; "auto": the cores this process may use
    # keyed aggregations on several workers fold each worker's slice first, then merge the partials
    # where their keys live (Flink's two-phase aggregation), where every aggregate merges exactly
    pre_aggregate: bool = True
    # a sliding window's rows fold once, into the pane of one slide they fall in, and a window combines
    # its panes when it fires (Flink's slice sharing), where every aggregate merges exactly; False: a
    # row folds into each of its windows
    panes: bool = True
    # a source that has sent no rows for this long stops holding back operators that read several
    # inputs (Flink's withIdleness); None: never
    idle_timeout: str | int | None = None
    # an updating result's changes: after each input batch, or ("on_close") added up and emitted at
    # each checkpoint and at the end of the input, for fewer changes at the cost of latency
    emit: str = "per_batch"
    engine: str = "darwin"
    # engine="spark": the Spark master (None: local[*]) and Spark settings (YAML: spark: {master:, conf:})
    spark_master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check_choice("engine", ENGINES)
        if self.spark_master is not None and (not isinstance(self.spark_master, str) or not self.spark_master):
            raise _bad(f"expected a Spark master URL such as 'local[*]' or 'spark://host:7077', got "
                       f"{self.spark_master!r}", "spark_master")
        if not isinstance(self.spark_conf, Mapping) or not all(isinstance(k, str) for k in self.spark_conf):
            raise _bad(f"expected a mapping of Spark settings, e.g. {{'spark.executor.memory': '4g'}}, got "
                       f"{self.spark_conf!r}", "spark_conf")
        object.__setattr__(self, "spark_conf", {k: str(v) for k, v in self.spark_conf.items()})
        self._check_choice("mode", MODES)
        self._check_choice("emit", EMIT)
        self._check_choice("target", TARGETS)
        self._check_choice("state", STATE_BACKENDS)
        if self.parallelism == "auto":
            object.__setattr__(self, "parallelism", available_cores())
        for name, least in (("batch_size", 1), ("parallelism", 1), ("prefetch", 0), ("state_delta_limit", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise _bad(f"expected an integer >= {least}, got {value!r}", name)
        for name in ("pre_aggregate", "panes"):
            if not isinstance(getattr(self, name), bool):
                raise _bad(f"expected true or false, got {getattr(self, name)!r}", name)
        for name in PATH_KEYS:
            # a frozen dataclass: normalising a path (PathLike -> str) needs object.__setattr__
            object.__setattr__(self, name, _path(name, getattr(self, name), optional=name != "cache_dir"))
        _millis(self.max_delay, "max_delay")
        if self.idle_timeout is not None:
            _millis(self.idle_timeout, "idle_timeout")
        if self.state != "memory" and not self.state_path:
            raise _bad(f"state backend {self.state!r} keeps its files there; set it to a directory",
                       "state_path", "state")
        if self.checkpoint_interval is not None and not self.checkpoint_dir:
            raise _bad("needs 'checkpoint_dir', where checkpoints go", "checkpoint_interval")
        _interval(self.checkpoint_interval)

    @property
    def checkpoint_every(self) -> tuple[str, int] | None:
        """("batches", n) or ("ms", n) between checkpoints; None when checkpoints are off."""
        return _interval(self.checkpoint_interval) if self.checkpoint_dir else None

    def _check_choice(self, name: str, choices: tuple[str, ...]) -> None:
        value = getattr(self, name)
        if value not in choices:
            raise _bad(f"expected one of {list(choices)}, got {value!r}", name)

    @property
    def state_traits(self) -> StateTraits:
        return STATE_TRAITS[self.state]

    @property
    def max_delay_ms(self) -> int:
        return _millis(self.max_delay, "max_delay")

    @property
    def idle_timeout_ms(self) -> int | None:
        return None if self.idle_timeout is None else _millis(self.idle_timeout, "idle_timeout")

    @property
    def workers(self) -> int:
        """Worker threads (``parallelism`` resolved: "auto" became a count when the config was made)."""
        assert isinstance(self.parallelism, int)
        return self.parallelism

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], base: Config | None = None) -> Config:
        """A config that overrides ``base`` (the defaults) with what the file sets.

        The file is also composed into SafeLoader nodes, whose marks give errors the line of a key.
        """
        p = Path(path)
        try:
            raw = p.read_bytes()  # PyYAML decodes (UTF-8/16) and reports bad bytes as a YAMLError
        except OSError as e:
            raise ConfigError(f"cannot read config file {str(p)!r}: {e.strerror}") from e
        try:
            node = yaml.compose(raw, Loader=yaml.SafeLoader)  # the lines of the keys, and what the file holds
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {str(p)!r} is not valid YAML: {yaml_problem(e)}") from e
        problem = yaml_node_problem(node)
        if problem is not None:
            key, line, text = problem
            raise ConfigError(f"{p}, line {line}: config key {key!r}: {text}" if key else f"{p}, line {line}: {text}")
        try:
            data = yaml_value(node)
        except ConfigError as e:
            raise ConfigError(f"config file {str(p)!r} is not valid YAML: {e}") from None
        return cls.from_dict(data or {}, where=str(p), base=base, lines=_key_lines(node))

    @classmethod
    def from_dict(cls, data: Any, where: str = "config", base: Config | None = None,
                  lines: Mapping[str, int] | None = None) -> Config:
        """``base`` overridden by ``data``; ``lines`` (key -> line in ``where``) let errors point at a line."""
        lines = lines or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping of config keys, got {type(data).__name__}")
        if "spark" in data:
            data = {**data, **spark_section(data["spark"], where)}
            del data["spark"]
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ConfigError(f"{where}{_at(lines, unknown)}: unknown config key(s) {unknown}; "
                              f"known keys: {sorted(known)}")
        try:
            return dataclasses.replace(base or cls(), **data)
        except BadKey as e:
            blamed = [k for k in e.keys if k in lines][:1]
            raise ConfigError(f"{where}{_at(lines, blamed)}: {e}") from None

    @staticmethod
    def detect() -> HardwareInfo:
        return HardwareInfo.detect()


DEFAULT_CHECKPOINT_MS = 10_000


def spark_section(section: Any, where: str) -> dict[str, Any]:
    """YAML's ``spark: {master: ..., conf: {...}}`` as the keys spark_master and spark_conf."""
    if not isinstance(section, dict) or not set(section) <= {"master", "conf"}:
        raise ConfigError(f"{where}: config key 'spark': expected a mapping with 'master' and/or 'conf', "
                          f"got {section!r}")
    out: dict[str, Any] = {}
    if "master" in section:
        out["spark_master"] = section["master"]
    if "conf" in section:
        out["spark_conf"] = section["conf"]
    return out


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    """The 1-based line of each top-level key of a composed YAML document, by the key's text."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


_MERGE = "tag:yaml.org,2002:merge"  # `<<: *anchor`, which SafeLoader merges into the mapping
_PLAIN_TAGS = frozenset(t for t in yaml.SafeLoader.yaml_constructors if t is not None) | {_MERGE}


def yaml_node_problem(node: yaml.Node | None) -> tuple[str, int, str] | None:
    """The first problem of a composed document (by line), as (dotted key, line, problem), or None.

    A key set twice in one mapping is one (``yaml.safe_load`` keeps the last value without a word),
    and so is a tag that builds no plain value (``!!python/object/apply:...``, ``!env``): SafeLoader
    would refuse it with a traceback-like report. Nodes shared through aliases are visited once.
    """
    problems: list[tuple[int, str, str]] = []
    seen: set[int] = set()
    todo: list[tuple[yaml.Node, str]] = [] if node is None else [(node, "")]
    loader = yaml.SafeLoader("")
    while todo:
        n, key = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.tag not in _PLAIN_TAGS:
            problems.append((n.start_mark.line + 1, key, f"the YAML tag {_short_tag(n.tag)!r} is not supported: "
                             "the file holds plain values (text, numbers, true/false, lists, mappings)"))
        elif isinstance(n, yaml.ScalarNode) and n.tag != "tag:yaml.org,2002:str":
            try:  # an explicit tag's conversion may fail (`!!int abc`); SafeLoader raises whatever it raised
                loader.construct_object(n)
            except (yaml.YAMLError, ValueError, TypeError, KeyError, AttributeError):
                problems.append((n.start_mark.line + 1, key, f"the value {n.value!r} is not what its YAML tag "
                                 f"{_short_tag(n.tag)!r} says"))
        if isinstance(n, yaml.MappingNode):
            first: dict[Any, int] = {}
            for k, v in n.value:
                if k.tag == _MERGE:
                    todo.append((v, key))
                    continue
                name = str(k.value) if isinstance(k, yaml.ScalarNode) else "?"
                child = f"{key}.{name}" if key else name
                line = k.start_mark.line + 1
                ident = (k.tag, k.value) if isinstance(k, yaml.ScalarNode) else id(k)
                if ident in first:
                    problems.append((line, child, f"set twice (first on line {first[ident]})"))
                first.setdefault(ident, line)
                todo += [(k, child), (v, child)]
        elif isinstance(n, yaml.SequenceNode):
            todo += [(v, f"{key}[{i}]") for i, v in enumerate(n.value)]
    loader.dispose()
    if not problems:
        return None
    line, key, problem = min(problems, key=lambda p: p[0])
    return key, line, problem


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


def yaml_value(node: yaml.Node | None) -> Any:
    """The Python value of a composed node, as ``yaml.safe_load`` builds it; what SafeLoader refuses
    is a ``ConfigError`` (check ``yaml_node_problem`` first: it names the key and line)."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as e:  # e.g. `!!str [1]`: a tag on the wrong kind of node
        raise ConfigError(yaml_problem(e)) from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:  # yaml_node_problem finds these first
        raise ConfigError(f"a value cannot be read as its YAML tag says ({type(e).__name__}: {e})") from None
    finally:
        loader.dispose()


def yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's report (several lines, with a snippet of the file) as one line with line and column."""
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        where = f"line {e.problem_mark.line + 1}, column {e.problem_mark.column + 1}"
        return f"{e.context + ', ' if e.context else ''}{e.problem} at {where}"
    return " ".join(str(e).split())


def _at(lines: Mapping[str, int], keys: list[str]) -> str:
    """", line 3" or ", lines 2, 5" for the keys a file sets; "" when none of them has a line."""
    found = [str(lines[k]) for k in keys if k in lines]
    return f", line{'s' if len(found) > 1 else ''} {', '.join(found)}" if found else ""


def _path(name: str, value: Any, optional: bool) -> str | None:
    """A path key as a non-empty str: a str or os.PathLike (bytes paths are refused)."""
    if value is None and optional:
        return None
    path = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(path, str) or not path:
        raise _bad(f"expected a path (a non-empty string){' or null' if optional else ''}, got {value!r}", name)
    return path


def _millis(value: Any, name: str) -> int:
    """``to_millis`` of a key (which refuses NaN, infinities and durations past its limit), its errors
    blamed on the key so a file's error names its line."""
    try:
        return to_millis(value, f"config key {name!r}")
    except ConfigError as e:
        raise BadKey(str(e), (name,)) from None


_BATCHES = re.compile(r"^\s*(\d+)\s*batch(?:es)?\s*$", re.IGNORECASE)
_INTERVAL_FORMS = ("write a duration with its unit, such as '10s', '500ms' or '2min', "
                   "or a count of input batches, such as '100 batches' or '1 batch'")


def _interval(value: Any) -> tuple[str, int]:
    """("batches", n) for "n batches", ("ms", n) for a duration; a bare number is refused, its unit unclear."""
    if value is None:
        return ("ms", DEFAULT_CHECKPOINT_MS)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise _bad(f"the bare number {value!r} has no unit; {_INTERVAL_FORMS}", "checkpoint_interval")
    if isinstance(value, str):
        batches = _BATCHES.match(value)
        if batches and int(batches.group(1)) >= 1:
            return ("batches", int(batches.group(1)))
        if not batches:
            with contextlib.suppress(ConfigError):  # the error below says how to write either form
                ms = _millis(value, "checkpoint_interval")
                if ms >= 1:
                    return ("ms", ms)
    raise _bad(f"expected a positive duration or a count of at least 1 batch, got {value!r}; {_INTERVAL_FORMS}",
               "checkpoint_interval")


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
