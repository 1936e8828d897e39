"""Runs a query on the compiled engine, the reference interpreter and Darwin-on-Spark."""

import math
import struct
from typing import Any

import pyarrow as pa

import darwin as dw
from darwin.testing import assert_table_equal


def assert_three_engines_agree(query: dw.Table, batch_size: int = 65_536, exact: bool = False) -> dw.RunResult:
    """Compiled == reference (in order), and Spark's final table == reference's as a multiset (a Spark
    job has no output order); the late rows kept, the late rows counted (kept or dropped) and the input
    row counts too. ``exact``: floats to the bit (the sign of a zero, the last digit), where
    assert_table_equal takes them within a relative 1e-9."""
    config = dw.Config(batch_size=batch_size)
    compiled = query.execute(config)
    reference = query.execute(config.replace(mode="interpreted"))
    spark = query.execute(config.replace(engine="spark"))
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    assert_table_equal(spark.table, reference.table, sort=True, check_nullability=True)
    if exact:
        assert _bits(compiled.table) == _bits(reference.table) == _bits(spark.table)
    if reference.late is not None:
        assert spark.late is not None, "Spark kept no late rows"
        assert_table_equal(spark.late, reference.late, sort=True)
    late = [r.metrics["late_rows"] for r in (compiled, reference, spark)]
    assert late[0] == late[1] == late[2], f"late rows (compiled, interpreted, Spark): {late}"  # dropped or kept
    assert spark.metrics["input_rows"] == reference.metrics["input_rows"]
    return spark


def _bits(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows, sorted, each float as the bits of its double (every NaN alike)."""
    def exact(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else struct.pack(">d", v).hex()
        return v
    columns = [c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in table.columns]
    rows = [tuple(exact(v) for v in r.values()) for r in pa.table(columns, names=table.column_names).to_pylist()]
    return sorted(rows, key=lambda r: tuple((v is None, repr(v)) for v in r))
