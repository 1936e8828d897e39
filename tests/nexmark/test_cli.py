"""The CLIs end to end: a small Nexmark run checked against Spark, the main job, plots, bad input."""

import json

import pytest
from typer.testing import CliRunner

from darwin.cli import app as darwin_app
from darwin.runtime import job
from nexmark.cli import app as nexmark_app
from nexmark.queries import QUERIES

runner = CliRunner()


def fits_80_columns(output):
    """Every line within 80 characters, and no cell cut short by rich."""
    assert "…" not in output, output
    assert all(len(line) <= 80 for line in output.splitlines()), output


THROUGH_THE_CLI = ("q7", "q19")  # a join, and a top-N compared where ties cannot change


def test_run_times_and_compares_queries_on_both_engines(tmp_path):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", *THROUGH_THE_CLI, "--events", "10K", "--engine", "darwin,spark",
                                         "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert {(r["query"], r["engine"]) for r in rows} == {(q, e) for q in THROUGH_THE_CLI for e in ("darwin", "spark")}
    assert all(r["equal"] is True and r["error"] is None for r in rows)
    assert all(r["rows"] > 0 and r["seconds"] > 0 and r["collect_seconds"] > 0 for r in rows)
    from darwin.spark import spark_session

    spark_cores = spark_session().sparkContext.defaultParallelism
    for r in rows:
        assert r["cores"] == (1 if r["engine"] == "darwin" else spark_cores)
        assert r["events_per_second_per_core"] == pytest.approx(r["events"] / r["seconds"] / r["cores"])
        if r["engine"] == "darwin":  # append-only results: the blackhole received the collected rows
            assert r["output_rows"] == r["rows"] and r["cpu_seconds"] > 0
            spark = next(s for s in rows if s["query"] == r["query"] and s["engine"] == "spark")
            assert r["speedup_per_core"] == pytest.approx(r["events_per_second_per_core"]
                                                          / spark["events_per_second_per_core"])
        else:
            assert r["output_rows"] is None and r["speedup_per_core"] is None and r["cpu_seconds"] is None
    lines = [line.split() for line in result.output.splitlines()]
    table = [cells for cells in lines if cells and cells[0] in QUERIES]
    assert len(table) == 2 * len(THROUGH_THE_CLI) and all(cells[-1] == "yes" for cells in table)
    fits_80_columns(result.output)
    chart = tmp_path / "chart.png"
    result = runner.invoke(nexmark_app, ["plot", str(out), "--out", str(chart)])
    assert result.exit_code == 0, result.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def twin_inputs(tmp_path_factory):
    """The Parquet files ``nexmark run`` gives the PySpark twins, written once."""
    from nexmark import bench

    return bench.parquet_for(TWIN_EVENTS, 0, tmp_path_factory.mktemp("twin-data"))


TWIN_EVENTS = 10_000


@pytest.mark.parametrize("name", list(QUERIES))
def test_every_query_equals_its_spark_twin_as_nexmark_run_compares_them(spark, twin_inputs, name):
    """What ``nexmark run all --engine darwin,spark`` checks of each query, without its timed runs (the
    test above times a few): Darwin's result, collected and into the blackhole, against the twin's."""
    import darwin as dw
    from nexmark import bench

    assert name in bench.spark_twins()
    darwin, _ = bench.collect_darwin(name, TWIN_EVENTS, 0, dw.Config())
    twin, _ = bench.collect_spark(name, twin_inputs)
    compared = QUERIES[name].compared
    if compared is not None:
        darwin, twin = darwin.select(list(compared)), twin.select(list(compared))
    assert darwin.num_rows > 0
    assert bench.difference(darwin, twin) is None, bench.difference(darwin, twin)
    assert bench.run_darwin(name, TWIN_EVENTS, 0, dw.Config())[2] == darwin.num_rows  # every result appends


