"""What a deployment file says, checked: ``load(path) -> Deployment``.

Every key is known (a typo is an error, never a default), every value has its type, and every
error names the file, the line and the dotted key. Paths resolve relative to the file's
directory and must stay under it unless the file sets ``allow_paths_outside: true``.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from darwin.config import PATH_KEYS, BadKey, Config, spark_section
from darwin.deploy.nodes import Entry, compose
from darwin.errors import ConfigError

SOURCE_TYPES = ("parquet", "csv", "ipc", "kafka", "nexmark")
SINK_TYPES = ("parquet", "csv", "kafka", "blackhole")
KAFKA_FORMATS = ("json", "csv", "avro", "raw")
AVRO_WIRES = ("plain", "confluent")
_AVRO_KEYS = ("avro_schema", "avro_wire", "avro_schema_id")  # with format: avro
KAFKA_STARTS = ("earliest", "latest", "group")
NEXMARK_STREAMS = ("person", "auction", "bid")
SINK_MODES = ("append", "changelog", "upsert")
GUARANTEES = {"at-least-once": "at_least_once", "exactly-once": "exactly_once",
              "at_least_once": "at_least_once", "exactly_once": "exactly_once"}
_SOURCE_COMMON = ("time", "max_delay", "max_future", "rate_limit")
# per type: (required keys, optional keys), besides 'type' and the common ones
_SOURCE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "parquet": (("path",), ("primary_key",)),
    "csv": (("path",), ("schema", "header", "delimiter", "primary_key")),
    "ipc": (("path",), ("primary_key",)),
    "kafka": (("topic", "bootstrap_servers"), ("format", "schema", "bounded", "start", "group", "idle_timeout",
                                               "config", "metadata", *_AVRO_KEYS)),
    "nexmark": ((), ("stream", "events", "rate", "seed", "primary_key")),
}
_SINK_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "parquet": (("path",), ("mode", "partition_by", "key", "late_path")),
    "csv": (("path",), ("mode", "partition_by", "key", "late_path", "header")),
    "kafka": (("topic", "bootstrap_servers"), ("format", "key", "timestamp", "guarantee", "staging_dir",
                                               "transactional_id", "config", *_AVRO_KEYS)),
    "blackhole": ((), ()),
}
_VARIABLE = re.compile(r"\$(\{[^}]*\}|[A-Za-z_]\w*)")  # $NAME or ${NAME}, as a shell would expand it
_FUNCTION = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


@dataclass(frozen=True)
class SourceSpec:
    """One input table, named as the query reads it. ``options`` holds the checked keys of its type
    (paths already resolved); ``key`` and ``line`` say where it is declared."""

    name: str
    type: str
    key: str
    line: int
    time: str | None = None
    max_delay: str | int | None = None
    max_future: str | int | None = None
    rate_limit: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QuerySpec:
    """``sql`` text, or ``python`` 'module:function'. ``line``/``column``: where the SQL text's
    first character is in the file (to turn an SQL line and column into a file line and column)."""

    key: str
    line: int
    sql: str | None = None
    python: str | None = None
    column: int = 1


@dataclass(frozen=True)
class SinkSpec:
    """Where the query's rows go; ``options`` as for ``SourceSpec``."""

    name: str
    type: str
    key: str
    line: int
    options: Mapping[str, Any] = field(default_factory=dict)
    lines: Mapping[str, int] = field(default_factory=dict)  # option -> the line that sets it

    def where(self, option: str) -> tuple[str, int]:
        """The dotted key and line of ``option`` (the sink's own if the file does not set it)."""
        return (f"{self.key}.{option}", self.lines[option]) if option in self.lines else (self.key, self.line)


