"""``nexmark run --sql`` runs the queries planned from nexmark/sql/qN.sql, with the fluent twins' rows."""

import json

from typer.testing import CliRunner

import nexmark.sql_queries as sql_queries
from nexmark.cli import app as nexmark_app

runner = CliRunner()


def test_run_sql_plans_each_query_from_its_sql_and_gives_the_fluent_rows(tmp_path, monkeypatch):
    planned = []
    plan = sql_queries.sql_query

    def recording(name, *args, **kwargs):
        planned.append(name)
        return plan(name, *args, **kwargs)

    monkeypatch.setattr(sql_queries, "sql_query", recording)
    runs = {}
    for kind, flags in (("sql", ["--sql"]), ("fluent", [])):
        out = tmp_path / f"{kind}.json"
        result = runner.invoke(nexmark_app, ["run", "q5", "q19", "--events", "20K", "--engine", "darwin", *flags,
                                             "--json", str(out)])
        assert result.exit_code == 0, result.output
        runs[kind] = {m["query"]: m["rows"] for m in json.loads(out.read_text())}
        if kind == "sql":
            assert sorted(set(planned)) == ["q19", "q5"]  # the warm-up, the timed run and the collect of each
    assert sorted(set(planned)) == ["q19", "q5"] and len(planned) == 6  # the fluent runs plan no SQL
    assert runs["sql"] == runs["fluent"] and all(rows > 0 for rows in runs["sql"].values())
