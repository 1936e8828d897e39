"""An updating aggregation killed mid-run and restarted: the committed changelog equals an
uninterrupted run's, on every backend (its groups are restored from the checkpoint)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
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


RANKINGS = {
    "top_n": lambda t: t.top_n(3, by="k", order=[dw.desc("v"), "ts"], rank="rank"),
    "deduplicate": lambda t: t.deduplicate(on="k", keep="last", order="ts"),
    "window_top_n": lambda t: t.window(dw.Tumble("5s", on="ts")).top_n(2, by="k", order=dw.desc("v"), rank="r"),
    "top_n_over_updates": lambda t: t.group_by("k").agg(total=dw.sum("v")).top_n(5, order=dw.desc("total")),
    "over": lambda t: t.with_columns(mean=dw.avg("v").over(partition_by="k", order_by="ts", rows=(3, 0))),
    "sessions": lambda t: t.window(dw.Session("3s", on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v")),
}


@pytest.mark.parametrize("name", sorted(RANKINGS))
def test_a_stream_operator_resumes_exactly_once(name, configure, tmp_path, monkeypatch):
    """Its kept rows (or buffered session rows), arrival numbers and open windows come back from the
    checkpoint."""
    q = RANKINGS[name](dw.from_arrow(bids(), time="ts", max_delay="5s"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    expected = q.changelog(dw.Config(batch_size=100))
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out), config, monkeypatch, crashes=[9, 6])
    assert result.resumed_from is not None
    written = pq.read_table(out)
    if "op" not in written.column_names:  # an appending result is written without change kinds
        expected = expected.drop_columns(["op"])
    assert written.num_rows == expected.num_rows > 50
    assert pa.Table.from_pylist(written.to_pylist(), expected.schema).equals(expected)
