"""A checked deployment made into a query and a sink, and run: ``run(deployment) -> JobResult``.

Errors raised while building (a missing file, bad SQL, a sink that cannot take the result)
become ``ConfigError``s naming the file, line and key that set the thing that failed; an SQL
error also names its line and column in the file.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

import darwin.api as api
from darwin.config import Config
from darwin.deploy.spec import Deployment, QuerySpec, SinkSpec, SourceSpec
from darwin.durations import to_millis
from darwin.errors import RESET_HINT, ConfigError, DarwinError, PlanError, SqlError
from darwin.io import sinks
from darwin.io.paced import Paced
from darwin.plan import nodes as pn
from darwin.runtime.control import JobControl
from darwin.runtime.job import JobResult

T = TypeVar("T")
_SQL_WHERE = re.compile(r"^line (\d+), column (\d+): ")


@dataclass(frozen=True)
class Planned:
    """What a deployment runs: its query's table, its sink and the engine settings."""

    table: api.Table
    sink: sinks.Sink
    config: Config


def plan(deployment: Deployment, **config_overrides: Any) -> Planned:
    """Build the sources, the query and the sink (nothing runs; Kafka sources connect to read their
    topics' partitions)."""
    tables = {s.name: _at(deployment, s.key, s.line, partial(source_table, s)) for s in deployment.sources}
    table, config = query_table(deployment, tables)
    spec = deployment.sinks[0]
    sink = _at(deployment, spec.key, spec.line, lambda: make_sink(spec))
    _at(deployment, spec.key, spec.line, lambda: table.sink(sink))  # refuses a result the sink cannot write
    config = config.replace(**config_overrides) if config_overrides else config
    return Planned(table, sink, config)


def run(deployment: Deployment, *, fresh: bool = False, control: JobControl | None = None,
        **config_overrides: Any) -> JobResult:
    """Run the job to the end of its input (the one run path: metrics, progress and signals hook in
    here); ``config_overrides`` replace keys of the deployment's ``config`` section. ``fresh`` first
    removes what an earlier run without checkpoints wrote to the sink (``clear_output``)."""
    planned = plan(deployment, **config_overrides)
    if fresh:
        clear_output(deployment, planned.config)
    _check_outputs(deployment, planned.config)
    return planned.table.sink(planned.sink).run(planned.config, control)


def _check_outputs(deployment: Deployment, config: Config) -> None:
    """A job without checkpoints starts afresh, so its file sink's directories must be empty or new:
    refused here, before anything runs, naming the key and line, with the way out (``--fresh`` for an
    earlier run's output; a job with checkpoints may resume, which the run decides)."""
    if config.checkpoint_dir:
        return
    from darwin.io.output_dir import OutputDirectory

    for spec in deployment.sinks:
        if spec.type not in ("parquet", "csv"):
            continue
        for option in ("path", "late_path"):
            if option not in spec.options:
                continue
            key, line = spec.where(option)
            depth = len(spec.options.get("partition_by") or ()) if option == "path" else 0
            directory = OutputDirectory(Path(spec.options[option]), spec.type, depth)
            try:
                directory.check_claim(False, "")
            except DarwinError as e:
                problem = str(e)
                if sinks.read_marker(directory.directory) is not None and \
                        (directory.committed() or directory.visible.exists()):
                    problem = (f"{str(directory.directory)!r} holds the output of an earlier run, and this job takes "
                               f"no checkpoints, so it starts afresh: `darwin run {deployment.file.name} --fresh` "
                               "first deletes that output (Darwin's files only), or give another directory")
                raise ConfigError(f"{deployment.file.name}:{line}: key {key!r}: {problem}") from None


def clear_output(deployment: Deployment, config: Config) -> list[Path]:
    """Delete the files an earlier run of a job without checkpoints committed to its file sink (only
    Darwin's part and snapshot files: the directory's marker names the run that wrote them). A job
    with checkpoints is started over with ``darwin reset``, which also drops its checkpoints."""
    if config.checkpoint_dir:
        raise ConfigError(f"{deployment.file.name}: the job takes checkpoints, and a new run resumes from the "
                          f"last; to start it over, {RESET_HINT}")
    removed: list[Path] = []
    for spec in deployment.sinks:
        for key in ("path", "late_path"):
            directory = spec.options.get(key)
            if directory is not None and Path(directory).is_dir():
                job = sinks.read_marker(Path(directory))
                if job is not None:
                    removed += sinks.remove_output(Path(directory), job)
    return removed