@dataclass(frozen=True)
class Deployment:
    """A whole job: its sources, query, sink and engine settings, read from ``file``."""

    file: Path
    name: str
    sources: tuple[SourceSpec, ...]
    query: QuerySpec
    sinks: tuple[SinkSpec, ...]
    config: Config
    allow_paths_outside: bool = False

    @property
    def directory(self) -> Path:
        """The directory relative paths resolve against: the file's own, a link to it followed (as ``load``
        resolves the paths of the file's keys)."""
        return self.file.resolve().parent

    def read_path(self, text: str) -> Path:
        """A path the job reads, given inside the query (a CREATE TABLE's 'path'), held to the file's
        rule: resolved against its directory, and kept under it (a directory's entries too) unless
        ``allow_paths_outside``. A ``ConfigError`` without a place: the caller knows where it was."""
        return _Paths(self.directory.resolve(), self.allow_paths_outside).check(text, read=True)

    def write_path(self, text: str) -> str:
        """A directory the job writes, given inside the query (SET 'execution.checkpointing.dir'), held
        to the rule of the file's own paths: resolved against its directory and kept under it unless
        ``allow_paths_outside``. A ``ConfigError`` without a place: the caller knows where it was."""
        return str(_Paths(self.directory.resolve(), self.allow_paths_outside).check(text))

    def summary(self, config: Config | None = None) -> str:
        """A few lines saying what the job reads, computes and writes; ``config``: what it runs with,
        if not its ``config:`` section (query.sql's SET statements change it)."""
        lines = [f"job {self.name} ({self.file})"]
        for s in self.sources:
            where = s.options.get("path") or s.options.get("topic") or s.options.get("stream") or ""
            lines.append(f"  source {s.name}: {s.type} {where}".rstrip()
                         + (f", time {s.time}" if s.time else "")
                         + (f", max_delay {s.max_delay}" if s.max_delay is not None else ""))
        query = f"sql ({len(self.query.sql.splitlines())} lines)" if self.query.sql is not None \
            else f"python {self.query.python}"
        lines.append(f"  query: {query}")
        for k in self.sinks:
            where = k.options.get("path") or k.options.get("topic") or ""
            lines.append(f"  sink {k.name}: {k.type} {where}".rstrip()
                         + (f", mode {k.options['mode']}" if k.options.get("mode") else ""))
        c = config or self.config
        lines.append(f"  engine: {c.engine}, mode {c.mode}, state {c.state}, parallelism {c.parallelism}"
                     + (f", checkpoints in {c.checkpoint_dir} every {c.checkpoint_interval or '10s'}"
                        if c.checkpoint_dir else ""))
        return "\n".join(lines)


def load(path: str | Path) -> Deployment:
    """The deployment in ``path``, checked; a ``ConfigError`` naming file, line and key otherwise."""
    file = Path(path)
    node = compose(file)
    if node is None:
        raise ConfigError(f"{file.name}:1: the file is empty; a deployment has 'sources', 'query' and 'sinks'")
    root = Entry(file.name, "", node, 1)
    if isinstance(node, yaml.MappingNode) and "sources" not in root.mapping() and \
            set(root.mapping()) <= {f.name for f in dataclasses.fields(Config)} | {"spark"}:
        raise root.error("this is an engine config (Config keys only), not a deployment with 'sources', 'query' "
                         "and 'sinks'; give it as `darwin run --config FILE`, or under 'config:' in a deployment")
    top = root.mapping(
        required=("sources", "query", "sinks"), optional=("name", "config", "allow_paths_outside"))
    outside = top["allow_paths_outside"].boolean() if "allow_paths_outside" in top else False
    paths = _Paths(file.resolve().parent, outside)
    sources = tuple(_source(name, e, paths) for name, e in _named(top["sources"], "source").items())
    sinks = tuple(_sink(name, e, paths) for name, e in _named(top["sinks"], "sink").items())
    if len(sinks) != 1:
        raise top["sinks"].error(f"a deployment runs its query into exactly one sink (the runtime drives one sink "
                                 f"per job), got {len(sinks)}: {[s.name for s in sinks]}")
    return Deployment(file=file, name=top["name"].string() if "name" in top else file.stem, sources=sources,
                      query=_query(top["query"], file), sinks=sinks,
                      config=_config(top["config"], paths) if "config" in top else Config(),
                      allow_paths_outside=outside)


