"""Workers adapted while the job runs: the policy, and a job that gives workers back."""

import numpy as np
import pyarrow as pa

import darwin as dw
from darwin.runtime.adaptive import PATIENCE, SPLIT_WORK_S, WorkerShare, force_workers


def test_little_work_gives_workers_back_one_at_a_time_and_much_work_takes_them_again():
    share = WorkerShare(pipeline=0, most=3)
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S / 10)
    assert share.active == 3  # not before enough batches agree
    share.observe(SPLIT_WORK_S / 10)
    assert share.active == 2
    for _ in range(10 * PATIENCE):
        share.observe(SPLIT_WORK_S / 10)
    assert share.active == 1 and share.changes == 2
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S * 10)
    share.observe(SPLIT_WORK_S / 10)  # one small batch: the count of batches asking starts again
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S * 10)
    assert share.active == 1
    share.observe(SPLIT_WORK_S * 10)
    assert share.active == 2 and share.changes == 3


def test_forced_counts_are_clamped_to_the_pipelines_workers():
    share = WorkerShare(pipeline=4, most=2)
    with force_workers(lambda pipeline, batch: 7 if pipeline == 4 else 0):
        assert share.for_batch() == 2
    with force_workers(lambda pipeline, batch: 0):
        assert share.for_batch() == 1
    assert share.for_batch() == 2


def test_a_pipeline_with_little_work_per_batch_ends_on_fewer_workers_with_the_same_result():
    rng = np.random.default_rng(3)
    n = 4_000
    t = dw.from_arrow(pa.table({"t": pa.array(np.arange(n) * 10, pa.timestamp("ms")), "k": rng.integers(0, 9, n),
                                "v": rng.integers(0, 100, n)}), time="t")
    query = t.filter(dw.col("v") > 10).window(dw.Tumble("1s", on="t")).group_by("k").agg(s=dw.sum("v"))
    expected = query.execute(dw.Config(batch_size=16))
    actual = query.execute(dw.Config(batch_size=16, parallelism=2))  # 250 batches of microseconds each
    assert actual.table.equals(expected.table)
    [shared] = [p for p in actual.metrics["pipelines"] if p.get("workers_most") == 2]
    assert shared["worker_changes"] >= 1 and shared["workers"] in (1, 2)
