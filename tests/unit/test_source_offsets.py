"""Resuming a source at a row offset (what a checkpoint records) gives exactly the rows after it."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from darwin.io.source import read_from
from darwin.io.sources import ArrowSource, BatchSource, ParquetSource

TABLE = pa.table({"x": list(range(50)), "y": [f"s{i}" for i in range(50)]})


def sources(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(TABLE, path, row_group_size=7)
    return {"parquet": ParquetSource(path), "arrow": ArrowSource(TABLE),
            "batches": BatchSource(TABLE.schema, lambda: TABLE.to_batches(max_chunksize=11))}


@pytest.mark.parametrize("kind", ["parquet", "arrow", "batches"])
@pytest.mark.parametrize("batch_size", [1, 5, 64])
def test_every_offset_resumes_exactly(tmp_path, kind, batch_size):
    source = sources(tmp_path)[kind]
    for offset in range(0, 51):
        batches = list(read_from(source, ("x", "y"), batch_size, offset))
        got = pa.Table.from_batches(batches, schema=TABLE.schema) if batches else TABLE.slice(0, 0)
        assert got.column("x").to_pylist() == list(range(offset, 50)), (kind, offset)
        assert all(b.num_rows <= batch_size for b in batches)
