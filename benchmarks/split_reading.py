"""Reading a source alone, in order on one thread or in splits on several (issue 12).

Times the engine's read (``darwin.runtime.compiled.read_from``) of a source to its end, and on its
own the encoding the reader thread does after it (strings interned into one pool, in order, on one thread),
at 1 and 2 threads, best of ``--runs`` (wall seconds, and the CPU seconds of every thread in that run):

    python benchmarks/split_reading.py --events 10M --records 20M --runs 3
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parent.parent
app = typer.Typer(add_completion=False)


def timed(read: Callable[[], int], runs: int) -> tuple[int, float, float]:
    """Rows read, the best wall seconds, and the CPU seconds (user + sys, every thread) of that run."""
    best, cpu = float("inf"), 0.0
    rows = 0
    for _ in range(runs):
        started, used = time.perf_counter(), sum(os.times()[:2])
        rows = read()
        seconds = time.perf_counter() - started
        if seconds < best:
            best, cpu = seconds, sum(os.times()[:2]) - used
    return rows, best, cpu


def reading(source, columns: tuple[str, ...], batch_size: int, threads: int) -> Callable[[], int]:
    from darwin.runtime.compiled import read_from

    def read() -> int:
        return sum(b.num_rows for b in read_from(source, columns, batch_size, 0, threads))
    return read


def encoding_seconds(source, columns: tuple[str, ...], batch_size: int) -> float:
    """Seconds the reader thread spends encoding the batches (interning strings, in order, on one thread):
    the part of reading that stays serial."""
    from darwin.runtime.compiled import read_from
    from darwin.runtime.encoding import StringPool, encode

    schema, pool = source.schema.select(columns), StringPool()
    seconds = 0.0
    for batch in read_from(source, columns, batch_size, 0, 1):
        started = time.perf_counter()
        encode(batch, schema, pool, source.name)
        seconds += time.perf_counter() - started
    return seconds


@app.command()
def main(events: str = typer.Option("10M", help="Nexmark events generated"),
         records: str = typer.Option("20M", help="rows of the micro-benchmark's Parquet file"),
         runs: int = typer.Option(3), threads: str = typer.Option("1,2"),
         data_dir: Path = typer.Option(ROOT / ".bench-data", help="where darwin_agg.py caches its Parquet file")) \
        -> None:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from darwin_agg import data_path  # type: ignore[import-not-found]

    from darwin.cli import parse_count
    from darwin.io.sources import ParquetSource
    from nexmark.generator import GeneratorConfig
    from nexmark.source import NexmarkStream

    n_events, n_records = parse_count(events), parse_count(records)
    path = data_path(n_records, 15_000, 0, 100_000, data_dir)
    cases = [
        (f"generator bid stream, {events} events (q5's columns), batch 65536",
         NexmarkStream(GeneratorConfig(events=n_events), "bid"), ("auction", "date_time"), 1 << 16),
        (f"generator bid stream, {events} events (all columns), batch 65536",
         NexmarkStream(GeneratorConfig(events=n_events), "bid"),
         ("auction", "bidder", "price", "channel", "url", "date_time", "extra"), 1 << 16),
        (f"Parquet {records} rows (ts, key, value), batch 1M", ParquetSource(path), ("ts", "key", "value"), 1 << 20),
        (f"Parquet {records} rows (ts, key, value), batch 65536", ParquetSource(path), ("ts", "key", "value"),
         1 << 16),
    ]
    counts = [int(t) for t in threads.split(",")]
    for name, source, columns, batch_size in cases:
        reading(source, columns, batch_size, 1)()  # warm: compiled generator, page cache
        line = []
        base = None
        for t in counts:
            rows, seconds, cpu = timed(reading(source, columns, batch_size, t), runs)
            base = base or seconds
            line.append(f"{t} thread(s) {seconds:.3f} s, CPU {cpu:.2f} s ({rows / seconds / 1e6:.1f} M rows/s, "
                        f"{base / seconds:.2f}x)")
        line.append(f"encoding on the reader thread {encoding_seconds(source, columns, batch_size):.3f} s")
        print(f"{name}: " + "; ".join(line), flush=True)


if __name__ == "__main__":
    app()
