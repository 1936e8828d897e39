"""SIGKILL a checkpointed job at random moments, restart it until it finishes, on every backend, for a
windowed aggregation, a join of two sources, an updating aggregation into an upsert sink and bids into
a partitioned sink: its committed output must equal an uninterrupted run's, row for row (the upsert
sink's snapshot, the partitioned sink's directories read back in order)."""

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from darwin.config import STATE_BACKENDS

JOB = Path(__file__).with_name("kill_job.py")
ROOT = Path(__file__).resolve().parents[2]
KILLS = 4


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(JOB), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_a_checkpoint(proc: subprocess.Popen, chk: Path) -> None:
    """Until the running job has a checkpoint newer than those before it started (or has ended)."""
    before = set(chk.glob("chk-*")) if chk.exists() else set()
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if chk.exists() and set(chk.glob("chk-*")) - before:
            return
        time.sleep(0.01)


QUERIES = ("aggregate", "join", "updating", "partitioned")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The uninterrupted output of each query, run once."""
    outputs = {}

    def output(query: str):
        if query not in outputs:
            work = tmp_path_factory.mktemp(f"plain-{query}")
            proc = start("memory", str(work), query, "--plain")
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
    kills, runs = 0, 0
    while True:
        runs += 1
        proc = start(backend, str(work), query, *options)
        if kills < KILLS:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
            wait_for_a_checkpoint(proc, work / "chk")  # after compiling: kills land while it processes
            deadline = time.monotonic() + rng.uniform(0.0, 1.2)
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        break
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
