"""Each Nexmark query written as Flink SQL (nexmark/sql/qN.sql) equals its fluent twin
(nexmark/queries.py) on the compiled engine: the same columns (the SQL's camelCase names in
snake_case) and the same rows, compared on ``Query.compared`` where ties may rank rows either way.
The events are generated at 500 per second of event time so that windows and sessions close."""

import pytest

from nexmark.queries import QUERIES
from nexmark.source import source
from nexmark.sql_queries import QUERIES as SQL_QUERIES
from nexmark.sql_queries import snake_case, sql_query

EVENTS = 6_000
RATE = 500


def rows(table, columns):
    picked = table.select(columns).to_pylist()
    return sorted((tuple(r.values()) for r in picked), key=repr)


@pytest.mark.parametrize("name", SQL_QUERIES)
def test_sql_query_equals_its_fluent_twin(name):
    fluent = QUERIES[name].build(source(events=EVENTS, rate=RATE)).collect()
    assert fluent.num_rows > 0  # every query has rows to compare at this size
    sql = sql_query(name, events=EVENTS, rate=RATE).collect()
    assert [snake_case(c) for c in sql.column_names] == fluent.column_names
    sql = sql.rename_columns(fluent.column_names)
    compared = list(QUERIES[name].compared or fluent.column_names)
    assert sql.num_rows == fluent.num_rows
    assert rows(sql, compared) == rows(fluent, compared)
