"""Spark: the hand-written twins' session, and Darwin-on-Spark (``Config(engine="spark")``, DESIGN §7)."""

from darwin.spark.session import spark_session, stop_spark, to_arrow

__all__ = ["spark_session", "stop_spark", "to_arrow"]
