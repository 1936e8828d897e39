"""Kafka message values as CSV and JSON: what the sink encodes decodes back as it was."""

import pyarrow as pa
import pytest

from darwin.errors import SourceError
from darwin.io.kafka.codecs import decode, encode


def offset(i):
    return f"topic t partition 3 offset {100 + i}"

BATCH = pa.record_batch({"s": ["a", "", None, "NULL", "nan", "NA", '"NaN"', "Infinity"],
                         "f": [1.5, float("nan"), None, -0.0, 2.0, None, float("inf"), float("-inf")],
                         "i": [1, None, 3, -4, 5, None, 7, 8]})


def as_text(rows):
    return [[repr(v) for v in row.values()] for row in rows]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_values_nulls_nan_and_infinities_round_trip(fmt):
    """JSON has no NaN literal: NaN and infinities were written as null, and came back NULL."""
    back = decode(fmt, encode(fmt, BATCH), BATCH.schema, offset)
    assert as_text(back.to_pylist()) == as_text(BATCH.to_pylist())


@pytest.mark.parametrize("fmt", ["csv", "json", "raw"])
def test_nan_and_infinities_are_written_as_java_reads_them(fmt):
    """Arrow's nan, inf and -inf are no numbers to Java's Double.parseDouble (Flink's and Spark's
    readers): NaN, Infinity and -Infinity are, and JSON quotes them as Jackson does."""
    batch = pa.record_batch({"f": [float("nan"), float("inf"), float("-inf"), 1.5]})
    quote = '"' if fmt == "json" else ''
    words = [f"{quote}{w}{quote}" for w in ("NaN", "Infinity", "-Infinity")]
    expected = [f'{{"f":{w}}}' for w in words + ["1.5"]] if fmt == "json" else words + ["1.5"]
    assert [p.decode() for p in encode(fmt, batch)] == expected


def test_json_from_flink_or_spark_with_nan_in_a_float_field_decodes():
    payloads = [b'{"f": "NaN", "s": "NaN"}', b'{"f": 2.5, "s": "x"}', b'{"f": "-Infinity", "s": null}', None]
    schema = pa.schema([("f", pa.float64()), ("s", pa.string())])
    back = decode("json", payloads, schema, offset).to_pylist()
    assert as_text(back) == as_text([{"f": float("nan"), "s": "NaN"}, {"f": 2.5, "s": "x"},
                                     {"f": float("-inf"), "s": None}, {"f": None, "s": None}])


def test_a_csv_batch_of_one_column_keeps_its_rows_of_null():
    """A row whose one value is NULL is an empty line: rows of NULL at the end of a batch were cut
    off with the text's final line break, so the sink published fewer messages than rows."""
    batch = pa.record_batch({"i": [1, None, None]})
    payloads = encode("csv", batch)
    assert payloads == [b"1", b"", b""]
    assert decode("csv", payloads, batch.schema, offset).to_pylist() == batch.to_pylist()


def test_csv_values_are_written_as_flinks_csv_format():
    """Flink's csv format (Jackson's CsvMapper, its default loose quoting check) writes numbers and booleans bare,
    a float as Java's Double.toString, a timestamp as its SQL format without trailing zeros, and quotes a text
    longer than 24 UTF-16 units or holding a character below '-' (a space, quote, comma, line break...) or a
    backslash, doubling quotes. Every value was quoted, numbers too ('"0"', '"1"', '"2.5e+20"')."""
    batch = pa.record_batch({
        "i": [0, -3, None, 9_007_199_254_740_993],
        "f": [1.0, 2.5e20, float("nan"), 1e-4],
        "b": [True, False, None, True],
        "t": pa.array([0, 1_500, None, 1_001], pa.timestamp("ms")),
        "s": ["plain-text", 'say "hi", twice', None, "line\nbreak"],
        "e": ["", "a b", "x" * 24, "x" * 25],
        "u": ["back\\slash", "#hash", "\U0001F600" * 12, "\U0001F600" * 13]})
    assert [p.decode() for p in encode("csv", batch)] == [
        '0,1.0,true,"1970-01-01 00:00:00",plain-text,"","back\\slash"',
        '-3,2.5E20,false,"1970-01-01 00:00:01.5","say ""hi"", twice","a b","#hash"',
        ',NaN,,,,' + "x" * 24 + "," + "\U0001F600" * 12,
        '9007199254740993,1.0E-4,true,"1970-01-01 00:00:01.001","line\nbreak","' + "x" * 25 + '","'
        + "\U0001F600" * 13 + '"']
    back = decode("csv", encode("csv", batch), batch.schema, offset)
    assert as_text(back.to_pylist()) == as_text(batch.to_pylist())


