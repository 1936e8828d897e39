"""Nexmark queries, each defined once with the Darwin API.

The PySpark definitions of the same queries are in ``nexmark/spark_queries.py``;
``ENGINES`` says which engines run each query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

import darwin as dw
from darwin import col, when
from darwin.errors import PlanError
from nexmark import ysb
from nexmark.source import NexmarkSources, source

EURO = 0.908
CHANNELS = ("apple", "google", "facebook", "baidu")
CHANNEL_ID = "(&|^)channel_id=([^&]*)"


@dataclass(frozen=True)
class Query:
    name: str
    description: str
    build: Callable[[NexmarkSources], dw.Table]
    # where ROW_NUMBER ranks tied rows arbitrarily (Spark) or by arrival (Darwin), the columns the
    # ties cannot change, which the engines are compared on; None: every column
    compared: tuple[str, ...] | None = None


def q0(s: NexmarkSources) -> dw.Table:
    return s.bid.select("auction", "bidder", "price", "channel", "url", "date_time", "extra")


def q1(s: NexmarkSources) -> dw.Table:
    return s.bid.select("auction", "bidder", price=col("price") * EURO, date_time=col("date_time"),
                        extra=col("extra"))


def q2(s: NexmarkSources) -> dw.Table:
    return s.bid.filter(col("auction") % 123 == 0).select("auction", "price")


def q3(s: NexmarkSources) -> dw.Table:
    """Local item suggestion: category-10 auctions with their seller, for sellers in OR, ID or CA."""
    auctions = s.auction.filter(col("category") == 10)
    persons = s.person.filter(col("state").isin(["OR", "ID", "CA"]))
    return auctions.join(persons, left_on="seller", right_on="id").select("name", "city", "state", "id")


def _bids_in_lifetime(s: NexmarkSources) -> dw.Table:
    """Auctions with each bid made while they were open (the 'winning bids' core of q4, q6, q9); the
    bid's clashing columns are date_time_right and extra_right."""
    return s.auction.join(s.bid, left_on="id", right_on="auction",
                          where=col("date_time_right").between(col("date_time"), col("expires")))


def q4(s: NexmarkSources) -> dw.Table:
    """Average winning price per category: an updating aggregation over an updating aggregation."""
    winning = _bids_in_lifetime(s).group_by("id", "category").agg(final=dw.max("price"))
    return winning.group_by("category").agg(avg_final=dw.avg("final"))


def q5(s: NexmarkSources) -> dw.Table:
    """Hot items: the auctions with the most bids of each 10 s window sliding every 2 s. The windows'
    maxima are a tumbling window over the counts' window ends (each end is its own group), which
    are ahead of the watermark the counts fire with, so no count is late."""
    counts = (s.bid.window(dw.Slide("10s", "2s", on="date_time")).group_by("auction").agg(num=dw.count())
              .select("auction", "num", endtime=col("window_end")))
    maxima = (counts.window(dw.Tumble("2s", on="endtime")).agg(maxn=dw.max("num"))
              .select("maxn", max_end=col("window_start")))
    return counts.join(maxima, on=[("endtime", "max_end")], where=col("num") >= col("maxn")).select("auction", "num")


def q6(s: NexmarkSources) -> dw.Table:
    """Average selling price per seller over the current and 10 previous winning bids, in the form of
    the reference SQL: a top-1 per auction (an updating input) under an OVER window. Ties are broken
    the same way as in the Spark twin (the earliest of equal highest bids; auctions by id), which
    the reference SQL leaves open."""
    winners = _bids_in_lifetime(s).top_n(1, by="id", order=[dw.desc("price"), "date_time_right"])
    return winners.select("seller", avg_price=dw.avg("price").over(partition_by="seller",
                                                                   order_by=["date_time_right", "id"], rows=(10, 0)))


def q7(s: NexmarkSources) -> dw.Table:
    """Bids at the highest price of their 10 s window: an interval join with the windows' maxima."""
    maxima = (s.bid.window(dw.Tumble("10s", on="date_time")).agg(maxprice=dw.max("price"))
              .select("maxprice", window_time=col("window_end")))
    return (s.bid.join(maxima, on=[("price", "maxprice")],
                       where=col("date_time").between(col("window_time") - 10_000, col("window_time")))
            .select("auction", "price", "bidder", "date_time", "extra"))


