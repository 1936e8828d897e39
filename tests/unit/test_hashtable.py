"""The hash table — the probe the generator emits, growth and compaction — against a Python dict."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from darwin.codegen.hashtable import emit_probe
from darwin.codegen.source import SourceBuilder
from darwin.state.hash_table import HashTableState


def probe_kernel(width):
    """A kernel inserting rows of ``keys`` (n x width) and counting them, built from ``emit_probe``."""
    b = SourceBuilder()
    args = ", ".join(f"k{j}" for j in range(width))
    with b.block(f"def insert(rows, start, index, meta, counts, {args}):"):
        b.line("count = meta[0]")
        b.line("imask = index.shape[0] - 1")
        with b.block("for i in range(start, rows.shape[0]):"):
            with b.block("if count + 1 > k0.shape[0]:"):
                b.line("meta[0] = count")
                b.line("return i")
            emit_probe(lambda text, depth: b.line("    " * depth + text),
                       [f"rows[i, {j}]" for j in range(width)], [f"k{j}" for j in range(width)])
            b.line("counts[e] += 1")
        b.line("meta[0] = count")
        b.line("return rows.shape[0]")
    scope = {"np": np}
    exec(compile(b.text(), "<probe>", "exec"), scope)
    return njit(scope["insert"])


KERNELS = {w: probe_kernel(w) for w in (1, 2, 3)}


def insert_all(table, rows):
    kernel = KERNELS[table.key_width]
    pos = 0
    while pos < len(rows):
        pos = kernel(rows, pos, table.index, table.meta, table.values[0], *table.keys)
        if pos < len(rows):
            table.grow(1)


big = st.integers(-(2**63), 2**63 - 1)


@pytest.mark.parametrize("width", [1, 2, 3])
@settings(max_examples=40, deadline=None)
@given(data=st.data(), capacity=st.integers(1, 64))
def test_matches_a_dict_with_growth(width, data, capacity):
    rows = data.draw(st.lists(st.tuples(*[big | st.integers(-3, 3)] * width), max_size=300))
    table = HashTableState("t", width, [np.int64], capacity=capacity)
    insert_all(table, np.array(rows, dtype=np.int64).reshape(-1, width))
    expected: dict[tuple, int] = {}
    for r in rows:
        expected[r] = expected.get(r, 0) + 1
    assert table.count == len(expected)
    got = list(zip(*[k[: table.count].tolist() for k in table.keys])) if table.count else []
    assert got == list(expected)  # dense entries in first-seen order
    assert table.values[0][: table.count].tolist() == list(expected.values())
    # inserting everything again finds every key and adds no entry
    insert_all(table, np.array(rows, dtype=np.int64).reshape(-1, width))
    assert table.count == len(expected)
    assert table.values[0][: table.count].tolist() == [2 * c for c in expected.values()]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=200, unique=True), st.integers(0, 50))
def test_retain_keeps_order_and_lookups(keys, cut):
    table = HashTableState("t", 1, [np.int64], capacity=4)
    insert_all(table, np.array(keys, dtype=np.int64).reshape(-1, 1))
    keep = table.keys[0][: table.count] >= cut
    table.retain(keep)
    survivors = [k for k in keys if k >= cut]
    assert table.keys[0][: table.count].tolist() == survivors
    # every survivor is found again (count 2), dropped keys come back as new entries (count 1)
    insert_all(table, np.array(keys, dtype=np.int64).reshape(-1, 1))
    counts = dict(zip(table.keys[0][: table.count].tolist(), table.values[0][: table.count].tolist()))
    assert counts == {k: 2 if k >= cut else 1 for k in keys}
