"""Darwin-on-Spark: a plan run as a Spark batch job, its answer handed back as Arrow batches.

``darwin.runtime.job`` runs every ``collect``, ``execute``, ``iter_batches`` and ``sink(...).run()``
through an engine registry; ``register()`` adds this one as ``engine="spark"``, and pyspark is
imported only when a query runs on it.

Unbounded (or paced) sources run as a Structured Streaming query instead (``darwin.spark.streaming``).
Bounded sources become one batch job whose result is the final table of the query (an updating
result's rows arrive as inserts of the table its changes end in). The settings of Darwin's own
runtime mean nothing on Spark, and are refused rather than ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from darwin.config import Config
from darwin.errors import CastError, ConfigError, SourceError
from darwin.plan import nodes as pn
from darwin.runtime.output import Output
from darwin.runtime.progress import Metrics
from darwin.types import DType, Schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


def check(config: Config, streaming: bool = False) -> None:
    """Refuse what the Spark engine cannot honour, naming the setting (a streaming run keeps its
    checkpoints under ``checkpoint_dir``)."""
    problems = []
    if config.mode != "compiled":
        problems.append(f"mode={config.mode!r} chooses how Darwin runs a query; drop it with engine='spark'")
    if config.checkpoint_dir and not streaming:
        problems.append("checkpoint_dir: bounded sources run as one Spark batch job, which has no checkpoints to "
                        "resume from; drop checkpoint_dir (the output is committed once, when the job ends)")
    if config.state != "memory":
        problems.append(f"state={config.state!r}: Spark keeps its own state; drop state and state_path")
    if config.workers != 1:
        problems.append(f"parallelism={config.workers}: Spark's parallelism is its cluster's; set it with "
                        "spark_conf={'spark.default.parallelism': ...} and drop parallelism")
    if config.idle_timeout is not None and not streaming:
        problems.append("idle_timeout: a batch job reads every source to its end, so no source is ever idle")
    if problems:
        raise ConfigError("engine='spark' cannot honour " + "; ".join(problems))


def run(plan: pn.PlanNode, config: Config, metrics: Metrics) -> Iterator[Output]:
    """The plan's result (and its late rows, if a window keeps them) computed by Spark; the late rows the
    operators dropped are counted in the same job."""
    from darwin.spark.session import spark_session
    from darwin.spark.translate import translate

    check(config)
    spark = spark_session("darwin", config.spark_master, config.spark_conf)
    translation = translate(spark, plan, config)
    metrics.add("input_rows", _input_rows(plan, translation.rows))
    frame = translation.frame
    result = frame.df.select(*frame.visible())  # by quoted name: a name may hold a '.'
    table = _darwin_table(arrow(result), plan.schema)
    metrics.add("late_rows", translation.late_rows())
    if pn.updating(plan):
        table = table.append_column(pn.CHANGE_KIND, pa.array([pn.ChangeKind.INSERT] * table.num_rows, pa.int64()))
    for batch in table.to_batches():
        if batch.num_rows:
            yield Output("result", batch)
    late_schema = pn.late_output_schema(plan)
    if translation.late is not None and late_schema is not None:
        rows = _darwin_table(arrow(translation.late), late_schema)
        for batch in rows.to_batches():
            if batch.num_rows:
                yield Output("late", batch)


def arrow(df: DataFrame) -> pa.Table:
    """The DataFrame computed; a CAST that met text that does not parse, or a window a time beyond the
    supported ones, fails it through ``raise_error``, which comes back as the ``CastError`` or
    ``SourceError`` the other engines raise."""
    from darwin.spark.casts import BEYOND_FAILURE, FAILURE

    try:
        return df.toArrow()
    except Exception as e:  # Spark's own exception types differ between its versions and call paths
        for marker, error in ((FAILURE, CastError), (BEYOND_FAILURE, SourceError)):
            failed = marker.search(str(e))
            if failed is not None:
                raise error(failed.group(1)) from None
        raise


def dataframe(plan: pn.PlanNode, config: Config) -> DataFrame:
    """The plan's final table as a Spark DataFrame (timestamps as int64 ms), not yet computed: for
    writing it with Spark's own writers, e.g. the benchmarks' ``noop``."""
    from darwin.spark.session import spark_session
    from darwin.spark.translate import translate

    check(config)
    frame = translate(spark_session("darwin", config.spark_master, config.spark_conf), plan, config).frame
    return frame.df.select(*frame.visible())


def _input_rows(plan: pn.PlanNode, rows: dict[int, int]) -> int:
    """Rows the streams held (a lookup join's table is loaded apart, as in Darwin)."""
    apart = {id(s) for n in pn.walk(plan) if isinstance(n, pn.LookupJoin) for s in pn.scans(n.table)}
    return sum(n for i, n in rows.items() if i not in apart)


def _darwin_table(table: pa.Table, schema: Schema) -> pa.Table:
    """Spark's Arrow result in Darwin's schema: int64 milliseconds back to timestamps, nullability."""
    columns = []
    for f in schema.fields:
        c = table.column(f.name)
        if f.dtype is DType.TIMESTAMP:
            c = c.cast(pa.int64()).cast(pa.timestamp("ms"))
        else:
            c = c.cast(f.dtype.arrow)
        columns.append(c)
    return pa.Table.from_arrays(columns, schema=schema.to_arrow())


def register() -> None:
    """Make ``Config(engine="spark")`` run queries here: bounded ones as batch jobs, unbounded ones with
    Structured Streaming (``darwin.spark.streaming``)."""
    from darwin.runtime.job import register_engine, register_streaming
    from darwin.spark import streaming

    register_engine("spark", run)
    register_streaming("spark", streaming.streams, streaming.run)
