"""The string pool decodes a batch's codes into Arrow strings, however it grew in between."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.runtime.encoding import StringPool


@settings(max_examples=50, deadline=None)
@given(batches=st.lists(st.lists(st.one_of(st.none(), st.text(max_size=8)), max_size=20), max_size=6))
def test_decode_gives_back_what_was_encoded_as_the_pool_grows(batches):
    pool = StringPool()
    for strings in batches:
        arr = pa.array(strings, pa.string())
        codes = pool.encode(arr)
        valid = None if arr.null_count == 0 else np.array([s is not None for s in strings])
        back = pool.decode(codes, valid)
        assert back.type == pa.string()
        assert back.to_pylist() == strings
    assert pool.to_arrow().to_pylist() == [pool.value(i) for i in range(len(pool))]
