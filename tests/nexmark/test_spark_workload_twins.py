"""The PySpark twins of the scale-in workloads (SWA, YSB*) against plain Python, and the Darwin
queries against the twins, at parallelism 1 and 2.

Events are generated at 500 per second of event time, so 20,000 of them span 40 s: several
10 s windows (and some forty 1 s slides).
"""

from collections import Counter
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nexmark import ysb
from nexmark.generator import GeneratorConfig, write_parquet

EVENTS = 20_000
RATE = 500
EPOCH = datetime(1970, 1, 1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("nexmark-workloads")
    paths = {k: str(v) for k, v in write_parquet(GeneratorConfig(events=EVENTS, first_event_rate=RATE), out).items()}
    pq.write_table(pa.Table.from_batches(list(ysb.generate(EVENTS, 0, RATE)), schema=ysb.SCHEMA), out / "ads.parquet")
    pairs = ysb.campaigns(0)
    pq.write_table(pa.table({"ad_id": [a for a, _ in pairs], "campaign_id": [c for _, c in pairs]}),
                   out / "campaigns.parquet")
    return {**paths, "ads": str(out / "ads.parquet"), "campaigns": str(out / "campaigns.parquet")}


@pytest.fixture(scope="module")
def rows(data):
    return {name: pq.read_table(path).to_pylist() for name, path in data.items()}


def ms(t: datetime) -> int:
    return (t - EPOCH) // timedelta(milliseconds=1)


def at(millis: int) -> datetime:
    return EPOCH + timedelta(milliseconds=millis)


def twin_table(spark, paths, query):
    from darwin.spark import to_arrow
    from nexmark.spark_queries import QUERIES, read_streams

    return to_arrow(QUERIES[query](read_streams(spark, paths)))


# -- the independent computations ----------------------------------------------------------------

def swa(r):
    """Every 1 s slide whose 10 s window holds the bid: starts s with s <= t < s + 10 s."""
    counts: Counter = Counter()
    for b in r["bid"]:
        t = ms(b["date_time"])
        for start in range((t // 1000 - 9) * 1000, t + 1, 1000):
            counts[start, b["auction"]] += 1
    return [(at(s), at(s + 10_000), auction, n) for (s, auction), n in counts.items()]


def ysb_ratio(r):
    campaign = {c["ad_id"]: c["campaign_id"] for c in r["campaigns"]}
    counts: dict[str, Counter] = {"click": Counter(), "view": Counter()}
    for e in r["ads"]:
        if e["event_type"] in counts:
            counts[e["event_type"]][campaign[e["ad_id"]], ms(e["event_time"]) // 10_000 * 10_000] += 1
    clicks, views = counts["click"], counts["view"]
    return [(c, at(start), n, views[c, start], n / views[c, start]) for (c, start), n in clicks.items()
            if views[c, start]]


@pytest.mark.parametrize("query, reference", [("swa", swa), ("ysb-ratio", ysb_ratio)])
def test_twin_equals_the_plain_computation(spark, data, rows, query, reference):
    expected = reference(rows)
    assert len({row[1] if query == "ysb-ratio" else row[0] for row in expected}) >= 4  # several windows
    got = sorted(tuple(r.values()) for r in twin_table(spark, data, query).to_pylist())
    assert got == sorted(expected)


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("query", ["swa", "ysb-ratio"])
def test_darwin_equals_the_twin(spark, data, query, parallelism):
    import darwin as dw
    from nexmark.bench import difference
    from nexmark.queries import QUERIES
    from nexmark.source import source

    darwin = QUERIES[query].build(source(events=EVENTS, rate=RATE)).collect(dw.Config(parallelism=parallelism,
                                                                                      batch_size=1024))
    assert darwin.num_rows > 0
    assert difference(darwin, twin_table(spark, data, query)) is None
