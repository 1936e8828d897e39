"""The Darwin paper's micro-benchmark: a 60 s tumbling-window sum over 32-byte records.

Records are four int64 columns (ts, key, value, pad) with 15,000 distinct keys, read
from Parquet. In one run it measures records/s of (a) Darwin compiled, (b) a
hand-written Numba kernel over the same arrays, (c) PySpark local[*] on the same
file, (d) Darwin with target="generic" vs "host" (each in a fresh process, since
Numba fixes the CPU target per process), and checks that every result is equal.

    python benchmarks/darwin_agg.py --records 20M
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import typer
from numba import njit
from rich.console import Console
from rich.table import Table as RichTable

WINDOW_MS = 60_000
ROOT = Path(__file__).resolve().parent.parent
app = typer.Typer(add_completion=False)
console = Console()


# ----------------------------------------------------------------------------- data

def data_path(records: int, keys: int, seed: int, rate: int, data_dir: Path, hot: float = 0.0) -> Path:
    """The benchmark's Parquet file, generated once per parameters (written atomically).

    ``hot``: the share of records on two hot keys (as Nexmark's hot auctions and bidders), the rest
    uniform over all keys."""
    skew = f"-hot{hot}" if hot else ""
    path = data_dir / f"darwin-agg-r{records}-k{keys}-s{seed}-rate{rate}{skew}.parquet"
    if path.exists():
        return path
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    i = np.arange(records, dtype=np.int64)
    ts = i * 1000 // rate  # event time in ms, in order, `rate` records per second
    key = rng.integers(0, keys, records, dtype=np.int64)
    if hot:
        key = np.where(rng.random(records) < hot, rng.integers(0, 2, records, dtype=np.int64), key)
    table = pa.table({
        "ts": pa.array(ts, pa.timestamp("ms")),
        "key": key,
        "value": rng.integers(0, 100, records, dtype=np.int64),
        "pad": np.zeros(records, dtype=np.int64),
    })
    fd, tmp = tempfile.mkstemp(dir=data_dir, suffix=".tmp")
    os.close(fd)
    pq.write_table(table, tmp, row_group_size=1 << 20)
    os.replace(tmp, path)
    return path


def _best(fn, runs: int):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return result, best


# ----------------------------------------------------------------------------- engines

def darwin_query(path: Path):  # type: ignore[no-untyped-def]
    import darwin as dw

    return windowed_sum(dw.read_parquet(path, time="ts", max_delay="0s"))


def windowed_sum(t):  # type: ignore[no-untyped-def]
    """The benchmark's query over any table with ts, key, value."""
    import darwin as dw

    return t.window(dw.Tumble("60s", on="ts")).group_by("key").agg(total=dw.sum("value"))


def run_darwin(path: Path, runs: int, target: str, batch_size: int, workers: int = 1,
               pre_aggregate: bool = True) -> tuple[pa.Table, float]:
    import darwin as dw

    q = darwin_query(path)
    config = dw.Config(target=target, batch_size=batch_size, parallelism=workers, pre_aggregate=pre_aggregate)
    q.collect(config)  # compile (or load from the cache) outside the timed runs
    return _best(lambda: q.collect(config), runs)


def run_darwin_in_memory(arrays: tuple[np.ndarray, np.ndarray, np.ndarray], runs: int, batch_size: int,
                         workers: int = 1) -> tuple[pa.Table, float]:
    """Darwin over the arrays the hand kernel reads (an in-memory Arrow table): no Parquet decoding."""
    import darwin as dw

    ts, key, value = arrays
    table = pa.table({"ts": pa.array(ts).cast(pa.timestamp("ms")), "key": key, "value": value})
    q = windowed_sum(dw.from_arrow(table, time="ts", max_delay="0s"))
    config = dw.Config(batch_size=batch_size, parallelism=workers)
    q.collect(config)  # compile outside the timed runs
    return _best(lambda: q.collect(config), runs)


@njit(nogil=True, cache=True)
def _sum_kernel(ts: np.ndarray, key: np.ndarray, value: np.ndarray, first_window: int,
                sums: np.ndarray, counts: np.ndarray) -> None:
    for i in range(ts.shape[0]):
        w = ts[i] // WINDOW_MS - first_window
        k = key[i]
        sums[w, k] += value[i]
        counts[w, k] += 1


def read_arrays(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = pq.read_table(path, columns=["ts", "key", "value"])
    ts = t.column("ts").combine_chunks().view(pa.int64()).to_numpy()
    return ts, t.column("key").to_numpy(), t.column("value").to_numpy()


def hand_kernel(ts: np.ndarray, key: np.ndarray, value: np.ndarray, keys: int) -> pa.Table:
    """What a hand-coder writes for this exact query: dense [window, key] arrays (keys are 0..keys-1)."""
    first = int(ts.min()) // WINDOW_MS
    windows = int(ts.max()) // WINDOW_MS - first + 1
    sums = np.zeros((windows, keys), dtype=np.int64)
    counts = np.zeros((windows, keys), dtype=np.int64)
    _sum_kernel(ts, key, value, first, sums, counts)
    w, k = np.nonzero(counts)
    start = (w + first) * WINDOW_MS
    return pa.table({"window_start": pa.array(start, pa.timestamp("ms")),
                     "window_end": pa.array(start + WINDOW_MS, pa.timestamp("ms")),
                     "key": k.astype(np.int64), "total": sums[w, k]})


def run_spark(path: Path, runs: int) -> tuple[pa.Table, float]:
    from pyspark.sql import functions as F

    from darwin.spark import spark_session, to_arrow

    spark = spark_session("darwin-agg")

    def once() -> pa.Table:
        df = spark.read.parquet(str(path))
        out = df.groupBy(F.window("ts", "60 seconds").alias("w"), "key").agg(F.sum("value").alias("total"))
        return to_arrow(out.select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                                   "key", "total"))
    return _best(once, runs)


def run_in_child(path: Path, runs: int, target: str, batch_size: int) -> float:
    """records/s of Darwin with ``target`` in a fresh process (Numba's target is per process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    if target == "generic":  # set before the child imports numba: this script compiles a kernel at import
        env.update(NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "m.json"
        subprocess.run([sys.executable, __file__, "--only-darwin", "--target", target, "--path", str(path),
                        "--runs", str(runs), "--batch-size", str(batch_size), "--json", str(out)],
                       check=True, cwd=ROOT, env=env)
        return json.loads(out.read_text())["darwin_records_per_s"]


# ----------------------------------------------------------------------------- comparison

def _sorted(t: pa.Table) -> pa.Table:
    t = pa.table([t.column(c).cast(f) for c, f in (("window_start", pa.timestamp("ms")),
                                                      ("window_end", pa.timestamp("ms")),
                                                      ("key", pa.int64()), ("total", pa.int64()))],
                 names=["window_start", "window_end", "key", "total"])
    return t.sort_by([("window_start", "ascending"), ("key", "ascending")])


def first_difference(a: pa.Table, b: pa.Table) -> str | None:
    a, b = _sorted(a), _sorted(b)
    if a.equals(b):
        return None
    if a.num_rows != b.num_rows:
        return f"{a.num_rows} rows vs {b.num_rows} rows"
    for i, (x, y) in enumerate(zip(a.to_pylist(), b.to_pylist())):
        if x != y:
            return f"row {i}: {x} vs {y}"
    return "tables differ"


@app.command()
def main(records: str = typer.Option("20M", help="records to generate"),
         keys: int = typer.Option(15_000, help="distinct keys"),
         hot: float = typer.Option(0.0, help="share of records on two hot keys (skew), e.g. 0.9"),
         seed: int = typer.Option(0),
         rate: int = typer.Option(100_000, help="records per second of event time"),
         runs: int = typer.Option(3, help="timed runs per engine (best counts)"),
         spark_runs: int = typer.Option(1, help="timed Spark runs"),
         batch_size: int = typer.Option(1 << 20, help="Darwin batch size"),
         skip_spark: bool = typer.Option(False, help="leave PySpark out"),
         skip_targets: bool = typer.Option(False, help="leave the host/generic child processes out"),
         parallelism: int = typer.Option(1, help="also run Darwin on this many workers (and with an unordered "
                                                 "merge of their windows, to price the ordered one)"),
         data_dir: Path = typer.Option(ROOT / ".bench-data", help="where the Parquet file is cached"),
         json_out: Path = typer.Option(None, "--json", help="write the measurements here"),
         only_darwin: bool = typer.Option(False, help="(internal) measure Darwin alone"),
         target: str = typer.Option("host", help="(with --only-darwin) host or generic"),
         path: Path = typer.Option(None, help="(with --only-darwin) the data file")) -> None:
    """Measure every engine side by side on the same file and check their results are equal."""
    if only_darwin:
        n = pq.read_metadata(path).num_rows
        _, seconds = run_darwin(path, runs, target, batch_size)
        json_out.write_text(json.dumps({"darwin_records_per_s": n / seconds}))
        return
    from darwin.cli import parse_count

    n = parse_count(records)
    path = data_path(n, keys, seed, rate, data_dir, hot)
    console.print(f"data: {path} ({n:,} records, {keys:,} keys, {hot:.0%} on two hot keys)")
    results: dict[str, float] = {}
    tables: dict[str, pa.Table] = {}

    tables["darwin"], seconds = run_darwin(path, runs, "host", batch_size)
    results["darwin (compiled, host)"] = n / seconds
    if parallelism > 1:
        from darwin.runtime.parallel import KeyedRunner

        tables["darwin parallel"], seconds = run_darwin(path, runs, "host", batch_size, parallelism)
        results[f"darwin, {parallelism} workers"] = n / seconds
        KeyedRunner.ordered = False  # the workers' windows concatenated as they come: the merge's cost
        try:
            _, seconds = run_darwin(path, runs, "host", batch_size, parallelism)
        finally:
            KeyedRunner.ordered = True
        results[f"darwin, {parallelism} workers, unordered merge"] = n / seconds
        tables["darwin parallel, routed"], seconds = run_darwin(path, runs, "host", batch_size, parallelism,
                                                                pre_aggregate=False)
        results[f"darwin, {parallelism} workers, no pre-aggregation"] = n / seconds
    arrays, read_s = _best(lambda: read_arrays(path), runs)
    hand_kernel(*[a[:1000] for a in arrays], keys)  # compile outside the timed runs
    tables["kernel"], kernel_s = _best(lambda: hand_kernel(*arrays, keys), runs)
    results["hand kernel, in memory"] = n / kernel_s
    results["hand kernel, incl. Parquet read"] = n / (read_s + kernel_s)
    tables["darwin in memory"], seconds = run_darwin_in_memory(arrays, runs, batch_size)
    results["darwin, in memory"] = n / seconds
    if parallelism > 1:
        tables["darwin in memory, parallel"], seconds = run_darwin_in_memory(arrays, runs, batch_size, parallelism)
        results[f"darwin, in memory, {parallelism} workers"] = n / seconds
    if not skip_spark:
        tables["spark"], spark_s = run_spark(path, spark_runs)
        results["pyspark local[*]"] = n / spark_s
    if not skip_targets:
        results["darwin host (child process)"] = run_in_child(path, runs, "host", batch_size)
        results["darwin generic (child process)"] = run_in_child(path, runs, "generic", batch_size)

    problems = {name: d for name, t in tables.items() if name != "darwin"
                if (d := first_difference(tables["darwin"], t)) is not None}
    _report(results, n)
    ratios = _ratios(results)
    for name, value in ratios.items():
        console.print(f"{name}: {value:.2f}x")
    if json_out:
        json_out.write_text(json.dumps({"records": n, "keys": keys, "records_per_s": results, "ratios": ratios,
                                        "equal": not problems}, indent=2))
    if problems:
        for name, d in problems.items():
            console.print(f"[red]darwin and {name} differ:[/red] {d}")
        raise typer.Exit(1)
    console.print(f"results equal across {', '.join(tables)} ({tables['darwin'].num_rows} rows)")


def _ratios(r: dict[str, float]) -> dict[str, float]:
    d = r["darwin (compiled, host)"]
    out = {"darwin / hand kernel (both incl. Parquet read)": d / r["hand kernel, incl. Parquet read"],
           "darwin (incl. Parquet read) / hand kernel (in memory)": d / r["hand kernel, in memory"]}
    out["darwin in memory / hand kernel (in memory)"] = r["darwin, in memory"] / r["hand kernel, in memory"]
    for name in [k for k in r if k.startswith("darwin, in memory, ")]:
        out[f"{name} / 1 worker"] = r[name] / r["darwin, in memory"]
    if "pyspark local[*]" in r:
        out["darwin / pyspark"] = d / r["pyspark local[*]"]
    for name in [k for k in r if k.startswith("darwin, ") and k.endswith(" workers") and "in memory" not in k]:
        out[f"{name} / 1 worker"] = r[name] / d
        out[f"{name}: ordered / unordered merge"] = r[name] / r[f"{name}, unordered merge"]
        out[f"{name}: local/global / routed rows"] = r[name] / r[f"{name}, no pre-aggregation"]
        out[f"{name}, no pre-aggregation / 1 worker"] = r[f"{name}, no pre-aggregation"] / d
    if "darwin generic (child process)" in r:
        out["host / generic"] = r["darwin host (child process)"] / r["darwin generic (child process)"]
    return out


def _report(results: dict[str, float], n: int) -> None:
    table = RichTable(title=f"60 s tumbling sum, {n:,} records")
    table.add_column("engine")
    table.add_column("records/s", justify="right")
    for name, rps in results.items():
        table.add_row(name, f"{rps:,.0f}")
    console.print(table)


if __name__ == "__main__":
    app()
