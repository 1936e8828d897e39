"""The string pool: one code per distinct string, however the batches arrive, and decoding gives them back."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.errors import CheckpointError
from darwin.runtime.dictionary import load_dictionary, save_dictionary
from darwin.runtime.encoding import StringPool

STRINGS = st.lists(st.one_of(st.none(), st.text(max_size=8), st.sampled_from(["a", "bb", "", "ü€"])), max_size=40)
LAYOUTS = st.sampled_from(["string", "large_string", "dictionary", "sliced"])


def _arrow(strings: list[str | None], layout: str) -> pa.Array:
    if layout == "dictionary":
        return pa.array(strings, pa.string()).dictionary_encode()
    if layout == "sliced":  # a slice keeps its parent's buffers and an offset into them
        return pa.array(["x", *strings, "y"], pa.string()).slice(1, len(strings))
    return pa.array(strings, pa.large_string() if layout == "large_string" else pa.string())


@settings(max_examples=100, deadline=None)
@given(batches=st.lists(st.tuples(STRINGS, LAYOUTS), max_size=8))
def test_codes_are_equal_exactly_when_strings_are_and_decode_gives_them_back(batches):
    pool = StringPool()
    seen: dict[str, int] = {}
    for strings, layout in batches:
        codes = pool.encode(_arrow(strings, layout))
        for s, c in zip(strings, codes):
            if s is not None:
                assert seen.setdefault(s, int(c)) == c
        valid = None if None not in strings else np.array([s is not None for s in strings])
        back = pool.decode(codes, valid)
        assert back.type == pa.string()
        assert back.to_pylist() == strings
    assert len(pool) == len(seen)
    assert pool.to_arrow().to_pylist() == [pool.value(i) for i in range(len(pool))]
    assert all(pool.code(s) == c for s, c in seen.items())


def test_a_pool_grows_past_its_first_table_and_buffers():
    pool = StringPool()
    strings = [f"{i:06d}-" + "x" * (i % 300) for i in range(20_000)]
    codes = pool.encode(pa.array(strings))
    assert list(codes) == list(range(20_000))
    again = pool.encode(pa.array(strings[::-1]))
    assert list(again) == list(range(20_000))[::-1]
    assert pool.decode(codes[::7], None).to_pylist() == strings[::7]


def test_codes_appended_and_interned_across_many_growths_come_back():
    """The per-code arrays grow several times (from 1,024 codes) in the middle of appends and
    interning: every code keeps its string and its interned flag."""
    pool = StringPool()
    expected, interned = [], []
    rng = np.random.default_rng(3)
    for step in range(40):
        n = int(rng.integers(1, 9_000))
        strings = [f"{step}:{i}:" + "y" * (i % 37) for i in range(n)]
        if step % 3:
            codes = pool.append(pa.array(strings))
            interned += [False] * n
        else:
            codes = pool.encode(pa.array(strings))
            interned += [True] * n
        assert list(codes) == list(range(len(expected), len(expected) + n))
        expected += strings
    assert len(expected) > 100_000
    assert pool.to_arrow().to_pylist() == expected
    assert pool.interned().tolist() == interned
    assert pool.decode(np.arange(0, len(expected), 11), None).to_pylist() == expected[::11]


def test_appended_strings_get_fresh_codes_and_stay_out_of_interning():
    pool = StringPool()
    interned = pool.encode(pa.array(["a", "b"]))
    appended = pool.append(pa.array(["a", None, "c", "c"]))
    assert list(appended) == [2, 0, 4, 5]
    assert pool.decode(appended, np.array([True, False, True, True])).to_pylist() == ["a", None, "c", "c"]
    assert list(pool.encode(pa.array(["c", "a", "b"]))) == [6, *interned]
    assert list(pool.append(pa.array(["x", "b", "x"]).dictionary_encode())) == [7, 1, 7]  # a dictionary is interned
    assert list(pool.interned()) == [True, True, False, False, False, False, True, True]
    assert list(pool.interned(5, 7)) == [False, True]


@settings(max_examples=30, deadline=None)
@given(batches=st.lists(st.tuples(STRINGS, st.booleans()), max_size=6))
def test_a_checkpointed_dictionary_restores_every_code(tmp_path_factory, batches):
    directory = tmp_path_factory.mktemp("dictionary")
    pool = StringPool()
    for strings, intern in batches:
        (pool.encode if intern else pool.append)(pa.array(strings, pa.string()))
    save_dictionary(pool, directory)
    restored = StringPool()
    if len(pool) and pool.interned()[0]:  # an engine interns its constants before it restores
        restored.code(pool.value(0))
    load_dictionary(restored, directory)
    assert restored.to_arrow().equals(pool.to_arrow())
    assert list(restored.interned()) == list(pool.interned())
    probe = pa.array([s for strings, _ in batches for s in strings] + ["never seen"], pa.string())
    assert list(restored.encode(probe)) == list(pool.encode(probe))


def test_a_dictionary_holding_a_string_twice_is_refused(tmp_path):
    import pyarrow.ipc as ipc

    table = pa.table({"value": pa.array(["a", "a"], pa.large_string())})
    with pa.OSFile(str(tmp_path / "strings.arrow"), "wb") as f, ipc.new_file(f, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(CheckpointError, match="twice"):
        load_dictionary(StringPool(), tmp_path)


def test_a_dictionary_that_does_not_begin_with_the_pools_constants_is_refused(tmp_path):
    pool = StringPool()
    pool.encode(pa.array(["a", "b"]))
    save_dictionary(pool, tmp_path)
    restored = StringPool()
    restored.code("b")
    with pytest.raises(CheckpointError, match="constants"):
        load_dictionary(restored, tmp_path)


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.tuples(st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=12), st.booleans()),
                        max_size=8))
def test_strings_spanning_many_small_chunks_come_back(batches):
    import darwin.runtime.encoding as encoding

    first, most = encoding.FIRST_CHUNK_BYTES, encoding.CHUNK_BYTES
    encoding.FIRST_CHUNK_BYTES, encoding.CHUNK_BYTES = 4, 16  # strings longer than a chunk get their own
    try:
        pool = StringPool()
        everything, codes, seen = [], [], {}
        for strings, intern in batches:
            arr = pa.array(strings, pa.string())
            codes.append((pool.encode if intern else pool.append)(arr))
            everything += strings
            for s, c in zip(strings, codes[-1]):
                if intern and s is not None:
                    assert seen.setdefault(s, int(c)) == c
        all_codes = np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)
        valid = np.array([s is not None for s in everything], dtype=np.bool_)
        assert pool.decode(all_codes, valid).to_pylist() == everything
    finally:
        encoding.FIRST_CHUNK_BYTES, encoding.CHUNK_BYTES = first, most
