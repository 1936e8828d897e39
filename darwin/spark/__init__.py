"""Spark: the comparison baseline and, later, the scale-out engine (DESIGN §7)."""

from darwin.spark.session import spark_session, stop_spark, to_arrow

__all__ = ["spark_session", "stop_spark", "to_arrow"]
