"""Source columns of types Darwin does not support: refused only when a query reads them."""

from decimal import Decimal

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin import col
from darwin.errors import SchemaError
from darwin.testing import assert_engines_agree, assert_table_equal

SUPPORTED = pa.table({"ts": pa.array([0, 400, 1200, 2500, 2600], pa.timestamp("ms")),
                      "k": [1, 2, 1, 2, 1], "v": [10, 20, 30, None, 50]})
UNSUPPORTED = {
    "tags": pa.array([[1, 2], [], None, [3], [4, 5]], pa.list_(pa.int64())),
    "pos": pa.array([{"x": 1, "y": 2.0}] * 5, pa.struct([("x", pa.int64()), ("y", pa.float64())])),
    "raw": pa.array([b"a", b"b", None, b"", b"z"], pa.binary()),
    "price": pa.array([Decimal("1.50")] * 5, pa.decimal128(10, 2)),
}


def with_unsupported() -> pa.Table:
    table = SUPPORTED
    for i, (name, arr) in enumerate(UNSUPPORTED.items()):
        table = table.add_column(min(1 + 2 * i, table.num_columns), name, arr)  # among the others
    return table


def query(t: dw.Table) -> dw.Table:
    return (t.filter(col("v").is_not_null()).with_columns(w=col("v") * 2)
            .window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("w")))


def sources(tmp_path) -> dict[str, tuple[dw.Table, dw.Table]]:
    """Each kind of source over the table with and without the unsupported columns."""
    full, plain = with_unsupported(), SUPPORTED
    pq.write_table(full, tmp_path / "full.parquet")
    pq.write_table(plain, tmp_path / "plain.parquet")
    return {
        "parquet": (dw.read_parquet(tmp_path / "full.parquet", time="ts"),
                    dw.read_parquet(tmp_path / "plain.parquet", time="ts")),
        "arrow": (dw.from_arrow(full, time="ts"), dw.from_arrow(plain, time="ts")),
        "batches": (dw.from_batches(full.schema, lambda: full.to_batches(), time="ts"),
                    dw.from_batches(plain.schema, lambda: plain.to_batches(), time="ts")),
    }


@pytest.mark.parametrize("kind", ["parquet", "arrow", "batches"])
def test_unread_unsupported_columns_are_ignored(tmp_path, kind):
    t, plain = sources(tmp_path)[kind]
    assert t.columns == ["ts", "k", "v"]
    got = assert_engines_agree(query(t))
    assert_table_equal(got.table, query(plain).collect(dw.Config(mode="interpreted")), check_nullability=True)
    assert [(r["k"], r["n"], r["s"]) for r in got.table.to_pylist()] == [(1, 1, 20), (2, 1, 40), (1, 1, 60),
                                                                         (1, 1, 100)]


REFERENCES = {
    "select": lambda t: t.select("k", "tags"),
    "filter": lambda t: t.filter(col("tags").is_null()),
    "expression": lambda t: t.with_columns(x=col("k") + 1).select(y=col("tags").is_null()),
    "window": lambda t: t.window(dw.Tumble("1s", on="tags")),
    "group_by": lambda t: t.window(dw.Tumble("1s", on="ts")).group_by("tags"),
    "aggregate": lambda t: t.window(dw.Tumble("1s", on="ts")).agg(n=dw.count("tags")),
    "drop": lambda t: t.filter(col("k") > 0).drop("tags"),
}


@pytest.mark.parametrize("use", REFERENCES)
def test_reading_an_unsupported_column_names_it(tmp_path, use):
    t, _ = sources(tmp_path)["parquet"]
    with pytest.raises(SchemaError, match=r"column 'tags' has Arrow type list<.*int64>.*not support.*"
                                          r"supported: integers, floats, bool, timestamp, string"):
        REFERENCES[use](t)


def test_an_unsupported_time_column_names_it():
    with pytest.raises(SchemaError, match=r"column 'pos' has Arrow type struct<x: int64, y: double>"):
        dw.from_arrow(with_unsupported(), time="pos")


