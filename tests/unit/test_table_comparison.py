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
