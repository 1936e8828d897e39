"""Real crashes: a job run as a child process, SIGKILLed at random moments and restarted until it
finishes (the recovery and Kafka kill tests share it; ``tests/crashes.py`` simulates crashes in-process).

A job prints "ready" once it has compiled and writes checkpoints under ``<work>/chk``.
"""

import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(job: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(job), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_a_checkpoint(proc: subprocess.Popen, chk: Path) -> None:
    """Until the running job has a checkpoint newer than those before it started (or has ended)."""
    before = set(chk.glob("chk-*")) if chk.exists() else set()
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if chk.exists() and set(chk.glob("chk-*")) - before:
            return
        time.sleep(0.01)


def run_with_kills(job: Path, args: Sequence[str], work: Path, rng: random.Random, kills: int,
                   longest_s: float) -> int:
    """Run ``job`` until it finishes, SIGKILLing it up to ``kills`` times, each at a random moment up to
    ``longest_s`` after a checkpoint newer than its start; the kills it took. The last run must succeed."""
    killed = 0
    while True:
        proc = start(job, *args)
        if killed < kills:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
            wait_for_a_checkpoint(proc, work / "chk")  # after compiling: kills land while it processes
            deadline = time.monotonic() + rng.uniform(0.0, longest_s)
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed += 1
                continue
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        return killed
