"""A windowed aggregation whose state is several times the memory the process may use.

    python bounded_memory_job.py BACKEND STATE_DIR LIMIT_MB

Caps the process's data segment (RLIMIT_DATA: heap and private mappings; shared file
mappings are outside it, RLIMIT_AS would count them) after start-up, then runs 500,000
rows through sliding windows (1 h every 1 min) over 250,000 keys: 30M window entries
open at once. Prints a JSON line: rows, the sum of totals, the state files' size, or
the error.
"""

import json
import os
import resource
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import darwin as dw

KEYS, ROWS, SPAN_MS, BATCH = 250_000, 500_000, 2 * 3_600_000, 1 << 16
SCHEMA = pa.schema([("ts", pa.timestamp("ms")), ("key", pa.int64()), ("v", pa.int64())])


def batches(rows: int = ROWS):
    for lo in range(0, rows, BATCH):
        i = np.arange(lo, min(lo + BATCH, rows), dtype=np.int64)
        yield pa.record_batch([pa.array(i * SPAN_MS // ROWS, pa.timestamp("ms")), pa.array(i % KEYS),
                               pa.array(i % 10)], schema=SCHEMA)


def query(factory) -> dw.Table:
    return (dw.from_batches(SCHEMA, factory, time="ts", non_null=SCHEMA.names)
            .window(dw.Slide("1h", every="1min", on="ts")).group_by("key").agg(total=dw.sum("v")))


def main() -> None:
    backend, state_dir, limit_mb = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    config = dw.Config(state=backend, state_path=str(state_dir) if backend != "memory" else None)
    query(lambda: batches(1000)).collect(config)  # compile before the cap
    limit = limit_mb << 20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    rows = total = 0
    try:
        for b in query(batches).iter_batches(config):
            rows += b.num_rows
            total += pc.sum(b.column("total")).as_py()
    except MemoryError as e:
        print(json.dumps({"error": type(e).__name__}))
        return
    size = sum(f.stat().st_size for f in state_dir.rglob("*") if f.is_file()) if state_dir.exists() else 0
    print(json.dumps({"rows": rows, "total": total, "state_bytes": size, "pid": os.getpid()}))


if __name__ == "__main__":
    main()
