"""Barrier windows on 1 and more workers: rows/s of a keyed sum per barrier window.

Readings of ``--keys`` sensors with a barrier about every ``--every`` rows; each configuration
runs once to compile, then ``--repeat`` times, and the best run counts. Every run's result must
equal the one-worker run's.

    python benchmarks/barrier_windows.py --rows 4000000 --workers 1,2
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import typer

import darwin as dw
from darwin import col

app = typer.Typer(add_completion=False)


@app.command()
def main(rows: int = 4_000_000, keys: int = 100_000, every: int = 10_000, workers: str = "1,2",
         repeat: int = 3) -> None:
    rng = np.random.default_rng(1)
    table = pa.table({"t": pa.array(np.arange(rows), pa.timestamp("ms")),
                      "kind": np.where(rng.random(rows) < 1 / every, "barrier", "reading"),
                      "sensor": rng.integers(0, keys, rows), "value": rng.integers(0, 1000, rows)})
    query = dw.from_arrow(table, time="t").window(dw.Barrier(col("kind") == "barrier", on="t")) \
        .group_by("sensor").agg(total=dw.sum("value"), n=dw.count())
    reference = None
    for n in (int(w) for w in workers.split(",")):
        config = dw.Config(parallelism=n)
        query.execute(config)  # compiles
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            result = query.execute(config)
            best = min(best, time.perf_counter() - started)
        reference = result.table if reference is None else reference
        assert result.table.equals(reference), f"{n} workers gave another result"
        print(f"workers={n}: best {best:.2f}s, {rows / best / 1e6:.2f} M rows/s, {result.table.num_rows} rows out")


if __name__ == "__main__":
    app()
