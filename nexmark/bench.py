"""Runs Nexmark queries on Darwin and on PySpark over the same events, and compares results."""

from __future__ import annotations

import json
import os
import time
import traceback
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

ENGINES = ("darwin", "spark", "darwin-spark")  # darwin-spark: the Darwin query run with engine="spark"
# where the hand-written twins read the Nexmark streams: the Parquet files the generator wrote, or the
# generator itself as a Spark data source (nexmark.spark_source), as Darwin-on-Spark reads them
SPARK_INPUTS = ("parquet", "generator")
WARM_UP_EVENTS = 5_000  # the untimed run of each query before the timed one
SPARK_INSTALL = 'pip install "darwin-stream[spark]"'  # pyspark is an optional dependency (pyproject.toml)


@dataclass
class Measurement:
    """One query on one engine: a timed run into a discarding sink, and an untimed collect of the final
    table that is compared with the other engine's.

    ``seconds`` is the timed run (None if it failed, see ``error``); ``cpu_seconds`` the CPU time the
    Darwin process's threads spent in it (its reader thread overlaps the compiled loop, so it can exceed
    ``seconds``; None for Spark, whose work is in the JVM); ``output_rows`` what the discarding
    sink received (an updating result's changes; None for Spark, whose ``noop`` writer counts nothing);
    ``collect_seconds`` and ``rows`` are the untimed collect (None when not collected); ``cores`` the
    cores the engine ran on; ``speedup_per_core`` (Darwin rows) Darwin's events/s per core over Spark's.
    """

    query: str
    engine: str
    events: int
    cores: int
    seconds: float | None = None
    cpu_seconds: float | None = None
    output_rows: int | None = None
    collect_seconds: float | None = None
    rows: int | None = None
    equal: bool | None = None  # against the other engine, when both ran and were collected
    speedup_per_core: float | None = None
    error: str | None = None

    @property
    def events_per_second(self) -> float | None:
        if self.seconds is None:
            return None
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    @property
    def events_per_second_per_core(self) -> float | None:
        rate = self.events_per_second
        return None if rate is None else rate / self.cores


def check_installed(engines: list[str]) -> None:
    """Refuse an engine whose library is missing before any work, not with an ImportError mid-run."""
    if "spark" in engines or "darwin-spark" in engines:
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


def _discard(query: dw.Table, config: dw.Config) -> int:
    """Run ``query`` into a discarding sink (its rows decoded to Arrow, counted, dropped); the rows."""
    hole = dw.sinks.Blackhole()
    query.sink(hole).run(config)
    return hole.rows


def darwin_query(query: str, events: int, seed: int, sql: bool = False) -> dw.Table:
    """The fluent query, or with ``sql`` the one planned from ``nexmark/sql/<query>.sql`` (its columns in
    snake_case, as the fluent and Spark queries name them)."""
    if not sql:
        return QUERIES[query].build(source(events=events, seed=seed))
    from nexmark.sql_queries import snake_case, sql_query

    table = sql_query(query, events=events, seed=seed)
    return table.select(**{snake_case(c): dw.col(c) for c in table.columns})


QUIET = 0.15  # the share of the machine's CPU time others may use while a timed run starts
QUIET_WAIT = 5.0  # seconds to wait for it at most


