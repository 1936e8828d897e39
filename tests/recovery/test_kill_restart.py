"""SIGKILL a checkpointed job at random moments, restart it until it finishes, on every backend, for a
windowed aggregation, a join of two sources, an updating aggregation into an upsert sink and bids into
a partitioned sink: its committed output must equal an uninterrupted run's, row for row (the upsert
sink's snapshot, the partitioned sink's directories read back in order)."""

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kills import run_with_kills, start

from darwin.config import STATE_BACKENDS

JOB = Path(__file__).with_name("kill_job.py")
KILLS = 2  # each kill costs a restart (an interpreter, Darwin's imports, its kernels loaded)


QUERIES = ("aggregate", "join", "updating", "partitioned")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The uninterrupted output of each query, run once."""
    outputs = {}

    def output(query: str):
        if query not in outputs:
            work = tmp_path_factory.mktemp(f"plain-{query}")
            proc = start(JOB, "memory", str(work), query, "--plain")
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            outputs[query] = pq.read_table(work / "plain")
        return outputs[query]
    return output


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("backend", STATE_BACKENDS)
def test_killed_and_restarted_job_commits_exactly_the_uninterrupted_output(backend, query, tmp_path, uninterrupted):
    kill_and_restart(backend, query, tmp_path, uninterrupted, ())


@pytest.mark.parametrize("query", ["aggregate", "partitioned"])
@pytest.mark.parametrize("backend", STATE_BACKENDS)
def test_a_job_on_two_workers_killed_and_restarted_commits_exactly_the_one_thread_output(backend, query, tmp_path,
                                                                                       uninterrupted):
    """Its windows partitioned by key group (aggregate) or its batches cut in slices (partitioned)."""
    kill_and_restart(backend, query, tmp_path, uninterrupted, ("--parallelism", "2"))


def kill_and_restart(backend, query, tmp_path, uninterrupted, options) -> None:
    expected = uninterrupted(query)
    rng = random.Random(f"kill-{backend}-{query}-{options}")
    work = tmp_path / "job"
    work.mkdir()
    kills = run_with_kills(JOB, (backend, str(work), query, *options), work, rng, KILLS, longest_s=1.2)
    assert kills >= 2, f"the job finished before it could be killed enough ({kills} kills)"
    result = json.loads((work / "result.json").read_text())
    assert result["resumed_from"] is not None
    got = pq.read_table(work / "out")
    assert got.num_rows == expected.num_rows
    assert got.equals(expected)
    if query == "updating":
        assert [f.name for f in (work / "out").iterdir() if not f.name.startswith(("_", "."))] == ["snapshot.parquet"]
    if query == "partitioned":
        assert len(list((work / "out").glob("p=*/s=*"))) > 4
    assert not list((work / "out" / "_darwin_staging").iterdir())
