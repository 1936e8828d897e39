"""The Nexmark generator: proportions, ids, references, time, determinism, schemas."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexmark.generator import SCHEMAS, GeneratorConfig, generate, generate_all, id_bounds, write_parquet

EVENTS = 20_000


def stream(config, name, batch_size=4096):
    return pa.Table.from_batches(list(generate(config, name, batch_size)), schema=SCHEMAS[name])


@pytest.fixture(scope="module")
def streams():
    c = GeneratorConfig(events=EVENTS, first_event_rate=1000)
    return c, {name: stream(c, name) for name in ("person", "auction", "bid")}


def test_proportions_and_ids(streams):
    c, s = streams
    assert s["person"].num_rows == EVENTS // 50 * 1
    assert s["auction"].num_rows == EVENTS // 50 * 3
    assert s["bid"].num_rows == EVENTS // 50 * 46
    assert s["person"]["id"].to_pylist() == list(range(1000, 1000 + s["person"].num_rows))
    assert s["auction"]["id"].to_pylist() == list(range(1000, 1000 + s["auction"].num_rows))


def test_references_point_to_existing_or_imminent_entities(streams):
    c, s = streams
    bid_times = s["bid"]["date_time"].cast(pa.int64()).to_numpy()
    auction_ids = s["auction"]["id"].to_numpy()
    auction_times = s["auction"]["date_time"].cast(pa.int64()).to_numpy()
    bids = s["bid"]["auction"].to_numpy()
    # every bid's auction exists in the stream; at most the reference's 10-id lead ahead of the bid
    assert np.isin(bids[bids <= auction_ids.max()], auction_ids).all()
    created = np.searchsorted(auction_ids, bids)
    lead = (auction_times[np.minimum(created, len(auction_ids) - 1)] - bid_times)
    assert (lead <= 10 * 50 // 3 + 50).all()  # ten auctions ahead is about 170 events = 170 ms at 1000/s
    persons = s["person"]["id"].to_numpy()
    sellers = s["auction"]["seller"].to_numpy()
    assert ((sellers >= 1000) & (sellers <= persons.max() + 10)).all()
    bidders = s["bid"]["bidder"].to_numpy()
    assert ((bidders >= 1000) & (bidders <= persons.max() + 10)).all()
    # hot auctions and bidders: most bids go to few ids
    assert pd_top_share(bids) > 0.4 and pd_top_share(bidders) > 0.4


def pd_top_share(values):
    _, counts = np.unique(values, return_counts=True)
    return np.sort(counts)[::-1][: max(1, len(counts) // 20)].sum() / len(values)


def test_timestamps_follow_the_rate(streams):
    c, s = streams
    # event i happens at base + i * 1000 / rate ms; bids are events with i % 50 >= 4
    ids = np.arange(EVENTS)
    bid_ids = ids[ids % 50 >= 4]
    expected = c.base_time_ms + bid_ids * 1000 // c.first_event_rate
    assert (s["bid"]["date_time"].cast(pa.int64()).to_numpy() == expected).all()
    times = s["auction"]["date_time"].cast(pa.int64()).to_numpy()
    assert (np.diff(times) >= 0).all()
    assert (s["auction"]["expires"].cast(pa.int64()).to_numpy() > times).all()


def test_values_look_like_nexmark(streams):
    _, s = streams
    prices = s["bid"]["price"].to_numpy()
    assert prices.min() >= 100 and prices.max() <= 100_000_000
    assert set(s["auction"]["category"].to_pylist()) == {10, 11, 12, 13, 14}
    channels = s["bid"]["channel"].to_pylist()
    assert {"Google", "Facebook", "Baidu", "Apple"} <= set(channels)
    assert any(ch.startswith("channel-") for ch in channels)
    assert all(u.startswith("https://www.nexmark.com/") for u in s["bid"]["url"].to_pylist()[:100])
    assert set(s["person"]["state"].to_pylist()) <= {"AZ", "CA", "ID", "OR", "WA", "WY"}
    extra = np.array([len(x) for x in s["bid"]["extra"].to_pylist()])
    assert 60 <= extra.mean() <= 76  # 100-byte bids: 32 bytes of fields, ~68 of padding
    cards = s["person"]["credit_card"].to_pylist()
    assert all(len(x) == 19 for x in cards)


def test_schemas(streams):
    _, s = streams
    for name, table in s.items():
        assert table.schema == SCHEMAS[name]


def test_deterministic_and_seeded():
    c = GeneratorConfig(events=3000)
    assert stream(c, "bid").equals(stream(c, "bid"))
    assert not stream(c, "bid").equals(stream(GeneratorConfig(events=3000, seed=1), "bid"))


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 3000), st.sampled_from(["person", "auction", "bid"]))
def test_any_batch_size_gives_the_same_rows(batch_size, name):
    c = GeneratorConfig(events=2500, seed=7)
    assert stream(c, name, batch_size).equals(stream(c, name, 4096))


def test_generate_all_matches_single_streams():
    c = GeneratorConfig(events=5000)
    parts = list(generate_all(c, 1000))
    for name in ("person", "auction", "bid"):
        assert pa.Table.from_batches([p[name] for p in parts]).equals(stream(c, name))


def test_write_parquet(tmp_path):
    c = GeneratorConfig(events=2000)
    paths = write_parquet(c, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["auction.parquet", "bid.parquet", "person.parquet"]
    bids = pq.read_table(paths["bid"])
    assert bids.num_rows == stream(c, "bid").num_rows
    assert bids["price"].equals(stream(c, "bid")["price"])


@pytest.mark.parametrize("field, value", [("events", -1), ("first_event_rate", 0), ("bid_proportion", 0),
                                          ("seed", 1.5)])
def test_config_validation(field, value):
    with pytest.raises(ValueError, match=f"GeneratorConfig.{field}"):
        GeneratorConfig(**{"events": 10, field: value})


@pytest.mark.parametrize("name, asked", [("bid", {"auction", "price"}), ("bid", {"url", "date_time"}),
                                         ("bid", {"bidder", "extra"}), ("auction", {"id", "reserve", "seller"}),
                                         ("person", {"id", "city", "state"})])
def test_skipping_columns_changes_no_other_column(name, asked):
    """Columns nobody asked for are not drawn (bids) or their text is left empty (auctions, people);
    every column asked for is as in the full stream."""
    c = GeneratorConfig(events=3000)
    full = stream(c, name)
    lean = pa.Table.from_batches(list(generate(c, name, 512, columns=frozenset(asked))))
    assert asked <= set(lean.column_names)
    for column in lean.column_names:
        if column in asked or lean.schema.field(column).type != pa.string():
            assert lean[column].equals(full[column]), column
        else:
            assert lean[column].to_pylist() == [""] * lean.num_rows


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 500), st.integers(0, 500), st.integers(1, 5), st.integers(1, 5), st.integers(1, 60),
       st.sampled_from([0, 1, 2]))
def test_ids_of_kind_are_the_ids_classified_as_that_kind(start, length, person, auction, bid, kind):
    c = GeneratorConfig(events=1000, person_proportion=person, auction_proportion=auction, bid_proportion=bid)
    ids = np.arange(start, start + length, dtype=np.int64)
    assert c.ids_of_kind(kind, start, start + length).tolist() == ids[c.kind_of(ids) == kind].tolist()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 4), st.integers(1, 4), st.integers(1, 50), st.integers(0, 3))
def test_every_id_lies_within_the_bounds_the_source_gives(events, person, auction, bid, seed):
    """A window ring is sized by these bounds: a value outside would stop the run."""
    c = GeneratorConfig(events=events, seed=seed, person_proportion=person, auction_proportion=auction,
                        bid_proportion=bid, num_active_people=7, num_in_flight_auctions=5)
    for name, columns in (("person", ["id"]), ("auction", ["id", "seller"]), ("bid", ["auction", "bidder"])):
        table = stream(c, name)
        for column in columns:
            low, high = id_bounds(c, name, column)
            if table.num_rows:
                assert low <= pc.min(table[column]).as_py() and pc.max(table[column]).as_py() <= high
    assert id_bounds(c, "bid", "price") is None


def test_windowed_counts_by_bidder_and_auction_get_window_rings():
    from nexmark.queries import QUERIES
    from nexmark.source import NexmarkSources

    sources = NexmarkSources(GeneratorConfig(events=10_000))
    for name in ("q5", "q12"):
        assert "ring" in QUERIES[name].build(sources).explain(), name
