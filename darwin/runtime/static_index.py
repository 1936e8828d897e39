"""A lookup join's static side: the table loaded once and indexed by key for generated probes.

The table's rows are regrouped so that each key's rows are contiguous (keys in order of first
appearance, rows in table order within a key); an open-addressing table of distinct keys holds
each key's first row and row count (0: an empty slot). Generated code hashes a key exactly as
``darwin.codegen.join_index.hash_keys`` does and loops over ``range(start, start + count)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from darwin.codegen.join_index import hash_keys
from darwin.config import Config
from darwin.graph import operators as op
from darwin.runtime.encoding import StringPool, encode


class StaticIndex:
    def __init__(self, spec: op.LookupTableSpec, config: Config, pool: StringPool) -> None:
        from darwin.runtime.executor import run  # the table is a query of its own, run to its end

        # bounded and rebuilt by every run: its state is the job's own in memory, never the job's state_path
        table = run(spec.plan, config.replace(state="memory", state_path=None, checkpoint_dir=None,
                                              checkpoint_interval=None)).table
        schema = spec.plan.schema
        n = table.num_rows
        batch = table.combine_chunks().to_batches()[0] if n else pa.RecordBatch.from_pylist([], schema.to_arrow())
        encoded = encode(batch, schema, pool, "lookup table")
        columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for f in schema.fields:
            c = encoded.columns[f.name]
            columns[f.name] = (np.asarray(c.values), c.valid if c.valid is not None else np.ones(n, dtype=np.bool_))
        keys = np.stack([columns[k][0].astype(np.int64) for k in spec.keys], axis=1) if n else \
            np.zeros((0, len(spec.keys)), dtype=np.int64)
        usable = np.logical_and.reduce([columns[k][1] for k in spec.keys]) if n else np.zeros(0, dtype=np.bool_)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in np.flatnonzero(usable):
            groups.setdefault(tuple(keys[i].tolist()), []).append(int(i))
        order = np.array([i for rows in groups.values() for i in rows], dtype=np.int64)
        self.arrays: dict[str, np.ndarray] = {}
        for name in spec.columns:
            values, valid = columns[name]
            self.arrays[f"column:{name}"] = np.ascontiguousarray(values[order])
            self.arrays[f"valid:{name}"] = np.ascontiguousarray(valid[order])
        size = 16
        while size < 2 * len(groups):
            size *= 2
        slot_keys = np.zeros((size, len(spec.keys)), dtype=np.int64)
        start = np.zeros(size, dtype=np.int64)
        count = np.zeros(size, dtype=np.int64)
        distinct = np.array(list(groups), dtype=np.int64).reshape(len(groups), len(spec.keys))
        hashes = hash_keys(distinct)
        first = 0
        for g, rows in enumerate(groups.values()):
            s = int(hashes[g] & np.uint64(size - 1))
            while count[s] != 0:
                s = (s + 1) & (size - 1)
            slot_keys[s] = distinct[g]
            start[s], count[s] = first, len(rows)
            first += len(rows)
        for j in range(len(spec.keys)):
            self.arrays[f"slot_key{j}"] = np.ascontiguousarray(slot_keys[:, j])
        self.arrays["slot_start"], self.arrays["slot_count"] = start, count
        self.max_rows_per_key = max((len(r) for r in groups.values()), default=0)
        self.rows = n

    def array(self, part: str) -> Any:
        return self.arrays[part]