def test_spark_is_timed_into_its_noop_writer_and_a_query_without_a_twin_runs_on_darwin_alone(tmp_path,
                                                                                             monkeypatch):
    from pyspark.sql import DataFrameWriter

    from nexmark import bench

    formats = []
    original = DataFrameWriter.format

    def spy(self, source):
        formats.append(source)
        return original(self, source)
    monkeypatch.setattr(DataFrameWriter, "format", spy)
    monkeypatch.setattr(bench, "spark_twins", lambda: frozenset({"q1"}))
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q1", "q2", "--events", "5K", "--engine", "darwin,spark",
                                         "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert formats == ["noop", "noop"]  # q1's warm-up and its timed run; the collect is separate
    rows = {(r["query"], r["engine"]): r for r in json.loads(out.read_text())}
    assert set(rows) == {("q1", "darwin"), ("q1", "spark"), ("q2", "darwin")}
    assert rows["q1", "darwin"]["equal"] is True and rows["q1", "spark"]["equal"] is True
    assert rows["q2", "darwin"]["equal"] is None and rows["q2", "darwin"]["speedup_per_core"] is None
    q2 = next(line.split() for line in result.output.splitlines() if line.startswith("q2 "))
    assert q2[1] == "darwin" and q2[-1] == "-"


def test_results_that_differ_are_shown_and_exit_1(tmp_path, monkeypatch):
    from nexmark import bench

    collect = bench.collect_darwin

    def one_row_short(*args):
        table, seconds = collect(*args)
        return table.slice(1), seconds
    monkeypatch.setattr(bench, "collect_darwin", one_row_short)
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q2", "--events", "5K", "--engine", "darwin,spark",
                                         "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert result.exit_code == 1, result.output
    assert "q2: darwin and spark differ" in result.output and "row counts differ" in result.output
    assert [r["equal"] for r in json.loads(out.read_text())] == [False, False]
    assert [line.split()[-1] for line in result.output.splitlines() if line.startswith("q2 ")] == ["NO", "NO"]


def test_darwin_is_timed_into_a_blackhole_after_an_untimed_warm_up_and_collected_apart(monkeypatch):
    sinks = []
    original = job.Driver.__init__

    def spy(self, plan, sink, config, control=None):
        sinks.append(type(sink).__name__)
        original(self, plan, sink, config, control)
    monkeypatch.setattr(job.Driver, "__init__", spy)
    result = runner.invoke(nexmark_app, ["run", "q12", "--events", "5K", "--engine", "darwin"])
    assert result.exit_code == 0, result.output
    assert sinks == ["Blackhole", "Blackhole", "Collect"]  # warm-up, timed run, the untimed collect
    sinks.clear()
    result = runner.invoke(nexmark_app, ["run", "q12", "--events", "5K", "--engine", "darwin", "--no-collect"])
    assert result.exit_code == 0, result.output
    assert sinks == ["Blackhole", "Blackhole"]


def test_all_is_every_query_in_order_once():
    from nexmark import bench

    assert bench.expand(["all"]) == list(QUERIES)
    assert bench.expand(["q5", "all", "q1"]) == ["q5", *(q for q in QUERIES if q != "q5")]


def test_run_on_darwin_alone(tmp_path):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q1", "q5", "q12", "--events", "3K", "--engine", "darwin",
                                         "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert [r["query"] for r in rows] == ["q1", "q5", "q12"]
    assert all(r["equal"] is None and r["speedup_per_core"] is None and r["rows"] > 0 for r in rows)
    assert all(r["output_rows"] == r["rows"] for r in rows)
    table = [line.split() for line in result.output.splitlines() if line.split()[:1] and line.split()[0] in QUERIES]
    assert [cells[0] for cells in table] == ["q1", "q5", "q12"] and all(cells[-1] == "-" for cells in table)
    fits_80_columns(result.output)


def test_no_collect_only_times(tmp_path):
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q1", "q12", "--events", "3K", "--engine", "darwin",
                                         "--no-collect", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert all(r["rows"] is None and r["collect_seconds"] is None and r["equal"] is None for r in rows)
    assert all(r["seconds"] > 0 and r["output_rows"] > 0 for r in rows)