@dataclass(frozen=True)
class _Paths:
    """Resolves a config's paths against its directory, keeping them under it unless allowed."""

    base: Path
    outside: bool

    def resolve(self, entry: Entry, read: bool = False) -> Path:
        """``entry``'s path, resolved; ``read``: the job reads it (a source), so a directory's entries
        are held to the rule too."""
        text = entry.string()  # its own error names the key and line once
        try:
            return self.check(text, read)
        except ConfigError as e:
            raise entry.error(str(e)) from None

    def check(self, text: str, read: bool = False) -> Path:
        if not text:
            raise ConfigError("expected a non-empty path")
        variable = _VARIABLE.search(text)
        if variable is not None:  # it would be a directory of that name, under the file's
            raise ConfigError(f"the path {text!r} holds {variable.group()!r}, and environment variables are not "
                              "expanded in a deployment's paths (the file is the whole job); write the path itself")
        p = Path(text.removeprefix("file://")).expanduser()
        resolved = (p if p.is_absolute() else self.base / p).resolve()
        if self.outside:
            return resolved
        if not resolved.is_relative_to(self.base):
            raise ConfigError(f"the path {text!r} leads outside the deployment file's directory {str(self.base)!r}; "
                              "paths stay under it unless the file sets 'allow_paths_outside: true'")
        if read and resolved.is_dir():
            # a directory source reads its entries (names starting with '.' or '_' are skipped), and a link
            # among them (data/a.csv -> /elsewhere/secret.csv) is followed: each must stay under the directory
            try:
                entries = sorted(resolved.iterdir())
            except OSError as e:
                raise ConfigError(f"cannot list the directory {text!r}: {e.strerror}") from None
            for entry in entries:
                if entry.name.startswith((".", "_")):
                    continue
                target = entry.resolve()
                if not target.is_relative_to(self.base):
                    raise ConfigError(f"the path {text!r} is a directory whose entry {entry.name!r} leads outside the "
                                      f"deployment file's directory {str(self.base)!r} (to {str(target)!r}); paths "
                                      "stay under it unless the file sets 'allow_paths_outside: true'")
        return resolved


def _named(entry: Entry, what: str) -> dict[str, Entry]:
    """A mapping of names (usable in SQL and as Python keyword arguments) to their specs."""
    named = entry.mapping()
    if not named:
        raise entry.error(f"expected at least one {what}, named, e.g. {entry.key}: {{bids: {{type: ...}}}}")
    for name, e in named.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            raise e.error(f"a {what} name is a plain identifier (letters, digits, _), usable in SQL and Python")
    return named


def _typed(entry: Entry, types: tuple[str, ...], keys: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
           common: tuple[str, ...]) -> tuple[str, dict[str, Entry]]:
    """The entry's 'type' and its keys, checked against that type's keys."""
    raw = entry.mapping()  # the type decides which keys are known
    if "type" not in raw:
        raise entry.error(f"missing required key 'type' (one of {list(types)})")
    kind = raw["type"].choice(types)
    required, optional = keys[kind]
    return kind, entry.mapping(required=("type", *required), optional=(*common, *optional))