def q8(s: NexmarkSources) -> dw.Table:
    """New people who opened auctions in the same 10 s window: a join of two windowed aggregations on
    their windows (Darwin takes it as a window join)."""
    people = (s.person.window(dw.Tumble("10s", on="date_time")).group_by("id", "name").agg(n=dw.count())
              .select("id", "name", starttime=col("window_start"), endtime=col("window_end")))
    sellers = (s.auction.window(dw.Tumble("10s", on="date_time")).group_by("seller").agg(n=dw.count())
               .select("seller", starttime=col("window_start"), endtime=col("window_end")))
    return (people.join(sellers, on=[("id", "seller"), ("starttime", "starttime"), ("endtime", "endtime")])
            .select("id", "name", "starttime"))


def q9(s: NexmarkSources) -> dw.Table:
    """Winning bids: each auction with its highest bid (the earliest of equal ones) while it was open."""
    top = _bids_in_lifetime(s).top_n(1, by="id", order=[dw.desc("price"), "date_time_right"])
    return top.select("id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller",
                      "category", "extra", "auction", "bidder", "price", bid_date_time=col("date_time_right"),
                      bid_extra=col("extra_right"))


def q11(s: NexmarkSources) -> dw.Table:
    """User sessions: bids per bidder in each session of activity (10 s gap)."""
    return (s.bid.window(dw.Session("10s", on="date_time")).group_by("bidder").agg(bid_count=dw.count())
            .select("bidder", "bid_count", starttime=col("window_start"), endtime=col("window_end")))


def q10(s: NexmarkSources) -> dw.Table:
    """Bids with their day and minute, the columns Flink's q10 partitions its file sink by; write it
    with ``.sink(dw.sinks.Parquet(out, partition_by=["dt", "hm"]))`` for Hive-style directories
    (``nexmark run`` times it into a blackhole, as the reference runners do)."""
    return s.bid.select("auction", "bidder", "price", "date_time", "extra",
                        dt=col("date_time").dt.strftime("%Y-%m-%d"), hm=col("date_time").dt.strftime("%H:%M"))


def q12(s: NexmarkSources) -> dw.Table:
    return s.bid.window(dw.Tumble("10s", on="date_time")).group_by("bidder").agg(bid_count=dw.count())


def q13(s: NexmarkSources) -> dw.Table:
    """Bids enriched from a bounded side input: a lookup join."""
    return (s.bid.join(s.side_input.lookup(), on=[(col("auction") % 10_000, "key")])
            .select("auction", "bidder", "price", "date_time", "value"))


def q14(s: NexmarkSources) -> dw.Table:
    hour = col("date_time").dt.hour()
    euro = col("price") * EURO
    kind = (when(hour.between(8, 18), "dayTime").when((hour <= 6) | (hour >= 20), "nightTime")
            .otherwise("otherTime"))
    return (s.bid.filter((euro > 1_000_000) & (euro < 50_000_000))
            .select("auction", "bidder", price=euro, bid_time_type=kind, date_time=col("date_time"),
                    extra=col("extra"), c_counts=col("extra").str.count_char("c")))


RANKS = ("rank1", "rank2", "rank3")  # bids below 10,000; from 10,000 below 1,000,000; from 1,000,000


def _ranked(price: dw.Expr) -> dict[str, dw.Expr | None]:
    """The price levels of q15-q17: every bid (no filter), then each rank's bids."""
    return dict(zip(("total", *RANKS), (None, price < 10_000, (price >= 10_000) & (price < 1_000_000),
                                        price >= 1_000_000)))


def _bid_statistics(distinct: tuple[str, ...]) -> dict[str, dw.expr.Agg]:
    """Bids per price level, then the distinct values of each column of ``distinct`` per level."""
    levels = _ranked(col("price"))
    aggs = {f"{level}_bids": dw.count(filter=f) for level, f in levels.items()}
    for column in distinct:
        aggs |= {f"{level}_{column}s": dw.count_distinct(column, filter=f) for level, f in levels.items()}
    return aggs


def q15(s: NexmarkSources) -> dw.Table:
    """Bidding statistics per day: bids, distinct bidders and distinct auctions, in total and per price
    level (an updating aggregation with filtered distinct counts)."""
    return s.bid.group_by(day=col("date_time").dt.strftime("%Y-%m-%d")).agg(**_bid_statistics(("bidder", "auction")))


def q16(s: NexmarkSources) -> dw.Table:
    """q15's statistics per channel and day, with the day's last minute of bidding. Flink's
    ``max(DATE_FORMAT(dateTime, 'HH:mm'))`` is the 'HH:mm' of the latest bid: in one day the text
    orders as the time does."""
    stats = _bid_statistics(("bidder", "auction"))
    grouped = s.bid.group_by("channel", day=col("date_time").dt.strftime("%Y-%m-%d")).agg(
        latest=dw.max("date_time"), **stats)
    return grouped.select("channel", "day", col("latest").dt.strftime("%H:%M").alias("minute"), *stats)


