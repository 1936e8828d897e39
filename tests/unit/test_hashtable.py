"""The compiled hash table against a Python dict."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.codegen.hashtable import find, find_or_insert
from darwin.state.hash_table import HashTableState
from darwin.state.memory import MemoryBackend

keys_strategy = st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3)), max_size=400)


@settings(max_examples=60, deadline=None)
@given(keys_strategy, st.integers(1, 64))
def test_matches_a_dict_with_growth(keys, capacity):
    table = HashTableState(MemoryBackend(), "t", 2, [np.int64], capacity=capacity)
    expected: dict[tuple[int, int], int] = {}
    for k in keys:
        if table.count + 1 > table.capacity:
            table.grow(1)
        table.key_buffer[:] = k
        e = find_or_insert(table.index, table.keys, table.meta, table.key_buffer)
        table.values[0][e] += 1
        expected[k] = expected.get(k, 0) + 1
    assert table.count == len(expected)
    # entries are dense and in first-seen order
    assert [tuple(r) for r in table.keys[: table.count]] == list(expected)
    assert list(table.values[0][: table.count]) == list(expected.values())
    for k in expected:
        assert find(table.index, table.keys, np.array(k, dtype=np.int64)) >= 0
    assert find(table.index, table.keys, np.array([7, 99], dtype=np.int64)) == -1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=200, unique=True), st.integers(0, 50))
def test_retain_keeps_order_and_lookups(keys, cut):
    table = HashTableState(MemoryBackend(), "t", 1, [np.float64], capacity=4)
    for k in keys:
        table.grow(1)
        table.key_buffer[0] = k
        e = find_or_insert(table.index, table.keys, table.meta, table.key_buffer)
        table.values[0][e] = k * 0.5
    keep = table.keys[: table.count, 0] >= cut
    table.retain(keep)
    survivors = [k for k in keys if k >= cut]
    assert list(table.keys[: table.count, 0]) == survivors
    assert list(table.values[0][: table.count]) == [k * 0.5 for k in survivors]
    for k in keys:
        found = find(table.index, table.keys, np.array([k], dtype=np.int64))
        assert (found >= 0) == (k >= cut)
