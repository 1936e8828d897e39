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


JOINS = ["q3", "q7", "q8", "q13", "q20", "q23"]  # checked against Spark in test_spark_join_twins.py


def test_list_names_every_query_and_engine():
    result = runner.invoke(nexmark_app, ["list"])
    assert result.exit_code == 0
    listed = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines()
              if line.startswith("│") and line.split("│")[1].strip()}
    assert {q: listed.get(q) for q in ALL + JOINS} == {q: "darwin, spark" for q in ALL + JOINS}


def test_generate_writes_parquet(tmp_path):
    result = runner.invoke(nexmark_app, ["generate", "--events", "5K", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in tmp_path.iterdir()} == {"person.parquet", "auction.parquet", "bid.parquet",
                                                    "side_input.parquet"}
    assert "bid: 4,600 rows" in result.output and "side_input: 10,000 rows" in result.output


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


@pytest.mark.parametrize("queries", [["q12", "agg"], ["ysb"]])
@pytest.mark.parametrize("state", ["mmap", "rocksdb"])
def test_windowed_queries_on_persistent_state_agree_with_spark(tmp_path, state, queries):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", *queries, "--events", "20K", "--engine", "darwin,spark",
                                         "--state", state, "--state-path", str(tmp_path / "state"),
                                         "--batch-size", "2048", "--data-dir", str(tmp_path / "data"),
                                         "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert len(rows) == 2 * len(queries) and all(r["equal"] is True and r["rows"] > 0 for r in rows)


# -- bad input is one clear error line, never a traceback ------------------------------------------

def clean_error(result, *fragments):
    """A usage or Darwin error: non-zero exit, no exception but the exit, every fragment in the output."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output


@pytest.mark.parametrize("count", ["nan", "inf", "-inf", "1e400", "-5", "1.5", "", "  ", "1.2345K", "lots"])
def test_bad_event_counts_are_clear_errors_in_both_clis(count):
    clean_error(runner.invoke(darwin_app, ["run", "--events", count]), repr(count))
    clean_error(runner.invoke(nexmark_app, ["run", "q1", "--engine", "darwin", "--events", count]), repr(count))


@pytest.mark.parametrize("count, n", [("2000", 2000), ("2K", 2000), ("1.5k", 1500), ("10M", 10_000_000),
                                      ("1_000", 1000), ("0", 0), ("1e3", 1000)])
def test_counts_are_read(count, n):
    from darwin.cli import parse_count

    assert parse_count(count) == n


def test_an_existing_file_where_a_directory_belongs_is_a_clear_error(tmp_path):
    file = tmp_path / "a-file"
    file.write_text("")
    clean_error(runner.invoke(nexmark_app, ["generate", "--events", "1K", "--out", str(file)]), str(file))
    clean_error(runner.invoke(nexmark_app, ["run", "q12", "--events", "1K", "--engine", "darwin", "--state", "mmap",
                                            "--state-path", str(file)]), str(file))
    clean_error(runner.invoke(nexmark_app, ["run", "q12", "--events", "1K", "--engine", "darwin", "--state", "mmap",
                                            "--data-dir", str(file)]), str(file))
    clean_error(runner.invoke(nexmark_app, ["run", "q12", "--events", "1K", "--engine", "darwin",
                                            "--json", str(tmp_path)]), str(tmp_path))


def test_spark_without_pyspark_is_a_clear_error_before_any_work(tmp_path, monkeypatch):
    import sys

    from nexmark import bench

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the missing engine was noticed")

    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` now fails as if not installed
    monkeypatch.setattr(bench, "run_all", no_work)
    result = runner.invoke(nexmark_app, ["run", "q1", "--events", "1K", "--data-dir", str(tmp_path / "data")])
    clean_error(result, "pyspark", 'pip install "darwin-stream[spark]"')
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--rate", "0"], "--rate"),
    (["--rate", "-3"], "--rate"),
    (["--show", "-1"], "--show"),
])
def test_main_job_refuses_bad_option_values(args, fragment):
    clean_error(runner.invoke(darwin_app, ["run", "--events", "1K", *args]), fragment)


def test_main_job_names_a_file_where_a_directory_belongs(tmp_path):
    file = tmp_path / "a-file"
    file.write_text("")
    clean_error(runner.invoke(darwin_app, ["run", "--events", "1K", "--out", str(file)]), str(file))
    config = tmp_path / "c.yaml"
    config.write_text(f"state: mmap\nstate_path: {file}\n")
    result = runner.invoke(darwin_app, ["run", "--events", "1K", "--config", str(config)])
    clean_error(result, "error:", str(file))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_config_errors_are_one_line_in_every_command(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mode: compiled\nstate_path: 5\n")
    for command in (["info"], ["run", "--events", "1K"]):
        result = runner.invoke(darwin_app, [*command, "--config", str(bad)])
        clean_error(result, "line 2", "'state_path'", str(bad))
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
