"""The fastest Darwin could run each Nexmark query: its sources alone (issues 10 and 11).

``nexmark run`` counts the generation of the events in Darwin's time (its embedded generator), while
Spark reads them from Parquet files written beforehand. So no Darwin run of a query can beat the
time its reader thread takes to generate and encode the columns the query reads. This times exactly
that, per query, on one thread (no operator runs), and with the JSON of a ``nexmark run ... --engine
darwin,spark`` beside it, says what that bound is in the issues' unit (Darwin's events/s per core
over Spark's) -- whether ≥ 20× Spark per core can be reached at all:

    python benchmarks/nexmark_source_bound.py --events 10M --spark-json nexmark.json
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

app = typer.Typer(add_completion=False)


def source_seconds(query: str, events: int, seed: int, runs: int) -> float:
    """Best seconds of reading ``query``'s sources as its run does (generated, and encoded for every
    pipeline reading them), on one thread, with no operator running."""
    import darwin as dw
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize
    from darwin.runtime.compiled import CompiledEngine
    from darwin.runtime.progress import Metrics
    from nexmark.bench import darwin_query

    config = dw.Config()
    graph = translate(optimize(darwin_query(query, events, seed).plan), config)
    best = float("inf")
    for _ in range(runs):
        engine = CompiledEngine(graph, config, Metrics(), "source-bound")
        started = time.perf_counter()
        for reader in engine.readers:
            for _ in reader.reads():
                pass
        best = min(best, time.perf_counter() - started)
        engine.close()
    return best


@app.command()
def main(queries: str = typer.Option("all", help="comma-separated, or all"),
         events: str = typer.Option("10M"), seed: int = typer.Option(0), runs: int = typer.Option(2),
         spark_json: Path | None = typer.Option(None, help="a `nexmark run --engine darwin,spark --json` file")) \
        -> None:
    from darwin.cli import parse_count
    from nexmark.queries import QUERIES

    n = parse_count(events)
    names = list(QUERIES) if queries == "all" else queries.split(",")
    spark: dict[str, float] = {}
    darwin: dict[str, float] = {}
    if spark_json is not None:
        for row in json.loads(spark_json.read_text()):
            if row.get("error") is None and row.get("events_per_second_per_core"):
                (spark if row["engine"] == "spark" else darwin)[row["query"]] = row["events_per_second_per_core"]
    print("| query | sources alone, s | bound, events/s/core | Darwin's run, events/s/core | Spark, events/s/core "
          "| bound / Spark per core | 20× reachable |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for q in names:
        source_seconds(q, 5_000, seed, 1)  # compiles (or loads) the generator's and the encoders' kernels
        seconds = source_seconds(q, n, seed, runs)
        bound = n / seconds
        row = [q, f"{seconds:.2f}", f"{bound / 1e6:.1f}M", f"{darwin[q] / 1e6:.1f}M" if q in darwin else "-"]
        if q in spark:
            row += [f"{spark[q] / 1e6:.2f}M", f"{bound / spark[q]:.1f}×", "yes" if bound >= 20 * spark[q] else "no"]
        else:
            row += ["-", "-", "-"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    app()
