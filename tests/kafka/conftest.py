"""A Tansu broker for the Kafka tests: one per session, on a free loopback port, stopped by PID at the end."""

import itertools

import pytest

from darwin.io.kafka.tansu import Tansu

_names = itertools.count()


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    b = Tansu(tmp_path_factory.mktemp("tansu") / "broker.log")
    yield b
    b.stop()
    assert b.process.poll() is not None


@pytest.fixture
def topic(broker):
    """A factory of fresh topics: topic(partitions) -> name."""

    def make(partitions: int = 1) -> str:
        name = f"t{next(_names)}"
        broker.create_topic(name, partitions)
        return name

    return make