def test_a_failing_run_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    from nexmark import bench

    run = bench.run_darwin

    def q2_fails(query, *args):
        if query == "q2":
            raise RuntimeError("the engine broke\nsecond line")
        return run(query, *args)
    monkeypatch.setattr(bench, "run_darwin", q2_fails)
    out = tmp_path / "m.json"
    result = runner.invoke(nexmark_app, ["run", "q1", "q2", "q12", "--events", "3K", "--engine", "darwin",
                                         "--json", str(out)])
    assert result.exit_code == 1, result.output
    assert "q2 failed on darwin" in result.output and "the engine broke" in result.output
    rows = {r["query"]: r for r in json.loads(out.read_text())}
    assert rows["q2"]["error"] == "RuntimeError: the engine broke" and rows["q2"]["seconds"] is None
    assert rows["q1"]["error"] is None and rows["q12"]["rows"] > 0
    q2 = next(line.split() for line in result.output.splitlines() if line.startswith("q2 "))
    assert q2[-1] == "error"


def measurement(query, engine, **fields):
    from nexmark.bench import Measurement

    return Measurement(query, engine, **{"events": 10_000_000, "cores": 1, **fields})


def test_the_result_table_fits_80_columns_with_human_units():
    import io

    from rich.console import Console

    from nexmark.cli import result_table

    worst = [  # the widest figures each column can hold
        measurement("q23", "darwin", seconds=5996.0, output_rows=999_949_999, collect_seconds=0.0094,
                    rows=123_456_789_012, equal=False, speedup_per_core=99.94),
        measurement("q23", "spark", cores=64, seconds=0.994, collect_seconds=99.94, rows=59_000, equal=False),
        measurement("ysb", "darwin", seconds=0.394, output_rows=25_400_000, collect_seconds=1.2, rows=100,
                    equal=True, speedup_per_core=0.9949),
        measurement("agg", "spark", cores=2, error="Py4JJavaError: the JVM died"),
    ]
    buffer = io.StringIO()
    Console(file=buffer, width=80, color_system=None).print(result_table(worst, 10_000_000, 0))
    output = buffer.getvalue()
    fits_80_columns(output)
    cells = {tuple(line.split()[:2]): line.split() for line in output.splitlines() if line[:3] in ("q23", "ysb", "agg")}
    assert cells["q23", "darwin"][2:] == ["99.9m", "1.7K", "99.9x", "1.0G", "9.4ms", "123G", "NO"]
    assert cells["q23", "spark"][2:] == ["0.99s", "157K", "-", "-", "99.9s", "59.0K", "NO"]
    assert cells["ysb", "darwin"][2:] == ["0.39s", "25.4M", "0.99x", "25.4M", "1.2s", "100", "yes"]
    assert cells["agg", "spark"][2:] == ["-", "-", "-", "-", "-", "-", "error"]


@pytest.mark.parametrize("value, text", [(0, "0"), (999, "999"), (1_000, "1.0K"), (59_000, "59.0K"),
                                         (99_949, "99.9K"), (99_950, "100K"), (999_499, "999K"), (999_500, "1.0M"),
                                         (25_400_000, "25.4M"), (1.5e9, "1.5G"), (523.7, "524"), (52.37, "52.4"),
                                         (None, "-")])
def test_counts_are_in_human_units(value, text):
    from nexmark.cli import count

    assert count(value) == text


@pytest.mark.parametrize("value, text", [(0.0042, "4.2ms"), (0.042, "42ms"), (0.43, "0.43s"), (1.2, "1.2s"),
                                         (99.94, "99.9s"), (123.4, "123s"), (1230, "20.5m"), (5400, "90.0m"),
                                         (7200, "2.0h"), (None, "-")])
def test_seconds_are_in_human_units(value, text):
    from nexmark.cli import seconds

    assert seconds(value) == text


def test_plot_draws_every_query_from_a_small_json(tmp_path):
    rows = [{"query": q, "engine": e, "events": 1000, "cores": c, "seconds": s, "rows": 10, "equal": True,
             "speedup_per_core": x, "events_per_second_per_core": None if s is None else 1000 / s / c}
            for q in ("q0", "q7", "ysb")
            for e, c, s, x in (("darwin", 1, 0.01, 25.0), ("spark", 2, 0.5 if q != "q7" else None, None))]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(rows))
    chart = tmp_path / "chart.png"
    result = runner.invoke(nexmark_app, ["plot", str(path), "--out", str(chart)])
    assert result.exit_code == 0, result.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("text, fragment", [("not json", "not JSON"), ("[]", "no measurements"),
                                            ('[{"query": "q1"}]', "row 0 lacks")])
