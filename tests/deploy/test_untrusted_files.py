"""A deployment file is input to check, not to trust: its YAML holds plain values, each key once; every
path it makes the job read or write stays under its directory, including the paths its SQL declares
and the entries of a source directory; its sink's directories are told apart before anything runs."""

import os
import textwrap

import pytest
from config_errors import error_of
from typer.testing import CliRunner

from darwin import deploy
from darwin.cli import app
from darwin.errors import ConfigError

runner = CliRunner()

JOB = """\
sources:
  bids:
    type: csv
    path: data/bids.csv
    schema: {auction: int64, price: int64}
query:
  sql: |
    SELECT auction, price FROM bids
sinks:
  out:
    type: csv
    path: out/rows
"""


@pytest.fixture
def job(tmp_path):
    """A job directory (tmp_path/jobs/team) with data/bids.csv, and a secret beside it, outside."""
    directory = tmp_path / "jobs" / "team"
    (directory / "data").mkdir(parents=True)
    (directory / "data" / "bids.csv").write_text("auction,price\n1,5\n2,7\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.csv").write_text("hunter2\n")

    def write(text: str = JOB, name: str = "job.yaml"):
        path = directory / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


# -- the YAML: plain values, each key once ------------------------------------------------------------

SPARK = JOB + """\
config:
  engine: spark
  spark:
    master: "spark://prod:7077"
    conf: {spark.executor.memory: 64g}
    master: "local[1]"
"""


def test_a_key_set_twice_inside_a_value_is_refused_with_its_line(job):
    assert error_of(job(SPARK)) == "job.yaml:18: key 'config.spark.master': set twice (first on line 16)"
    twice_in_conf = SPARK.replace('    master: "local[1]"\n', "").replace(
        "{spark.executor.memory: 64g}", "{spark.executor.memory: 64g, spark.executor.memory: 1g}")
    assert error_of(job(twice_in_conf)).startswith("job.yaml:17: key 'config.spark.conf.spark.executor.memory': "
                                                   "set twice (first on line 17)")


def test_a_key_set_twice_in_an_avro_schema_is_refused(job):
    text = """\
    sources:
      bids:
        type: kafka
        topic: bids
        bootstrap_servers: 127.0.0.1:9
        format: avro
        avro_schema:
          type: record
          name: Bid
          fields:
            - {name: auction, type: long, type: string}
    query:
      sql: SELECT auction FROM bids
    sinks:
      out: {type: blackhole}
    """
    with pytest.raises(ConfigError, match=r"^job\.yaml:11: key 'sources\.bids\.avro_schema\.fields\[0\]\.type': "
                                          r"set twice \(first on line 11\)$"):
        deploy.load(job(text))


@pytest.mark.parametrize("value, line, key, tag", [
    ("name: !!python/object/apply:os.system ['echo PWNED']\n", 13, "name", "!!python/object/apply:os.system"),
    ("name: !env JOB_NAME\n", 13, "name", "!env"),
    ("config:\n  parallelism: !!python/name:os.system\n", 14, "config.parallelism", "!!python/name:os.system"),
])
def test_a_yaml_tag_is_a_one_line_error_naming_key_and_line(job, value, line, key, tag):
    path = job(JOB + value)
    message = error_of(path)
    assert message.startswith(f"job.yaml:{line}: key {key!r}: the YAML tag {tag!r} is not supported")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert f"job.yaml:{line}: key {key!r}" in result.output and "Traceback" not in result.output


def test_a_value_its_explicit_tag_cannot_take_names_key_and_line(job):
    message = error_of(job(JOB + "config:\n  parallelism: !!int two\n"))
    assert message == "job.yaml:14: key 'config.parallelism': the value 'two' is not what its YAML tag '!!int' says"


# -- paths in the SQL are the file's paths ------------------------------------------------------------

def ddl(path: str, fmt: str = "csv") -> str:
    return (f"CREATE TABLE s (secret STRING) WITH ('connector' = 'filesystem', 'path' = '{path}', "
            f"'format' = '{fmt}');")


def sql_job(statements: str) -> str:
    return JOB.replace("    SELECT auction, price FROM bids\n", textwrap.indent(statements, "    "))


