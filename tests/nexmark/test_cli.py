"""The CLIs end to end: a small Nexmark run checked against Spark, the main job, plots, bad input."""

import json

import pytest
from typer.testing import CliRunner

from darwin.cli import app as darwin_app
from nexmark.cli import app as nexmark_app

runner = CliRunner()
ALL = ["q0", "q1", "q2", "q12", "q14", "q21", "q22", "agg", "ysb"]


def test_every_query_agrees_with_spark(tmp_path):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", *ALL, "--events", "20K", "--engine", "darwin,spark",
                                         "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert {(r["query"], r["engine"]) for r in rows} == {(q, e) for q in ALL for e in ("darwin", "spark")}
    assert all(r["equal"] is True for r in rows)
    assert all(r["rows"] > 0 for r in rows)
    chart = tmp_path / "chart.png"
    result = runner.invoke(nexmark_app, ["plot", str(out), "--out", str(chart)])
    assert result.exit_code == 0, result.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_interpreted_mode_passes_through():
    result = runner.invoke(nexmark_app, ["run", "q2", "q12", "--events", "5K", "--engine", "darwin",
                                         "--mode", "interpreted"])
    assert result.exit_code == 0, result.output
    assert "q12" in result.output


def test_unknown_queries_and_options_are_clear_errors():
    result = runner.invoke(nexmark_app, ["run", "q99", "--events", "1K", "--engine", "darwin"])
    assert result.exit_code != 0 and "unknown engine or query: ['q99']" in result.output
    result = runner.invoke(nexmark_app, ["run", "q1", "--events", "lots"])
    assert result.exit_code != 0 and "not a count" in result.output
    result = runner.invoke(nexmark_app, ["run", "q1", "--mode", "fast", "--engine", "darwin"])
    assert result.exit_code != 0 and "'mode'" in result.output
    result = runner.invoke(nexmark_app, ["run", "q1", "--frobnicate"])
    assert result.exit_code != 0


def test_list_names_every_query_and_engine():
    result = runner.invoke(nexmark_app, ["list"])
    assert result.exit_code == 0
    for q in ALL:
        assert q in result.output
    assert "darwin, spark" in result.output


def test_generate_writes_parquet(tmp_path):
    result = runner.invoke(nexmark_app, ["generate", "--events", "5K", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in tmp_path.iterdir()} == {"person.parquet", "auction.parquet", "bid.parquet"}
    assert "bid: 4,600 rows" in result.output


def test_main_job_prints_a_windowed_result():
    result = runner.invoke(darwin_app, ["run", "--events", "50K"])
    assert result.exit_code == 0, result.output
    assert "Nexmark q12" in result.output and "bid_count" in result.output
    assert "50,000 events" in result.output


def test_info_reports_the_machine():
    result = runner.invoke(darwin_app, ["info"])
    assert result.exit_code == 0
    assert "cpu:" in result.output and "config.mode: compiled" in result.output


def test_main_job_rejects_a_bad_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("stat: memory\n")
    result = runner.invoke(darwin_app, ["run", "--events", "1K", "--config", str(bad)])
    assert result.exit_code == 2 and "unknown config key(s) ['stat']" in result.output


@pytest.mark.parametrize("state", ["mmap", "rocksdb"])
def test_windowed_queries_on_persistent_state_agree_with_spark(tmp_path, state):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q12", "agg", "ysb", "--events", "20K", "--engine", "darwin,spark",
                                         "--state", state, "--state-path", str(tmp_path / "state"),
                                         "--batch-size", "2048", "--data-dir", str(tmp_path / "data"),
                                         "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert len(rows) == 6 and all(r["equal"] is True and r["rows"] > 0 for r in rows)
