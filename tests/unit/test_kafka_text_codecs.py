"""Kafka message values as CSV and JSON: what the sink encodes decodes back as it was."""

import pyarrow as pa
import pytest

from darwin.io.kafka.codecs import decode, encode

BATCH = pa.record_batch({"s": ["a", "", None, "NULL", "nan", "NA"],
                         "f": [1.5, float("nan"), None, -0.0, 2.0, None],
                         "i": [1, None, 3, -4, 5, None]})


def as_text(rows):
    return [[repr(v) for v in row.values()] for row in rows]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_values_nulls_and_nan_round_trip(fmt):
    if fmt == "json":  # JSON has no NaN literal
        batch = BATCH.set_column(1, "f", pa.array([1.5, 0.5, None, -0.0, 2.0, None]))
    else:
        batch = BATCH
    back = decode(fmt, encode(fmt, batch), batch.schema, "topic t")
    assert as_text(back.to_pylist()) == as_text(batch.to_pylist())


@pytest.mark.parametrize("payloads", [[None], [b'"a",1,1', None], [None, b'"a",1,1'], [b'"a",1,1', None, None]])
def test_a_null_value_is_a_row_of_nulls_wherever_it_is(payloads):
    back = decode("csv", payloads, BATCH.schema, "topic t").to_pylist()
    assert len(back) == len(payloads)
    assert [row == {"s": None, "f": None, "i": None} for row in back] == [p is None for p in payloads]