def explain(deployment: Deployment, **config_overrides: Any) -> str:
    """The query's plans, as ``Table.explain()`` gives them."""
    planned = plan(deployment, **config_overrides)
    return planned.table.explain(planned.config)


def _at(deployment: Deployment, key: str, line: int, build: Callable[[], T]) -> T:
    """``build()``, its Darwin errors reported at ``key`` on ``line`` of the deployment file."""
    try:
        return build()
    except ConfigError as e:
        if str(e).startswith(f"{deployment.file.name}:"):
            raise
        raise ConfigError(f"{deployment.file.name}:{line}: key {key!r}: {e}") from None
    except DarwinError as e:
        raise ConfigError(f"{deployment.file.name}:{line}: key {key!r}: {e}") from None


# -- sources ---------------------------------------------------------------------------------
def source_table(spec: SourceSpec) -> api.Table:
    """The table of one source."""
    o = spec.options
    timing: dict[str, Any] = {"time": spec.time, "max_delay": spec.max_delay, "max_future": spec.max_future,
              "rate_limit": spec.rate_limit, "primary_key": o.get("primary_key")}
    if spec.type == "parquet":
        return api.read_parquet(o["path"], **timing)
    if spec.type == "csv":
        schema = pa.schema(list(o["schema"].items())) if "schema" in o else None
        return api.read_csv(o["path"], schema, header=o.get("header", True), delimiter=o.get("delimiter", ","),
                            **timing)
    if spec.type == "ipc":
        return api.read_ipc(o["path"], **timing)
    if spec.type == "kafka":
        if spec.rate_limit is not None:
            raise PlanError("rate_limit paces sources replayed from storage; a Kafka topic arrives at its own pace")
        schema = pa.schema(list(o["schema"].items())) if "schema" in o else None
        options = {k: o[k] for k in ("bounded", "start", "group", "idle_timeout", "config", "metadata",
                                     "avro_schema", "avro_wire", "avro_schema_id") if k in o}
        assert spec.time is not None
        return api.read_kafka(o["topic"], o["bootstrap_servers"], schema, format=o.get("format", "json"),
                              time=spec.time, max_delay=spec.max_delay, max_future=spec.max_future, **options)
    assert spec.type == "nexmark"
    return _nexmark(spec)


def _nexmark(spec: SourceSpec) -> api.Table:
    """The generator's stream, through the connector registry (as SQL's 'connector' = 'nexmark'),
    so Darwin does not import the Nexmark package."""
    from darwin.sql.connectors import TableSpec, connector

    o = spec.options
    options = {"stream": o["stream"], "events.num": str(o["events"])}
    if "rate" in o:
        options["first-event.rate"] = str(o["rate"])
    if "seed" in o:
        options["seed"] = str(o["seed"])
    delay = None if spec.max_delay is None else to_millis(spec.max_delay, "max_delay", PlanError)
    table = connector("nexmark", spec.name).source(TableSpec(spec.name, (), options, spec.time, delay,
                                                             primary_key=o.get("primary_key")))
    scan = table.plan
    if not isinstance(scan, pn.Scan):
        raise PlanError(f"the nexmark connector gave a {type(scan).__name__}, not a scan")
    if scan.time_column is not None and scan.time_column not in scan.columns:
        raise PlanError(f"time: the {o['stream']} stream has no column {scan.time_column!r}; it has "
                        f"{list(scan.columns)}")
    if spec.max_future is not None or spec.rate_limit is not None:
        future = None if spec.max_future is None else to_millis(spec.max_future, "max_future", PlanError)
        source = scan.source if spec.rate_limit is None else Paced(scan.source, spec.rate_limit)
        table = api.Table(replace(scan, source=source, max_future_ms=future))
    return table


# -- the query --------------------------------------------------------------------------------
def query_table(deployment: Deployment, tables: Mapping[str, api.Table]) -> tuple[api.Table, Config]:
    """The query's table and the config it runs with: the deployment's, changed by query.sql's SET
    statements (SET wins, as a Flink session's SET over flink-conf.yaml)."""
    q = deployment.query
    if q.sql is not None:
        return _sql(deployment, q, tables)
    return _at(deployment, q.key, q.line, lambda: _python(deployment, q, tables)), deployment.config


