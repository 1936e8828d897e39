"""Each Nexmark query written as Flink SQL (nexmark/sql/qN.sql) equals its fluent twin
(nexmark/queries.py) on the compiled engine: the same columns (the SQL's camelCase names in
snake_case) and the same rows, compared on ``Query.compared`` where ties may rank rows either way.
The events are generated at 500 per second of event time so that windows and sessions close."""

import pytest

import darwin as dw
from darwin.errors import SqlError
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


BIDS = """CREATE TABLE bid (auction BIGINT, price BIGINT, `dateTime` TIMESTAMP(3))
WITH ('connector' = 'nexmark', 'stream' = 'bid', 'events.num' = '2000', 'first-event.rate' = '500'{more});
SELECT auction, price, `dateTime` FROM bid"""


def test_the_rate_limited_option_is_taken_as_it_changes_no_event():
    """Flink's nexmark source takes 'rate.limited' (sleep to keep to the rate, or not): the same events at the
    same times either way. Refused since connectors name their options; taken and ignored now."""
    limited = dw.sql(BIDS.format(more=", 'rate.limited' = 'true'")).collect()
    assert limited.num_rows > 0 and limited.equals(dw.sql(BIDS.format(more="")).collect())
    with pytest.raises(SqlError, match=r"connector 'nexmark' has no option 'next-event.rate' \(it takes 'events.num', "
                                       r"'first-event.rate', 'seed', 'stream'\)"):
        dw.sql(BIDS.format(more=", 'next-event.rate' = '10'")).collect()  # the events' times change under it
