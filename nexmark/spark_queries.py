"""The Nexmark queries of ``nexmark/queries.py`` written with PySpark DataFrames.

They read the Parquet files ``nexmark generate`` writes, and must give the same
rows as Darwin (compared as sorted tables). The join queries (q3, q7, q8, q13,
q20, q23) follow nexmark-flink's SQL evaluated as a batch over all the events.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from nexmark.queries import CHANNEL_ID, CHANNELS, EURO, RANKS

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


def q3(s: Streams) -> DataFrame:
    """Local item suggestion: sellers in OR, ID or CA of category-10 auctions."""
    a = s["auction"].where(F.col("category") == 10).alias("A")
    p = s["person"].where(F.col("state").isin("OR", "ID", "CA")).alias("P")
    return a.join(p, F.col("A.seller") == F.col("P.id")).select("P.name", "P.city", "P.state", "A.id")


def _bids_in_lifetime(s: Streams) -> DataFrame:
    """Auctions (A) with each bid (B) made while they were open: q4, q6 and q9's core."""
    a, b = s["auction"].alias("A"), s["bid"].alias("B")
    return a.join(b, (F.col("A.id") == F.col("B.auction"))
                  & F.col("B.date_time").between(F.col("A.date_time"), F.col("A.expires")))


def q4(s: Streams) -> DataFrame:
    winning = _bids_in_lifetime(s).groupBy("A.id", "A.category").agg(F.max("B.price").alias("final"))
    return winning.groupBy("category").agg(F.avg("final").alias("avg_final"))


def q5(s: Streams) -> DataFrame:
    counts = (s["bid"].groupBy(F.window("date_time", "10 seconds", "2 seconds").alias("w"), "auction")
              .agg(F.count("*").alias("num")).select("auction", "num", F.col("w.start").alias("starttime"),
                                                     F.col("w.end").alias("endtime")))
    maxima = counts.groupBy("starttime", "endtime").agg(F.max("num").alias("maxn")).alias("M")
    c = counts.alias("C")
    on = (F.col("C.starttime") == F.col("M.starttime")) & (F.col("C.endtime") == F.col("M.endtime")) \
        & (F.col("C.num") >= F.col("M.maxn"))
    return c.join(maxima, on).select("C.auction", "C.num")


def q10(s: Streams) -> DataFrame:
    return s["bid"].select("auction", "bidder", "price", "date_time", "extra", _day("date_time").alias("dt"),
                           F.date_format("date_time", "HH:mm").alias("hm"))


def q11(s: Streams) -> DataFrame:
    sessions = s["bid"].groupBy("bidder", F.session_window("date_time", "10 seconds").alias("w")).agg(
        F.count("*").alias("bid_count"))
    return sessions.select("bidder", "bid_count", F.col("w.start").alias("starttime"), F.col("w.end").alias("endtime"))


def _first(df: DataFrame, partition: list[str], order: list[Column], n: int = 1, rank: str = "rank") -> DataFrame:
    """Rows with ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) <= n, the number as ``rank``."""
    return df.withColumn(rank, F.row_number().over(Window.partitionBy(*partition).orderBy(*order))) \
        .where(F.col(rank) <= n)


def q9(s: Streams) -> DataFrame:
    joined = _bids_in_lifetime(s).select(
        "A.id", "A.item_name", "A.description", "A.initial_bid", "A.reserve", "A.date_time", "A.expires",
        "A.seller", "A.category", "A.extra", "B.auction", "B.bidder", "B.price",
        F.col("B.date_time").alias("bid_date_time"), F.col("B.extra").alias("bid_extra"))
    return _first(joined, ["id"], [F.col("price").desc(), F.col("bid_date_time").asc()]).drop("rank")


def q6(s: Streams) -> DataFrame:
    winners = _first(_bids_in_lifetime(s).select("A.id", "A.seller", "B.price", "B.date_time"), ["id", "seller"],
                     [F.col("price").desc(), F.col("date_time").asc()])
    last = Window.partitionBy("seller").orderBy("date_time", "id").rowsBetween(-10, Window.currentRow)
    return winners.select("seller", F.avg("price").over(last).alias("avg_price"))


