"""Nexmark queries, each defined once with the Darwin API.

The PySpark definitions of the same queries are in ``nexmark/spark_queries.py``;
``ENGINES`` says which engines run each query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


def q0(s: NexmarkSources) -> dw.Table:
    return s.bid.select("auction", "bidder", "price", "channel", "url", "date_time", "extra")


def q1(s: NexmarkSources) -> dw.Table:
    return s.bid.select("auction", "bidder", price=col("price") * EURO, date_time=col("date_time"),
                        extra=col("extra"))


def q2(s: NexmarkSources) -> dw.Table:
    return s.bid.filter(col("auction") % 123 == 0).select("auction", "price")


def q12(s: NexmarkSources) -> dw.Table:
    return s.bid.window(dw.Tumble("10s", on="date_time")).group_by("bidder").agg(bid_count=dw.count())


def q14(s: NexmarkSources) -> dw.Table:
    hour = col("date_time").dt.hour()
    euro = col("price") * EURO
    kind = (when(hour.between(8, 18), "dayTime").when((hour <= 6) | (hour >= 20), "nightTime")
            .otherwise("otherTime"))
    return (s.bid.filter((euro > 1_000_000) & (euro < 50_000_000))
            .select("auction", "bidder", price=euro, bid_time_type=kind, date_time=col("date_time"),
                    extra=col("extra"), c_counts=col("extra").str.count_char("c")))


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


def agg(s: NexmarkSources) -> dw.Table:
    """Darwin's micro-benchmark shape on Nexmark bids: a 60 s tumbling sum per key."""
    return s.bid.window(dw.Tumble("60s", on="date_time")).group_by("auction").agg(total=dw.sum("price"))


def ysb_query(s: NexmarkSources) -> dw.Table:
    """YSB: views per campaign in 10 s tumbling windows; ad -> campaign is a static-table join."""
    campaign = col("ad_id").str.map(dict(ysb.campaigns(s.config.seed)))
    return (s.ads.filter(col("event_type") == "view").select(campaign_id=campaign, event_time=col("event_time"))
            .filter(col("campaign_id").is_not_null())
            .window(dw.Tumble("10s", on="event_time")).group_by("campaign_id").agg(views=dw.count()))


QUERIES: dict[str, Query] = {q.name: q for q in (
    Query("q0", "pass-through of every bid", q0),
    Query("q1", "currency conversion of bid prices", q1),
    Query("q2", "bids on every 123rd auction", q2),
    Query("q12", "bids per bidder in 10 s event-time tumbling windows", q12),
    Query("q14", "filtered, converted bids with a time-of-day class and a UDF-like count", q14),
    Query("q21", "channel id from the channel name or the URL (string functions)", q21),
    Query("q22", "URL directories by split_index (string functions)", q22),
    Query("agg", "Darwin micro-benchmark shape: 60 s tumbling sum of price per auction", agg),
    Query("ysb", "Yahoo Streaming Benchmark: views per campaign per 10 s (static ad->campaign join)", ysb_query),
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
