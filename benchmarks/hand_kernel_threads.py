"""How far two threads can speed up the micro-benchmark's work on this machine, and how far Darwin does.

The ceilings any engine's 2-workers-vs-1 ratio lives under, each run over the whole input on one
thread and over its two halves on two threads (the GIL released, nothing merged):
- the hand kernel: the same compiled loop as ``darwin_agg.hand_kernel`` (dense [window, key] sums);
- a plain read: the same three columns read once, nothing kept: what the memory system gives two
  cores against one (on this VM it moves from run to run with what the host's other guests do).
Then Darwin itself over the same arrays in memory, parallelism 1 and 2, in the same run.

    python benchmarks/hand_kernel_threads.py [--records 20M] [--runs 5]
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import typer
from darwin_agg import ROOT, WINDOW_MS, _sum_kernel, data_path, read_arrays, run_darwin_in_memory
from numba import njit

from darwin.cli import parse_count

app = typer.Typer(add_completion=False)


@njit(nogil=True, cache=True)
def _read_kernel(ts: np.ndarray, key: np.ndarray, value: np.ndarray, out: np.ndarray) -> None:
    """Every value of the three columns read once (combined so the loop is not optimized away)."""
    total = 0
    for i in range(ts.shape[0]):
        total += ts[i] ^ key[i] ^ value[i]
    out[0] = total


def _timed(ts: np.ndarray, key: np.ndarray, value: np.ndarray, keys: int, threads: int, read_only: bool = False) \
        -> float:
    first = int(ts.min()) // WINDOW_MS
    windows = int(ts.max()) // WINDOW_MS - first + 1
    n = len(ts)
    cuts = [n * i // threads for i in range(threads + 1)]
    if read_only:
        workers = [threading.Thread(target=_read_kernel, args=(ts[a:b], key[a:b], value[a:b], np.zeros(1, np.int64)))
                   for a, b in zip(cuts, cuts[1:])]
    else:
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
    """The hand kernel, a plain read and Darwin on 1 and 2 threads, side by side in one run: the best
    time of each and their ratio."""
    ts, key, value = read_arrays(data_path(parse_count(records), keys, 0, 100_000, data_dir))
    for name, read_only in (("hand kernel", False), ("plain read", True)):
        _timed(ts, key, value, keys, 1, read_only)  # compile
        one = min(_timed(ts, key, value, keys, 1, read_only) for _ in range(runs))
        two = min(_timed(ts, key, value, keys, 2, read_only) for _ in range(runs))
        _report(name, len(ts), one, two)
    darwin_one = run_darwin_in_memory((ts, key, value), runs, 1 << 20, 1)[1]
    darwin_two = run_darwin_in_memory((ts, key, value), runs, 1 << 20, 2)[1]
    _report("Darwin in memory", len(ts), darwin_one, darwin_two)


def _report(name: str, records: int, one: float, two: float) -> None:
    print(f"{name}, {records:,} records: 1 thread {one:.4f} s ({records / one / 1e6:.0f}M rec/s), "
          f"2 threads {two:.4f} s, 2 threads / 1 thread {one / two:.2f}x")


if __name__ == "__main__":
    app()