@pytest.mark.parametrize("path", ["{outside}/secret.csv", "../../outside/secret.csv", "file://{outside}/secret.csv"])
def test_a_create_table_path_outside_the_directory_is_refused_at_its_sql_line(job, tmp_path, path):
    path = path.format(outside=tmp_path / "outside")
    text = sql_job(f"{ddl(path)}\nSELECT secret FROM s\n")
    message = error_of(job(text))
    assert message.startswith("job.yaml:8: key 'query.sql': SQL line 1, column ")
    assert "table s: the path" in message and "leads outside the deployment file's directory" in message
    assert not (tmp_path / "jobs" / "team" / "out").exists()


def test_an_options_hint_path_outside_the_directory_is_refused_at_its_sql_line(job, tmp_path):
    """SECURITY: a hint's 'path' (`FROM s /*+ OPTIONS('path' = ...) */`) is held to the rule of CREATE TABLE's;
    before, the hint was dropped, and now that it is read it must not reach outside either."""
    (tmp_path / "jobs" / "team" / "data" / "more.csv").write_text("9\n")
    outside = tmp_path / "outside" / "secret.csv"
    text = sql_job(f"{ddl('data/more.csv')}\nSELECT secret FROM s /*+ OPTIONS('path' = '{outside}') */\n")
    message = error_of(job(text))
    assert message.startswith("job.yaml:9: key 'query.sql': SQL line 2, column 34 (file column 38): table s: the path")
    assert "table s: the path" in message and "leads outside the deployment file's directory" in message
    inside = sql_job(f"{ddl(str(outside))}\nSELECT secret FROM s /*+ OPTIONS('path' = 'data/more.csv') */\n")
    assert "leads outside" in error_of(job(inside))  # the declared path is checked where it is declared
    relative = sql_job(f"{ddl('data/bids.csv')}\nSELECT secret FROM s /*+ OPTIONS('path' = 'data/more.csv') */\n")
    assert deploy.plan(deploy.load(job(relative))).table.collect().to_pylist() == [{"secret": "9"}]


def test_a_create_table_path_is_relative_to_the_deployment_file(job, tmp_path, monkeypatch):
    (tmp_path / "jobs" / "team" / "data" / "more.csv").write_text("9\n")
    monkeypatch.chdir(tmp_path / "outside")  # a relative path meant the working directory's
    (tmp_path / "outside" / "data").mkdir()
    (tmp_path / "outside" / "data" / "more.csv").write_text("hunter2\n")
    text = sql_job(f"{ddl('data/more.csv')}\nSELECT secret FROM s\n")
    assert deploy.plan(deploy.load(job(text))).table.collect().to_pylist() == [{"secret": "9"}]


def test_a_linked_deployment_file_resolves_every_path_against_one_directory(job, tmp_path):
    """Run through a link in another directory, a source's 'path' resolved against the directory of the file the
    link leads to, and a CREATE TABLE 'path' against the link's: the same 'data/more.csv' read two files."""
    (tmp_path / "jobs" / "team" / "data" / "more.csv").write_text("9\n")
    (tmp_path / "elsewhere" / "data").mkdir(parents=True)
    (tmp_path / "elsewhere" / "data" / "more.csv").write_text("hunter2\n")
    text = sql_job(f"{ddl('data/more.csv')}\nSELECT secret FROM s\n")
    real = job(text)
    link = tmp_path / "elsewhere" / "job.yaml"
    link.symlink_to(real)
    deployment = deploy.load(link)
    assert deployment.sources[0].options["path"] == real.parent / "data" / "bids.csv"
    assert deploy.plan(deployment).table.collect().to_pylist() == [{"secret": "9"}]


def test_allow_paths_outside_lifts_the_rule_for_sql_paths_too(job, tmp_path):
    text = "allow_paths_outside: true\n" + sql_job(f"{ddl(str(tmp_path / 'outside' / 'secret.csv'))}\n"
                                                   "SELECT secret FROM s\n")
    assert deploy.plan(deploy.load(job(text))).table.collect().to_pylist() == [{"secret": "hunter2"}]


def test_an_insert_into_in_a_deployment_is_refused_not_dropped(job, tmp_path):
    text = sql_job("CREATE TABLE t (auction BIGINT) WITH ('connector' = 'filesystem', 'path' = 'elsewhere', "
                   "'format' = 'csv');\nINSERT INTO t SELECT auction FROM bids;\nSELECT auction, price FROM bids\n")
    message = error_of(job(text))
    assert message.startswith("job.yaml:9: key 'query.sql': SQL line 2, column 13 (file column 17): INSERT INTO t: "
                              "a deployment's query is one SELECT")
    assert not (tmp_path / "jobs" / "team" / "elsewhere").exists()