def q17(s: NexmarkSources) -> dw.Table:
    """Auction statistics per day: bids per price level and the prices' min, max, average and sum.
    The average is BIGINT as in Flink (AVG of a BIGINT column): truncated."""
    stats = _bid_statistics(())
    grouped = s.bid.group_by("auction", day=col("date_time").dt.strftime("%Y-%m-%d")).agg(
        **stats, min_price=dw.min("price"), max_price=dw.max("price"), avg_price=dw.avg("price"),
        sum_price=dw.sum("price"))
    return grouped.select("auction", "day", *stats, "min_price", "max_price",
                          col("avg_price").cast("int64").alias("avg_price"), "sum_price")


def q18(s: NexmarkSources) -> dw.Table:
    """The last bid of each bidder on each auction: a deduplication."""
    return (s.bid.deduplicate(on=["bidder", "auction"], keep="last", order="date_time")
            .select("auction", "bidder", "price", "channel", "url", "date_time", "extra"))


def q19(s: NexmarkSources) -> dw.Table:
    """The 10 highest bids of each auction: a top-N with its rank."""
    return s.bid.top_n(10, by="auction", order=dw.desc("price"), rank="rank_number")


def q20(s: NexmarkSources) -> dw.Table:
    """Bids with the details of their auction, for auctions of category 10: a regular join."""
    joined = s.bid.join(s.auction.filter(col("category") == 10), left_on="auction", right_on="id")
    return joined.select("auction", "bidder", "price", "channel", "url", col("date_time").alias("bid_date_time"),
                         col("extra").alias("bid_extra"), "item_name", "description", "initial_bid", "reserve",
                         col("date_time_right").alias("auction_date_time"), "expires", "seller", "category",
                         col("extra_right").alias("auction_extra"))


def q21(s: NexmarkSources) -> dw.Table:
    channel = col("channel").str.lower()
    extracted = col("url").str.regexp_extract(CHANNEL_ID, 2)
    channel_id = (when(channel == "apple", "0").when(channel == "google", "1").when(channel == "facebook", "2")
                  .when(channel == "baidu", "3").otherwise(extracted))
    return (s.bid.filter(extracted.is_not_null() | channel.isin(list(CHANNELS)))
            .select("auction", "bidder", "price", "channel", channel_id=channel_id))


def q22(s: NexmarkSources) -> dw.Table:
    url = col("url").str
    return s.bid.select("auction", "bidder", "price", "channel", dir1=url.split_index("/", 3),
                        dir2=url.split_index("/", 4), dir3=url.split_index("/", 5))


def q23(s: NexmarkSources) -> dw.Table:
    """Bids with their bidder and every auction the bidder sells: a three-way regular join."""
    bids = s.bid.select("bidder", "price", "channel", "url", col("extra").alias("bid_extra"))
    persons = s.person.select(col("id").alias("person_id"), "name", "email_address", "credit_card", "city", "state",
                              col("extra").alias("person_extra"))
    auctions = s.auction.select("item_name", "description", "initial_bid", "reserve",
                                col("date_time").alias("auction_date_time"), "expires", "seller", "category",
                                col("extra").alias("auction_extra"))
    return bids.join(persons, left_on="bidder", right_on="person_id").join(auctions, left_on="bidder",
                                                                           right_on="seller")


def agg(s: NexmarkSources) -> dw.Table:
    """Darwin's micro-benchmark shape on Nexmark bids: a 60 s tumbling sum per key."""
    return s.bid.window(dw.Tumble("60s", on="date_time")).group_by("auction").agg(total=dw.sum("price"))


def _campaigns(s: NexmarkSources) -> dw.Table:
    """YSB's static table ad -> campaign."""
    pairs = ysb.campaigns(s.config.seed)
    return dw.from_arrow(pa.table({"ad_id": [a for a, _ in pairs], "campaign_id": [c for _, c in pairs]}),
                         name="ysb.campaigns")


def _per_campaign(s: NexmarkSources, event_type: str, name: str) -> dw.Table:
    """Ad events of one type counted per campaign in 10 s tumbling windows (ad -> campaign: a lookup join)."""
    events = s.ads.filter(col("event_type") == event_type).select("ad_id", "event_time")
    return (events.join(_campaigns(s).lookup(), on=[("ad_id", "ad_id")]).select("campaign_id", "event_time")
            .window(dw.Tumble("10s", on="event_time")).group_by("campaign_id").agg(**{name: dw.count()}))


def ysb_query(s: NexmarkSources) -> dw.Table:
    """YSB: views per campaign in 10 s tumbling windows; ad -> campaign is a lookup join with a static table."""
    return _per_campaign(s, "view", "views")


