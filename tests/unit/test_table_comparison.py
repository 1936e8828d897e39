"""darwin.testing.assert_table_equal: what the differential tests compare with."""

import pyarrow as pa
import pytest

from darwin.testing import assert_table_equal

NAN = float("nan")


def test_rows_as_multisets_tell_nan_from_zero_in_any_order():
    rows = pa.table({"f": [0.0, NAN, 1.0], "s": ["x", "x", "y"]})
    shuffled = pa.table({"f": [NAN, 1.0, 0.0], "s": ["x", "y", "x"]})
    assert_table_equal(rows, shuffled, sort=True)
    with pytest.raises(AssertionError):
        assert_table_equal(rows, pa.table({"f": [0.0, 0.0, 1.0], "s": ["x", "x", "y"]}), sort=True)


def test_timestamps_beyond_pythons_datetime_compare():
    """Year 0 (Flink's TO_TIMESTAMP_LTZ reaches it) and year 10000 are outside Python's datetime."""
    year0 = pa.table({"t": pa.array([-62167219200000, 253402300800000], pa.timestamp("ms"))})
    assert_table_equal(year0, year0)
    with pytest.raises(AssertionError, match="differs in column 't'"):
        assert_table_equal(year0, pa.table({"t": pa.array([-62167219200001, 253402300800000], pa.timestamp("ms"))}))