def test_unknown_columns_are_still_unknown(tmp_path):
    t, _ = sources(tmp_path)["arrow"]
    with pytest.raises(dw.errors.PlanError, match="unknown column 'nope'") as info:
        t.window(dw.Tumble("1s", on="ts")).group_by("nope")
    assert not isinstance(info.value, SchemaError)


ALL_NULL = pa.table({"k": [1, 2, 1], "n": pa.array([None, None, None])})  # n: Arrow type null, as pandas gives


def all_null_sources(tmp_path) -> dict[str, dw.Table]:
    pq.write_table(ALL_NULL, tmp_path / "n.parquet")
    feather.write_feather(ALL_NULL, tmp_path / "n.arrow")
    return {"arrow": dw.from_arrow(ALL_NULL), "parquet": dw.read_parquet(tmp_path / "n.parquet"),
            "ipc": dw.read_ipc(tmp_path / "n.arrow"),
            "batches": dw.from_batches(ALL_NULL.schema, lambda: ALL_NULL.to_batches())}


@pytest.mark.parametrize("kind", ["arrow", "parquet", "ipc", "batches"])
def test_a_column_of_only_nulls_is_a_string_column(tmp_path, kind):
    """A column Arrow types null (all NULL, as pandas and pyarrow type it) was left out of the table
    without a word, and reading it refused. Spark keeps it (NullType); Darwin reads it as string, as
    a CSV column without values, and a cast gives it any other type."""
    t = all_null_sources(tmp_path)[kind]
    assert t.columns == ["k", "n"]
    assert t.schema.field("n").type == pa.string()
    q = (t.with_columns(m=col("n").cast("int64"), missing=col("n").is_null().cast("int64"))
         .group_by("k").agg(c=dw.count("n"), s=dw.sum("m"), missing=dw.sum("missing"), first=dw.max("n")))
    got = assert_engines_agree(q).table
    assert got.to_pylist() == [{"k": 1, "c": 0, "s": None, "missing": 2, "first": None},
                               {"k": 2, "c": 0, "s": None, "missing": 1, "first": None}]
    assert_engines_agree(t.select("n", "k"))


def test_a_batch_of_only_nulls_in_a_typed_column_is_read_as_nulls_of_its_type():
    schema = pa.schema([("k", pa.int64()), ("n", pa.float64())])
    typed = pa.record_batch({"k": [3], "n": [1.5]}, schema=schema)
    t = dw.from_batches(schema, lambda: [typed, *ALL_NULL.to_batches()])
    got = assert_engines_agree(t.group_by("k").agg(s=dw.sum("n"), c=dw.count())).table
    assert got.to_pylist() == [{"k": 3, "s": 1.5, "c": 1}, {"k": 1, "s": None, "c": 2}, {"k": 2, "s": None, "c": 1}]


def test_a_file_of_a_directory_with_a_column_of_only_nulls_reads_it_with_the_others_type(tmp_path):
    """Parquet stores a column of only NULLs as type null; the directory's other files type it, as a
    CSV column empty in one file takes the others' type. It was refused as of another type."""
    (tmp_path / "d").mkdir()
    pq.write_table(ALL_NULL, tmp_path / "d" / "1.parquet")
    pq.write_table(pa.table({"k": [3], "n": [7]}), tmp_path / "d" / "2.parquet")
    pq.write_table(ALL_NULL, tmp_path / "d" / "3.parquet")
    t = dw.read_parquet(tmp_path / "d")
    assert t.schema.field("n").type == pa.int64()
    got = assert_engines_agree(t.group_by("k").agg(s=dw.sum("n"), c=dw.count("n"))).table
    assert got.to_pylist() == [{"k": 1, "s": None, "c": 0}, {"k": 2, "s": None, "c": 0}, {"k": 3, "s": 7, "c": 1}]
    pq.write_table(pa.table({"k": [4], "n": ["x"]}), tmp_path / "d" / "4.parquet")
    with pytest.raises(dw.errors.SourceError, match=r"4\.parquet' .*column 'n' is string there, int64 in the first"):
        dw.read_parquet(tmp_path / "d")