def wait_for_quiet(most: float = QUIET_WAIT, window: float = 0.25) -> float:
    """Wait until the machine's CPUs are nearly idle (at most ``most`` seconds); the seconds waited.

    Spark's JVM goes on working after a query returns (garbage collection, cleaning up shuffle
    files); on a small machine the next timed run, of either engine, would share its cores with
    that. Reads ``/proc/stat``; elsewhere it returns at once."""
    stat = Path("/proc/stat")
    if not stat.exists() or not _spark_running():  # without a JVM beside it, nothing of ours to wait for
        return 0.0
    started = time.perf_counter()

    def ticks() -> tuple[int, int]:
        fields = [int(x) for x in stat.read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait

    while time.perf_counter() - started < most:
        total, idle = ticks()
        time.sleep(window)
        total2, idle2 = ticks()
        if total2 > total and 1 - (idle2 - idle) / (total2 - total) < QUIET:
            break
    return time.perf_counter() - started


def _spark_running() -> bool:
    try:
        from pyspark import SparkContext
    except ImportError:
        return False
    return SparkContext._active_spark_context is not None


def run_darwin(query: str, events: int, seed: int, config: dw.Config, sql: bool = False) \
        -> tuple[float, float, int]:
    """The seconds of a run into a discarding sink, the CPU seconds of the process's threads in them,
    and the rows the sink received; compilation happens in an untimed warm-up of the same query on a
    few events."""
    _discard(darwin_query(query, min(events, WARM_UP_EVENTS), seed, sql), config)
    q = darwin_query(query, events, seed, sql)
    wait_for_quiet()
    started, cpu = time.perf_counter(), time.process_time()
    rows = _discard(q, config)
    return time.perf_counter() - started, time.process_time() - cpu, rows


def on_spark(config: dw.Config) -> dw.Config:
    """``config`` for Darwin-on-Spark: Darwin's own runtime settings mean nothing there."""
    return config.replace(engine="spark", parallelism=1, state="memory", state_path=None, checkpoint_dir=None,
                          checkpoint_interval=None)


def run_darwin_spark(query: str, events: int, seed: int, config: dw.Config, sql: bool = False) -> float:
    """The seconds of the Darwin query run by Spark into Spark's ``noop`` writer (as the twins are timed),
    reading the generator's events included, after an untimed run on a few events. The DataFrame is
    built before the clock starts, as the twins' are (translating, and resolving the data sources)."""
    from darwin.spark.engine import dataframe

    small = darwin_query(query, min(events, WARM_UP_EVENTS), seed, sql)
    dataframe(small.plan, on_spark(config)).write.format("noop").mode("overwrite").save()
    df = dataframe(darwin_query(query, events, seed, sql).plan, on_spark(config))  # built untimed, as the twins'
    wait_for_quiet()
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def collect_darwin(query: str, events: int, seed: int, config: dw.Config, sql: bool = False) \
        -> tuple[pa.Table, float]:
    """The final table (an updating result's changes applied) and the seconds it took; not a benchmark."""
    q = darwin_query(query, events, seed, sql)
    started = time.perf_counter()
    table = q.collect(config)
    return table, time.perf_counter() - started


def spark_cores() -> int:
    """The cores Spark runs on: its session's default parallelism (local[*] is every core)."""
    from darwin.spark import spark_session

    return int(spark_session("nexmark").sparkContext.defaultParallelism)


def spark_streams(paths: dict[str, str], generator: GeneratorConfig | None = None) -> dict[str, Any]:
    """The twins' input: the Parquet files, with the three Nexmark streams and YSB's ad events read from
    the generator data source instead when ``generator`` is given (its timestamps as Spark timestamps,
    as Parquet's are; YSB's campaigns, a small static table, made on the driver as Darwin's is)."""
    from pyspark.sql import functions as F

    from darwin.spark import spark_session
    from nexmark import spark_source
    from nexmark.generator import STREAMS
    from nexmark.spark_queries import read_streams

    spark = spark_session("nexmark")
    if generator is None:
        return read_streams(spark, paths)
    generated = (*STREAMS, spark_source.ADS)
    streams = read_streams(spark, {k: v for k, v in paths.items() if k not in generated})
    spark_source.register(spark)
    for stream in generated:
        names = spark_source.schema_of(stream).names
        opts = spark_source.options(generator, stream, names, partitions=int(spark.sparkContext.defaultParallelism))
        df = spark.read.format(spark_source.NAME).options(**opts).load()
        times = {c for c in names if c in ("date_time", "expires", "event_time")}
        streams[stream] = df.select(*[F.timestamp_millis(c).alias(c) if c in times else F.col(c) for c in names])
    if "campaigns" not in streams:
        pairs = ysb.campaigns(generator.seed)
        streams["campaigns"] = spark.createDataFrame([(a, c) for a, c in pairs], "ad_id string, campaign_id string")
    return streams


def run_spark(query: str, paths: dict[str, str], warm_up: dict[str, str], generator: GeneratorConfig | None = None,
              warm_generator: GeneratorConfig | None = None) -> float:
    """The seconds of a run into Spark's ``noop`` writer (every row computed, none kept), after an untimed
    run of the same query over the ``warm_up`` files (Spark's code generation and the JVM's JIT); with
    ``generator``, the Nexmark streams come from the generator data source (``spark_streams``)."""
    from nexmark.spark_queries import QUERIES as SPARK_QUERIES

    SPARK_QUERIES[query](spark_streams(warm_up, warm_generator)).write.format("noop").mode("overwrite").save()
    df = SPARK_QUERIES[query](spark_streams(paths, generator))
    wait_for_quiet()
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def collect_spark(query: str, paths: dict[str, str], generator: GeneratorConfig | None = None) \
        -> tuple[pa.Table, float]:
    """Spark's result collected to Arrow, and the seconds it took; not a benchmark."""
    from darwin.spark import to_arrow
    from nexmark.spark_queries import QUERIES as SPARK_QUERIES

    started = time.perf_counter()
    table = to_arrow(SPARK_QUERIES[query](spark_streams(paths, generator)))
    return table, time.perf_counter() - started


def spark_twins() -> frozenset[str]:
    """The queries with a PySpark twin (empty when pyspark is not installed)."""
    try:
        from nexmark.spark_queries import QUERIES as SPARK_QUERIES
    except ImportError:
        return frozenset()
    return frozenset(SPARK_QUERIES)


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
    path.write_text(json.dumps([as_json(m) for m in measurements], indent=2))


def as_json(m: Measurement) -> dict[str, Any]:
    return {**asdict(m), "events_per_second": m.events_per_second,
            "events_per_second_per_core": m.events_per_second_per_core}


def expand(queries: list[str]) -> list[str]:
    """``all`` stands for every query in ``QUERIES``, in its order; each query runs once."""
    names = [name for q in queries for name in (QUERIES if q == "all" else [q])]
    return list(dict.fromkeys(names))


def run_all(queries: list[str], engines: list[str], events: int, seed: int, config: dw.Config, data_dir: Path,
            progress: Any, collect: bool = True, sql: bool = False, spark_input: str = "parquet") \
        -> tuple[list[Measurement], list[str]]:
    """Every query on every engine that has it: the measurements, and the problems found (results that
    differ, runs that failed). A failing run is recorded and the other runs go on. With ``sql``, Darwin
    runs each query's Flink SQL (``nexmark/sql``) instead of its fluent definition; ``spark_input`` is
    where the twins read the Nexmark streams (``SPARK_INPUTS``)."""
    generated = spark_input == "generator"
    generator = GeneratorConfig(events=events, seed=seed) if generated else None
    warm_generator = GeneratorConfig(events=min(events, WARM_UP_EVENTS), seed=seed) if generated else None
    problems: list[str] = []
    twins = spark_twins()
    runs = [(q, e) for q in queries for e in engines if e != "spark" or q in twins]
    # Darwin's timed runs first, before Spark's JVM starts: it holds its heap (many GB) from then on,
    # and on this machine a process touching fresh memory beside it runs up to 3x slower
    timed = sorted(runs, key=lambda run: run[1] != "darwin")
    with progress:
        task = progress.add_task("nexmark", total=len(runs) * (2 if collect else 1))
        cores = {"darwin": config.workers}
        inputs: dict[str, dict[str, str]] = {}
        ran: dict[tuple[str, str], Measurement] = {}
        for query, engine in timed:
            progress.update(task, description=f"{query} on {engine}")
            if engine not in cores:
                progress.update(task, description="starting Spark")
                cores["spark"] = cores["darwin-spark"] = spark_cores()
            m = ran[query, engine] = Measurement(query, engine, events, cores[engine])
            try:
                if engine == "darwin":
                    m.seconds, m.cpu_seconds, m.output_rows = run_darwin(query, events, seed, config, sql)
                elif engine == "darwin-spark":
                    m.seconds = run_darwin_spark(query, events, seed, config, sql)
                else:
                    if not inputs:
                        progress.update(task, description=f"writing {events:,} events as Parquet for Spark")
                        inputs["run"] = parquet_for(events, seed, data_dir)
                        inputs["warm_up"] = parquet_for(min(events, WARM_UP_EVENTS), seed, data_dir)
                    m.seconds = run_spark(query, inputs["run"], inputs["warm_up"], generator, warm_generator)
            except Exception as e:  # noqa: BLE001 -- a benchmark of every query reports a failing one and goes on
                m.error = _one_line(e)
                problems.append(f"{query} failed on {engine}:\n{_excerpt(e)}")
            progress.advance(task)
        measurements: list[Measurement] = [ran[run] for run in runs]
        for query in queries:
            tables: dict[str, pa.Table] = {}
            mine = {e: ran[q, e] for q, e in runs if q == query}
            for engine, m in mine.items():
                if not collect:
                    continue
                if m.error is not None:
                    progress.advance(task)
                    continue
                progress.update(task, description=f"{query} on {engine}: collecting (untimed)")
                try:
                    if engine == "spark":
                        table, m.collect_seconds = collect_spark(query, inputs["run"], generator)
                    else:
                        table, m.collect_seconds = collect_darwin(
                            query, events, seed, config if engine == "darwin" else on_spark(config), sql)
                    tables[engine], m.rows = table, table.num_rows
                except Exception as e:  # noqa: BLE001 -- as above
                    m.error = _one_line(e)
                    problems.append(f"{query} failed on {engine}:\n{_excerpt(e)}")
                progress.advance(task)
            if len(tables) >= 2:
                compared = QUERIES[query].compared  # where ROW_NUMBER ties decide, what they cannot change
                first, *others = tables  # each engine against the first (darwin when it ran)
                diffs = {e: difference(*(t if compared is None else t.select(list(compared))
                                         for t in (tables[first], tables[e]))) for e in others}
                for m in mine.values():
                    m.equal = all(d is None for d in diffs.values())
                problems += [f"{query}: {first} and {e} differ\n{d}" for e, d in diffs.items() if d is not None]
            darwin, spark = mine.get("darwin"), mine.get("spark")
            if darwin and spark:
                a, b = darwin.events_per_second_per_core, spark.events_per_second_per_core
                if a is not None and b:
                    darwin.speedup_per_core = a / b
    return measurements, problems


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def _excerpt(e: BaseException, frames: int = 6, lines: int = 12) -> str:
    """Where a run failed and the start of the message: Spark's carry whole Java stack traces."""
    message = "".join(traceback.format_exception_only(e)).strip().splitlines()
    more = [f"... ({len(message) - lines} more lines)"] if len(message) > lines else []
    return "".join(traceback.format_tb(e.__traceback__, limit=-frames)) + "\n".join(message[:lines] + more)
