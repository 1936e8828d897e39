"""Nexmark's queries as Flink SQL (``nexmark/sql/qN.sql``) over Darwin's generator.

The ``nexmark`` connector serves the generator's streams to ``CREATE TABLE ... WITH
('connector' = 'nexmark', 'stream' = 'bid', 'events.num' = ...)``, under the reference schema's
column names (``dateTime``, ``itemName``): each declared column is the generator's column of the
same name in snake_case. ``nexmark/sql/ddl.sql`` declares the streams as the reference's DDL does, with
person and auction ids as their primary keys (the generator never repeats one).
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

import darwin as dw
from darwin.errors import SqlError
from darwin.io.sinks import Sink
from darwin.sql import RenamedSource, TableSpec, plan_script, register_connector
from darwin.sql.connectors import check_columns, ignore_options
from nexmark.generator import STREAMS, GeneratorConfig
from nexmark.side_input import side_input_table
from nexmark.source import NexmarkStream

SQL_DIR = Path(__file__).parent / "sql"
QUERIES = tuple(f"q{i}" for i in range(24))


def snake_case(name: str) -> str:
    """``dateTime`` -> ``date_time``: the generator's name of a reference column."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class NexmarkConnector:
    """``'connector' = 'nexmark'``: options ``stream`` (person, auction, bid or side_input; default the
    table's name), ``events.num``, ``first-event.rate`` and ``seed``. A spec without columns (from a
    deployment file, ``darwin.deploy``) reads the generator's columns under their own names (``date_time``)."""

    def source(self, spec: TableSpec) -> dw.Table:
        stream = spec.options.get("stream", spec.name)
        mapping = {name: snake_case(name) for name in spec.names}
        if stream == "side_input":
            table = dw.from_arrow(side_input_table(), name="nexmark.side_input")
            check_columns(spec, table.plan.schema, mapping)
            return table.select(**{n: dw.col(c) for n, c in mapping.items()})
        if stream not in STREAMS:
            raise SqlError(f"table {spec.name}: 'stream' = {stream!r}; the nexmark connector has "
                           f"{', '.join((*STREAMS, 'side_input'))}")
        options = {"events": int(spec.option("events.num")), "seed": int(spec.options.get("seed", "0"))}
        if "first-event.rate" in spec.options:
            options["first_event_rate"] = int(spec.options["first-event.rate"])
        source = NexmarkStream(GeneratorConfig(**options), stream)
        if not spec.columns:  # a table declared without columns (a deployment file's): the generator's own
            return dw.from_source(source, spec.time_column, spec.max_delay_ms, primary_key=spec.primary_key)
        check_columns(spec, source.schema, mapping)
        return dw.from_source(RenamedSource(source, mapping), spec.time_column, spec.max_delay_ms,
                              primary_key=spec.primary_key)

    def sink(self, spec: TableSpec) -> Sink:
        raise SqlError(f"table {spec.name}: the nexmark connector is a source; it cannot be written to")


CONNECTOR = NexmarkConnector()
register_connector("nexmark", CONNECTOR, options=("stream", "events.num", "first-event.rate", "seed"))
# Flink's nexmark source sleeps to keep to its rate under 'rate.limited'; the events, their times included, are
# the same either way, and Darwin's generator runs as fast as it can
ignore_options("nexmark", {"rate.limited": "whether events are emitted at their rate or as fast as possible"})


def script(name: str, events: int, rate: int = 10_000_000, seed: int = 0) -> str:
    """The DDL of the streams and query ``name``'s statements, as one script."""
    path = SQL_DIR / f"{name}.sql"
    if not path.exists():
        raise SqlError(f"no SQL for Nexmark query {name!r}; there are {', '.join(QUERIES)}")
    ddl = Template((SQL_DIR / "ddl.sql").read_text()).substitute(EVENTS=events, RATE=rate, SEED=seed)
    return ddl + "\n" + path.read_text()


def sql_query(name: str, events: int, rate: int = 10_000_000, seed: int = 0) -> dw.Table:
    """Query ``name``'s INSERT INTO, planned from its SQL: the table it writes."""
    planned = plan_script(script(name, events, rate, seed))
    return planned.inserts[-1].table
