"""SIGKILL a checkpointed job at random moments, restart it until it finishes, on every backend:
its committed output must equal an uninterrupted run's, row for row."""

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


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    work = tmp_path_factory.mktemp("plain")
    proc = start("memory", str(work), "--plain")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return pq.read_table(work / "plain")


@pytest.mark.parametrize("backend", STATE_BACKENDS)
def test_killed_and_restarted_job_commits_exactly_the_uninterrupted_output(backend, tmp_path, uninterrupted):
    rng = random.Random(f"kill-{backend}")
    work = tmp_path / "job"
    work.mkdir()
    kills, runs = 0, 0
    while True:
        runs += 1
        proc = start(backend, str(work))
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
    assert got.num_rows == uninterrupted.num_rows
    assert got.equals(uninterrupted)
    assert not list((work / "out" / "_darwin_staging").iterdir())