# -- a source directory's entries ---------------------------------------------------------------------

@pytest.mark.parametrize("kind, name, schema", [("csv", "a.csv", "\n    schema: {secret: string}"),
                                                ("parquet", "a.parquet", ""), ("ipc", "a.arrow", "")])
def test_a_link_inside_a_source_directory_that_leads_outside_is_refused(job, tmp_path, kind, name, schema):
    directory = tmp_path / "jobs" / "team" / "inbox"
    directory.mkdir()
    os.symlink(tmp_path / "outside" / "secret.csv", directory / name)
    text = JOB.replace("type: csv\n    path: data/bids.csv\n    schema: {auction: int64, price: int64}",
                       f"type: {kind}\n    path: inbox{schema}").replace("auction, price", "*")
    with pytest.raises(ConfigError) as e:
        deploy.load(job(text))
    assert str(e.value).startswith(f"job.yaml:4: key 'sources.bids.path': the path 'inbox' is a directory whose "
                                   f"entry {name!r} leads outside the deployment file's directory")


def test_links_that_stay_inside_and_names_readers_skip_are_accepted(job, tmp_path):
    directory = tmp_path / "jobs" / "team" / "inbox"
    directory.mkdir()
    os.symlink(tmp_path / "jobs" / "team" / "data" / "bids.csv", directory / "a.csv")
    os.symlink(tmp_path / "outside" / "secret.csv", directory / "_ignored.csv")  # never read
    rows = deploy.plan(deploy.load(job(JOB.replace("data/bids.csv", "inbox")))).table.collect()
    assert rows.to_pylist() == [{"auction": 1, "price": 5}, {"auction": 2, "price": 7}]


# -- the sink's directories ----------------------------------------------------------------------------

@pytest.mark.parametrize("path, late", [("out/x", "out/x/late"), ("out/x/in", "out/x"), ("out/x", ".")])
def test_late_rows_and_results_never_nest(job, tmp_path, path, late):
    text = JOB.replace("path: out/rows", f"path: {path}\n    late_path: {late}")
    with pytest.raises(ConfigError, match=r"^job\.yaml:13: key 'sinks\.out\.late_path': late rows need a directory "
                                          "of their own, beside the result path"):
        deploy.load(job(text))
    assert not (tmp_path / "jobs" / "team" / "out").exists()


def test_a_result_directory_that_is_not_empty_is_refused_before_anything_is_written(job, tmp_path):
    path = job(JOB.replace("path: out/rows", "path: ."))
    message = runner.invoke(app, ["run", str(path)]).output
    assert "job.yaml:12: key 'sinks.out.path': output directory" in message and "is not empty" in message
    assert sorted(p.name for p in path.parent.iterdir()) == ["data", "job.yaml"]  # no marker left behind


def test_a_rerun_without_checkpoints_is_told_about_fresh_not_reset(job):
    path = job()
    assert runner.invoke(app, ["run", str(path)]).exit_code == 0
    again = runner.invoke(app, ["run", str(path)])
    assert again.exit_code == 2
    assert "job.yaml:12: key 'sinks.out.path'" in again.output and "darwin run job.yaml --fresh" in again.output
    assert "darwin reset" not in again.output
    assert runner.invoke(app, ["run", str(path), "--fresh"]).exit_code == 0


# -- options of the main job do not apply to a file ----------------------------------------------------

@pytest.mark.parametrize("options, named", [
    (["--config", "engine.yaml"], "--config"),
    (["--out", "elsewhere", "--events", "5"], "--events, --out"),
    (["--query", "q5", "--rate", "5", "--show", "1"], "--query, --rate, --show"),
])
def test_main_job_options_with_a_deployment_file_are_refused(job, tmp_path, options, named):
    path = job()
    result = runner.invoke(app, ["run", str(path), *options])
    assert result.exit_code == 2
    assert named in result.output and "do" in result.output and "not apply to a deployment file" in \
        " ".join(result.output.replace("│", " ").split())
    assert not (path.parent / "out").exists() and not (path.parent / "elsewhere").exists()


def test_fresh_without_a_deployment_file_is_refused():
    result = runner.invoke(app, ["run", "--fresh", "--events", "1K"])
    assert result.exit_code == 2 and "--fresh" in result.output
