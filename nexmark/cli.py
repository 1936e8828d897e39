"""The ``nexmark`` command: generate events, run queries on Darwin and Spark, compare, plot."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress
from rich.table import Table as RichTable

from darwin.cli import parse_count

if TYPE_CHECKING:
    from nexmark.bench import Measurement

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
console = Console()
DATA_DIR = Path(".bench-data")


@app.command("list")
def list_queries() -> None:
    """The queries and the engines that run them."""
    from nexmark.queries import QUERIES
    from nexmark.spark_queries import QUERIES as SPARK

    table = RichTable("query", "engines", "what it computes")
    for name, q in QUERIES.items():
        engines = ", ".join(["darwin"] + (["spark"] if name in SPARK else []) + ["darwin-spark"])
        table.add_row(name, engines, q.description)
    console.print(table)


@app.command()
def generate(events: str = typer.Option(..., help="number of events, e.g. 10M"),
             out: Path = typer.Option(..., file_okay=False, help="directory for person/auction/bid/side_input.parquet"),
             seed: int = typer.Option(0), rate: int = typer.Option(10_000_000, help="events per second")) -> None:
    """Write the three Nexmark streams as Parquet, for other engines, and q13's side input."""
    from nexmark.generator import GeneratorConfig, write_parquet
    from nexmark.side_input import write_side_input

    n = parse_count(events)
    _writable(out, "--out", directory=True)
    started = time.perf_counter()
    paths = write_parquet(GeneratorConfig(events=n, seed=seed, first_event_rate=rate), out)
    seconds = time.perf_counter() - started
    paths["side_input"] = write_side_input(out / "side_input.parquet")
    import pyarrow.parquet as pq

    for stream, path in paths.items():
        console.print(f"{stream}: {pq.read_metadata(path).num_rows:,} rows -> {path}")
    console.print(f"{n:,} events in {seconds:.2f} s ({n / seconds:,.0f} events/s, including Parquet writing)")


@app.command()
def run(queries: list[str] = typer.Argument(..., help="queries to run, e.g. q1 q2 q12, or all (see `nexmark list`)"),
        events: str = typer.Option("1M", help="number of events, e.g. 10M"),
        engine: str = typer.Option("darwin,spark", help="comma-separated: darwin, spark (the hand-written twins), "
                                   "darwin-spark (the Darwin query on Spark)"),
        seed: int = typer.Option(0),
        mode: str = typer.Option("compiled", help="compiled | interpreted"),
        target: str = typer.Option("host", help="host | generic"),
        state: str = typer.Option("memory", help="state backend: memory | mmap | rocksdb"),
        state_path: Path = typer.Option(None, file_okay=False,
                                        help="directory for mmap/rocksdb state (default: under --data-dir)"),
        parallelism: int = typer.Option(1),
        batch_size: int = typer.Option(65_536),
        data_dir: Path = typer.Option(DATA_DIR, file_okay=False, help="where Spark's Parquet input is cached"),
        collect: bool = typer.Option(True, help="collect each result (untimed) and compare the engines'; "
                                                "--no-collect only times the runs"),
        json_out: Path = typer.Option(None, "--json", dir_okay=False, help="write the measurements to this file"),
        sql: bool = typer.Option(False, "--sql", help="Darwin runs each query's Flink SQL (nexmark/sql/qN.sql)"),
        spark_input: str = typer.Option("parquet", help="where the PySpark twins read the Nexmark streams: "
                                        "parquet (files the generator wrote) or generator (the generator as a "
                                        "Spark data source, as darwin-spark reads them)")) -> None:
    """Time queries on each engine into a discarding sink, compare their collected results, print a table;
    exit 1 if results differ or a run fails."""
    from darwin.codegen.target import ensure_target

    with _usage_errors():
        ensure_target(target)  # before the generator's kernels compile: Numba fixes the target then
    import darwin as dw
    from nexmark import bench
    from nexmark.queries import QUERIES

    engines = [e.strip() for e in engine.split(",") if e.strip()]
    if spark_input not in bench.SPARK_INPUTS:
        raise typer.BadParameter(f"--spark-input {spark_input!r}: use one of {list(bench.SPARK_INPUTS)}")
    unknown = [e for e in engines if e not in bench.ENGINES] + [q for q in queries if q not in QUERIES and q != "all"]
    if unknown:
        raise typer.BadParameter(f"unknown engine or query: {unknown}; engines {list(bench.ENGINES)}, "
                                 f"queries {sorted(QUERIES)} or all")
    n = parse_count(events)
    if json_out:
        _writable(json_out, "--json")  # before any work: the measurements are otherwise lost at the end
    with _usage_errors():
        bench.check_installed(engines)  # before any work: a missing pyspark is otherwise found mid-run
        if state != "memory" and state_path is None:
            state_path = data_dir / f"state-{state}"
        config = dw.Config(mode=mode, target=target, state=state, parallelism=parallelism, batch_size=batch_size,
                           state_path=None if state_path is None else str(state_path))
    measurements, problems = bench.run_all(bench.expand(queries), engines, n, seed, config, data_dir, _progress(),
                                           collect, sql, spark_input)
    console.print(result_table(measurements, n, seed))
    if json_out:
        try:
            bench.save(measurements, json_out)
        except OSError as e:  # checked before, but a disk may fill: the table above keeps the figures
            console.print(f"cannot write --json {str(json_out)!r}: {e.strerror}", style="red", markup=False)
            raise typer.Exit(2) from None
    for problem in problems:
        console.print(problem, style="red", markup=False, highlight=False)
    if problems:
        raise typer.Exit(1)


