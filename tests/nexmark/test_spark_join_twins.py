"""The PySpark twins of the Nexmark join queries (q3, q7, q8, q13, q20, q23) against plain Python,
and the Darwin queries against the twins.

Each twin runs on generated events written as Parquet, and its sorted rows must equal those of
an independent computation of the Flink SQL over the same files, as a batch over all the data;
each Darwin query, run on the same events generated as a stream, must give the twin's rows.
The events are generated at 500 per second of event time, so that 20,000 of them span four
10-second windows (at the default rate they would all fall into one).
"""

from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nexmark.bench import parquet_for
from nexmark.generator import VERSION as GENERATOR_VERSION
from nexmark.generator import GeneratorConfig, write_parquet
from nexmark.side_input import side_input_table, write_side_input

EVENTS = 20_000
RATE = 500
EPOCH = datetime(1970, 1, 1)
WINDOW_MS = 10_000

COLUMNS = {
    "q3": ["name", "city", "state", "id"],
    "q7": ["auction", "price", "bidder", "date_time", "extra"],
    "q8": ["id", "name", "starttime"],
    "q13": ["auction", "bidder", "price", "date_time", "value"],
    "q20": ["auction", "bidder", "price", "channel", "url", "bid_date_time", "bid_extra", "item_name",
            "description", "initial_bid", "reserve", "auction_date_time", "expires", "seller", "category",
            "auction_extra"],
    "q23": ["bidder", "price", "channel", "url", "bid_extra", "person_id", "name", "email_address", "credit_card",
            "city", "state", "person_extra", "item_name", "description", "initial_bid", "reserve",
            "auction_date_time", "expires", "seller", "category", "auction_extra"],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("nexmark-joins")
    paths = {k: str(v) for k, v in write_parquet(GeneratorConfig(events=EVENTS, first_event_rate=RATE), out).items()}
    paths["side_input"] = str(write_side_input(out / "side_input.parquet"))
    return paths


@pytest.fixture(scope="module")
def rows(data):
    """Each stream's rows as dicts (timestamps as naive datetimes, dictionary columns as strings)."""
    return {name: pq.read_table(path).to_pylist() for name, path in data.items()}


def twin_table(spark, paths, query):
    from darwin.spark import to_arrow
    from nexmark.spark_queries import QUERIES, read_streams

    return to_arrow(QUERIES[query](read_streams(spark, paths)))


def run_twin(spark, paths, query):
    table = twin_table(spark, paths, query)
    assert table.column_names == COLUMNS[query]
    for name, field in zip(table.column_names, table.schema):
        if "date_time" in name or name in ("expires", "starttime"):
            assert field.type == pa.timestamp("ms"), (name, field.type)
    return sorted(tuple(r.values()) for r in table.to_pylist())


def ms(t: datetime) -> int:
    return (t - EPOCH) // timedelta(milliseconds=1)


def window_start(t: datetime) -> datetime:
    return EPOCH + timedelta(milliseconds=ms(t) // WINDOW_MS * WINDOW_MS)


def check(spark, data, query, expected):
    assert expected, f"{query}: the data give no rows, so the test would prove nothing"
    assert run_twin(spark, data, query) == sorted(expected)


# -- the independent computations, straight from the Flink SQL ------------------------------------

def q3(r):
    people = {p["id"]: p for p in r["person"] if p["state"] in ("OR", "ID", "CA")}
    return [(people[a["seller"]]["name"], people[a["seller"]]["city"], people[a["seller"]]["state"], a["id"])
            for a in r["auction"] if a["category"] == 10 and a["seller"] in people]


def q7(r):
    top: dict[int, int] = {}  # window end (ms) -> max price of the window's bids
    for b in r["bid"]:
        end = ms(window_start(b["date_time"])) + WINDOW_MS
        top[end] = max(top.get(end, b["price"]), b["price"])
    out = []
    for b in r["bid"]:  # B.date_time BETWEEN end - 10 s AND end, both inclusive
        t = ms(b["date_time"])
        for end in top:
            if end - WINDOW_MS <= t <= end and b["price"] == top[end]:
                out.append((b["auction"], b["price"], b["bidder"], b["date_time"], b["extra"]))
    return out


def q8(r):
    people = {(p["id"], p["name"], window_start(p["date_time"])) for p in r["person"]}
    sellers = {(a["seller"], window_start(a["date_time"])) for a in r["auction"]}
    return [(i, name, start) for i, name, start in people if (i, start) in sellers]


def q13(r):
    side = {s["key"]: s["value"] for s in r["side_input"]}
    return [(b["auction"], b["bidder"], b["price"], b["date_time"], side[b["auction"] % 10_000])
            for b in r["bid"] if b["auction"] % 10_000 in side]


def q20(r):
    auctions = {a["id"]: a for a in r["auction"] if a["category"] == 10}
    out = []
    for b in r["bid"]:
        a = auctions.get(b["auction"])
        if a is not None:
            out.append((b["auction"], b["bidder"], b["price"], b["channel"], b["url"], b["date_time"], b["extra"],
                        a["item_name"], a["description"], a["initial_bid"], a["reserve"], a["date_time"],
                        a["expires"], a["seller"], a["category"], a["extra"]))
    return out


def q23(r):
    people = {p["id"]: p for p in r["person"]}
    sold: dict[int, list] = {}
    for a in r["auction"]:
        sold.setdefault(a["seller"], []).append(a)
    out = []
    for b in r["bid"]:
        p = people.get(b["bidder"])
        if p is None:
            continue
        for a in sold.get(b["bidder"], []):
            out.append((b["bidder"], b["price"], b["channel"], b["url"], b["extra"], p["id"], p["name"],
                        p["email_address"], p["credit_card"], p["city"], p["state"], p["extra"], a["item_name"],
                        a["description"], a["initial_bid"], a["reserve"], a["date_time"], a["expires"],
                        a["seller"], a["category"], a["extra"]))
    return out


@pytest.mark.parametrize("query, reference", [("q3", q3), ("q8", q8), ("q13", q13), ("q20", q20), ("q23", q23)])
def test_twin_equals_the_flink_sql(spark, data, rows, query, reference):
    check(spark, data, query, reference(rows))


def test_q7_equals_the_flink_sql_in_every_window(spark, data, rows):
    expected = q7(rows)
    assert len({window_start(row[3]) for row in expected}) >= 3  # the events span several windows
    check(spark, data, "q7", expected)


def test_q8_spans_several_windows(rows):
    assert len({start for _, _, start in q8(rows)}) >= 3


def test_q7_window_end_is_inclusive(spark, tmp_path):
    """A bid at exactly a window's end (the next window's start) matches the maximum of both windows."""
    base = datetime(2015, 7, 15)
    at = [base + timedelta(seconds=s) for s in (1, 4, 9.999, 10, 12, 20, 25)]
    bids = pa.table({"auction": [1, 2, 3, 4, 5, 6, 7], "bidder": [10, 11, 12, 13, 14, 15, 16],
                     "price": [50, 90, 70, 90, 90, 30, 60], "date_time": pa.array(at, pa.timestamp("ms")),
                     "extra": list("abcdefg")})
    pq.write_table(bids, tmp_path / "bid.parquet")
    got = run_twin(spark, {"bid": str(tmp_path / "bid.parquet")}, "q7")
    # [0, 10 s) has max 90: auction 2, and auction 4 at exactly 10 s; [10, 20 s) has max 90: auctions 4 and 5
    # (auction 6 at 20 s has 30); [20, 30 s) has max 60: auction 7
    assert [(a, p) for a, p, *_ in got] == [(2, 90), (4, 90), (4, 90), (5, 90), (7, 60)]
    assert sorted(q7({"bid": bids.to_pylist()})) == got  # and the reference computation agrees
    import darwin as dw
    from nexmark.queries import QUERIES

    for batch_size in (1, 3, 1024):  # and Darwin, whatever the batches
        darwin = QUERIES["q7"].build(SimpleNamespace(bid=dw.from_arrow(bids, time="date_time", max_delay="0s")))
        assert sorted(tuple(r.values()) for r in darwin.collect(dw.Config(batch_size=batch_size)).to_pylist()) == got


# -- the Darwin queries against the twins -----------------------------------------------------------

@pytest.mark.parametrize("query", [
    "q3", "q7", "q8", "q13", "q20", "q23"])
def test_darwin_equals_the_twin(spark, data, query):
    from nexmark.bench import difference
    from nexmark.queries import QUERIES
    from nexmark.source import source

    darwin = QUERIES[query].build(source(events=EVENTS, rate=RATE)).collect()
    assert darwin.column_names == COLUMNS[query]
    assert darwin.num_rows > 0
    assert difference(darwin, twin_table(spark, data, query)) is None


# -- the side input ---------------------------------------------------------------------------------

def test_side_input_is_the_reference_content():
    """SideInputGenerator writes the lines "i,i" for i in [0, 10000) (side_input_gen.sh: --num 10000)."""
    table = side_input_table()
    assert table.schema == pa.schema([pa.field("key", pa.int64(), False), pa.field("value", pa.string(), False)])
    assert [f"{k},{v}" for k, v in zip(table["key"].to_pylist(), table["value"].to_pylist())] == [
        f"{i},{i}" for i in range(10_000)]


def test_parquet_for_writes_the_side_input(tmp_path):
    paths = parquet_for(2000, 0, tmp_path)
    assert pq.read_table(paths["side_input"]).equals(side_input_table())
    # a cache written before the side input existed gets it, without writing the streams again
    side = Path(paths["side_input"])
    assert side.parent.name == f"nexmark-v{GENERATOR_VERSION}-events=2000-seed=0"  # a new generator, new files
    side.unlink()
    before = {p: (tmp_path / p).stat().st_mtime_ns for p in tmp_path.rglob("*.parquet")}
    assert parquet_for(2000, 0, tmp_path) == paths
    assert side.exists() and all(p.stat().st_mtime_ns == t for p, t in before.items())
