"""The state backends side by side: memory, mmap and rocksdb under the same queries.

Five sections, each skippable: (micro) the 60 s tumbling-sum micro-benchmark of
``darwin_agg.py`` on every backend, results checked equal; (keys) insert and update
rates of keyed state at ``--keys`` distinct keys; (checkpoint) checkpoint and recovery
time at that state size; (rocksdb_writes) why the rocksdb backend groups its writes:
per-record get/put against one multi-get and one WriteBatch per pre-aggregated batch;
(join) Nexmark q20's regular join, every bid and every category-10 auction kept in state.

    python benchmarks/state_backends.py --records 20M --keys 10M
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import rocksdict
import typer
from rich.console import Console
from rich.table import Table as RichTable

sys.path.insert(0, str(Path(__file__).parent))
from darwin_agg import _best, darwin_query, data_path, first_difference, windowed_sum  # noqa: E402

import darwin as dw  # noqa: E402
from darwin.cli import parse_count  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("memory", "mmap", "rocksdb")
SECTIONS = ("micro", "keys", "checkpoint", "rocksdb_writes", "join")
HOUR_MS = 3_600_000
app = typer.Typer(add_completion=False)
console = Console()


def config_for(backend: str, state_dir: Path, **more: Any) -> dw.Config:
    path = None if backend == "memory" else str(state_dir / backend)
    return dw.Config(state=backend, state_path=path, **more)


# ----------------------------------------------------------------------------- 1. micro-benchmark

def micro(path: Path, n: int, runs: int, batch_size: int, state_dir: Path) -> dict[str, Any]:
    """records/s of the micro-benchmark per backend, and whether every result equals memory's.

    On ``memory`` the Parquet statistics give a dense key domain, so the aggregation runs on a
    window ring; the other backends keep a hash table. The extra row "memory, hash table" reads
    the same file without statistics, so the memory backend uses its hash table too.
    """
    q = darwin_query(path)
    rows = [(b, q, config_for(b, state_dir, batch_size=batch_size)) for b in BACKENDS]
    rows.insert(1, ("memory, hash table", no_statistics(path), config_for("memory", state_dir,
                                                                           batch_size=batch_size)))
    rates, problems, reference = {}, {}, None
    for name, query, config in rows:
        query.collect(config)  # compile (or load from the cache) outside the timed runs
        table, seconds = _best(lambda c=config, q=query: q.collect(c), runs)
        rates[name] = n / seconds
        reference = table if reference is None else reference
        if (d := first_difference(reference, table)) is not None:
            problems[name] = d
    ratios = {f"{b} / {m}": rates[b] / rates[m] for b in ("mmap", "rocksdb") for m in ("memory", "memory, hash table")}
    return {"records_per_s": rates, "ratios": ratios, "equal": not problems, "differences": problems,
            "state": {name: state_kind(query, config) for name, query, config in rows}}


def no_statistics(path: Path) -> dw.Table:
    """The micro-benchmark query over the same Parquet file, read through a source without statistics."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    return windowed_sum(dw.from_batches(schema, lambda: pq.ParquetFile(path).iter_batches(batch_size=1 << 20),
                                        time="ts", max_delay="0s", non_null=schema.names))


def state_kind(q: dw.Table, config: dw.Config) -> str:
    """What holds the aggregation's state: on memory, a dense key domain gets a window ring, not a hash table."""
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize

    return "hash table" if translate(optimize(q.plan), config).pipelines[0].sink.ring is None else "window ring"


# ----------------------------------------------------------------------------- 2./3. keyed state