def _source(name: str, entry: Entry, paths: _Paths) -> SourceSpec:
    kind, keys = _typed(entry, SOURCE_TYPES, _SOURCE_KEYS, _SOURCE_COMMON)
    options: dict[str, Any] = {}
    for key, e in keys.items():
        if key in ("type", *_SOURCE_COMMON):
            continue
        if key == "path":
            options[key] = paths.resolve(e, read=True)
        elif key == "schema":
            options[key] = _schema(e)
        elif key == "primary_key":  # columns no two rows share (trusted, as SQL's NOT ENFORCED)
            options[key] = e.names()
        elif key in ("header", "bounded"):
            options[key] = e.boolean()
        elif key == "format":
            options[key] = e.choice(KAFKA_FORMATS)
        elif key == "start":
            options[key] = e.choice(KAFKA_STARTS)
        elif key == "stream":
            options[key] = e.choice(NEXMARK_STREAMS)
        elif key in ("events", "rate", "seed"):
            options[key] = e.integer(least=0 if key == "seed" else 1)
        elif key == "idle_timeout":
            options[key] = e.duration()
        elif key == "config":
            options[key] = e.string_map()
        elif key == "metadata":
            options[key] = _metadata(e)
        elif key in _AVRO_KEYS:
            options[key] = _avro_option(key, e)
        else:  # topic, bootstrap_servers, group, delimiter
            options[key] = e.string()
    if kind == "nexmark":
        options.setdefault("stream", name if name in NEXMARK_STREAMS else "bid")
        options.setdefault("events", 100_000)
    time = keys["time"].string() if "time" in keys else ("date_time" if kind == "nexmark" else
                                                         "timestamp" if kind == "kafka" else None)
    return SourceSpec(name, kind, entry.key, entry.line, time=time,
                      max_delay=keys["max_delay"].duration() if "max_delay" in keys else None,
                      max_future=keys["max_future"].duration() if "max_future" in keys else None,
                      rate_limit=keys["rate_limit"].number() if "rate_limit" in keys else None,
                      options=options)


def _metadata(entry: Entry) -> tuple[str, ...]:
    """The Kafka metadata columns a source adds to the value's (a list, maybe empty): leaving one out frees
    its name for a column of the value (a JSON field named 'timestamp')."""
    from darwin.io.kafka.source import METADATA

    value = entry.value()
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise entry.error(f"expected a list of metadata columns (some of {list(METADATA)}, or []), got "
                          f"{entry._got()}")
    unknown = [n for n in value if n not in METADATA]
    if unknown:
        raise entry.error(f"unknown metadata column(s) {unknown}; the metadata columns are {list(METADATA)}")
    return tuple(value)


def _avro_option(key: str, entry: Entry) -> Any:
    """avro_schema: the writer schema, a mapping or its JSON text; avro_wire: plain | confluent;
    avro_schema_id: the Confluent schema id."""
    if key == "avro_wire":
        return entry.choice(AVRO_WIRES)
    if key == "avro_schema_id":
        return entry.integer(least=0)
    schema = entry.value()
    if not isinstance(schema, (dict, str)):
        raise entry.error("expected an Avro schema: a mapping such as {type: record, name: Bid, fields: [...]}, "
                          "or its JSON text")
    return _avro_nulls(schema)


def _avro_nulls(schema: Any) -> Any:
    """YAML reads an unquoted ``null`` as no value; where Avro expects a type, it is the type "null"
    (``type: [null, string]``). Defaults (``default: null``) stay values."""
    if schema is None:
        return "null"
    if isinstance(schema, list):
        return [_avro_nulls(t) for t in schema]
    if isinstance(schema, dict):
        out = dict(schema)
        if "type" in out:
            out["type"] = _avro_nulls(out["type"])
        for key in ("items", "values"):
            if key in out:
                out[key] = _avro_nulls(out[key])
        if isinstance(out.get("fields"), list):
            out["fields"] = [_avro_nulls(f) if isinstance(f, dict) else f for f in out["fields"]]
        return out
    return schema


def _schema(entry: Entry) -> dict[str, Any]:
    """column -> Arrow type, from column -> type name."""
    from darwin.errors import SchemaError
    from darwin.io.type_names import arrow_type

    out = {}
    for column, e in entry.mapping().items():
        try:
            out[column] = arrow_type(e.value(), "type")
        except SchemaError as err:
            raise e.error(str(err).removeprefix("type: ")) from None
    if not out:
        raise entry.error("expected a mapping of column -> type, e.g. {id: int64, ts: timestamp[ms]}")
    return out


