"""The ``nexmark`` command: generate events, run queries on Darwin and Spark, compare, plot."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table as RichTable

from darwin.cli import parse_count

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
        engines = ", ".join(["darwin"] + (["spark"] if name in SPARK else []))
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
    started = time.perf_counter()
    paths = write_parquet(GeneratorConfig(events=n, seed=seed, first_event_rate=rate), out)
    seconds = time.perf_counter() - started
    paths["side_input"] = write_side_input(out / "side_input.parquet")
    import pyarrow.parquet as pq

    for stream, path in paths.items():
        console.print(f"{stream}: {pq.read_metadata(path).num_rows:,} rows -> {path}")
    console.print(f"{n:,} events in {seconds:.2f} s ({n / seconds:,.0f} events/s, including Parquet writing)")


@app.command()
def run(queries: list[str] = typer.Argument(..., help="queries to run, e.g. q1 q2 q12 (see `nexmark list`)"),
        events: str = typer.Option("1M", help="number of events, e.g. 10M"),
        engine: str = typer.Option("darwin,spark", help="comma-separated: darwin, spark"),
        seed: int = typer.Option(0),
        mode: str = typer.Option("compiled", help="compiled | interpreted"),
        target: str = typer.Option("host", help="host | generic"),
        state: str = typer.Option("memory", help="state backend: memory | mmap | rocksdb"),
        state_path: Path = typer.Option(None, file_okay=False,
                                        help="directory for mmap/rocksdb state (default: under --data-dir)"),
        parallelism: int = typer.Option(1),
        batch_size: int = typer.Option(65_536),
        data_dir: Path = typer.Option(DATA_DIR, file_okay=False, help="where Spark's Parquet input is cached"),
        json_out: Path = typer.Option(None, "--json", dir_okay=False, help="write the measurements to this file")) \
        -> None:
    """Run queries on each engine over the same events; print a table; exit 1 if results differ."""
    from darwin.codegen.target import ensure_target

    with _usage_errors():
        ensure_target(target)  # before the generator's kernels compile: Numba fixes the target then
    import darwin as dw
    from nexmark import bench
    from nexmark.queries import QUERIES

    engines = [e.strip() for e in engine.split(",") if e.strip()]
    unknown = [e for e in engines if e not in bench.ENGINES] + [q for q in queries if q not in QUERIES]
    if unknown:
        raise typer.BadParameter(f"unknown engine or query: {unknown}; engines {list(bench.ENGINES)}, "
                                 f"queries {sorted(QUERIES)}")
    n = parse_count(events)
    with _usage_errors():
        bench.check_installed(engines)  # before any work: a missing pyspark is otherwise found mid-run
        if state != "memory" and state_path is None:
            state_path = data_dir / f"state-{state}"
        config = dw.Config(mode=mode, target=target, state=state, parallelism=parallelism, batch_size=batch_size,
                           state_path=state_path)
    measurements, diffs = bench.run_all(queries, engines, n, seed, config, data_dir, _progress())
    _print(measurements)
    if json_out:
        bench.save(measurements, json_out)
    for query, diff in diffs.items():
        console.print(f"[red]{query}: darwin and spark differ[/red]\n{diff}")
    if diffs:
        raise typer.Exit(1)


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


def _print(measurements: list) -> None:  # type: ignore[type-arg]
    table = RichTable("query", "engine", "events", "seconds", "events/s", "speed-up over spark", "output rows",
                      "equal", title="Nexmark")
    spark = {m.query: m for m in measurements if m.engine == "spark"}
    for m in measurements:
        other = spark.get(m.query)
        speedup = f"{other.seconds / m.seconds:.1f}x" if other and m.engine != "spark" else "-"
        equal = "-" if m.equal is None else ("yes" if m.equal else "[red]NO[/red]")
        table.add_row(m.query, m.engine, f"{m.events:,}", f"{m.seconds:.2f}", f"{m.events_per_second:,.0f}",
                      speedup, f"{m.rows:,}", equal)
    console.print(table)


@app.command()
def plot(measurements: Path = typer.Argument(..., help="a file written by `nexmark run --json`"),
         out: Path = typer.Option(Path("nexmark.png"), help="the chart to write")) -> None:
    """Events/s per query and engine, on a log scale."""
    from nexmark.plot import plot_measurements

    plot_measurements(measurements, out)
    console.print(f"wrote {out}")


if __name__ == "__main__":  # pragma: no cover
    app()
