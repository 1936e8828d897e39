"""The panes benchmark runs end to end on few events (it is checked to run, never how fast)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_panes_benchmark_runs_both_settings():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "panes.py"), "--events", "20K", "--runs", "1",
                           "--queries", "swa", "q5"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = {m.group(1): m for m in re.finditer(r"^(\w+): panes ([\d.]+) s, per-window fold ([\d.]+) s, ([\d.]+)x "
                                               r"\(([\d,]+) rows\)$", proc.stdout, re.M)}
    assert set(lines) == {"swa", "q5"}
    assert int(lines["swa"].group(5).replace(",", "")) > 0  # both settings emitted these rows (checked inside)