def _sink(name: str, entry: Entry, paths: _Paths) -> SinkSpec:
    kind, keys = _typed(entry, SINK_TYPES, _SINK_KEYS, ())
    options: dict[str, Any] = {}
    for key, e in keys.items():
        if key == "type":
            continue
        if key in ("path", "late_path", "staging_dir"):
            options[key] = paths.resolve(e)
        elif key == "mode":
            options[key] = e.choice(SINK_MODES)
        elif key == "partition_by" or (key == "key" and kind != "kafka"):
            options[key] = list(e.names())
        elif key == "format":
            options[key] = e.choice(KAFKA_FORMATS)
        elif key == "guarantee":
            options[key] = GUARANTEES[e.choice(("at-least-once", "exactly-once", "at_least_once",
                                                "exactly_once"))]
        elif key == "config":
            options[key] = e.string_map()
        elif key in _AVRO_KEYS:
            options[key] = _avro_option(key, e)
        elif key == "header":
            options[key] = e.boolean()
        else:  # topic, bootstrap_servers, key (kafka), timestamp, transactional_id
            options[key] = e.string()
    if "late_path" in options:  # as the sink checks it, but named with the key and line
        late, rows = options["late_path"], options["path"]
        if late == rows or late.is_relative_to(rows) or rows.is_relative_to(late):
            raise keys["late_path"].error(
                "late rows need a directory of their own, " + ("not the result path" if late == rows else
                "beside the result path, neither inside it nor holding it (readers of one would read the "
                "other's files)") + f": late_path {str(late)!r}, path {str(rows)!r}")
    return SinkSpec(name, kind, entry.key, entry.line, options, {k: e.line for k, e in keys.items()})


def _query(entry: Entry, file: Path) -> QuerySpec:
    keys = entry.mapping(optional=("sql", "python"))
    if len(keys) != 1:
        raise entry.error("expected exactly one of 'sql' (a SELECT over the sources) or 'python' "
                          "('package.module:function' returning a dw.Table)")
    if "python" in keys:
        target = keys["python"].string()
        if not _FUNCTION.match(target):
            raise keys["python"].error(f"expected 'package.module:function', got {target!r}")
        return QuerySpec(keys["python"].key, keys["python"].line, python=target)
    e = keys["sql"]
    text = e.string()
    line, column = e.node.start_mark.line + 1, e.node.start_mark.column + 1
    if isinstance(e.node, yaml.ScalarNode) and e.node.style in ("|", ">"):
        line += 1  # a block scalar's text starts on the line after its indicator
        source = file.read_text(errors="replace").splitlines()
        first = source[line - 1] if line - 1 < len(source) else ""
        column = len(first) - len(first.lstrip()) + 1
    elif isinstance(e.node, yaml.ScalarNode) and e.node.style in ("'", '"'):
        column += 1
    return QuerySpec(e.key, line, sql=text, column=column)


def _config(entry: Entry, paths: _Paths) -> Config:
    """The engine settings: Config's keys, as in configs/local.yaml; paths resolved like the others."""
    known = [f.name for f in dataclasses.fields(Config)] + ["spark"]
    keys = entry.mapping(optional=known)
    data: dict[str, Any] = {}
    for key, e in keys.items():
        if key in PATH_KEYS:
            data[key] = str(paths.resolve(e)) if e.value() is not None else None
        elif key == "spark":
            try:
                data.update(spark_section(e.value(), entry.file))
            except ConfigError as err:
                raise e.error(str(err).split(": ", 1)[-1]) from None
        else:
            data[key] = e.value()
    try:
        return dataclasses.replace(Config(), **data)
    except BadKey as err:
        blamed = next((k for k in err.keys if k in keys), None)
        if blamed is None and any(k.startswith("spark_") for k in err.keys) and "spark" in keys:
            blamed = "spark"
        target = keys[blamed] if blamed is not None else entry
        raise target.error(str(err).split(": ", 1)[-1]) from None
