"""mmap state several times larger than the memory the process may use, beside memory state that fails.

The cap is RLIMIT_DATA (heap and private mappings), not RLIMIT_AS: address space counts
file mappings too, so it cannot tell state on disk from state in memory.
"""

import json
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).with_name("bounded_memory_job.py")
LIMIT_MB = 384


def run(backend, state_dir):
    proc = subprocess.run([sys.executable, str(JOB), backend, str(state_dir), str(LIMIT_MB)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_mmap_state_three_times_the_memory_limit(tmp_path):
    got = run("mmap", tmp_path / "state")
    assert got.get("error") is None, got
    assert got["rows"] == 120 * 250_000  # every key in 120 sliding windows
    assert got["total"] == 60 * sum(i % 10 for i in range(500_000))  # every row in 60 windows
    assert got["state_bytes"] >= 3 * (LIMIT_MB << 20)


def test_memory_state_does_not_fit_under_the_same_limit(tmp_path):
    assert run("memory", tmp_path / "state") == {"error": "MemoryError"}