INSERT_ADVICE = ("a deployment's query is one SELECT, whose rows go to the deployment's sink ('sinks:'); "
                 "write the SELECT, and the INSERT's target table as the sink")


def run_config(deployment: Deployment) -> Config:
    """The config the deployment's job runs with: its ``config:`` section changed by the SET
    statements of ``query.sql`` (read without planning the query)."""
    from darwin.sql.script import script_settings

    q = deployment.query
    if q.sql is None:
        return deployment.config
    sql = q.sql
    return _in_sql(deployment, q, lambda: script_settings(sql).applied(deployment.config, deployment.write_path))


def _sql(deployment: Deployment, q: QuerySpec, tables: Mapping[str, api.Table]) -> tuple[api.Table, Config]:
    """The query of ``query.sql`` and the deployment's config with its SET statements. Its CREATE
    TABLE paths are the file's paths: resolved against its directory and kept under it, as those of
    ``sources:``."""
    from darwin.sql.script import query_of_script

    sql = q.sql
    assert sql is not None

    def planned() -> tuple[api.Table, Config]:
        script = query_of_script(sql, tables=dict(tables), paths=lambda text: str(deployment.read_path(text)),
                                 insert_advice=INSERT_ADVICE)
        assert script.query is not None
        return script.query, script.settings.applied(deployment.config, deployment.write_path)
    return _in_sql(deployment, q, planned)


def _in_sql(deployment: Deployment, q: QuerySpec, build: Callable[[], T]) -> T:
    """``build()``, its errors named by the file's line and the SQL's line and column."""
    try:
        return build()
    except SqlError as e:
        text = str(e)
        found = _SQL_WHERE.match(text)
        if found is None:
            raise ConfigError(f"{deployment.file.name}:{q.line}: key {q.key!r}: {text}") from None
        line, column = int(found.group(1)), int(found.group(2))
        raise ConfigError(f"{deployment.file.name}:{q.line + line - 1}: key {q.key!r}: SQL line {line}, column "
                          f"{column} (file column {q.column + column - 1}): {text[found.end():]}") from None
    except DarwinError as e:
        raise ConfigError(f"{deployment.file.name}:{q.line}: key {q.key!r}: {e}") from None


def _python(deployment: Deployment, q: QuerySpec, tables: Mapping[str, api.Table]) -> api.Table:
    """``module:function`` called with the sources as keyword arguments; the module is looked for in
    the deployment file's directory first, then on ``sys.path``."""
    assert q.python is not None
    module_name, function_name = q.python.split(":")
    with _searching(str(deployment.directory.resolve())):
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise PlanError(f"cannot import {module_name!r}: {e}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise PlanError(f"module {module_name!r} has no function {function_name!r}")
    try:
        result = function(**tables)
    except TypeError as e:
        if "argument" not in str(e):
            raise
        raise PlanError(f"{q.python} is called with the sources as keyword arguments ({', '.join(tables)}): "
                        f"{e}") from None
    if not isinstance(result, api.Table):
        raise PlanError(f"{q.python} returned {type(result).__name__}; it must return a dw.Table")
    return result


@contextmanager
def _searching(directory: str) -> Iterator[None]:
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        sys.path.remove(directory)


# -- the sink ---------------------------------------------------------------------------------
def make_sink(spec: SinkSpec) -> sinks.Sink:
    o = spec.options
    if spec.type == "parquet":
        return sinks.Parquet(o["path"], o.get("late_path"), mode=o.get("mode"), partition_by=o.get("partition_by"),
                             key=o.get("key"))
    if spec.type == "csv":
        return sinks.CSV(o["path"], o.get("late_path"), mode=o.get("mode"), partition_by=o.get("partition_by"),
                         key=o.get("key"), header=o.get("header", True))
    if spec.type == "kafka":
        return sinks.Kafka(o["topic"], o["bootstrap_servers"], format=o.get("format", "json"), key=o.get("key"),
                           timestamp=o.get("timestamp"), guarantee=o.get("guarantee", "at_least_once"),
                           staging_dir=o.get("staging_dir"), transactional_id=o.get("transactional_id"),
                           config=o.get("config"), **{k: o[k] for k in ("avro_schema", "avro_wire", "avro_schema_id")
                                                      if k in o})
    return sinks.Blackhole()