def key_data(keys: int, seed: int = 0) -> pa.Table:
    """Every key once (shuffled), all in one 1-hour window, so nothing fires before the end."""
    rng = np.random.default_rng(seed)
    return pa.table({"ts": pa.array(np.arange(keys, dtype=np.int64) * HOUR_MS // keys, pa.timestamp("ms")),
                     "key": rng.permutation(keys).astype(np.int64),
                     "value": rng.integers(0, 100, keys, dtype=np.int64)})


def keyed_query(data: pa.Table) -> dw.Table:
    """The data twice over: the first pass inserts every key, the second updates each one.

    ``from_batches`` gives the planner no key statistics, so memory uses its hash table too
    (with them it may choose a dense window ring instead, which is not what is measured here).
    """
    def batches() -> Iterator[pa.RecordBatch]:
        for _ in range(2):
            yield from data.to_batches()

    t = dw.from_batches(data.schema, batches, time="ts", max_delay="0s", non_null=("ts", "key", "value"))
    return t.window(dw.Tumble("1h", on="ts")).group_by("key").agg(total=dw.sum("value"))


def engine_for(q: dw.Table, config: dw.Config, job: str, fresh: bool = True) -> Any:
    """An engine of job ``job``; not ``fresh``: it opens the job's state files, to restore them."""
    from darwin.graph.translate import translate
    from darwin.plan.rules import optimize
    from darwin.runtime.compiled import CompiledEngine
    from darwin.runtime.progress import Metrics

    return CompiledEngine(translate(optimize(q.plan), config), config, Metrics(), job=job, fresh=fresh)


def keyed_run(backend: str, data: pa.Table, config: dw.Config, work: Path, checkpoint: bool) -> dict[str, float]:
    """One run: insert and update seconds (barrier to barrier), then optionally a checkpoint and a
    recovery into a new engine; firing the window at the end checks every key's total."""
    from darwin.state.checkpoint import CheckpointStore

    n, q = data.num_rows, keyed_query(data)
    out: dict[str, float] = {}
    job = uuid.uuid4().hex
    eng = engine_for(q, config, job)
    try:
        outputs, started = eng.outputs(), time.perf_counter()
        for o in outputs:  # up to the barrier after the last input row: the window is still open
            if o.kind != "barrier":
                raise RuntimeError(f"{backend}: output before the window closed")
            if eng.offset == n:
                out["insert_s"] = time.perf_counter() - started
            if eng.offset == 2 * n:
                out["update_s"] = time.perf_counter() - started - out["insert_s"]
                break
        if checkpoint:
            store = CheckpointStore(work / "checkpoints")
            started = time.perf_counter()  # what a job does at a checkpoint, less the sink
            body, files = eng.snapshot(store.directory(1))
            store.commit(1, {"engine": body}, files)
            eng.after_checkpoint(1)
            out["checkpoint_s"] = time.perf_counter() - started
        else:
            fired = _fire(outputs, out)
        outputs.close()
    finally:
        eng.close()
    if checkpoint:
        eng = engine_for(q, config, job, fresh=False)  # a restarted job: same state_path, not fresh
        try:
            started = time.perf_counter()
            latest = store.latest()  # verifies the manifest and the checksums of the files it lists
            eng.restore(latest.path, latest.body["engine"], latest.id)
            out["recovery_s"] = time.perf_counter() - started
            fired = _fire(eng.outputs(), out)
        finally:
            eng.close()
    got = pa.Table.from_batches(fired).sort_by("key")
    want = np.empty(n, dtype=np.int64)
    want[data.column("key").to_numpy()] = 2 * data.column("value").to_numpy()
    out["equal"] = float(np.array_equal(got.column("key").to_numpy(), np.arange(n))
                         and np.array_equal(got.column("total").to_numpy(), want))
    return out


def _fire(outputs: Iterator[Any], out: dict[str, float]) -> list[pa.RecordBatch]:
    """The rest of a run: the end of input fires the window."""
    started = time.perf_counter()
    fired = [o.batch for o in outputs if o.kind == "result"]
    out["fire_s"] = time.perf_counter() - started
    return fired


def keyed(keys: int, runs: int, batch_size: int, state_dir: Path, checkpoint: bool) -> dict[str, dict[str, float]]:
    """Per backend, the best of ``runs`` of every measure in ``keyed_run``."""
    data = key_data(keys)
    results: dict[str, dict[str, float]] = {}
    for backend in BACKENDS:
        config = config_for(backend, state_dir, batch_size=batch_size)
        with tempfile.TemporaryDirectory(dir=state_dir) as d:  # compile outside the timed runs
            keyed_run(backend, key_data(1000), config, Path(d), checkpoint=False)
        best: dict[str, float] = {}
        for _ in range(runs):
            with tempfile.TemporaryDirectory(dir=state_dir) as d:
                for name, value in keyed_run(backend, data, config, Path(d), checkpoint).items():
                    best[name] = min(best.get(name, value), value)
        shutil.rmtree(state_dir / backend, ignore_errors=True)
        results[backend] = best
    return results


# ----------------------------------------------------------------------------- 4. RocksDB writes

def _open(path: Path) -> rocksdict.Rdict:
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True))
    write = rocksdict.WriteOptions()
    write.disable_wal = True  # as the rocksdb backend writes
    db.set_write_options(write)
    return db


def per_record(db: rocksdict.Rdict, keys: np.ndarray, values: np.ndarray) -> None:
    """A running sum the naive way: one get and one put per record."""
    encoded = keys.astype(">u8").tobytes()
    for i, v in enumerate(values.tolist()):
        k = encoded[8 * i:8 * i + 8]
        old = db.get(k)
        total = v + (0 if old is None else int.from_bytes(old, "little", signed=True))
        db.put(k, total.to_bytes(8, "little", signed=True))


