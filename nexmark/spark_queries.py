"""The Nexmark queries of ``nexmark/queries.py`` written with PySpark DataFrames.

They read the Parquet files ``nexmark generate`` writes, and must give the same
rows as Darwin (compared as sorted tables).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from nexmark.queries import CHANNEL_ID, CHANNELS, EURO

Streams = dict[str, DataFrame]


def _null_if_empty(c: Column) -> Column:
    """Spark's regexp_extract gives '' where Darwin (and Flink) give NULL."""
    return F.when(c == "", F.lit(None)).otherwise(c)


def q0(s: Streams) -> DataFrame:
    return s["bid"].select("auction", "bidder", "price", "channel", "url", "date_time", "extra")


def q1(s: Streams) -> DataFrame:
    return s["bid"].select("auction", "bidder", (F.col("price") * EURO).alias("price"), "date_time", "extra")


def q2(s: Streams) -> DataFrame:
    return s["bid"].where(F.pmod(F.col("auction"), F.lit(123)) == 0).select("auction", "price")


def _windowed(df: DataFrame, size: str, keys: list[str], *aggs: Column) -> DataFrame:
    grouped = df.groupBy(F.window("date_time", size).alias("w"), *keys).agg(*aggs)
    return grouped.select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), *keys,
                          *[c for c in grouped.columns if c not in ("w", *keys)])


def q12(s: Streams) -> DataFrame:
    return _windowed(s["bid"], "10 seconds", ["bidder"], F.count(F.lit(1)).alias("bid_count"))


def q14(s: Streams) -> DataFrame:
    hour = F.hour("date_time")
    euro = F.col("price") * EURO
    kind = (F.when(hour.between(8, 18), "dayTime").when((hour <= 6) | (hour >= 20), "nightTime")
            .otherwise("otherTime"))
    count_c = F.length("extra") - F.length(F.regexp_replace("extra", "c", ""))
    return (s["bid"].where((euro > 1_000_000) & (euro < 50_000_000))
            .select("auction", "bidder", euro.alias("price"), kind.alias("bid_time_type"), "date_time", "extra",
                    count_c.cast("long").alias("c_counts")))


def q21(s: Streams) -> DataFrame:
    channel = F.lower("channel")
    extracted = _null_if_empty(F.regexp_extract("url", CHANNEL_ID, 2))
    channel_id = (F.when(channel == "apple", "0").when(channel == "google", "1")
                  .when(channel == "facebook", "2").when(channel == "baidu", "3").otherwise(extracted))
    return (s["bid"].where(extracted.isNotNull() | channel.isin(*CHANNELS))
            .select("auction", "bidder", "price", "channel", channel_id.alias("channel_id")))


def q22(s: Streams) -> DataFrame:
    parts = F.split("url", "/")
    return s["bid"].select("auction", "bidder", "price", "channel",
                           *[F.try_element_at(parts, F.lit(i + 1)).alias(f"dir{i - 2}") for i in (3, 4, 5)])


def agg(s: Streams) -> DataFrame:
    return _windowed(s["bid"], "60 seconds", ["auction"], F.sum("price").alias("total"))


def ysb_query(s: Streams) -> DataFrame:
    views = s["ads"].where(F.col("event_type") == "view").join(F.broadcast(s["campaigns"]), "ad_id")
    return _windowed(views.withColumnRenamed("event_time", "date_time"), "10 seconds", ["campaign_id"],
                     F.count(F.lit(1)).alias("views"))


QUERIES: dict[str, Callable[[Streams], DataFrame]] = {
    "q0": q0, "q1": q1, "q2": q2, "q12": q12, "q14": q14, "q21": q21, "q22": q22, "agg": agg, "ysb": ysb_query,
}


def read_streams(spark: SparkSession, paths: dict[str, str]) -> Streams:
    return {name: spark.read.parquet(str(path)) for name, path in paths.items()}