def q18(s: Streams) -> DataFrame:
    return _first(s["bid"], ["bidder", "auction"], [F.col("date_time").desc()]).select(
        "auction", "bidder", "price", "channel", "url", "date_time", "extra")


def q19(s: Streams) -> DataFrame:
    return _first(s["bid"], ["auction"], [F.col("price").desc()], 10, "rank_number")


def q7(s: Streams) -> DataFrame:
    """Highest bid: bids whose price is the maximum of a 10 s tumbling window of all bids, and whose time is
    in [window_end - 10 s, window_end] -- inclusive at both ends, as BETWEEN is, so a bid at exactly a
    window's end also matches that window's maximum."""
    bid = s["bid"]
    top = (bid.groupBy(F.window("date_time", "10 seconds").alias("w")).agg(F.max("price").alias("maxprice"))
           .select("maxprice", F.col("w.end").alias("window_end")).alias("B1"))
    end = F.col("B1.window_end")
    on = (F.col("B.price") == F.col("B1.maxprice")) & F.col("B.date_time").between(
        end - F.expr("INTERVAL 10 SECONDS"), end)
    return bid.alias("B").join(F.broadcast(top), on).select("B.auction", "B.price", "B.bidder", "B.date_time",
                                                            "B.extra")


def _distinct_per_window(df: DataFrame, keys: list[str]) -> DataFrame:
    """The (keys, window) groups of 10 s tumbling windows on date_time, as keys, starttime, endtime."""
    return (df.groupBy(*keys, F.window("date_time", "10 seconds").alias("w")).count()
            .select(*keys, F.col("w.start").alias("starttime"), F.col("w.end").alias("endtime")))


def q8(s: Streams) -> DataFrame:
    """New users: people who entered and created an auction in the same 10 s tumbling window."""
    p = _distinct_per_window(s["person"], ["id", "name"]).alias("P")
    a = _distinct_per_window(s["auction"], ["seller"]).alias("A")
    on = ((F.col("P.id") == F.col("A.seller")) & (F.col("P.starttime") == F.col("A.starttime"))
          & (F.col("P.endtime") == F.col("A.endtime")))
    return p.join(a, on).select("P.id", "P.name", "P.starttime")


def q13(s: Streams) -> DataFrame:
    """Bounded side input join: each bid with the side input's value for auction % 10000 (Flink's MOD, like
    Spark's %, has the dividend's sign)."""
    b, side = s["bid"].alias("B"), F.broadcast(s["side_input"]).alias("S")
    return b.join(side, (F.col("B.auction") % 10_000) == F.col("S.key")).select(
        "B.auction", "B.bidder", "B.price", "B.date_time", "S.value")


def _levels(price: Column) -> dict[str, Column | None]:
    """The price levels of Flink's q15-q17 FILTER clauses."""
    return dict(zip(("total", *RANKS), (None, price < 10_000, (price >= 10_000) & (price < 1_000_000),
                                        price >= 1_000_000)))


def _bid_statistics(distinct: tuple[str, ...]) -> list[Column]:
    """``count(*) FILTER (WHERE p)`` and ``count(DISTINCT x) FILTER (WHERE p)`` per level: Spark has no
    FILTER clause, so a CASE WHEN yields NULL (which no count counts) where the filter is false."""
    def only(f: Column | None, value: Column) -> Column:
        return value if f is None else F.when(f, value)
    levels = _levels(F.col("price"))
    out = [F.count(only(f, F.lit(1))).alias(f"{level}_bids") for level, f in levels.items()]
    for c in distinct:
        out += [F.countDistinct(only(f, F.col(c))).alias(f"{level}_{c}s") for level, f in levels.items()]
    return out


def _day(c: str) -> Column:
    return F.date_format(c, "yyyy-MM-dd")


def q15(s: Streams) -> DataFrame:
    return s["bid"].groupBy(_day("date_time").alias("day")).agg(*_bid_statistics(("bidder", "auction")))


def q16(s: Streams) -> DataFrame:
    """Flink's query as written: the latest minute is the maximum of the formatted times."""
    return s["bid"].groupBy("channel", _day("date_time").alias("day")).agg(
        F.max(F.date_format("date_time", "HH:mm")).alias("minute"), *_bid_statistics(("bidder", "auction")))


