"""``iter_changes()``: the changelog one batch at a time, for updating and append-only results."""

import pyarrow as pa

import darwin as dw
from darwin import col


def _bids():
    return pa.table({"ts": pa.array([i * 100 for i in range(40)], pa.timestamp("ms")),
                     "k": [i % 3 for i in range(40)], "v": [i % 7 for i in range(40)]})


def test_the_changes_of_an_updating_result_arrive_batch_by_batch_and_add_up_to_the_changelog():
    q = dw.from_arrow(_bids(), time="ts").group_by("k").agg(n=dw.count(), top=dw.max("v"))
    config = dw.Config(batch_size=8)
    batches = list(q.iter_changes(config))
    assert len(batches) > 1 and all(b.schema.names[-1] == "op" for b in batches)
    changes = pa.Table.from_batches(batches)
    assert changes.equals(q.changelog(config))
    assert {"+I", "-U", "+U"} <= set(changes.column("op").to_pylist())


def test_an_append_only_result_comes_as_inserts():
    q = dw.from_arrow(_bids(), time="ts", max_delay="0s").filter(col("v") > 2)
    config = dw.Config(batch_size=8)
    changes = pa.Table.from_batches(list(q.iter_changes(config)))
    assert set(changes.column("op").to_pylist()) == {"+I"}
    assert changes.drop_columns(["op"]).equals(q.collect(config))
    assert changes.equals(q.changelog(config))
