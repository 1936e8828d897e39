"""An updating aggregation killed mid-run and restarted: the committed changelog equals an
uninterrupted run's, on every backend (its groups are restored from the checkpoint)."""

import pyarrow as pa
import pyarrow.parquet as pq
from crashes import bids, run_until_done

import darwin as dw


def test_an_updating_aggregation_resumes_exactly_once(configure, tmp_path, monkeypatch):
    t = dw.from_arrow(bids(), time="ts")
    per_key = t.group_by("k").agg(n=dw.count(), total=dw.sum("v"), high=dw.max("v"))
    q = per_key.group_by("n").agg(keys=dw.count(), mean=dw.avg("total"))  # retracts what the first one updates
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    expected = q.changelog(dw.Config(batch_size=100))
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out), config, monkeypatch, crashes=[9, 6])
    assert result.resumed_from is not None
    written = pq.read_table(out)
    assert written.num_rows == expected.num_rows > 100
    assert pa.Table.from_pylist(written.to_pylist(), expected.schema).equals(expected)


def test_distinct_counts_resume_exactly_once(configure, tmp_path, monkeypatch):
    """The sets of count_distinct (pairs and multiplicities, shared by filters) and the strings a
    formatted time was given come back from the checkpoint; values retracted by the second level
    leave its sets."""
    from darwin import col

    t = dw.from_arrow(bids(), time="ts")
    per_key = t.group_by("k", second=col("ts").dt.strftime("%S")).agg(
        n=dw.count(), vals=dw.count_distinct("v"), low=dw.count_distinct("v", filter=col("v") < 5))
    q = per_key.group_by("second").agg(keys=dw.count_distinct("k"), counts=dw.count_distinct("n"),
                                       busy=dw.count_distinct("k", filter=col("vals") > 3),
                                       lows=dw.count_distinct("low"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="3 batches")
    expected = q.changelog(dw.Config(batch_size=100))
    assert expected.equals(q.changelog(dw.Config(batch_size=100, mode="interpreted")))
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out), config, monkeypatch, crashes=[7, 5, 4])
    assert result.resumed_from is not None
    written = pq.read_table(out)
    assert written.num_rows == expected.num_rows > 100
    assert pa.Table.from_pylist(written.to_pylist(), expected.schema).equals(expected)