def q17(s: Streams) -> DataFrame:
    """avg_price is BIGINT as in Flink: the average truncated."""
    return s["bid"].groupBy("auction", _day("date_time").alias("day")).agg(
        *_bid_statistics(()), F.min("price").alias("min_price"), F.max("price").alias("max_price"),
        F.avg("price").cast("long").alias("avg_price"), F.sum("price").alias("sum_price"))


def q20(s: Streams) -> DataFrame:
    """Bids expanded with their auction, for category-10 auctions."""
    b, a = s["bid"].alias("B"), s["auction"].where(F.col("category") == 10).alias("A")
    return b.join(a, F.col("B.auction") == F.col("A.id")).select(
        "B.auction", "B.bidder", "B.price", "B.channel", "B.url", F.col("B.date_time").alias("bid_date_time"),
        F.col("B.extra").alias("bid_extra"), "A.item_name", "A.description", "A.initial_bid", "A.reserve",
        F.col("A.date_time").alias("auction_date_time"), "A.expires", "A.seller", "A.category",
        F.col("A.extra").alias("auction_extra"))


def q23(s: Streams) -> DataFrame:
    """Bids of people who also sell: each bid with its bidder and with every auction the bidder sells."""
    b, p, a = s["bid"].alias("B"), s["person"].alias("P"), s["auction"].alias("A")
    return (b.join(p, F.col("P.id") == F.col("B.bidder")).join(a, F.col("A.seller") == F.col("B.bidder"))
            .select("B.bidder", "B.price", "B.channel", "B.url", F.col("B.extra").alias("bid_extra"),
                    F.col("P.id").alias("person_id"), "P.name", "P.email_address", "P.credit_card", "P.city",
                    "P.state", F.col("P.extra").alias("person_extra"), "A.item_name", "A.description",
                    "A.initial_bid", "A.reserve", F.col("A.date_time").alias("auction_date_time"), "A.expires",
                    "A.seller", "A.category", F.col("A.extra").alias("auction_extra")))


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


def _per_campaign(s: Streams, event_type: str, name: str) -> DataFrame:
    events = s["ads"].where(F.col("event_type") == event_type).join(F.broadcast(s["campaigns"]), "ad_id")
    return _windowed(events.withColumnRenamed("event_time", "date_time"), "10 seconds", ["campaign_id"],
                     F.count(F.lit(1)).alias(name))


def ysb_ratio(s: Streams) -> DataFrame:
    """YSB*: clicks and views per campaign and 10 s window, joined on both into their ratio."""
    c, v = _per_campaign(s, "click", "clicks").alias("C"), _per_campaign(s, "view", "views").alias("V")
    on = (F.col("C.campaign_id") == F.col("V.campaign_id")) & (F.col("C.window_start") == F.col("V.window_start")) \
        & (F.col("C.window_end") == F.col("V.window_end"))
    return c.join(v, on).select("C.campaign_id", F.col("C.window_start").alias("starttime"), "C.clicks", "V.views",
                                (F.col("C.clicks") / F.col("V.views")).alias("ratio"))


def swa(s: Streams) -> DataFrame:
    """Bids per auction in 10 s windows sliding every 1 s."""
    grouped = s["bid"].groupBy(F.window("date_time", "10 seconds", "1 second").alias("w"), "auction").agg(
        F.count(F.lit(1)).alias("bids"))
    return grouped.select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "auction",
                          "bids")


QUERIES: dict[str, Callable[[Streams], DataFrame]] = {
    "q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q6": q6, "q7": q7, "q8": q8, "q9": q9, "q10": q10,
    "q11": q11, "q12": q12, "q13": q13, "q14": q14, "q15": q15, "q16": q16, "q17": q17, "q18": q18, "q19": q19,
    "q20": q20, "q21": q21, "q22": q22, "q23": q23, "agg": agg, "ysb": ysb_query,
    "ysb-ratio": ysb_ratio, "swa": swa,
}


def read_streams(spark: SparkSession, paths: dict[str, str]) -> Streams:
    return {name: spark.read.parquet(str(path)) for name, path in paths.items()}
