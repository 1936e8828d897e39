"""Darwin: a query-compiling, scale-in stream processing engine.

    import darwin as dw
    from darwin import col
    q = dw.read_parquet("bids.parquet", time="ts").window(dw.Tumble("10s", on="ts")) \\
          .group_by("auction").agg(n=dw.count())
    q.collect()
"""

from typing import TYPE_CHECKING

from darwin import errors
from darwin.api import (
                        Barrier,
                        BarrierWindowedTable,
                        GroupedTable,
                        RunResult,
                        SinkQuery,
                        Table,
                        WindowedTable,
                        asc,
                        desc,
                        from_arrow,
                        from_batches,
                        from_source,
                        null_safe,
                        read_csv,
                        read_ipc,
                        read_kafka,
                        read_parquet,
)
from darwin.config import Config, HardwareInfo
from darwin.expr import Expr, avg, col, concat, concat_ws, count, count_distinct, lit, max, mean, min, sum, when
from darwin.io import sinks
from darwin.plan.window import Session, Slide, Tumble, Window
from darwin.spark.engine import register as _register_spark
from darwin.sql import sql_job
from darwin.types import DType

if TYPE_CHECKING:
    from darwin.sql import sql
else:
    import darwin.sql as sql  # the package, called as its sql(): dotted imports of darwin.sql.* still find it

_register_spark()  # Config(engine="spark"); pyspark is imported only when a query runs there

__all__ = [
    "Barrier", "BarrierWindowedTable",
    "Config", "DType", "Expr", "GroupedTable", "HardwareInfo", "RunResult", "Session", "SinkQuery", "Slide", "Table",
    "Tumble", "Window", "WindowedTable", "asc", "avg", "col", "concat", "concat_ws", "count", "count_distinct", "desc",
    "errors", "from_arrow",
    "from_batches", "lit", "max", "mean", "min", "from_source", "null_safe", "read_csv", "read_ipc", "read_kafka",
    "read_parquet",
    "sinks", "sql", "sql_job", "sum", "when",
]
__version__ = "0.1.0"
