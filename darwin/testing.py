"""Helpers for testing Darwin pipelines, for Darwin's own tests and for users'.

Examples
--------
>>> import pyarrow as pa
>>> assert_table_equal(pa.table({"x": [1.0]}), pa.table({"x": [1.0 + 1e-12]}))
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from darwin.config import Config


def assert_table_equal(actual: pa.Table, expected: pa.Table, rel_tol: float = 1e-9, sort: bool = False,
                       check_nullability: bool = False) -> None:
    """Equal schemas (names and types), then equal rows; floats compare with ``rel_tol``.

    With ``sort`` the rows are compared as multisets (both sides sorted by every column).
    """
    a_schema = [(f.name, f.type) + ((f.nullable,) if check_nullability else ()) for f in actual.schema]
    e_schema = [(f.name, f.type) + ((f.nullable,) if check_nullability else ()) for f in expected.schema]
    if a_schema != e_schema:
        raise AssertionError(f"schemas differ:\n  actual:   {a_schema}\n  expected: {e_schema}")
    if actual.num_rows != expected.num_rows:
        raise AssertionError(f"row counts differ: actual {actual.num_rows}, expected {expected.num_rows}\n"
                             f"actual head: {actual.slice(0, 5).to_pylist()}\n"
                             f"expected head: {expected.slice(0, 5).to_pylist()}")
    a_rows, e_rows = _rows(actual), _rows(expected)
    if sort:
        a_rows, e_rows = sorted(a_rows, key=_row_key), sorted(e_rows, key=_row_key)
    for i, (a, e) in enumerate(zip(a_rows, e_rows)):
        for name in a:
            if not _same(a[name], e[name], rel_tol):
                raise AssertionError(f"row {i} differs in column {name!r}: actual {a[name]!r}, "
                                     f"expected {e[name]!r}\n  actual row:   {a}\n  expected row: {e}")


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as Python values, a timestamp as its integer count of its unit since the epoch: Python's
    datetime holds only the years 1 to 9999, and Darwin's timestamps go beyond (Flink's reach year 0)."""
    columns = [c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names).to_pylist()


def _same(a: Any, b: Any, rel_tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-12)
    return a == b


def _row_key(row: dict[str, Any]) -> tuple:
    # NaN after every number (it sorted as 0, so rows differing only in NaN against 0.0 tied and kept
    # each side's own order)
    return tuple((v is None, str(type(v)), v != v, v if v is not None and v == v else 0) for v in row.values())


def run_both(query: Any, config: Config | None = None) -> tuple[Any, Any]:
    """(compiled result, reference result) of a query, each a ``RunResult``."""
    config = config or Config()
    return query.execute(config.replace(mode="compiled")), query.execute(config.replace(mode="interpreted"))


def assert_engines_agree(query: Any, config: Config | None = None) -> Any:
    """Run a query compiled and interpreted; results, late rows and late counts must be equal."""
    compiled, reference = run_both(query, config)
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    if reference.late is not None:
        assert_table_equal(compiled.late, reference.late)
    for key in ("late_rows", "null_time_rows", "input_rows", "windows_fired"):
        assert compiled.metrics[key] == reference.metrics[key], (
            f"metric {key}: compiled {compiled.metrics[key]}, reference {reference.metrics[key]}")
    return compiled
