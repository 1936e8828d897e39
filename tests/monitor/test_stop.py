"""A job stopped while it runs: a final checkpoint keeps its open windows, a restart goes on, and a
drained stop fires them; SIGTERM does the same to a job in its own process, whose metrics endpoint
serves its counters while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin.runtime.control import JobControl

sys.path.insert(0, str(Path(__file__).parent))
from endless import prefix, query  # noqa: E402
from scrape import scrape_once_checkpointed  # noqa: E402
from sigterm import job_process, stop_with_sigterm  # noqa: E402

ORDER = [("window_start", "ascending"), ("key", "ascending")]


def committed(files: list[Path]) -> pa.Table:
    return pa.concat_tables([pq.read_table(f) for f in files]).sort_by(ORDER)


def stop_after(control: JobControl, batches: int, drain: bool = False):
    return lambda i: control.stop(drain=drain) if i == batches else None


@pytest.mark.parametrize("parallelism", [1, 2])
def test_stop_keeps_open_windows_and_a_restart_goes_on(tmp_path: Path, parallelism: int) -> None:
    config = dw.Config(checkpoint_dir=str(tmp_path / "ck"), checkpoint_interval="5 batches", batch_size=1_000,
                       parallelism=parallelism)
    sink = dw.sinks.Parquet(tmp_path / "out")
    first = JobControl()
    stopped = query(stop_after(first, 30)).sink(sink).run(config, first)
    assert stopped.stopped
    status = first.status()
    assert status is not None and status.stopping and status.input_rows == stopped.metrics["input_rows"]
    # only windows the watermark passed were emitted: the open ones wait in the checkpoint
    ends = committed(stopped.files)["window_end"].cast(pa.int64()).to_pylist()
    assert ends and max(ends) <= status.watermark_ms + 1
    second = JobControl()
    drained = query(stop_after(second, 70, drain=True)).sink(dw.sinks.Parquet(tmp_path / "out")).run(config, second)
    assert not drained.stopped and drained.resumed_from is not None
    rows = drained.metrics["input_rows"]
    assert rows > stopped.metrics["input_rows"]
    want = prefix(rows).collect(dw.Config(batch_size=1_000)).sort_by(ORDER)
    assert committed(drained.files).equals(want.select(committed(drained.files).column_names))
    # the drained job is finished: its checkpoint is not resumed over more input
    with pytest.raises(dw.errors.CheckpointError, match="finished job"):
        query().sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


def test_stop_without_checkpoints_commits_what_was_emitted(tmp_path: Path) -> None:
    control = JobControl()
    result = query(stop_after(control, 40)).sink(dw.sinks.Parquet(tmp_path / "out")).run(
        dw.Config(batch_size=1_000), control)
    assert result.stopped
    got = committed(result.files)
    assert got.num_rows == result.metrics["output_rows"] > 0
    full = prefix(result.metrics["input_rows"]).collect(dw.Config(batch_size=1_000)).sort_by(ORDER)
    # every emitted window is complete: equal to the bounded run's window, and no open window was emitted
    assert got.equals(full.slice(0, got.num_rows).select(got.column_names))
    assert got.num_rows < full.num_rows


def test_sigterm_takes_a_final_checkpoint_and_metrics_are_served(tmp_path: Path) -> None:
    with job_process([sys.executable, str(Path(__file__).parent / "endless_job.py"), str(tmp_path)],
                     stdout=subprocess.PIPE) as job:
        assert job.stdout is not None
        port = int(job.stdout.readline())
        metrics = scrape_once_checkpointed(port, 2)
        assert metrics["darwin_input_rows_total"] > 0
        assert metrics["darwin_checkpoint_duration_seconds_count"] >= 2
        assert "darwin_watermark_milliseconds" in metrics and "darwin_latency_p99_seconds" in metrics
        assert metrics['darwin_pipeline_input_rows_total{pipeline="0"}'] > 0
        out = stop_with_sigterm(job)
    assert job.returncode == 0
    result = json.loads(out.strip().splitlines()[-1])
    assert result["stopped"] and result["checkpoints"] >= 3
    # the restart goes on from the final checkpoint and, drained, equals one run over what it read
    control = JobControl()
    config = dw.Config(checkpoint_dir=str(tmp_path / "checkpoints"), checkpoint_interval="20 batches",
                       batch_size=1_000)
    resumed_at = result["input_rows"] // 1_000
    drained = query(stop_after(control, resumed_at + 10, drain=True)).sink(
        dw.sinks.Parquet(tmp_path / "out")).run(config, control)
    assert drained.resumed_from is not None
    want = prefix(drained.metrics["input_rows"]).collect(dw.Config(batch_size=1_000)).sort_by(ORDER)
    got = committed(drained.files)
    assert got.equals(want.select(got.column_names))


def test_the_progress_display_shows_the_job_and_its_pipelines(tmp_path: Path) -> None:
    from rich.console import Console

    from darwin.monitor import ProgressDisplay

    control = JobControl()
    console = Console(record=True, width=200, force_terminal=False)
    display = ProgressDisplay(control, console)
    query(stop_after(control, 20)).sink(dw.sinks.Parquet(tmp_path / "out")).run(
        dw.Config(batch_size=1_000, parallelism=2), control)
    console.print(display.render())
    text = console.export_text()
    status = control.status()
    assert status is not None and status.input_rows > 0
    assert f"{status.input_rows:,}" in text and "rows in" in text and "imbalance" in text
    assert "(stopping)" in text
