"""Barrier windows checkpointed on several workers, crashed and resumed at another parallelism each
time, commit exactly the one-thread run's output: the workers' shares of the open window are
saved joined and forked again by key group on restore."""

import pyarrow as pa
import pytest
from crashes import assert_rescaled_runs_commit_the_one_thread_output, bids

import darwin as dw
from darwin import col


def _events(t):
    return dw.from_arrow(t.append_column("kind", pa.array(["rule" if i % 331 == 330 else "tx"
                                                           for i in range(t.num_rows)])), time="ts")


def per_key_barriers(t):
    return _events(t).window(dw.Barrier(col("kind") == "rule", on="ts", by="k")).table(rule_v="v", rule_kind="kind")


def barrier_windows(t):
    events = _events(t)
    windows = events.window(dw.Barrier(col("kind") == "rule", on="ts"))
    model = windows.group_by("k").agg(s=dw.sum("v"), n=dw.count(), hi=dw.max("v"))
    return windows.table().filter(col("kind") == "tx").select("k", "v", "window_id").join(
        model.select("k", "s", "n", next=col("window_id") + 1), on=[("k", "k"), ("window_id", "next")])


@pytest.mark.parametrize("query", [barrier_windows, per_key_barriers])
def test_barrier_windows_resume_at_another_parallelism(query, tmp_path, monkeypatch):
    plan = query(bids(6000))
    assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch)