def test_plot_refuses_a_file_it_cannot_read(tmp_path, text, fragment):
    path = tmp_path / "m.json"
    path.write_text(text)
    clean_error(runner.invoke(nexmark_app, ["plot", str(path), "--out", str(tmp_path / "c.png")]), fragment)


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
    from nexmark.spark_queries import QUERIES as SPARK

    result = runner.invoke(nexmark_app, ["list"])
    assert result.exit_code == 0
    listed = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines()
              if line.startswith("│") and line.split("│")[1].strip()}
    # every Darwin query also runs on Spark through the translation (darwin-spark)
    assert listed == {q: "darwin, spark, darwin-spark" if q in SPARK else "darwin, darwin-spark" for q in QUERIES}


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


def test_info_shows_a_deployment_files_config(tmp_path):
    """Its --config help says 'a YAML deployment', and a deployment was refused: unknown config key(s)
    ['config', 'query', 'sinks', 'sources']. Now its config: section is shown, paths resolved as a run does."""
    job = tmp_path / "job.yaml"
    job.write_text("sources:\n  bid: {type: nexmark, events: 10}\nquery:\n  sql: SELECT auction FROM bid\n"
                   "sinks:\n  out: {type: blackhole}\nconfig:\n  batch_size: 123\n  checkpoint_dir: chk\n")
    result = runner.invoke(darwin_app, ["info", "--config", str(job)])
    assert result.exit_code == 0, result.output
    assert "config.batch_size: 123" in result.output
    assert f"config.checkpoint_dir: {tmp_path / 'chk'}" in result.output
    job.write_text(job.read_text().replace("batch_size: 123", "batch_sise: 123"))
    result = runner.invoke(darwin_app, ["info", "--config", str(job)])
    assert result.exit_code == 2 and "job.yaml:8: key 'config.batch_sise': unknown key" in result.output


def test_main_job_given_a_deployment_as_config_says_how_to_run_it(tmp_path):
    """--config's help said 'a YAML deployment', and one given there failed with unknown config key(s)
    ['config', 'query', 'sinks', 'sources']."""
    job = tmp_path / "job.yaml"
    job.write_text("sources:\n  bid: {type: nexmark, events: 10}\nquery:\n  sql: SELECT auction FROM bid\n"
                   "sinks:\n  out: {type: blackhole}\n")
    result = runner.invoke(darwin_app, ["run", "--events", "1K", "--config", str(job)])
    assert result.exit_code == 2
    assert f"{job} is a deployment file (it has 'sources'), not an engine config: run it as `darwin run {job}`" \
        in " ".join(result.output.split())


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


@pytest.mark.parametrize("args", [
    ["run", "q1", "--events", "1K", "--engine", "darwin", "--json", "{missing}/m.json"],
    ["run", "q1", "--events", "1K", "--engine", "darwin", "--json", "{file}/m.json"],
    ["sustain", "ysb", "--start", "1K", "--steps", "1", "--step-seconds", "0.1", "--json", "{missing}/s.json"],
    ["plot", "{measurements}", "--out", "{missing}/chart.png"],
    ["generate", "--events", "1K", "--out", "{file}/data"],
])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, monkeypatch, args):
    from nexmark import bench, sustain

    def no_work(*a, **k):
        raise AssertionError("ran before the output path was checked")

    monkeypatch.setattr(bench, "run_all", no_work)
    monkeypatch.setattr(sustain, "find_sustainable", no_work)
    (tmp_path / "a-file").write_text("")
    (tmp_path / "m.json").write_text("[]")
    paths = {"missing": tmp_path / "no" / "such", "file": tmp_path / "a-file", "measurements": tmp_path / "m.json"}
    args = [a.format(**paths) for a in args]
    result = runner.invoke(nexmark_app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and ("does not exist" in result.output or "is a file" in result.output)


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
