"""One shared SparkSession for benchmarks, the Nexmark CLI and tests."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Spark's optimizer takes out a join or a union whose input it finds empty, and a filter it folds to
# FALSE or NULL, with everything under them: the late rows the translation counts there
# (``DataFrame.observe``) would go uncounted
KEEP_OBSERVED_INPUTS = {
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.PropagateEmptyRelation,"
                                         "org.apache.spark.sql.catalyst.optimizer.PruneFilters",
    "spark.sql.adaptive.optimizer.excludedRules":
        "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation",
}

_SESSION: SparkSession | None = None
_SETTINGS: tuple[str, tuple[tuple[str, str], ...]] | None = None  # the master and conf _SESSION was built with


def spark_session(app_name: str = "darwin", master: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """The process's SparkSession: local[*] unless ``master`` says otherwise, quiet, UTC, ANSI off
    (x/0 is NULL, as in Darwin), column names case-sensitive (as Darwin's: ``a`` and ``A`` are two
    columns), inputs found empty and filters found FALSE kept in the plan (``KEEP_OBSERVED_INPUTS``),
    with ``conf`` on top. Asking for another master or conf stops the session and starts one with them
    (a process has one SparkContext)."""
    global _SESSION, _SETTINGS
    if _SESSION is not None and master is None and not conf:
        return _SESSION  # no wish: whatever session the process has
    master = master or os.environ.get("DARWIN_SPARK_MASTER", "local[*]")
    settings = (master, tuple(sorted((conf or {}).items())))
    if _SESSION is not None:
        if settings == _SETTINGS:
            return _SESSION
        stop_spark()
    from pyspark.sql import SparkSession

    logging.getLogger("py4j").setLevel(logging.ERROR)
    cores = os.cpu_count() or 2
    builder = (SparkSession.builder.master(master)
               .appName(app_name)
               .config("spark.driver.memory", os.environ.get("DARWIN_SPARK_MEMORY", "8g"))
               .config("spark.driver.maxResultSize", "0")  # comparisons collect whole results
               .config("spark.sql.shuffle.partitions", str(2 * cores))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.ansi.enabled", "false")
               # Darwin's names are case-sensitive; Spark's resolution is not by default, so a column
               # `a` beside `A` was ambiguous, and `withColumn("window_end")` replaced a column WINDOW_END
               .config("spark.sql.caseSensitive", "true")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=error")
               .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(p for p in sys.path if p)))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    for key, rule in KEEP_OBSERVED_INPUTS.items():  # beside the rules ``conf`` excludes
        builder = builder.config(key, ",".join(r for r in ((conf or {}).get(key), rule) if r))
    _SESSION = builder.getOrCreate()
    _SETTINGS = settings
    _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


def stop_spark() -> None:
    global _SESSION, _SETTINGS
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
        _SETTINGS = None


def to_arrow(df: DataFrame) -> pa.Table:
    """Collect a DataFrame as Arrow, timestamps as naive UTC timestamp[ms] like Darwin's."""
    table = df.toArrow()
    columns = []
    for c, f in zip(table.columns, table.schema):
        if pa.types.is_timestamp(f.type):
            c = c.cast(pa.timestamp(f.type.unit)).cast(pa.timestamp("ms"))
        columns.append(c)
    return pa.table(columns, names=table.column_names)
