"""collect, execute, iter_batches and sink(...).run() are one driver with different sinks."""

import pyarrow as pa
import pytest

import darwin as dw
from darwin.io.sinks import Blackhole, Collect, Sink
from darwin.runtime import job


def stream(pulled):
    """100 batches of 10 rows, 1 s apart; ``pulled`` counts the batches the run has read."""
    schema = pa.schema([("ts", pa.timestamp("ms")), ("k", pa.int64())])

    def batches():
        for b in range(100):
            pulled.append(b)
            yield pa.record_batch([pa.array([b * 1000 + i for i in range(10)], pa.timestamp("ms")),
                                   pa.array([i % 3 for i in range(10)])], schema=schema)
    return dw.from_batches(schema, batches, time="ts").window(dw.Tumble("1s", on="ts")).group_by("k").agg(
        n=dw.count())


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_iter_batches_yields_results_while_the_input_is_still_being_read(mode):
    pulled = []
    first = next(iter(stream(pulled).iter_batches(dw.Config(mode=mode, batch_size=10, prefetch=0))))
    assert first.num_rows == 3
    assert len(pulled) < 100


def test_every_way_of_running_goes_through_the_driver(monkeypatch, tmp_path):
    sinks = []
    original = job.Driver.__init__

    def spy(self, plan, sink, config, control=None):
        sinks.append(type(sink).__name__)
        original(self, plan, sink, config, control)
    monkeypatch.setattr(job.Driver, "__init__", spy)
    q = stream([])
    q.collect()
    list(q.iter_batches())
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run()
    assert sinks == ["Collect", "Blackhole", "Parquet"]


def test_the_in_memory_sinks_are_sinks():
    assert isinstance(Collect(), Sink) and isinstance(Blackhole(), Sink)
