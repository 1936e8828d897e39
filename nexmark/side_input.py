"""The bounded side input of Nexmark q13.

The reference (nexmark-flink ``SideInputGenerator``, run by ``side_input_gen.sh``
with ``--num 10000``) writes the lines ``i,i`` for i in [0, 10000): a key and its
decimal string, so any id can be looked up as ``id % 10000``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 10_000
SCHEMA = pa.schema([pa.field("key", pa.int64(), nullable=False), pa.field("value", pa.string(), nullable=False)])


def side_input_table(rows: int = ROWS) -> pa.Table:
    """``key = i, value = str(i)`` for i in [0, rows)."""
    return pa.table([pa.array(range(rows), pa.int64()), pa.array([str(i) for i in range(rows)], pa.string())],
                    schema=SCHEMA)


def write_side_input(path: str | os.PathLike[str], rows: int = ROWS) -> Path:
    """The side input as Parquet at ``path``, written to a temporary name and renamed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        pq.write_table(side_input_table(rows), tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
