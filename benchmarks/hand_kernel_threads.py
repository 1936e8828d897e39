"""How far two threads can speed up the hand-written kernel of the micro-benchmark on this machine.

The ceiling any engine's 2-workers-vs-1 ratio lives under: the same compiled loop as
``darwin_agg.hand_kernel`` (dense [window, key] sums, the GIL released), run over the whole input on
one thread and over its two halves on two threads, each with its own arrays, nothing merged.

    python benchmarks/hand_kernel_threads.py [--records 20M] [--runs 5]
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import typer
from darwin_agg import ROOT, WINDOW_MS, _sum_kernel, data_path, read_arrays

from darwin.cli import parse_count

app = typer.Typer(add_completion=False)


def _timed(ts: np.ndarray, key: np.ndarray, value: np.ndarray, keys: int, threads: int) -> float:
    first = int(ts.min()) // WINDOW_MS
    windows = int(ts.max()) // WINDOW_MS - first + 1
    n = len(ts)
    cuts = [n * i // threads for i in range(threads + 1)]
    arrays = [(np.zeros((windows, keys), np.int64), np.zeros((windows, keys), np.int64)) for _ in range(threads)]
    workers = [threading.Thread(target=_sum_kernel, args=(ts[a:b], key[a:b], value[a:b], first, *out))
               for a, b, out in zip(cuts, cuts[1:], arrays)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - started


@app.command()
def main(records: str = typer.Option("20M", help="records to generate"), keys: int = 15_000,
         runs: int = typer.Option(5, help="timed runs per thread count (best counts)"),
         data_dir: Path = typer.Option(ROOT / ".bench-data", help="where the Parquet file is cached")) -> None:
    """The hand kernel on 1 and 2 threads, side by side in one run: the best time of each and their ratio."""
    ts, key, value = read_arrays(data_path(parse_count(records), keys, 0, 100_000, data_dir))
    _timed(ts, key, value, keys, 1)  # compile
    one = min(_timed(ts, key, value, keys, 1) for _ in range(runs))
    two = min(_timed(ts, key, value, keys, 2) for _ in range(runs))
    print(f"hand kernel, {len(ts):,} records: 1 thread {one:.4f} s, 2 threads {two:.4f} s, "
          f"2 threads / 1 thread {one / two:.2f}x")


if __name__ == "__main__":
    app()