def grouped(db: rocksdict.Rdict, keys: np.ndarray, values: np.ndarray, batch: int) -> None:
    """Per batch: pre-aggregate with numpy, one multi-get, one vectorised add, one WriteBatch."""
    for start in range(0, len(keys), batch):
        unique, inverse = np.unique(keys[start:start + batch], return_inverse=True)
        sums = np.bincount(inverse, weights=values[start:start + batch], minlength=len(unique)).astype(np.int64)
        buf = unique.astype(">u8").tobytes()
        encoded = [buf[i:i + 8] for i in range(0, len(buf), 8)]
        found = db.get(encoded)
        old = np.array([0 if f is None else int.from_bytes(f, "little", signed=True) for f in found], np.int64)
        out = (sums + old).astype("<i8").tobytes()
        wb = rocksdict.WriteBatch(raw_mode=True)
        for i, k in enumerate(encoded):
            wb.put(k, out[8 * i:8 * i + 8])
        db.write(wb)


def rocksdb_writes(records: int, keys: int, batch: int, state_dir: Path) -> dict[str, Any]:
    """records/s of per-record and grouped RocksDB updates of the same stream; equal final sums."""
    rng = np.random.default_rng(0)
    k = rng.integers(0, keys, records, dtype=np.int64)
    v = rng.integers(0, 100, records, dtype=np.int64)
    result: dict[str, Any] = {"records": records, "keys": keys}
    contents = []
    with tempfile.TemporaryDirectory(dir=state_dir) as d:
        for name, write in (("per_record", lambda db: per_record(db, k, v)),
                            ("grouped", lambda db: grouped(db, k, v, batch))):
            db = _open(Path(d) / name)
            started = time.perf_counter()
            write(db)
            result[f"{name}_records_per_s"] = records / (time.perf_counter() - started)
            contents.append(dict(db.items()))
            db.close()
    sums = np.bincount(k, weights=v, minlength=keys).astype(np.int64)
    want = {int(i): int(sums[i]) for i in np.flatnonzero(np.bincount(k, minlength=keys))}
    stored = {int.from_bytes(key, "big"): int.from_bytes(s, "little", signed=True) for key, s in contents[0].items()}
    result["ratios"] = {"grouped / per_record": result["grouped_records_per_s"] / result["per_record_records_per_s"]}
    result["equal"] = contents[0] == contents[1] and stored == want
    return result


# ----------------------------------------------------------------------------- 5. a join's state

def join(events: int, runs: int, batch_size: int, state_dir: Path) -> dict[str, Any]:
    """events/s of Nexmark q20 (bids joined with their category-10 auction; a regular join, so
    both sides' rows stay in state) per backend, and whether every result equals memory's."""
    from nexmark.queries import QUERIES
    from nexmark.source import source

    def q20(n: int) -> dw.Table:
        return QUERIES["q20"].build(source(events=n))

    result: dict[str, Any] = {"events": events, "events_per_s": {}}
    tables = {}
    for backend in BACKENDS:
        config = config_for(backend, state_dir, batch_size=batch_size)
        q20(5_000).collect(config)  # compiles
        table, seconds = _best(lambda c=config: q20(events).collect(c), runs)
        tables[backend] = table
        result["events_per_s"][backend] = events / seconds
    memory = result["events_per_s"]["memory"]
    result["ratios"] = {f"{b} / memory": result["events_per_s"][b] / memory for b in BACKENDS if b != "memory"}
    result["rows"] = tables["memory"].num_rows
    result["equal"] = all(t.equals(tables["memory"]) for t in tables.values())
    return result


# ----------------------------------------------------------------------------- the CLI

