import itertools
import os

# CLI output is rendered by rich, which wraps at 80 columns when not on a terminal: a long temporary
# path (pytest-xdist's are) would be cut in the middle. Wide, so tests read whole lines.
os.environ["COLUMNS"] = os.environ["TERMINAL_WIDTH"] = "400"

import pyarrow as pa
import pytest

import darwin as dw


@pytest.fixture
def spark():
    """The process's SparkSession as each test starts (whatever master the last test left it on): a
    test that asks for another master or conf stops the one before, so a session kept for a module
    or the whole run was a stopped one for the tests after it ("jsc is null", depending on which
    tests one xdist worker happened to run)."""
    from darwin.spark import spark_session

    return spark_session("darwin-tests")


@pytest.fixture(params=["compiled", "interpreted"])
def mode(request):
    """Run a test under every execution mode."""
    return request.param


@pytest.fixture
def config(mode):
    return dw.Config(mode=mode)


@pytest.fixture
def bids():
    """A small bid stream factory: ts (ms), auction, bidder, price, channel."""
    def make(ts=None, **overrides):
        ts = ts if ts is not None else [0, 1500, 2500, 500, 12_000, 3000]
        n = len(ts)
        data = {
            "ts": pa.array(ts, pa.timestamp("ms")),
            "auction": overrides.get("auction", [1, 2, 1, 3, 1, 2][:n] + [1] * max(0, n - 6)),
            "bidder": overrides.get("bidder", list(range(n))),
            "price": overrides.get("price", [5, 20, 30, 40, 50, None][:n] + [7] * max(0, n - 6)),
            "channel": overrides.get("channel", ["apple", "google", "apple", "baidu", "google", None][:n]
                                     + ["apple"] * max(0, n - 6)),
        }
        return pa.table(data)
    return make


_topic_names = itertools.count()


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A Tansu broker for the Kafka tests (tests/kafka, tests/deploy): one per session, on a free
    loopback port, stopped by PID at the end."""
    from darwin.io.kafka.tansu import Tansu

    b = Tansu(tmp_path_factory.mktemp("tansu") / "broker.log")
    yield b
    b.stop()
    assert b.process.poll() is not None


@pytest.fixture
def topic(broker):
    """A factory of fresh topics: topic(partitions) -> name."""

    def make(partitions: int = 1) -> str:
        name = f"t{next(_topic_names)}"
        broker.create_topic(name, partitions)
        return name

    return make
