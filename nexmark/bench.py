"""Runs Nexmark queries on Darwin and on PySpark over the same events, and compares results."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import darwin as dw
from darwin.errors import UnsupportedError
from nexmark import ysb
from nexmark.generator import VERSION as GENERATOR_VERSION
from nexmark.generator import GeneratorConfig, write_parquet
from nexmark.queries import QUERIES
from nexmark.side_input import write_side_input
from nexmark.source import source

ENGINES = ("darwin", "spark")
SPARK_INSTALL = 'pip install "darwin-stream[spark]"'  # pyspark is an optional dependency (pyproject.toml)


@dataclass
class Measurement:
    query: str
    engine: str
    events: int
    seconds: float
    rows: int
    equal: bool | None = None  # against the other engine, when both ran

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")


def check_installed(engines: list[str]) -> None:
    """Refuse an engine whose library is missing before any work, not with an ImportError mid-run."""
    if "spark" in engines:
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UnsupportedError("the spark engine needs pyspark, which is not installed; install it with "
                                   f"{SPARK_INSTALL}, or run only --engine darwin") from None


def parquet_for(events: int, seed: int, data_dir: Path) -> dict[str, str]:
    """The generators' Parquet files for (events, seed), written once and cached; also q13's side input
    (``side_input``, the same for every size and seed)."""
    out = data_dir / f"nexmark-v{GENERATOR_VERSION}-events={events}-seed={seed}"
    names = ("person", "auction", "bid", "ads", "campaigns")
    if not all((out / f"{n}.parquet").exists() for n in names):
        write_parquet(GeneratorConfig(events=events, seed=seed), out)
        _write_atomically(pa.Table.from_batches(list(ysb.generate(events, seed)), schema=ysb.SCHEMA),
                          out / "ads.parquet")
        pairs = ysb.campaigns(seed)
        _write_atomically(pa.table({"ad_id": [a for a, _ in pairs], "campaign_id": [c for _, c in pairs]}),
                          out / "campaigns.parquet")
    if not (out / "side_input.parquet").exists():  # also for a cache written before q13 needed it
        write_side_input(out / "side_input.parquet")
    return {n: str(out / f"{n}.parquet") for n in (*names, "side_input")}


def _write_atomically(table: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def run_darwin(query: str, events: int, seed: int, config: dw.Config) -> tuple[pa.Table, float]:
    """The result and the seconds of a run; compilation happens in an untimed warm-up on a few events."""
    QUERIES[query].build(source(events=min(events, 5_000), seed=seed)).collect(config)
    q = QUERIES[query].build(source(events=events, seed=seed))
    started = time.perf_counter()
    table = q.collect(config)
    return table, time.perf_counter() - started


def run_spark(query: str, paths: dict[str, str]) -> tuple[pa.Table, float]:
    from darwin.spark import spark_session, to_arrow
    from nexmark.spark_queries import QUERIES as SPARK_QUERIES
    from nexmark.spark_queries import read_streams

    spark = spark_session("nexmark")
    started = time.perf_counter()
    table = to_arrow(SPARK_QUERIES[query](read_streams(spark, paths)))
    return table, time.perf_counter() - started


def difference(darwin: pa.Table, spark: pa.Table) -> str | None:
    """None when equal as sorted tables (floats to a relative 1e-9), else the first differing rows."""
    spark = _like(spark, darwin)
    if darwin.schema.names != spark.schema.names or [f.type for f in darwin.schema] != [
            f.type for f in spark.schema]:
        return f"schemas differ:\n  darwin: {darwin.schema}\n  spark:  {spark.schema}"
    if darwin.num_rows != spark.num_rows:
        return f"row counts differ: darwin {darwin.num_rows}, spark {spark.num_rows}"
    keys = [(name, "ascending") for name in darwin.column_names]
    a, b = darwin.sort_by(keys), spark.sort_by(keys)
    bad = np.zeros(a.num_rows, dtype=bool)
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        nulls_differ = x.is_null().to_numpy(zero_copy_only=False) != y.is_null().to_numpy(zero_copy_only=False)
        if pa.types.is_floating(x.type):
            xv, yv = x.fill_null(0).to_numpy(), y.fill_null(0).to_numpy()
            values_differ = ~np.isclose(xv, yv, rtol=1e-9, atol=1e-12, equal_nan=True)
        else:
            values_differ = ~pc.fill_null(pc.equal(x, y), True).to_numpy(zero_copy_only=False)
        bad |= nulls_differ | values_differ
    if not bad.any():
        return None
    rows = np.flatnonzero(bad)[:5]
    return "\n".join(f"row {i}: darwin {a.slice(i, 1).to_pylist()[0]}\n        spark  {b.slice(i, 1).to_pylist()[0]}"
                     for i in rows)


def _like(table: pa.Table, model: pa.Table) -> pa.Table:
    """Spark's table with Darwin's column names and types (e.g. int32 counts, tz-aware timestamps)."""
    if table.column_names != model.column_names:
        return table
    columns = []
    for c, f in zip(table.columns, model.schema):
        try:
            columns.append(c.cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            columns.append(c)
    return pa.table(columns, names=model.column_names)


def save(measurements: list[Measurement], path: Path) -> None:
    path.write_text(json.dumps([{**asdict(m), "events_per_second": m.events_per_second}
                                for m in measurements], indent=2))


def run_all(queries: list[str], engines: list[str], events: int, seed: int, config: dw.Config, data_dir: Path,
            progress: Any) -> tuple[list[Measurement], dict[str, str]]:
    """Every query on every engine; the measurements and, per query, any difference found."""
    measurements: list[Measurement] = []
    diffs: dict[str, str] = {}
    with progress:
        task = progress.add_task("nexmark", total=len(queries) * len(engines))
        paths = None
        for query in queries:
            tables = {}
            for engine in engines:
                progress.update(task, description=f"{query} on {engine}")
                if engine == "darwin":
                    table, seconds = run_darwin(query, events, seed, config)
                else:
                    if paths is None:
                        progress.update(task, description=f"writing {events:,} events as Parquet for Spark")
                        paths = parquet_for(events, seed, data_dir)
                    table, seconds = run_spark(query, paths)
                tables[engine] = table
                measurements.append(Measurement(query, engine, events, seconds, table.num_rows))
                progress.advance(task)
            if len(tables) == 2:
                compared = QUERIES[query].compared
                diff = difference(*(t if compared is None else t.select(list(compared))
                                    for t in (tables["darwin"], tables["spark"])))
                for m in measurements[-2:]:
                    m.equal = diff is None
                if diff is not None:
                    diffs[query] = diff
    return measurements, diffs
