"""The Flink dialect parses what sqlglot's own dialects do not: window table functions, the SESSION
group window, WATERMARK in CREATE TABLE, Flink's REGEXP_EXTRACT; identifiers keep their case."""

import pytest
import sqlglot
from sqlglot import exp

from darwin.errors import SqlError
from darwin.sql import Flink, parse
from darwin.sql.dialect import Descriptor, TableArgument, Watermark, WindowFunction


def one(text):
    return sqlglot.parse_one(text, read=Flink)


def test_hop_table_function_with_table_and_descriptor_arguments():
    q = one("SELECT auction FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, "
            "INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end")
    fn = q.find(WindowFunction)
    assert fn.kind == "HOP"
    table, descriptor, slide, size = fn.expressions
    assert isinstance(table, TableArgument) and table.this.name == "bid"
    assert isinstance(descriptor, Descriptor) and descriptor.expressions[0].name == "dateTime"
    assert [slide.this.this, size.this.this] == ["2", "10"]


def test_session_table_function_takes_partition_by():
    fn = one("SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '5' SECOND))") \
        .find(WindowFunction)
    assert fn.kind == "SESSION"
    assert [c.name for c in fn.expressions[0].args["partition_by"]] == ["bidder"]


def test_session_group_window_in_group_by():
    q = one("SELECT b, SESSION_START(ts, INTERVAL '10' SECOND) FROM bid GROUP BY b, SESSION(ts, INTERVAL '10' SECOND)")
    assert [type(g).__name__ for g in q.args["group"].expressions] == ["Column", "WindowFunction"]


def test_watermark_in_create_table_and_options():
    create = one("CREATE TABLE bid (price BIGINT, `dateTime` TIMESTAMP(3), "
                 "WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'nexmark')")
    watermark = create.find(Watermark)
    assert watermark.this.name == "dateTime"
    assert isinstance(watermark.expression, exp.Sub)
    assert {p.name: p.args["value"].name for p in create.args["properties"].expressions} == {"connector": "nexmark"}


def test_identifiers_keep_their_case_quoted_or_not():
    q = one("SELECT itemName, `dateTime` FROM auction")
    assert [c.name for c in q.expressions] == ["itemName", "dateTime"]


def test_regexp_extract_third_argument_is_the_group():
    call = one("SELECT REGEXP_EXTRACT(url, '(a)(b)', 2) FROM bid").find(exp.RegexpExtract)
    assert call.args["group"].this == "2"
    assert call.args.get("position") is None


def test_filter_and_system_time_parse():
    q = one("SELECT count(*) FILTER (WHERE price > 1) FROM bid B JOIN side FOR SYSTEM_TIME AS OF B.ts AS S "
            "ON B.a = S.k")
    assert q.find(exp.Filter) is not None
    assert q.args["joins"][0].this.args["version"] is not None


def test_syntax_error_names_line_and_column():
    with pytest.raises(SqlError, match=r"line 2, column \d+"):
        parse("SELECT a\nFROM bid WHERE (a = ")
