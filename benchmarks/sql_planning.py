"""What SQL planning costs: each Nexmark query's Flink SQL (``nexmark/sql/qN.sql`` with the DDL
of its streams) parsed and planned into a Darwin table, against building the same query with the
fluent API, side by side in one run; the median of ``--runs`` is reported. With ``--events N``, each
query also runs over N events into a discarding sink, planned from SQL and built fluently, one
after the other (after an untimed warm-up of both), to show the SQL runs the same plans as fast.

    python benchmarks/sql_planning.py --runs 50 --events 1M
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table as RichTable

import darwin as dw
from darwin.cli import parse_count
from darwin.sql import parse, plan_script
from nexmark.queries import QUERIES
from nexmark.source import source
from nexmark.sql_queries import QUERIES as SQL_QUERIES
from nexmark.sql_queries import script, sql_query

EVENTS = 1_000_000  # planning reads no events; the number only goes into the sources
app = typer.Typer(add_completion=False)
console = Console()


def median_ms(work: Callable[[], Any], runs: int) -> float:
    """The median time of ``runs`` calls (the machine is shared: a median ignores a stalled run)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(query: str, runs: int) -> dict[str, float]:
    """Milliseconds to parse the script, to plan it (parse included), and to build the fluent twin."""
    text = script(query, EVENTS)
    plan_script(text)  # warm: first imports and caches are not the per-query cost
    return {"parse_ms": median_ms(lambda: parse(text), runs),
            "sql_ms": median_ms(lambda: plan_script(text), runs),
            "fluent_ms": median_ms(lambda: QUERIES[query].build(source(events=EVENTS)), runs)}


def run_seconds(query: str, events: int, repeats: int) -> dict[str, float]:
    """Seconds of a run into a discarding sink, planned from SQL and built fluently (compiled, warm; the
    best of ``repeats``, alternating)."""
    def build(sql: bool, n: int) -> dw.Table:
        return sql_query(query, n) if sql else QUERIES[query].build(source(events=n))

    for sql in (True, False):
        build(sql, 5_000).sink(dw.sinks.Blackhole()).run()
    best = {True: float("inf"), False: float("inf")}
    for _ in range(repeats):  # alternating, the best of each: the machine is shared
        for sql in (True, False):
            table = build(sql, events)
            started = time.perf_counter()
            table.sink(dw.sinks.Blackhole()).run()
            best[sql] = min(best[sql], time.perf_counter() - started)
    return {"sql_run_s": best[True], "fluent_run_s": best[False]}


@app.command()
def main(runs: int = typer.Option(20, help="runs per query; the median is reported"),
         queries: str = typer.Option(",".join(SQL_QUERIES), help="comma-separated queries"),
         events: str = typer.Option("0", help="also run each query over this many events (e.g. 1M); 0: plan only"),
         repeats: int = typer.Option(3, help="timed runs of each query and kind with --events; the best is kept"),
         json_out: Path = typer.Option(None, "--json", dir_okay=False)) -> None:
    names = [q.strip() for q in queries.split(",") if q.strip()]
    results = {q: measure(q, runs) for q in names}
    n = parse_count(events)
    if n:
        for q in names:
            results[q] |= run_seconds(q, n, repeats)
    table = RichTable("query", "parse", "SQL planning", "fluent build", "added by SQL",
                      title=f"SQL planning per query, median of {runs} runs (ms)")
    for q, r in results.items():
        table.add_row(q, f"{r['parse_ms']:.1f}", f"{r['sql_ms']:.1f}", f"{r['fluent_ms']:.2f}",
                      f"{r['sql_ms'] - r['fluent_ms']:.1f}")
    console.print(table)
    if n:
        timed = RichTable("query", "SQL run (s)", "fluent run (s)", "SQL / fluent",
                          title=f"runs over {n:,} events into a blackhole, best of {repeats}")
        for q, r in results.items():
            timed.add_row(q, f"{r['sql_run_s']:.2f}", f"{r['fluent_run_s']:.2f}",
                          f"{r['sql_run_s'] / r['fluent_run_s']:.2f}")
        console.print(timed)
    worst = max(results, key=lambda q: results[q]["sql_ms"])
    console.print(f"slowest: {worst}, {results[worst]['sql_ms']:.1f} ms of SQL planning")
    if json_out:
        json_out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    app()
