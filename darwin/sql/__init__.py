"""Flink SQL on Darwin: ``sql(text, tables=...)`` returns a Table, ``sql_job(script)`` runs a script
of ``CREATE TABLE ... WITH (...)``, ``CREATE VIEW`` and ``INSERT INTO`` statements.

Examples
--------
>>> import pyarrow as pa, darwin as dw
>>> bids = dw.from_arrow(pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, 2]}), time="ts")
>>> dw.sql("SELECT k * 10 AS k10 FROM bids WHERE k > 1", tables={"bids": bids}).collect()["k10"].to_pylist()
[20]
"""

from darwin.sql.connectors import Connector, RenamedSource, TableSpec, register_connector
from darwin.sql.dialect import Flink
from darwin.sql.script import Insert, Script, parse, plan_script, sql, sql_job

__all__ = ["Connector", "Flink", "Insert", "RenamedSource", "Script", "TableSpec", "parse", "plan_script",
           "register_connector", "sql", "sql_job"]