def ysb_ratio(s: NexmarkSources) -> dw.Table:
    """YSB* (AIR's variant of YSB): clicks and views per campaign in two 10 s windowed aggregations,
    joined on campaign and window by a third windowed operator (a window join) into the click/view
    ratio. A campaign window with no clicks or no views has no ratio and gives no row (inner join)."""
    def counts(event_type: str, name: str) -> dw.Table:
        return _per_campaign(s, event_type, name).select("campaign_id", name, starttime=col("window_start"),
                                                         endtime=col("window_end"))

    clicks, views = counts("click", "clicks"), counts("view", "views")
    joined = clicks.join(views, on=[("campaign_id", "campaign_id"), ("starttime", "starttime"),
                                    ("endtime", "endtime")])
    return joined.select("campaign_id", "starttime", "clicks", "views", ratio=col("clicks") / col("views"))


def swa(s: NexmarkSources) -> dw.Table:
    """SWA, sliding-window aggregation: bids per auction in 10 s windows sliding every 1 s (each bid
    counts in ten windows)."""
    return s.bid.window(dw.Slide("10s", "1s", on="date_time")).group_by("auction").agg(bids=dw.count())


QUERIES: dict[str, Query] = {q.name: q for q in (
    Query("q0", "pass-through of every bid", q0),
    Query("q1", "currency conversion of bid prices", q1),
    Query("q2", "bids on every 123rd auction", q2),
    Query("q3", "local item suggestion: sellers in OR, ID or CA of category-10 auctions (regular join)", q3),
    Query("q4", "average winning price per category (join, then aggregation over aggregation; updating)", q4),
    Query("q5", "hot items: auctions with the most bids per 10 s window sliding every 2 s (window join)", q5),
    Query("q6", "average winning price of each seller's last 11 auctions (top-1 under an OVER window; updating)",
          q6),
    Query("q7", "highest bid: bids at the maximum price of their 10 s window (interval join)", q7),
    Query("q8", "new users: people who entered and opened an auction in the same 10 s window", q8),
    Query("q9", "winning bids: the highest bid of each auction while it was open (join, top-1; updating)", q9,
          compared=("id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller",
                    "category", "extra", "auction", "price", "bid_date_time")),
    Query("q10", "bids with their day and minute, the partitions of a file sink (strftime)", q10),
    Query("q11", "user sessions: bids per bidder per session window with a 10 s gap", q11),
    Query("q12", "bids per bidder in 10 s event-time tumbling windows", q12),
    Query("q13", "bids enriched from a bounded side input (lookup join)", q13),
    Query("q14", "filtered, converted bids with a time-of-day class and a UDF-like count", q14),
    Query("q15", "bidding statistics per day: bids, distinct bidders and auctions per price level "
                 "(filtered count_distinct, updating)", q15),
    Query("q16", "q15's statistics per channel and day, with the day's last minute of bidding (updating)", q16),
    Query("q17", "auction statistics per day: bids per price level, min/max/avg/sum of price (updating)", q17),
    Query("q18", "last bid of each bidder on each auction (deduplication; updating)", q18,
          compared=("auction", "bidder", "date_time")),
    Query("q19", "the 10 highest bids of each auction with their rank (top-N; updating)", q19,
          compared=("auction", "price", "rank_number")),
    Query("q20", "bids expanded with their auction, for category-10 auctions (regular join)", q20),
    Query("q21", "channel id from the channel name or the URL (string functions)", q21),
    Query("q22", "URL directories by split_index (string functions)", q22),
    Query("q23", "bids with their bidder and every auction the bidder sells (three-way regular join)", q23),
    Query("agg", "Darwin micro-benchmark shape: 60 s tumbling sum of price per auction", agg),
    Query("ysb", "Yahoo Streaming Benchmark: views per campaign per 10 s (lookup join ad -> campaign)", ysb_query),
    Query("ysb-ratio", "YSB*: click/view ratio per campaign per 10 s (two windowed counts, window join)", ysb_ratio),
    Query("swa", "sliding-window aggregation: bids per auction in 10 s windows sliding every 1 s", swa),
)}


def build_query(name: str, sources: NexmarkSources) -> dw.Table:
    try:
        return QUERIES[name].build(sources)
    except KeyError:
        raise PlanError(f"unknown Nexmark query {name!r}; available: {sorted(QUERIES)}") from None


def main_job(query: str, events: int, rate: int) -> dw.Table:
    """``darwin run``'s main job: Nexmark ``query`` over ``events`` generated events, ``rate`` per second
    of event time (registered in pyproject.toml as the ``darwin.jobs`` entry point ``main``)."""
    return build_query(query, source(events=events, rate=rate))
