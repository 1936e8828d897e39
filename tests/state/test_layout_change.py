"""A resume refused because the state layout changed says which operator, what changed (a setting, or
the input) and the ways out; what is refused and what is accepted is as before."""

import re

import pyarrow as pa
import pytest
from crashes import Crash, bids, crash_after, stop_crashing

import darwin as dw
from darwin.errors import CheckpointError

NAMES = bids(3000).append_column("name", pa.array([f"n{i % 97}" for i in range(3000)]))


def slide_by_name(t=NAMES):
    return (dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Slide("4s", "2s", on="ts")).group_by("name")
            .agg(hi=dw.max("v"), n=dw.count()))


def tumble_by_key(t=None, max_delay="5s"):
    return (dw.from_arrow(bids(3000) if t is None else t, time="ts", max_delay=max_delay)
            .window(dw.Tumble("2s", on="ts")).group_by("k").agg(n=dw.count(), hi=dw.max("v")))


def crashed(query, tmp_path, monkeypatch, **settings):
    """The settings of a run of ``query`` that took checkpoints and crashed."""
    config = dw.Config(batch_size=250, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches",
                       **settings)
    crash_after(monkeypatch, 5)
    with pytest.raises(Crash):
        query.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    return config


def refusal(query, config, tmp_path):
    with pytest.raises(CheckpointError) as raised:
        query.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    return str(raised.value)


WAYS_OUT = "or start from an empty checkpoint directory (a new checkpoint_dir, state_path and output directory)"


@pytest.mark.parametrize("query, operator, then, now, layouts", [
    (slide_by_name, r"pipeline 0 \(slide\(4000ms every 2000ms on ts\), grouped by \[name\]\)", {"panes": True},
     {"panes": False}, (r"checkpoint has .*state=hash panes\W, this run has .*state=hash\W\. ",)),
    (tumble_by_key, r"pipeline 0 \(tumble\(2000ms on ts\), grouped by \[k\]\)",
     {"parallelism": 4, "pre_aggregate": True}, {"parallelism": 4, "pre_aggregate": False},
     (r"checkpoint has .*window-ring-aggregate .*window rings merged as windows fire\W, this run has "
      r".*window-hash-aggregate .*parallel by key groups of \[k\]\W\. ",)),
    (lambda: tumble_by_key(max_delay=None), r"pipeline 0 \(tumble\(2000ms on ts\), grouped by \[k\]\)",
     {"max_delay": "1s"}, {"max_delay": "20s"}, (r"checkpoint has .*slots=4 .*, this run has .*slots=16 ",)),
], ids=["panes", "pre_aggregate", "max_delay"])
def test_a_changed_setting_is_named_with_the_operator_and_the_ways_out(query, operator, then, now, layouts, tmp_path,
                                                                         monkeypatch):
    """This was "holds state of another layout: the same query compiled differently over this input ...
    e.g. a key range its state was sized for changed. Resume over the input it ran on": a setting
    changed, not the input."""
    config = crashed(query(), tmp_path, monkeypatch, **then)
    message = refusal(query(), config.replace(**now), tmp_path)
    setting = next(k for k in now if now[k] != then.get(k))
    assert re.search(r"holds state of another layout than this run's for the windowed aggregation of " + operator,
                     message), message
    assert f"The checkpoint's run had {setting}={then[setting]!r} and this run has {setting}={now[setting]!r}" \
        in message
    assert f"Resume with Config({setting}={then[setting]!r}), as the checkpoint's run had; {WAYS_OUT}" in message
    assert all(re.search(layout, message) for layout in layouts), message
    assert "over this input" not in message and "key range" not in message
    assert query().sink(dw.sinks.Parquet(tmp_path / "out")).run(config).resumed_from is not None


def test_another_key_range_is_named_as_the_input_not_a_setting(tmp_path, monkeypatch):
    config = crashed(tumble_by_key(), tmp_path, monkeypatch)
    wider = bids(3000)
    wider = wider.set_column(1, "k", pa.array([i % 500 for i in range(wider.num_rows)]))
    message = refusal(tumble_by_key(wider), config, tmp_path)
    assert "another layout than this run's for the windowed aggregation of pipeline 0 (tumble(2000ms on ts), " \
           "grouped by [k])" in message
    assert "window-ring-aggregate slots=8 domain=[0, 97) " in message and "window-ring-aggregate slots=8 " \
           "domain=[0, 500) " in message
    assert "The query and the settings that choose layouts are the checkpoint's, so the input is not: a window " \
           "ring is sized to the key range of the input's statistics, [0, 97) then and [0, 500) in this input" \
           in message
    assert f"Resume over the input the checkpoint's run read, with its settings; {WAYS_OUT}" in message


def test_a_changed_setting_at_another_parallelism_is_named_too(tmp_path, monkeypatch):
    """At another parallelism the comparison is with this query at the checkpoint's (a ring's entries
    move between workers), so a setting changed with it is still the cause named."""
    config = crashed(tumble_by_key(), tmp_path, monkeypatch, parallelism=4)
    message = refusal(tumble_by_key(), config.replace(parallelism=2, pre_aggregate=False), tmp_path)
    assert "(this query at the checkpoint's parallelism, 4)" in message
    assert "The checkpoint's run had pre_aggregate=True and this run has pre_aggregate=False" in message
    assert tumble_by_key().sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(parallelism=2)) \
        .resumed_from is not None
