"""Operators with a ``state_ttl`` killed mid-run and restarted: each key's stamp (the watermark at
its last write) comes back from the checkpoint, so the same keys expire as in an uninterrupted run,
on every backend."""

import pytest
from crashes import bids
from test_updating_recovery import _assert_resumes_exactly_once

import darwin as dw

EXPIRING = {
    "deduplicate": lambda t, ttl: t.deduplicate(on="k", state_ttl=ttl),
    "deduplicate_last": lambda t, ttl: t.deduplicate(on="k", keep="last", state_ttl=ttl),
    "top_n": lambda t, ttl: t.top_n(2, by="k", order=[dw.desc("v")], rank="r", state_ttl=ttl),
    "aggregation": lambda t, ttl: t.group_by("k").agg(n=dw.count(), total=dw.sum("v"), high=dw.max("v"),
                                                      state_ttl=ttl),
    # each side its own (Flink's STATE_TTL hint on one input): the right side keeps its rows for ever
    "join_sides": lambda t, ttl: t.join(t.filter(dw.col("v") > 1), on=[("k", "k")],
                                        state_ttl=None if ttl is None else (ttl, None)),
}


@pytest.mark.parametrize("name", sorted(EXPIRING))
def test_an_operator_with_a_state_ttl_resumes_exactly_once(name, configure, tmp_path, monkeypatch):
    t = dw.from_arrow(bids(), time="ts", max_delay="5s").filter(dw.col("v") < 4)  # keys come back at odd gaps
    q = EXPIRING[name](t, "10s" if name == "aggregation" else "15s")  # where a stamp lost at a crash shows
    kept = EXPIRING[name](t, None).changelog(dw.Config(batch_size=100))
    assert not q.changelog(dw.Config(batch_size=100)).equals(kept)  # keys do expire
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    _assert_resumes_exactly_once(q, config, tmp_path / "out", monkeypatch, [9, 6], 50)