def test_json_values_are_written_as_flinks_json_format():
    """Flink's json format (Jackson, 'json.timestamp-format.standard' SQL) writes a DOUBLE as Java's Double.toString
    (NaN and infinities quoted), a FLOAT as Float.toString, a TIMESTAMP(3) without the fraction's trailing zeros,
    escapes a string's quote, backslash and control characters (five short forms, else \\u00XX in upper-case hex)
    and nothing else (not '/', DEL or non-ASCII), field names too. Darwin wrote 1.0 as 1, 2.5e20 as 2.5e+20,
    timestamps as '...00:00:01.500', and escaped other control characters and non-ASCII names as Python's json."""
    batch = pa.record_batch({
        "i": [0, -3, None, 9_223_372_036_854_775_807],
        "f": [1.0, 2.5e20, float("nan"), 1e-4],
        "g": pa.array([1.1, float("inf"), None, -0.0], pa.float32()),
        "b": [True, False, None, True],
        "t": pa.array([0, 1_500, None, -1], pa.timestamp("ms")),
        "s": ['say "hi"\\', "\b\t\n\f\r", None, "\x00\x1f\x7f/é\U0001F600"],
        'ü "n"\t': ["", "x", None, "y"]})
    field = '"ü \\"n\\"\\t"'
    assert [p.decode() for p in encode("json", batch)] == [
        '{"i":0,"f":1.0,"g":1.1,"b":true,"t":"1970-01-01 00:00:00","s":"say \\"hi\\"\\\\",' + field + ':""}',
        '{"i":-3,"f":2.5E20,"g":"Infinity","b":false,"t":"1970-01-01 00:00:01.5","s":"\\b\\t\\n\\f\\r",'
        + field + ':"x"}',
        '{"i":null,"f":"NaN","g":null,"b":null,"t":null,"s":null,' + field + ':null}',
        '{"i":9223372036854775807,"f":1.0E-4,"g":-0.0,"b":true,"t":"1969-12-31 23:59:59.999",'
        '"s":"\\u0000\\u001F\x7f/é\U0001F600",' + field + ':"y"}']
    back = decode("json", encode("json", batch), batch.schema, offset)
    assert as_text(back.to_pylist()) == as_text(batch.to_pylist())


def test_raw_values_are_the_text_json_writes_unquoted():
    """Raw values and keys are a value's text as the JSON value writes it: they were Arrow's ('1', '...01.500')."""
    floats = pa.record_batch({"f": [1.0, 2.5e20, None]})
    times = pa.record_batch({"t": pa.array([1_500, 2_000], pa.timestamp("ms"))})
    assert encode("raw", floats) == [b"1.0", b"2.5E20", b""]
    assert encode("raw", times) == [b"1970-01-01 00:00:01.5", b"1970-01-01 00:00:02"]


@pytest.mark.parametrize("payloads", [[None], [b'"a",1,1', None], [None, b'"a",1,1'], [b'"a",1,1', None, None]])
def test_a_null_value_is_a_row_of_nulls_wherever_it_is(payloads):
    back = decode("csv", payloads, BATCH.schema, offset).to_pylist()
    assert len(back) == len(payloads)
    assert [row == {"s": None, "f": None, "i": None} for row in back] == [p is None for p in payloads]


GOOD = b'x,1.5,7'


@pytest.mark.parametrize("bad, problem", [
    (b'x,1.5,abc', r"column 'i': CSV conversion error to int64: invalid value 'abc'"),
    (b'x,one,7', r"column 'f': CSV conversion error to double: invalid value 'one'"),
    (b'x,1.5', r"CSV parse error: Expected 3 columns, got 2: x,1.5"),
    (b'x,1.5,7,8', r"CSV parse error: Expected 3 columns, got 4: x,1.5,7,8"),
    (b'"x,1.5,7', r"CSV parse error: Expected 3 columns, got 1: "),  # the open quote runs into the next message
])
def test_a_csv_value_that_does_not_parse_names_its_offset_column_and_text(bad, problem):
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 102: the value " + repr(bad).replace("(", r"\(")
                       + r" is not a CSV line of the schema's columns \(format='csv'\): " + problem):
        decode("csv", [GOOD, None, bad, GOOD], BATCH.schema, offset)


def test_a_csv_value_of_two_lines_or_with_a_quote_left_open_at_the_end_is_named():
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 101: the value b'x,1.5,7\\ny,2,8' is not a "
                                          r"CSV line of the schema's columns: it holds 2 csv records"):
        decode("csv", [GOOD, b"x,1.5,7\ny,2,8", GOOD], BATCH.schema, offset)
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 101: the value b'1,\"x' is not a CSV "
                                          r"line of the schema's columns: a quote in it is not closed"):
        decode("csv", [b"1,x", b'1,"x', b"1,x"], pa.schema([("n", pa.int64()), ("s", pa.string())]), offset)


def test_a_json_or_raw_value_that_does_not_parse_names_its_offset():
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 101: the value b'not json' is not a JSON "
                                          r"object of the schema's columns \(format='json'\): JSON parse error"):
        decode("json", [b'{"i": 1}', b"not json"], BATCH.schema, offset)
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 100: the value b'\\xff' is not UTF-8 text"):
        decode("raw", [b"\xff", b"ok"], pa.schema([("value", pa.string())]), offset)


@pytest.mark.parametrize("empty", [b"", b"  ", b"\n"])
def test_an_empty_json_value_is_named_as_empty(empty):
    """It was reported as 'a quote in it is not closed', of a value without a quote."""
    with pytest.raises(SourceError, match=r"^topic t partition 3 offset 101: the value .* is not a JSON object of the "
                                          r"schema's columns: it holds no JSON object \(an empty value"):
        decode("json", [b'{"i": 1}', empty, b'{"i": 2}'], BATCH.schema, offset)


def test_a_long_bad_value_is_quoted_by_its_start():
    with pytest.raises(SourceError) as raised:
        decode("csv", [b"x,1.5," + b"9" * 10_000 + b"z"], BATCH.schema, offset)
    assert "offset 100: the value b'x,1.5,999" in str(raised.value) and "(10007 bytes)" in str(raised.value)
    assert len(str(raised.value)) < 600
