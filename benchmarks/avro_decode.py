"""Avro message values into Arrow and back: Darwin's bulk codec against fastavro row by row, in one run.

N bid-like records (long, int, nullable string, enum, timestamp-millis, double), each its own payload as a
Kafka message value holds it, written once with fastavro. Measured (best of ``--runs``, compilation excluded
by a first warm-up call):

- decode, Darwin: ``darwin.io.kafka.avro.decode`` over the list of payloads -> one record batch;
- decode, fastavro: ``schemaless_reader`` per payload -> dicts -> ``pa.RecordBatch.from_pylist``;
- encode, Darwin: ``darwin.io.kafka.avro.encode`` of the record batch -> one bytes value per row;
- encode, fastavro: ``to_pylist`` of the batch, then ``schemaless_writer`` per row;
- fastavro's own share: decoding to dicts only, encoding dicts already at hand (no Arrow either way);
- decode, JSON for scale: the same rows as JSON text through Darwin's JSON codec (pyarrow.json in bulk).

    python benchmarks/avro_decode.py --records 1000000 --runs 3
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable

import fastavro
import pyarrow as pa
import typer
from rich.console import Console
from rich.table import Table as RichTable

from darwin.errors import SourceError
from darwin.io.kafka import avro, codecs

SCHEMA = {"type": "record", "name": "Bid", "fields": [
    {"name": "auction", "type": "long"}, {"name": "price", "type": "int"},
    {"name": "bidder", "type": ["null", "string"]},
    {"name": "channel", "type": {"type": "enum", "name": "Channel", "symbols": ["web", "app", "api", "partner"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "ratio", "type": "double"}]}
app = typer.Typer(add_completion=False)
console = Console()


def rows(n: int) -> list[dict]:
    return [{"auction": 1_000 + i % 10_007, "price": (i * 7919) % 100_000, "bidder": None if i % 10 == 0 else
             f"bidder-{i % 5_003}", "channel": ("web", "app", "api", "partner")[i % 4], "at": 1_600_000_000_000 + i,
             "ratio": i / 3} for i in range(n)]


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


@app.command()
def main(records: int = 1_000_000, runs: int = 3, json_out: str | None = None) -> None:
    data = rows(records)
    parsed = fastavro.parse_schema(SCHEMA)
    payloads = []
    for r in data:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, r)
        payloads.append(b.getvalue())
    texts = [json.dumps(r).encode() for r in data]
    del data
    plan = avro.layout(SCHEMA, "plain", None, "bench", SourceError)
    where = str

    def ours() -> pa.RecordBatch:
        return avro.decode(plan, payloads, where)

    def theirs() -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([fastavro.schemaless_reader(io.BytesIO(p), parsed, None) for p in payloads])

    def theirs_dicts() -> list[dict]:
        return [fastavro.schemaless_reader(io.BytesIO(p), parsed, None) for p in payloads]

    def as_json() -> pa.RecordBatch:
        return codecs.decode("json", texts, json_schema, "bench")

    batch = avro.decode(plan, payloads[:1000], where)  # compiles the decoder (or loads it from the cache)
    json_schema = plan.schema.set(4, pa.field("at", pa.int64(), False))  # JSON holds the number of ms
    avro.encode(plan, batch, "bench")
    batch = ours()
    assert batch.to_pylist()[:3] == theirs().slice(0, 3).cast(plan.schema).to_pylist()

    def encode_ours() -> list[bytes]:
        return avro.encode(plan, batch, "bench")

    dicts = batch.to_pylist()

    def encode_theirs(given: list[dict] | None = None) -> list[bytes]:
        out = []
        for r in batch.to_pylist() if given is None else given:
            b = io.BytesIO()
            fastavro.schemaless_writer(b, parsed, r)
            out.append(b.getvalue())
        return out

    assert encode_ours() == payloads
    results = {
        "decode, Darwin bulk (Numba)": best(runs, ours),
        "decode, fastavro per row + from_pylist": best(runs, theirs),
        "encode, Darwin bulk (Numba)": best(runs, encode_ours),
        "encode, fastavro per row (after to_pylist)": best(runs, encode_theirs),
        "decode, fastavro per row, dicts only (no Arrow)": best(runs, theirs_dicts),
        "encode, fastavro per row, from dicts at hand": best(runs, lambda: encode_theirs(dicts)),
        "decode, Darwin JSON codec (pyarrow.json), same rows": best(runs, as_json),
    }
    table = RichTable(title=f"{records:,} Avro values, {sum(map(len, payloads)) / records:.1f} bytes each")
    table.add_column("what")
    table.add_column("records/s", justify="right")
    table.add_column("s", justify="right")
    rates = {k: records / v for k, v in results.items()}
    for k, v in results.items():
        table.add_row(k, f"{rates[k]:,.0f}", f"{v:.3f}")
    console.print(table)
    r = list(rates.values())
    console.print(f"decode Darwin / fastavro: {r[0] / r[1]:.1f}x; encode Darwin / fastavro: {r[2] / r[3]:.1f}x")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"records": records, "seconds": results, "records_per_s": rates}, f, indent=2)


if __name__ == "__main__":
    app()
