"""An aggregation whose state is several times the memory the process may use.

    python bounded_memory_job.py BACKEND STATE_DIR LIMIT_MB [window|group]

Caps the process's data segment (RLIMIT_DATA: heap and private mappings; shared file
mappings are outside it, RLIMIT_AS would count them) after start-up, then runs

- ``window`` (the default): 500,000 rows through sliding windows (1 h every 1 min) over
  250,000 keys: 30M window entries open at once. Prints a JSON line: rows, the sum of totals,
  the state files' size, or the error.
- ``group``: an updating aggregation (no window) of 2 x 12M rows over 12M keys, each key's
  second row updating its group. Prints a JSON line: the changes by kind, the sum of the totals
  the changelog folds to, the largest size the state files reached, or the error.
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


GROUPS = 12_000_000
GROUP_SCHEMA = pa.schema([("key", pa.int64()), ("v", pa.int64())])


def group_batches(rows: int = 2 * GROUPS, groups: int = GROUPS):
    for lo in range(0, rows, BATCH):
        i = np.arange(lo, min(lo + BATCH, rows), dtype=np.int64)
        yield pa.record_batch([pa.array(i % groups), pa.array(i % 7)], schema=GROUP_SCHEMA)


def group_query(factory) -> dw.Table:
    return (dw.from_batches(GROUP_SCHEMA, factory, non_null=GROUP_SCHEMA.names)
            .group_by("key").agg(n=dw.count(), total=dw.sum("v"), top=dw.max("v")))


def state_size(state_dir: Path) -> int:
    return sum(f.stat().st_size for f in state_dir.rglob("*") if f.is_file()) if state_dir.exists() else 0


def run_group(config: dw.Config, state_dir: Path) -> dict:
    """The updating aggregation; scratch files go when the run ends, so their size is taken as it runs."""
    kinds: dict[str, int] = {}
    total = size = 0
    for b in group_query(group_batches).iter_batches(config):
        ops = b.column("op").to_numpy(zero_copy_only=False)
        signs = np.where(np.isin(ops, ["+I", "+U"]), 1, -1)
        total += int((signs * b.column("total").to_numpy()).sum())
        for op, n in zip(*np.unique(ops, return_counts=True)):
            kinds[str(op)] = kinds.get(str(op), 0) + int(n)
        size = max(size, state_size(state_dir))
    return {"changes": kinds, "total": total, "state_bytes": size}


def main() -> None:
    backend, state_dir, limit_mb = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    which = sys.argv[4] if len(sys.argv) > 4 else "window"
    config = dw.Config(state=backend, state_path=str(state_dir) if backend != "memory" else None)
    if which == "group":
        group_query(lambda: group_batches(1000, 100)).collect(config)  # compile before the cap
    else:
        query(lambda: batches(1000)).collect(config)
    limit = limit_mb << 20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    if which == "group":
        try:
            print(json.dumps(run_group(config, state_dir)))
        except MemoryError as e:
            print(json.dumps({"error": type(e).__name__}))
        return
    rows = total = 0
    try:
        for b in query(batches).iter_batches(config):
            rows += b.num_rows
            total += pc.sum(b.column("total")).as_py()
    except MemoryError as e:
        print(json.dumps({"error": type(e).__name__}))
        return
    print(json.dumps({"rows": rows, "total": total, "state_bytes": state_size(state_dir), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
