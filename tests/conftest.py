import pyarrow as pa
import pytest

import darwin as dw


@pytest.fixture(scope="module")
def spark():
    """The process's one SparkSession (whatever master the last test left it on), per module."""
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
