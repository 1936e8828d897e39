"""Every Nexmark query on three engines: compiled, reference interpreter and Darwin-on-Spark.

Small inputs keep it fast; the same comparison at 2M events is ``nexmark run all --events 2M
--engine darwin,darwin-spark`` (BENCHMARKS.md). Where ROW_NUMBER ties decide a row, the queries'
``compared`` columns are what every engine must agree on.
"""

import pytest

import darwin as dw
from darwin.testing import assert_table_equal
from nexmark.queries import QUERIES
from nexmark.source import source

EVENTS = 3_000


@pytest.mark.parametrize("name", list(QUERIES))
def test_query_is_equal_on_three_engines(spark, name):
    query = QUERIES[name]
    q = query.build(source(events=EVENTS, first_event_rate=100))
    compiled = q.collect(dw.Config())
    on_spark = q.collect(dw.Config(engine="spark"))
    reference = q.collect(dw.Config(mode="interpreted"))
    assert_table_equal(compiled, reference, sort=True)
    if query.compared is not None:
        compiled, on_spark = compiled.select(list(query.compared)), on_spark.select(list(query.compared))
    assert compiled.num_rows > 0 or name in ("q2",), "the query should give rows at this size"
    assert_table_equal(on_spark, compiled, sort=True)


def test_nexmark_run_shows_three_engines(spark, tmp_path):
    """``nexmark run --engine darwin,spark,darwin-spark``: a query on each engine, all equal (every query on the
    three is the test above)."""
    import json

    from typer.testing import CliRunner

    from nexmark.cli import app

    out = tmp_path / "m.json"
    result = CliRunner().invoke(app, ["run", "q12", "--events", "5K", "--engine", "darwin,spark,darwin-spark",
                                      "--data-dir", str(tmp_path / "data"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = {(r["query"], r["engine"]): r for r in json.loads(out.read_text())}
    assert set(rows) == {("q12", e) for e in ("darwin", "spark", "darwin-spark")}
    assert all(r["equal"] is True and r["seconds"] is not None for r in rows.values())
