"""Flink's ``SET 'key' = 'value'`` and ``RESET 'key'`` statements: a script's session configuration.

Flink's SQL client (and ``executeSql``) reads them with a pattern, not its SQL grammar: the key and
value may be quoted or not (``SET table.exec.state.ttl = 1h``), ``SET;`` lists the settings and
``RESET;`` drops them all. Three classes of keys (docs/decisions.md, "SET statements"):

- honoured: ``table.exec.state.ttl`` (applied to the stateful operators of each INSERT INTO or final
  query planned after it) and the keys that map onto a field of ``darwin.Config`` with the same meaning;
- accepted and ignored: keys that only tune Flink's performance and cannot change a result;
- everything else is refused, as is a value a key cannot take, with the line and column.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot.tokens import Token, TokenType

from darwin.config import Config
from darwin.errors import ConfigError, DarwinError, SqlError, UnsupportedError
from darwin.plan import nodes as pn
from darwin.plan.temporal import join_timing

_SET = re.compile(r"SET(?:\s+(?:'(?P<qkey>[^']*)'|(?P<key>[^'\s]+))\s*=\s*(?:'(?P<qval>[^']*)'|(?P<val>[^;\s']+)))?\s*",
                  re.IGNORECASE | re.DOTALL)  # Flink's SetOperationParseStrategy
_RESET = re.compile(r"RESET(?:\s+(?:'(?P<qkey>[^']*)'|(?P<key>[^'\s]+)))?\s*", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class SessionStatement:
    """One SET or RESET: ``key`` None for ``SET;`` (which only lists) or ``RESET;`` (drops every
    setting); ``value`` None for a RESET. Offsets are into the script's text."""

    reset: bool
    key: str | None
    value: str | None
    start: int
    key_at: int
    value_at: int


def is_session_statement(first: Token) -> bool:
    """Whether a statement starting with ``first`` is a SET or RESET (which sqlglot cannot parse)."""
    return first.token_type is TokenType.SET or (first.token_type is TokenType.VAR and first.text.upper() == "RESET")


def session_statement(text: str, start: int, end: int, error: Callable[[int, str], SqlError]) -> SessionStatement:
    """The SET or RESET statement ``text[start:end]``."""
    statement = text[start:end]
    reset = statement[:5].upper() == "RESET"
    found = (_RESET if reset else _SET).fullmatch(statement)
    if found is None:
        form = "RESET 'key'" if reset else "SET 'key' = 'value'"
        raise error(start, f"write {form}; (the quotes may be left out where the text has no space or quote; "
                           "a ';' ends the statement)")
    key_group = "qkey" if found.group("qkey") is not None else "key"
    key = found.group(key_group)
    if key is None:  # SET; or RESET;
        return SessionStatement(reset, None, None, start, start, start)
    key_at = start + found.start(key_group) - (key_group == "qkey")  # a quoted text is where its quote is
    if reset:
        return SessionStatement(True, key, None, start, key_at, key_at)
    value_group = "qval" if found.group("qval") is not None else "val"
    value_at = start + found.start(value_group) - (value_group == "qval")
    return SessionStatement(False, key, found.group(value_group), start, key_at, value_at)


# -- values, read as Flink reads them -------------------------------------------------------------------
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")
_DURATION_UNITS = {  # Flink's TimeUtils: unit labels, singular and plural; no unit is milliseconds
    **dict.fromkeys(("d", "day", "days"), 86_400_000_000_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000_000_000),
    **dict.fromkeys(("min", "mins", "m", "minute", "minutes"), 60_000_000_000),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000_000_000),
    **dict.fromkeys(("", "ms", "milli", "millis", "millisecond", "milliseconds"), 1_000_000),
    **dict.fromkeys(("µs", "micro", "micros", "microsecond", "microseconds"), 1_000),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}


class BadValue(ValueError):
    """A value its key cannot take; the text says what the key takes."""