def _writable(path: Path, option: str, directory: bool = False) -> None:
    """Refuse, as a usage error, a file (or a ``directory``, made with its parents) that ``option`` could
    not be written to, before the command does its work."""
    target = path.absolute()
    problem = None
    if target.exists():
        if target.is_dir() != directory:
            problem = "is a directory" if target.is_dir() else "is a file, not a directory"
        elif not os.access(target, os.W_OK | (os.X_OK if directory else 0)):
            problem = "is not writable"
    elif not directory and not target.parent.is_dir():
        problem = f"cannot be written: the directory {str(target.parent)!r} does not exist"
    else:
        ancestor = target.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            problem = f"cannot be made: {str(ancestor)!r} is a file"
        elif not os.access(ancestor, os.W_OK | os.X_OK):
            problem = f"cannot be made: the directory {str(ancestor)!r} is not writable"
    if problem is not None:
        raise typer.BadParameter(f"{str(path)!r} {problem}", param_hint=f"'{option}'")


@contextmanager
def _usage_errors() -> Iterator[None]:
    """Darwin's refusal of an option value, shown as a usage error: one line and exit 2, no traceback."""
    from darwin.errors import DarwinError

    try:
        yield
    except DarwinError as e:
        raise typer.BadParameter(str(e)) from None


def _progress() -> Progress:
    return Progress(console=console, transient=True)


def count(n: float | None) -> str:
    """``524``, ``59.0K``, ``25.4M``: at most five characters; '-' for nothing."""
    if n is None:
        return "-"
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size * 0.9995:
            scaled = n / size
            return f"{scaled:.0f}{unit}" if abs(scaled) >= 99.95 else f"{scaled:.1f}{unit}"
    return f"{n:.0f}" if float(n).is_integer() or abs(n) >= 99.95 else f"{n:.3g}"


def seconds(s: float | None) -> str:
    """``4.2ms``, ``42ms``, ``0.43s``, ``1.2s``, ``123s``, ``20.5m``, ``1.5h``: at most six characters."""
    if s is None:
        return "-"
    if s < 0.00995:
        return f"{s * 1000:.1f}ms"
    if s < 0.0995:
        return f"{s * 1000:.0f}ms"
    if s < 0.995:
        return f"{s:.2f}s"
    if s < 99.95:
        return f"{s:.1f}s"
    if s < 999.5:
        return f"{s:.0f}s"
    return f"{s / 60:.1f}m" if s < 5997 else f"{s / 3600:.1f}h"


def ratio(x: float | None) -> str:
    """``0.97x``, ``3.5x``, ``135x``."""
    if x is None:
        return "-"
    if x < 0.995:
        return f"{x:.2f}x"
    return f"{x:.1f}x" if x < 99.95 else f"{x:.0f}x"


