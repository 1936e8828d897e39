import pytest
from crashes import bids, windowed

import darwin as dw
from darwin.config import STATE_BACKENDS


@pytest.fixture(params=STATE_BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def configure(backend, tmp_path):
    """A config factory for this backend; rocksdb gets a tiny delta so it merges all the time."""
    def make(**changes):
        extra = {"state_delta_limit": 3} if backend == "rocksdb" else {}
        return dw.Config(state=backend, state_path=str(tmp_path / "state"), **extra).replace(**changes)
    return make


@pytest.fixture
def job(configure, tmp_path):
    """(query, checkpointing config, expected table) over a stream of 3000 rows in 30 batches."""
    q = windowed(bids())
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    return q, config, q.collect(dw.Config(batch_size=100))
