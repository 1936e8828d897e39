"""The PySpark twins of the Nexmark statistics queries (q15, q16, q17: GROUP BY without a window,
filtered and distinct counts) against plain Python, and the Darwin queries against the twins.

The events are generated one per second of event time from 22:00 on, so the 20,000 of them cross
midnight: the queries' days and minutes take several values. Darwin's result is the final table of
its updating aggregation; the twins compute the Flink SQL as a batch over all the data.
"""

from datetime import datetime

import pytest

from nexmark.generator import GeneratorConfig, write_parquet

EVENTS = 20_000
OPTIONS = {"first_event_rate": 1, "base_time_ms": 1_436_997_600_000}  # 2015-07-15 22:00 UTC
LEVELS = ("total", "rank1", "rank2", "rank3")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("nexmark-statistics")
    return {k: str(v) for k, v in write_parquet(GeneratorConfig(events=EVENTS, **OPTIONS), out).items()}


@pytest.fixture(scope="module")
def bids(data):
    import pyarrow.parquet as pq

    return pq.read_table(data["bid"]).to_pylist()


def in_levels(price: int) -> list[str]:
    """The FILTER clauses a bid passes: every bid counts in total, and in one rank."""
    rank = "rank1" if price < 10_000 else "rank2" if price < 1_000_000 else "rank3"
    return ["total", rank]


def day(t: datetime) -> str:
    return t.strftime("%Y-%m-%d")


def statistics(rows: list[dict], key, distinct: tuple[str, ...]) -> dict[tuple, dict[str, object]]:
    """Per group: bids per level, then the distinct values of each column of ``distinct`` per level."""
    groups: dict[tuple, dict[str, object]] = {}
    for b in rows:
        g = groups.setdefault(key(b), {f"{level}_bids": 0 for level in LEVELS}
                              | {f"{level}_{c}s": set() for c in distinct for level in LEVELS})
        for level in in_levels(b["price"]):
            g[f"{level}_bids"] += 1
            for c in distinct:
                g[f"{level}_{c}s"].add(b[c])
    return {k: {name: len(v) if isinstance(v, set) else v for name, v in g.items()} for k, g in groups.items()}


def q15(rows):
    return [(d, *s.values()) for (d,), s in statistics(rows, lambda b: (day(b["date_time"]),),
                                                        ("bidder", "auction")).items()]


def q16(rows):
    stats = statistics(rows, lambda b: (b["channel"], day(b["date_time"])), ("bidder", "auction"))
    minute: dict[tuple, str] = {}
    for b in rows:  # max(DATE_FORMAT(dateTime, 'HH:mm')): the largest text
        k = (b["channel"], day(b["date_time"]))
        minute[k] = max(minute.get(k, ""), b["date_time"].strftime("%H:%M"))
    return [(channel, d, minute[(channel, d)], *s.values()) for (channel, d), s in stats.items()]


def q17(rows):
    stats = statistics(rows, lambda b: (b["auction"], day(b["date_time"])), ())
    prices: dict[tuple, list[int]] = {}
    for b in rows:
        prices.setdefault((b["auction"], day(b["date_time"])), []).append(b["price"])
    return [(a, d, *s.values(), min(p), max(p), sum(p) // len(p), sum(p))  # AVG of a BIGINT: truncated
            for (a, d), s in stats.items() for p in (prices[(a, d)],)]


COLUMNS = {
    "q15": ["day", *[f"{level}_{what}" for what in ("bids", "bidders", "auctions") for level in LEVELS]],
    "q16": ["channel", "day", "minute", *[f"{level}_{what}" for what in ("bids", "bidders", "auctions")
                                          for level in LEVELS]],
    "q17": ["auction", "day", *[f"{level}_bids" for level in LEVELS], "min_price", "max_price", "avg_price",
            "sum_price"],
}


def twin(spark, data, query):
    from darwin.spark import to_arrow
    from nexmark.spark_queries import QUERIES, read_streams

    table = to_arrow(QUERIES[query](read_streams(spark, data)))
    assert table.column_names == COLUMNS[query]
    return table


def test_the_events_cross_midnight(bids):
    assert len({day(b["date_time"]) for b in bids}) == 2
    assert len({b["date_time"].strftime("%H:%M") for b in bids}) > 300
    assert {level for b in bids for level in in_levels(b["price"])} == set(LEVELS)


@pytest.mark.parametrize("query, reference", [("q15", q15), ("q16", q16), ("q17", q17)])
def test_twin_equals_the_flink_sql(spark, data, bids, query, reference):
    expected = sorted(reference(bids))
    assert len(expected) > 1
    assert sorted(tuple(r.values()) for r in twin(spark, data, query).to_pylist()) == expected


@pytest.mark.parametrize("query", ["q15", "q16", "q17"])
def test_darwin_equals_the_twin(spark, data, query):
    import darwin as dw
    from nexmark.bench import difference
    from nexmark.queries import QUERIES
    from nexmark.source import source

    darwin = QUERIES[query].build(source(events=EVENTS, **OPTIONS)).collect(dw.Config(batch_size=1000))
    assert darwin.column_names == COLUMNS[query]
    assert darwin.num_rows > 1
    assert difference(darwin, twin(spark, data, query)) is None


def test_listed_with_both_engines():
    from typer.testing import CliRunner

    from nexmark.cli import app

    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0
    listed = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines()
              if line.startswith("│") and line.split("│")[1].strip()}
    assert {q: listed.get(q) for q in COLUMNS} == {q: "darwin, spark, darwin-spark" for q in COLUMNS}
