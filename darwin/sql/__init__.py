"""Flink SQL on Darwin: ``sql(text, tables=...)`` returns a Table, ``sql_job(script)`` runs a script
of ``CREATE TABLE ... WITH (...)``, ``CREATE VIEW`` and ``INSERT INTO`` statements.

Examples
--------
>>> import pyarrow as pa, darwin as dw
>>> bids = dw.from_arrow(pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, 2]}), time="ts")
>>> dw.sql("SELECT k * 10 AS k10 FROM bids WHERE k > 1", tables={"bids": bids}).collect()["k10"].to_pylist()
[20]
"""

import sys
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING

from darwin.sql.connectors import Connector, RenamedSource, TableSpec, register_connector
from darwin.sql.dialect import Flink
from darwin.sql.script import Insert, Script, parse, plan_script, sql, sql_job

if TYPE_CHECKING:
    from darwin.api import Table


class _CallablePackage(types.ModuleType):
    """``darwin.sql``, which ``dw.sql(...)`` calls as its ``sql`` function. darwin binds ``dw.sql`` to this
    package, not to the function: a function there hid the package from dotted imports
    (``import darwin.sql.connectors as c`` looked for ``connectors`` on the function)."""

    def __call__(self, text: str, tables: Mapping[str, "Table"] | None = None) -> "Table":
        return sql(text, tables)

    __call__.__doc__ = sql.__doc__


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["Connector", "Flink", "Insert", "RenamedSource", "Script", "TableSpec", "parse", "plan_script",
           "register_connector", "sql", "sql_job"]