def result_table(measurements: list[Measurement], events: int, seed: int) -> RichTable:
    """The measurements as a table that fits an 80-column terminal: figures in human units, the legend
    in the caption."""
    cores = {m.engine: m.cores for m in measurements}
    legend = ["time: the run into a discarding sink (warm-up untimed)",
              "ev/s/core: events/s per core (" + ", ".join(f"{e} on {c} core{'s' if c != 1 else ''}"
                                                         for e, c in cores.items()) + ")",
              "vs spark: darwin over spark per core",
              "output: rows the sink received (changes, for an updating result)",
              "collect, rows: the untimed collect, compared for equal"]
    table = RichTable(title=f"Nexmark, {count(events)} events, seed {seed}", caption="; ".join(legend),
                      caption_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      collapse_padding=True)
    for name in ("query", "engine"):
        table.add_column(name, no_wrap=True)
    for name in ("time", "ev/s/core", "vs spark", "output", "collect", "rows"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("equal", no_wrap=True)
    for m in measurements:
        if m.error is not None:
            equal = "[red]error[/red]"
        else:
            equal = "-" if m.equal is None else ("yes" if m.equal else "[red]NO[/red]")
        table.add_row(m.query, m.engine, seconds(m.seconds), count(m.events_per_second_per_core),
                      ratio(m.speedup_per_core), count(m.output_rows), seconds(m.collect_seconds), count(m.rows),
                      equal)
    return table


@app.command()
def sustain(query: str = typer.Argument(..., help="the query, e.g. ysb or q5 (see `nexmark list`)"),
            parallelism: int = typer.Option(1),
            start: str = typer.Option("100K", help="the first rate tried, events per second"),
            factor: float = typer.Option(2.0, help="each next rate is this many times the last sustained one"),
            step_seconds: float = typer.Option(20.0, help="wall-clock seconds each rate runs for"),
            steps: int = typer.Option(8, help="most rates tried before bisecting"),
            refine: int = typer.Option(2, help="bisections between the last sustained and the first failed rate"),
            time_scale: float = typer.Option(1.0, help="event time runs this many times as fast as wall-clock time"),
            seed: int = typer.Option(0),
            batch_size: int = typer.Option(65_536),
            json_out: Path = typer.Option(None, "--json", dir_okay=False, help="write every step to this file")) \
        -> None:
    """Raise the input rate of paced sources step by step until the query falls behind or its p99 latency
    keeps growing; report the highest sustainable rate and the latency at it."""
    import json

    import darwin as dw
    from nexmark.queries import QUERIES
    from nexmark.sustain import Step, find_sustainable

    if query not in QUERIES:
        raise typer.BadParameter(f"unknown query {query!r}; queries {sorted(QUERIES)}")
    first = parse_count(start)
    if json_out:
        _writable(json_out, "--json")  # before the steps run: their figures are otherwise lost at the end
    if first <= 0 or factor <= 1 or step_seconds <= 0 or steps < 1 or refine < 0 or time_scale <= 0:
        raise typer.BadParameter("--start, --step-seconds and --time-scale must be positive, --factor above 1, "
                                 "--steps at least 1 and --refine at least 0")
    with _usage_errors():
        config = dw.Config(parallelism=parallelism, batch_size=batch_size)

    def report(step: Step) -> None:
        verdict = "sustained" if step.sustained else "[red]behind[/red]"
        console.print(f"{count(step.rate)} ev/s: {count(step.events)} events in {seconds(step.seconds)}, "
                      f"p50 {_ms(step.p50_ms)}, p99 {_ms(step.p99_ms)} (halves {_ms(step.p99_first_half_ms)} / "
                      f"{_ms(step.p99_second_half_ms)}), read lag {_ms(step.lag_ms)}: {verdict}")

    best, tried = find_sustainable(query, config, first, factor, step_seconds, steps, refine, seed, time_scale,
                                   report)
    if json_out:
        json_out.write_text(json.dumps({"query": query, "parallelism": parallelism,
                                        "sustainable_rate": None if best is None else best.rate,
                                        "steps": [s.as_json() for s in tried]}, indent=2))
    if best is None:
        console.print(f"{query} at parallelism {parallelism}: not even {count(first)} events/s was sustained")
    else:
        console.print(f"{query} at parallelism {parallelism}: highest sustainable rate {count(best.rate)} events/s "
                      f"({best.rate:,.0f}), p99 latency {_ms(best.p99_ms)}, p50 {_ms(best.p50_ms)}")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}ms" if value < 99.95 else f"{value:,.0f}ms"


@app.command()
def plot(measurements: Path = typer.Argument(..., help="a file written by `nexmark run --json`"),
         out: Path = typer.Option(Path("nexmark.png"), help="the chart to write")) -> None:
    """Events/s per core of every query on every engine, on a log scale."""
    from nexmark.plot import plot_measurements

    _writable(out, "--out")
    try:
        plot_measurements(measurements, out)
    except (OSError, ValueError) as e:
        raise typer.BadParameter(str(e)) from None
    console.print(f"wrote {out}")


if __name__ == "__main__":  # pragma: no cover
    app()