def duration_ms(value: str) -> int:
    """Milliseconds of a Flink duration: '1 h', '1h', '3600000 ms', '60 s', '3600000' (ms)."""
    found = _DURATION.match(value.lower())
    if found is None or found.group(2) not in _DURATION_UNITS:
        raise BadValue("expected a duration such as '1 h', '10 s', '500 ms' (a number and a unit: d, h, min, s, "
                       "ms; no unit is milliseconds)")
    nanos = int(found.group(1)) * _DURATION_UNITS[found.group(2)]
    if nanos % 1_000_000:
        raise BadValue("is not a whole number of milliseconds; Darwin counts event time in ms")
    return nanos // 1_000_000


def _boolean(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise BadValue("expected 'true' or 'false'")
    return value.lower() == "true"


def _integer(value: str, least: int) -> int:
    if re.fullmatch(r"\s*[-+]?\d+\s*", value) is None or int(value) < least:
        raise BadValue(f"expected an integer >= {least}" if least > 0 else "expected an integer")
    return int(value)


def _choice(*choices: str) -> Callable[[str], str]:
    def read(value: str) -> str:
        if value.upper() not in choices:
            raise BadValue(f"expected one of {', '.join(repr(c) for c in choices)}")
        return value.upper()
    return read


def _positive_duration(value: str) -> int:
    ms = duration_ms(value)
    if ms <= 0:
        raise BadValue("expected a positive duration such as '10 s'")
    return ms


def _runtime_mode(value: str) -> str:
    mode = _choice("STREAMING", "BATCH", "AUTOMATIC")(value)
    if mode != "STREAMING":
        raise BadValue("Darwin runs every query as a stream: it emits the changes Flink's streaming mode emits, "
                       "where Flink's batch mode gives only the final rows; leave it 'streaming'")
    return mode


UTC_ZONES = ("UTC", "GMT", "Etc/UTC", "Etc/GMT", "Z", "+00:00")


def _state_backend(value: str) -> str:
    """Darwin's backend for a Flink state backend (Flink reads the name in any case): ``hashmap``
    (and the older ``jobmanager`` and ``filesystem``, heap backends too) keeps state as objects on
    the JVM heap, which Darwin's ``memory`` backend is; ``rocksdb`` is ``rocksdb``."""
    backend = {"hashmap": "memory", "jobmanager": "memory", "filesystem": "memory",
               "rocksdb": "rocksdb"}.get(value.strip().lower())
    if backend is None:
        raise BadValue("expected 'hashmap' or 'rocksdb' (Darwin's memory and rocksdb backends); Darwin has no "
                       "other Flink state backend")
    return backend


_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _directory(value: str) -> str:
    """A local directory, given as a path or a ``file://`` URI (Flink's usual form): the path."""
    path = re.sub(r"^file:(//)?", "", value.strip())  # file:///abs, file:/abs
    if not path:
        raise BadValue("expected a directory, e.g. 'file:///data/checkpoints' or 'checkpoints'")
    if _URI_SCHEME.match(path) and not re.match(r"^[A-Za-z]:[\\/]", path):
        raise BadValue("Darwin writes to local directories; a distributed file system (hdfs://, s3://, ...) is "
                       "not supported: give a local path or a file:// URI")
    return path


def _time_zone(value: str) -> str:
    if value not in UTC_ZONES:
        raise BadValue("Darwin computes times in UTC (as Flink does in a UTC session); other zones are not supported")
    return value


# The keys Darwin honours: how each value is read. table.exec.state.ttl shapes the plan, the others a Config.
HONOURED: dict[str, Callable[[str], Any]] = {
    "table.exec.state.ttl": duration_ms,  # 0: never expire (Flink's default)
    "parallelism.default": lambda v: _integer(v, 1),
    "table.exec.resource.default-parallelism": lambda v: _integer(v, -1),  # -1: parallelism.default
    "execution.checkpointing.interval": _positive_duration,
    "table.exec.source.idle-timeout": duration_ms,  # 0: never idle (Flink's default)
    "table.optimizer.agg-phase-strategy": _choice("AUTO", "ONE_PHASE", "TWO_PHASE"),
    "table.local-time-zone": _time_zone,  # what Darwin does anyway: accepted only where it holds
    "execution.runtime-mode": _runtime_mode,  # likewise: streaming only
    "state.backend.type": _state_backend,  # Config.state
    "state.backend": _state_backend,  # the older key of the same setting (Flink < 1.19)
    "execution.checkpointing.dir": _directory,  # Config.checkpoint_dir
    "state.checkpoints.dir": _directory,  # the older key of the same setting (Flink < 2.0)
    "state.backend.rocksdb.localdir": _directory,  # Config.state_path: where RocksDB keeps its files
}
# Keys whose value is a path: a script run from a deployment holds them to the deployment's rule.
PATH_SETTINGS = ("execution.checkpointing.dir", "state.checkpoints.dir", "state.backend.rocksdb.localdir")
# Keys that only tune Flink's performance or its client's display: read (a malformed value is still
# refused) and otherwise ignored, since no result depends on them.
IGNORED: dict[str, Callable[[str], Any]] = {
    "pipeline.name": str,
    "table.exec.mini-batch.enabled": _boolean,
    "table.exec.mini-batch.allow-latency": duration_ms,
    "table.exec.mini-batch.size": lambda v: _integer(v, -1),
    "table.optimizer.distinct-agg.split.enabled": _boolean,
    "table.optimizer.distinct-agg.split.bucket-num": lambda v: _integer(v, 1),
    "execution.checkpointing.mode": _choice("EXACTLY_ONCE", "AT_LEAST_ONCE"),  # Darwin's are exactly once
    "state.backend.incremental": _boolean,  # how much a RocksDB checkpoint copies, not what it holds
    "sql-client.execution.result-mode": _choice("TABLE", "CHANGELOG", "TABLEAU"),
    "sql-client.verbose": _boolean,
}


# What a key that needs another setting says to give (a Config refuses it without).
_LOCAL_DIR = (" (SET 'state.backend.rocksdb.localdir', or give Config(state_path=...) or a deployment's config: "
              "state_path)")
_WAYS_OUT = {"execution.checkpointing.interval": " (SET 'execution.checkpointing.dir', or give Config(checkpoint_dir="
                                                 "...) or a deployment's config: checkpoint_dir)",
             "state.backend.type": _LOCAL_DIR, "state.backend": _LOCAL_DIR}


@dataclass(frozen=True)
class Settings:
    """The settings in effect at a statement: each key's value read, and where it was set
    ("line 2, column 5"), for errors that surface later (a Config it cannot make)."""

    values: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    @property
    def state_ttl_ms(self) -> int | None:
        """table.exec.state.ttl in ms; None where not set or 0 (Flink's 'never')."""
        return self.values.get("table.exec.state.ttl") or None

    def config_changes(self) -> dict[str, tuple[Any, str]]:
        """The Config fields these settings give, each with the key that gave it. Of a key and its
        older name, the newer wins where both are set, as in Flink."""
        v, changes = self.values, {}
        for field_name, keys in (("state", ("state.backend.type", "state.backend")),
                                 ("checkpoint_dir", ("execution.checkpointing.dir", "state.checkpoints.dir")),
                                 ("state_path", ("state.backend.rocksdb.localdir",))):
            key = next((k for k in keys if k in v), None)
            if key is not None:
                changes[field_name] = (v[key], key)
        resource = v.get("table.exec.resource.default-parallelism", -1)
        if resource > 0:  # Flink: the SQL operators' parallelism where set, else parallelism.default
            changes["parallelism"] = (resource, "table.exec.resource.default-parallelism")
        elif "parallelism.default" in v:
            changes["parallelism"] = (v["parallelism.default"], "parallelism.default")
        if "execution.checkpointing.interval" in v:
            ms = v["execution.checkpointing.interval"]
            changes["checkpoint_interval"] = (f"{ms}ms", "execution.checkpointing.interval")
        if "table.exec.source.idle-timeout" in v:
            ms = v["table.exec.source.idle-timeout"]
            changes["idle_timeout"] = (f"{ms}ms" if ms else None, "table.exec.source.idle-timeout")
        if "table.optimizer.agg-phase-strategy" in v:
            one = v["table.optimizer.agg-phase-strategy"] == "ONE_PHASE"
            changes["pre_aggregate"] = (not one, "table.optimizer.agg-phase-strategy")
        return changes

    def applied(self, config: Config | None, paths: Callable[[str], str] | None = None) -> Config:
        """``config`` (the caller's: Flink's flink-conf.yaml) with what the script SET: SET wins, as a
        session's SET overrides the cluster's configuration; a RESET went back to ``config``'s value.
        ``paths`` turns a directory the script SET into the one to use (a deployment resolves it
        against its directory and keeps it under it, as the paths of its CREATE TABLEs); its refusal
        is an ``SqlError`` at the SET."""
        base = config or Config()
        changes = self.config_changes()
        if not changes:
            return base
        if paths is not None:
            for name, (value, key) in list(changes.items()):
                if key in PATH_SETTINGS:
                    try:
                        changes[name] = (paths(value), key)
                    except DarwinError as e:
                        raise SqlError(f"{self.where[key]}: SET '{key}' = '{value}': {e}") from None
        try:
            return base.replace(**{name: value for name, (value, _) in changes.items()})
        except ConfigError as e:
            key = next((k for f, (_, k) in changes.items() if repr(f) in str(e)), next(iter(changes.values()))[1])
            hint = _WAYS_OUT.get(key, "")
            raise SqlError(f"{self.where[key]}: SET '{key}': {e}{hint}") from None


class Session:
    """What a script's SET and RESET statements have set so far, statement by statement."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.where: dict[str, str] = {}

    def apply(self, statement: SessionStatement, error: Callable[[int, str], SqlError],
              position: Callable[[int], str]) -> None:
        key = statement.key
        if key is None:
            if statement.reset:
                self.values.clear()
                self.where.clear()
            return  # SET; lists the settings in Flink's client: nothing to do in a script
        read = HONOURED.get(key) or IGNORED.get(key)
        if read is None:
            raise error(statement.key_at, f"{'RESET' if statement.reset else 'SET'} '{key}': Darwin does not know "
                                          f"this key; it takes {', '.join(sorted(HONOURED))} and, ignored as they "
                                          f"only tune Flink's performance, {', '.join(sorted(IGNORED))}")
        if statement.reset:
            self.values.pop(key, None)
            self.where.pop(key, None)
            return
        assert statement.value is not None
        try:
            value = read(statement.value)
        except BadValue as e:
            raise error(statement.value_at, f"SET '{key}' = '{statement.value}': {e}") from None
        if key in HONOURED:
            self.values[key] = value
            self.where[key] = position(statement.key_at)

    def settings(self) -> Settings:
        return Settings(dict(self.values), dict(self.where))


def state_ttl_applied(plan: pn.PlanNode, ttl_ms: int) -> pn.PlanNode:
    """``plan`` with ``ttl_ms`` as the state TTL of every operator that keeps state per key for ever
    and has no TTL of its own: updating aggregations, regular joins, deduplications and top-Ns
    without a window (a join side or an aggregation a STATE_TTL hint gave one keeps it). Windowed
    operators (their state leaves as windows fire), interval and window
    joins (rows leave once they can no longer match) and lookup joins (no stream rows) need none,
    and Flink gives them none. An OVER window is refused: Flink clears an idle partition's rows by a
    processing-time timer (docs/decisions.md, "SQL", SET statements), Darwin's keeps them."""
    def expiring(node: pn.PlanNode) -> pn.PlanNode:
        if isinstance(node, pn.Over):
            raise UnsupportedError("an OVER window keeps its partitions' rows and takes no state TTL (Flink clears "
                                   "an idle partition by a processing-time timer, between the TTL and 1.5 times it, "
                                   "which no event-time rule reproduces); RESET 'table.exec.state.ttl' before it")
        if isinstance(node, pn.GroupAggregate):  # a STATE_TTL hint's TTL wins, as in Flink
            keyed = not isinstance(node.input, pn.WindowAssign) and not node.ttl_given
        elif isinstance(node, pn.Deduplicate):
            keyed = not isinstance(node.input, pn.WindowAssign)
        elif isinstance(node, pn.TopN):
            keyed = not node.windowed
        elif isinstance(node, pn.Join):
            keyed = join_timing(node) is None
        else:
            return node
        return dataclasses.replace(node, state_ttl_ms=ttl_ms) if keyed and node.state_ttl_ms is None else node
    return pn.transform(plan, expiring)