@app.command()
def main(records: str = typer.Option("20M", help="micro-benchmark records"),
         keys: str = typer.Option("10M", help="distinct keys of the keys and checkpoint sections"),
         runs: int = typer.Option(3, help="timed runs per backend (best counts)"),
         rate: int = typer.Option(100_000, help="micro-benchmark records per second of event time"),
         batch_size: int = typer.Option(1 << 20, help="Darwin batch size"),
         write_records: str = typer.Option("2M", help="records of the rocksdb_writes section"),
         write_keys: str = typer.Option("100K", help="distinct keys of the rocksdb_writes section"),
         write_batch: int = typer.Option(1 << 16, help="records per grouped write batch"),
         join_events: str = typer.Option("5M", help="Nexmark events of the join section"),
         data_dir: Path = typer.Option(ROOT / ".bench-data", help="where the Parquet file is cached"),
         state_dir: Path = typer.Option(None, help="where state and checkpoints go (default: under --data-dir)"),
         json_out: Path = typer.Option(None, "--json", help="write the measurements here"),
         skip: str = typer.Option("", help=f"comma list of sections to skip: {','.join(SECTIONS)}")) -> None:
    """Measure each section on every backend and check that their results agree."""
    skipped = {s.strip() for s in skip.split(",") if s.strip()}
    if unknown := skipped - set(SECTIONS):
        raise typer.BadParameter(f"unknown sections {sorted(unknown)}; choose from {list(SECTIONS)}")
    n, k = parse_count(records), parse_count(keys)
    data_dir.mkdir(parents=True, exist_ok=True)
    (state_dir or data_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="state-backends-", dir=state_dir or data_dir))
    report: dict[str, Any] = {"params": {"records": n, "keys": k, "runs": runs, "batch_size": batch_size}}
    try:
        if "micro" not in skipped:
            path = data_path(n, 15_000, 0, rate, data_dir)
            console.print(f"micro: {path} ({n:,} records, 15,000 keys)")
            report["micro"] = micro(path, n, runs, batch_size, work)
            m = report["micro"]
            _table(f"micro-benchmark, {n:,} records", ("records/s", "state"), m["records_per_s"], m["state"],
                   fmt=lambda v: v if isinstance(v, str) else f"{v:,.0f}")
        if not {"keys", "checkpoint"} <= skipped:
            _keyed_sections(report, keyed(k, runs, batch_size, work, "checkpoint" not in skipped), k, skipped)
        if "rocksdb_writes" not in skipped:
            w = report["rocksdb_writes"] = rocksdb_writes(parse_count(write_records), parse_count(write_keys),
                                                          write_batch, work)
            _table(f"RocksDB updates, {w['records']:,} records over {w['keys']:,} keys", ("records/s",),
                   {"per-record get + put": w["per_record_records_per_s"],
                    f"grouped ({write_batch:,}-record batches)": w["grouped_records_per_s"]}, first="writes")
        if "join" not in skipped:
            j = report["join"] = join(parse_count(join_events), runs, batch_size, work)
            _table(f"Nexmark q20 (regular join), {j['events']:,} events, {j['rows']:,} rows", ("events/s",),
                   j["events_per_s"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sections = {name: report[name] for name in SECTIONS if name in report}
    for name, section in sections.items():
        for ratio, value in section.get("ratios", {}).items():
            console.print(f"{name}: {ratio}: {value:.2f}x")
    report["equal"] = all(s["equal"] for s in sections.values())
    if json_out:
        json_out.write_text(json.dumps(report, indent=2))
    if not report["equal"]:
        console.print("[red]results differ:[/red] " + ", ".join(x for x, s in sections.items() if not s["equal"]))
        raise typer.Exit(1)
    console.print("results equal in every section")


def _keyed_sections(report: dict[str, Any], results: dict[str, dict[str, float]], k: int, skipped: set[str]) -> None:
    equal = all(r["equal"] == 1.0 for r in results.values())
    if "keys" not in skipped:
        report["keys"] = {"keys": k, "equal": equal,
                          "insert_rows_per_s": {b: k / r["insert_s"] for b, r in results.items()},
                          "update_rows_per_s": {b: k / r["update_s"] for b, r in results.items()}}
        _table(f"keyed state, {k:,} keys", ("insert rows/s", "update rows/s"), report["keys"]["insert_rows_per_s"],
               report["keys"]["update_rows_per_s"])
    if "checkpoint" not in skipped:
        report["checkpoint"] = {"keys": k, "equal": equal, **{
            m: {b: r[f"{m}_s"] for b, r in results.items()} for m in ("checkpoint", "recovery", "fire")}}
        c = report["checkpoint"]
        _table(f"checkpoint of {k:,} keys", ("checkpoint s", "recovery s", "fire s"), c["checkpoint"], c["recovery"],
               c["fire"], fmt="{:.3f}".format)


def _table(title: str, columns: tuple[str, ...], *series: dict[str, Any], fmt: Any = "{:,.0f}".format,
           first: str = "backend") -> None:
    table = RichTable(title=title)
    table.add_column(first)
    for c in columns:
        table.add_column(c, justify="right")
    for name in series[0]:
        table.add_row(name, *(fmt(s[name]) for s in series))
    console.print(table)


if __name__ == "__main__":
    app()
