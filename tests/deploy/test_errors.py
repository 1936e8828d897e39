"""A deployment file's mistakes are errors naming the file, the line and the key."""

import textwrap

import pytest
from config_errors import error_of
from typer.testing import CliRunner

from darwin import deploy
from darwin.cli import app

GOOD = """\
sources:
  bids:
    type: csv
    path: data/bids.csv
    schema: {ts: "timestamp[ms]", auction: int64, price: int64}
    time: ts
query:
  sql: |
    SELECT auction, price * 2 AS double_price
    FROM bids
    WHERE price > 1
sinks:
  out:
    type: parquet
    path: out/doubled
config:
  parallelism: 1
"""


@pytest.fixture
def job(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "bids.csv").write_text("ts,auction,price\n2026-03-01 10:00:00,1,5\n"
                                                "2026-03-01 10:00:01,2,1\n")

    def write(text: str = GOOD, name: str = "job.yaml"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


def test_the_good_file_runs(job):
    result = deploy.run(deploy.load(job()))
    assert result.metrics["output_rows"] == 1
    assert [f.name for f in result.files] == ["part-000001.parquet"]


@pytest.mark.parametrize("header", [True, False])
def test_a_csv_sink_writes_a_header_or_none_as_its_key_says(job, header):
    """The CSV sink's header= had no YAML key: a deployment always wrote a header row (a file a
    headerless reader, as Flink's filesystem CSV, read a row of column names from)."""
    text = GOOD.replace("    type: parquet\n    path: out/doubled", f"    type: csv\n    path: out/doubled\n"
                                                                     f"    header: {str(header).lower()}")
    result = deploy.run(deploy.load(job(text)))
    lines = result.files[0].read_text().splitlines()
    assert lines == (['"auction","double_price"'] if header else []) + ["1,10"]


def test_unknown_key_names_its_line_and_the_known_keys(job):
    message = error_of(job(GOOD.replace("    time: ts", "    tme: ts")))
    assert message.startswith("job.yaml:6: key 'sources.bids.tme': unknown key")
    assert "'time'" in message


def test_unknown_top_level_key(job):
    assert error_of(job(GOOD + "paralelism: 2\n")).startswith("job.yaml:18: key 'paralelism': unknown key")


def test_bad_choice_names_the_choices(job):
    message = error_of(job(GOOD.replace("type: csv", "type: jsn")))
    assert message == ("job.yaml:3: key 'sources.bids.type': expected one of ['parquet', 'csv', 'ipc', 'kafka', "
                       "'nexmark'], got 'jsn'")


def test_bad_type_of_a_value(job):
    message = error_of(job(GOOD.replace("    time: ts", "    time: ts\n    rate_limit: fast")))
    assert message.startswith("job.yaml:7: key 'sources.bids.rate_limit': expected a positive number, got 'fast'")


@pytest.mark.parametrize("old, new, message", [
    ("path: data/bids.csv", "path: 5", "job.yaml:4: key 'sources.bids.path': expected a non-empty string, got 5"),
    ("path: out/doubled", "path: [a, b]", "job.yaml:15: key 'sinks.out.path': expected a non-empty string, got a list"),
    ("parallelism: 1", "parallelism: 1\n  checkpoint_dir: null\n  state_path: 7",
     "job.yaml:19: key 'config.state_path': expected a non-empty string, got 7"),
])
def test_a_path_that_is_not_text_is_named_once(job, old, new, message):
    """The file, line and key were given twice: 'job.yaml:4: key 'sources.bids.path': job.yaml:4: key ...'."""
    assert error_of(job(GOOD.replace(old, new))) == message


def test_bad_column_type_name(job):
    message = error_of(job(GOOD.replace("auction: int64", "auction: int46")))
    assert message.startswith("job.yaml:5: key 'sources.bids.schema.auction': unknown type 'int46'")


def test_bad_engine_setting_names_config_key_and_line(job):
    message = error_of(job(GOOD.replace("parallelism: 1", "parallelism: 0")))
    assert message.startswith("job.yaml:17: key 'config.parallelism': expected an integer >= 1, got 0")
    message = error_of(job(GOOD.replace("parallelism: 1", "engine: flink")))
    assert message.startswith("job.yaml:17: key 'config.engine': expected one of ['darwin', 'spark']")


def test_missing_key_names_its_parent_and_line(job):
    message = error_of(job(GOOD.replace("    path: out/doubled\n", "")))
    assert message == "job.yaml:13: key 'sinks.out': missing required key 'path'"
    message = error_of(job(GOOD.replace("query:", "qury:")))
    assert message.startswith("job.yaml:7: key 'qury': unknown key")


def test_bad_sql_names_the_file_line_and_the_sql_line_and_column(job):
    message = error_of(job(GOOD.replace("FROM bids", "FROM bidz")))
    assert message.startswith("job.yaml:10: key 'query.sql': SQL line 2, column 6 (file column 10): ")
    assert "bidz" in message
    message = error_of(job(GOOD.replace("price * 2 AS", "price * AS")))
    assert message.startswith("job.yaml:9: key 'query.sql': SQL line 1, column ")


def test_set_statements_of_the_sql_change_the_config_and_the_plan(job):
    """query.sql's SET wins over the file's config: section (as a Flink session's SET over
    flink-conf.yaml); table.exec.state.ttl reaches the query's updating aggregation."""
    sets = ("    SET 'parallelism.default' = '2';\n    SET table.exec.state.ttl = 1h;\n"
            "    SET 'pipeline.name' = 'doubled';\n")
    text = GOOD.replace("  sql: |\n    SELECT auction, price * 2 AS double_price\n    FROM bids\n    WHERE price > 1\n",
                        f"  sql: |\n{sets}    SELECT auction, COUNT(*) AS n FROM bids GROUP BY auction\n")
    text = text.replace("    type: parquet\n    path: out/doubled", "    type: parquet\n    path: out/doubled\n"
                                                                 "    mode: upsert\n    key: [auction]")
    planned = deploy.jobs.plan(deploy.load(job(text)))
    assert planned.config.parallelism == 2
    assert "state_ttl=3600000ms" in planned.table.explain(planned.config)
    assert deploy.run(deploy.load(job(text))).metrics["output_rows"] == 2
    message = error_of(job(text.replace("1h", "soon")))
    assert message.startswith("job.yaml:10: key 'query.sql': SQL line 2, column 28 (file column 32): SET "
                              "'table.exec.state.ttl' = 'soon': expected a duration")


def test_a_set_directory_of_the_sql_stays_under_the_deployment_directory(job, tmp_path):
    """SET 'execution.checkpointing.dir' and 'state.backend.rocksdb.localdir' in query.sql are
    resolved against the file's directory and kept under it, as its CREATE TABLE paths are."""
    def with_sets(*sets: str) -> str:
        return GOOD.replace("  sql: |\n", "  sql: |\n" + "".join(f"    {s}\n" for s in sets))
    sets = ("SET 'state.backend.type' = 'rocksdb';", "SET 'state.backend.rocksdb.localdir' = 'state';",
            "SET 'execution.checkpointing.dir' = 'file://checkpoints';",
            "SET 'execution.checkpointing.interval' = '1 s';")
    deployment = deploy.load(job(with_sets(*sets)))
    config = deploy.jobs.run_config(deployment)
    assert (config.state, config.state_path, config.checkpoint_dir) == (
        "rocksdb", str(tmp_path.resolve() / "state"), str(tmp_path.resolve() / "checkpoints"))
    assert deploy.jobs.plan(deployment).config == config
    assert deploy.run(deployment).metrics["output_rows"] == 1
    assert any((tmp_path / "checkpoints").iterdir())
    message = error_of(job(with_sets("SET 'pipeline.name' = 'x';", "SET 'state.checkpoints.dir' = '../../else';")))
    assert message.startswith("job.yaml:10: key 'query.sql': SQL line 2, column 5 (file column 9): SET "
                              "'state.checkpoints.dir' = '../../else': the path '../../else' leads outside"), message


def test_path_leaving_the_config_directory_is_refused_unless_allowed(job, tmp_path):
    message = error_of(job(GOOD.replace("path: out/doubled", "path: ../../elsewhere")))
    assert message.startswith("job.yaml:15: key 'sinks.out.path': the path '../../elsewhere' leads outside")
    assert "allow_paths_outside" in message
    outside = tmp_path.parent / f"{tmp_path.name}-out"
    allowed = job("allow_paths_outside: true\n" + GOOD.replace("path: out/doubled", f"path: {outside}"))
    assert deploy.load(allowed).sinks[0].options["path"] == outside


@pytest.mark.parametrize("path", ["${OUT}/doubled", "$OUT/doubled", "out/$RUN_ID"])
def test_an_environment_variable_in_a_path_is_refused(job, tmp_path, path):
    """It was taken as a directory named '${OUT}' under the file's directory, and the job wrote there."""
    message = error_of(job(GOOD.replace("path: out/doubled", f"path: {path}")))
    assert message.startswith(f"job.yaml:15: key 'sinks.out.path': the path {path!r} holds '$")
    assert "environment variables are not expanded" in message
    assert not any(tmp_path.glob("$*")) and not (tmp_path / "out").exists()


def test_missing_input_file_names_the_source(job):
    message = error_of(job(GOOD.replace("data/bids.csv", "data/nope.csv")))
    assert message.startswith("job.yaml:2: key 'sources.bids': CSV file")
    assert "does not exist" in message


def test_a_sink_that_cannot_take_the_result(job):
    text = GOOD.replace("SELECT auction, price * 2 AS double_price\n    FROM bids\n    WHERE price > 1",
                        "SELECT auction, count(*) AS n FROM bids GROUP BY auction")
    message = error_of(job(text.replace("path: out/doubled", "path: out/doubled\n    mode: append")))
    assert message.startswith("job.yaml:11: key 'sinks.out': ")  # the SQL is two lines shorter
    assert "updating" in message


def test_python_query_errors(job, tmp_path):
    (tmp_path / "myjob.py").write_text("def double(bids):\n    return bids.select('auction')\n"
                                       "def nothing(bids):\n    return 1\n")
    text = GOOD.replace("  sql: |\n    SELECT auction, price * 2 AS double_price\n    FROM bids\n    WHERE price > 1\n",
                        "  python: myjob:double\n")
    assert deploy.plan(deploy.load(job(text))).table.columns == ["auction"]
    assert error_of(job(text.replace("myjob:double", "myjob:nothing"))).startswith(
        "job.yaml:8: key 'query.python': myjob:nothing returned int; it must return a dw.Table")
    assert error_of(job(text.replace("myjob:double", "myjob:missing"))).startswith(
        "job.yaml:8: key 'query.python': module 'myjob' has no function 'missing'")
    assert error_of(job(text.replace("myjob:double", "my job"))).startswith(
        "job.yaml:8: key 'query.python': expected 'package.module:function'")


def test_one_sink_only(job):
    text = GOOD.replace("config:", "  more:\n    type: blackhole\nconfig:")
    assert "exactly one sink" in error_of(job(text))


def test_invalid_yaml(job):
    assert error_of(job("sources: [\n")).startswith("job.yaml: not valid YAML:")


def test_cli_validate_explain_and_run(job):
    runner = CliRunner()
    path = job()
    ok = runner.invoke(app, ["validate", str(path)])
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith(f"OK {path}")
    assert "result: auction int64, double_price int64" in ok.output
    plans = runner.invoke(app, ["explain", str(path)])
    assert plans.exit_code == 0 and "== logical plan ==" in plans.output
    ran = runner.invoke(app, ["run", str(path)])
    assert ran.exit_code == 0, ran.output
    assert "rows in 2, rows out 1" in ran.output and "part-000001.parquet" in ran.output
    bad = runner.invoke(app, ["validate", str(job(GOOD.replace("type: csv", "type: jsn"), "bad.yaml"))])
    assert bad.exit_code == 2
    assert "bad.yaml:3: key 'sources.bids.type'" in bad.output
    not_a_file = runner.invoke(app, ["run", "q5"])
    assert not_a_file.exit_code == 2 and "--query" in not_a_file.output


def test_cli_shows_the_parallelism_a_set_of_the_sql_gives(job):
    """darwin validate and run printed the config: section's parallelism while the job ran with the
    one query.sql's SET gave."""
    path = job(GOOD.replace("  sql: |\n", "  sql: |\n    SET 'parallelism.default' = '2';\n"))
    for command in ("validate", "run"):
        shown = CliRunner().invoke(app, [command, str(path)])
        assert shown.exit_code == 0, shown.output
        assert "parallelism 2" in shown.output and "parallelism 1" not in shown.output


def test_run_fresh_replaces_the_output_of_an_earlier_run(job):
    runner = CliRunner()
    path = job()
    assert runner.invoke(app, ["run", str(path)]).exit_code == 0
    again = runner.invoke(app, ["run", str(path)])
    assert again.exit_code == 2 and "holds the output of an earlier run" in again.output
    assert "job.yaml:15: key 'sinks.out.path'" in again.output and "--fresh" in again.output
    assert "darwin reset" not in again.output  # the job takes no checkpoints: there is nothing to reset
    fresh = runner.invoke(app, ["run", str(path), "--fresh"])
    assert fresh.exit_code == 0, fresh.output
    assert [p.name for p in (path.parent / "out" / "doubled").glob("part-*")] == ["part-000001.parquet"]
    with_checkpoints = job(GOOD + "  checkpoint_dir: checkpoints\n", "ckpt.yaml")
    refused = runner.invoke(app, ["run", str(with_checkpoints), "--fresh"])
    assert refused.exit_code == 2 and "darwin reset" in refused.output


def test_an_engine_only_config_is_not_a_deployment(job):
    message = error_of(job("state: memory\nparallelism: 1\n"))
    assert message.startswith("job.yaml:1: this is an engine config") and "--config" in message


def test_a_source_declares_its_primary_key(job):
    keyed = GOOD.replace("    time: ts\n", "    time: ts\n    primary_key: auction\n", 1)
    scan = deploy.plan(deploy.load(job(keyed))).table.plan
    while scan.inputs:
        scan = scan.inputs[0]
    assert scan.primary_key == ("auction",)
    unknown = GOOD.replace("    time: ts\n", "    time: ts\n    primary_key: [nope]\n", 1)
    message = error_of(job(unknown))
    assert "job.yaml:2: key 'sources.bids'" in message and "unknown column 'nope' in primary_key" in message
