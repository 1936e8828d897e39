"""dw.read_csv and dw.read_ipc: files and directories, types, and errors naming file and column."""

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pytest

import darwin as dw
from darwin.errors import SchemaError, SourceError

SCHEMA = {"ts": "timestamp[ms]", "k": "int64", "v": "float64"}


def test_read_csv_with_schema_and_time(tmp_path):
    (tmp_path / "a.csv").write_text("ts,k,v,ignored\n2026-03-01 10:00:00,1,2.5,x\n2026-03-01 10:00:01,2,3,y\n")
    t = dw.read_csv(tmp_path / "a.csv", SCHEMA, time="ts")
    assert t.columns == ["ts", "k", "v"]
    out = t.window(dw.Tumble("1s", on="ts")).agg(s=dw.sum("v")).collect()
    assert out["s"].to_pylist() == [2.5, 3.0]


def test_read_csv_directory_without_header_and_with_delimiter(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "1.csv").write_text("1;a\n2;b\n")
    (tmp_path / "d" / "2.csv").write_text("3;c\n")
    (tmp_path / "d" / "_SUCCESS").write_text("")
    t = dw.read_csv(tmp_path / "d", {"n": "int64", "s": "string"}, header=False, delimiter=";")
    assert t.collect().to_pydict() == {"n": [1, 2, 3], "s": ["a", "b", "c"]}


def test_read_csv_infers_types_without_schema(tmp_path):
    (tmp_path / "a.csv").write_text("k,name\n1,x\n")
    assert dw.read_csv(tmp_path / "a.csv").schema == pa.schema([("k", pa.int64()), ("name", pa.string())])


def test_an_inferred_column_without_values_is_text(tmp_path):
    """Arrow infers the type null for a column with no values (or a file of only its header), which
    Darwin set aside: the column was missing from the table. Spark infers string; so does Darwin."""
    (tmp_path / "a.csv").write_text("k,note\n1,\n2,\n")
    (tmp_path / "b.csv").write_text("k,note\n")
    assert dw.read_csv(tmp_path / "a.csv").collect().to_pydict() == {"k": [1, 2], "note": [None, None]}
    assert dw.read_csv(tmp_path / "b.csv").schema == pa.schema([("k", pa.string()), ("note", pa.string())])


def test_the_inferred_types_of_a_directory_are_those_of_all_its_files(tmp_path):
    """A column empty in one file, or whole numbers in one and fractions in another, was refused as a
    column the file did not have ('it has no column ...') or of another type; Spark infers one type
    over all the files, which every file is then read as."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "1.csv").write_text("k,v,t\n1,2,2026-03-01 10:00:00\n")
    (tmp_path / "d" / "2.csv").write_text("k,v,t\n")
    (tmp_path / "d" / "3.csv").write_text("k,v,t\n3,,\n4,1.5,\n")
    t = dw.read_csv(tmp_path / "d")
    assert t.schema == pa.schema([("k", pa.int64()), ("v", pa.float64()), ("t", pa.timestamp("ms"))])
    assert t.select("k", "v").collect().to_pydict() == {"k": [1, 3, 4], "v": [2.0, None, 1.5]}
    (tmp_path / "d" / "4.csv").write_text("k,v,t\nx,1,\n")
    with pytest.raises(SourceError, match=r"4\.csv': column 'k' is inferred as string there, as int64 in the files"):
        dw.read_csv(tmp_path / "d")
    (tmp_path / "d" / "4.csv").write_text("k,w,t\n")
    with pytest.raises(SourceError, match=r"4\.csv' does not have the columns of .*1\.csv': it has no column 'v'"):
        dw.read_csv(tmp_path / "d")


def test_read_csv_errors_name_file_and_column(tmp_path):
    (tmp_path / "bad.csv").write_text("ts,k,v\n2026-03-01 10:00:00,1,zz\n")
    with pytest.raises(SourceError, match=r"bad\.csv.*column 'v'.*'zz'"):
        dw.read_csv(tmp_path / "bad.csv", SCHEMA).collect()
    with pytest.raises(SourceError, match=r"bad\.csv' has no column\(s\) \['w'\]"):
        dw.read_csv(tmp_path / "bad.csv", {"w": "int64"})
    with pytest.raises(SchemaError, match=r"schema=\.\.\.\)\.k: unknown type 'integer64'"):
        dw.read_csv(tmp_path / "bad.csv", {"k": "integer64"})
    with pytest.raises(SourceError, match="does not exist"):
        dw.read_csv(tmp_path / "nope.csv")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "1.csv").write_text("k\n1\n")
    (tmp_path / "d" / "2.csv").write_text("k\nx\n")
    with pytest.raises(SourceError, match=r"2\.csv': column 'k' is inferred as string there, as int64 in the files"):
        dw.read_csv(tmp_path / "d")


MANY = "".join(f"{i},{i % 7}\n" for i in range(150_000))  # more than one block of Arrow's reader (1 MiB)


@pytest.mark.parametrize("text, types, header, where", [
    ("k,v\n1,2\n3,abc\n5,6\n", None, True, r"line 3, column 'v': .*int64: invalid value 'abc'$"),
    ("k,ts\n1,2026-03-01 10:00:00\n2,yesterday\n", {"k": "int64", "ts": "timestamp[ms]"}, True,
     r"line 3, column 'ts': .*timestamp\[ms\]: invalid value 'yesterday'$"),
    ("1,2\n3,x\n", None, False, r"line 2, column 'v': .*invalid value 'x'$"),
    ("k,v\n1,2\n3,4,5\n", None, True, r"line 3: CSV parse error: Expected 2 columns, got 3: 3,4,5$"),
    ("k,v\n1,2\n3\n", None, True, r"line 3: CSV parse error: Expected 2 columns, got 1: 3$"),
    ("k,v\n1,2\n3,\"4\n5,6\n", None, True, r"line 3, column 'v': .*invalid value '4\n5,6\n'$"),
    # empty lines and a value over three lines before it: line 8 is Arrow's row 4
    ("k,v,note\n1,2,\"a\nb\nc\"\n\n3,4,x\n\n5,six,y\n", {"k": "int64", "v": "int64", "note": "string"}, True,
     r"line 8, column 'v': .*invalid value 'six'$"),
    ("k,v\n" + MANY + "7,zz\n", None, True, r"line 150002, column 'v': .*invalid value 'zz'$"),
    ("k,v\n" + MANY[:100] + "7,\"8\n" + MANY + MANY, {"k": "int64", "v": "string"}, True,
     r"line 24: a quoted value starting on this line is malformed or its quote is not closed$"),
], ids=["int", "timestamp", "no header", "more fields", "fewer fields", "open quote", "lines are not rows",
        "after a block", "open quote before a block ends"])
def test_a_malformed_csv_row_is_named_by_file_line_and_column(tmp_path, text, types, header, where):
    """Lines count from 1 with the header; Arrow counts rows (no empty lines, a quoted value's lines
    as one), and only when it reads on one thread: the file is read again to find the line."""
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(SourceError, match=r"^cannot read CSV file '.*bad\.csv': " + where):
        dw.read_csv(tmp_path / "bad.csv", types or {"k": "int64", "v": "int64"}, header=header).collect()


def test_values_over_several_lines_read_back_from_a_file_of_many_blocks(tmp_path):
    """What dw.sinks.CSV writes: Arrow split its blocks inside such values ("parser got out of sync")."""
    table = pa.table({"k": range(60_000), "s": [f"line one\nline two {i}" for i in range(60_000)]})
    dw.from_arrow(table).sink(dw.sinks.CSV(tmp_path / "out")).run()
    assert dw.read_csv(tmp_path / "out", table.schema).collect().equals(table)


@pytest.mark.parametrize("rows_after", [5, 150_000], ids=["in the last block", "blocks before the end"])
def test_a_quote_left_open_in_a_text_column_is_an_error_naming_its_line(tmp_path, rows_after):
    """It swallowed the lines after it, up to the end of Arrow's block or of the file, without an error."""
    (tmp_path / "bad.csv").write_text("k,s\n1,a\n2,\"b\n" + "".join(f"{i},c\n" for i in range(rows_after)))
    with pytest.raises(SourceError, match=r"^cannot read CSV file '.*bad\.csv': line 3, column 's': a quote opened "
                                          r"there is not closed before the end of the file$"):
        dw.read_csv(tmp_path / "bad.csv", {"k": "int64", "s": "string"}).collect()


def test_a_value_over_several_lines_at_the_end_of_a_file_is_read(tmp_path):
    (tmp_path / "ok.csv").write_text('k,s\n1,"a\nb"\n2,"c\n""d""\n"\n')
    assert dw.read_csv(tmp_path / "ok.csv", {"k": "int64", "s": "string"}).collect()["s"].to_pylist() == \
        ["a\nb", 'c\n"d"\n']


def test_a_long_bad_value_is_quoted_by_its_start(tmp_path):
    (tmp_path / "bad.csv").write_text("k,v\n1,\"" + "x" * 5_000 + "\n")  # the open quote runs to the end
    with pytest.raises(SourceError, match=r"^cannot read CSV file .*: line 2, column 'v': .*'xxxx+\.\.\. "
                                          r"\(\d+ characters\)$") as raised:
        dw.read_csv(tmp_path / "bad.csv", {"k": "int64", "v": "int64"}).collect()
    assert len(str(raised.value)) < 400


def test_a_csv_file_of_a_directory_and_of_a_sql_table_is_named_with_its_line(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "1.csv").write_text("1,2026-03-01 10:00:00\n")
    (tmp_path / "d" / "2.csv").write_text("2,2026-03-01 10:00:01\n3,2026-03-01 25:00:00\n")
    with pytest.raises(SourceError, match=r"2\.csv': line 2, column 'ts': .*invalid value '2026-03-01 25:00:00'$"):
        dw.read_csv(tmp_path / "d", {"k": "int64", "ts": "timestamp[ms]"}, header=False).collect()
    ddl = (f"CREATE TABLE s (k BIGINT, ts TIMESTAMP(3)) WITH ('connector' = 'filesystem', "
           f"'path' = '{tmp_path / 'd'}', 'format' = 'csv');\n")
    with pytest.raises(SourceError, match=r"2\.csv': line 2, column 'ts': .*invalid value '2026-03-01 25:00:00'$"):
        dw.sql(ddl + "SELECT k, ts FROM s").collect()


def test_a_job_stopped_by_a_bad_csv_value_commits_nothing(tmp_path):
    """The bad line comes after many batches; without a checkpoint none of their rows is committed."""
    (tmp_path / "in.csv").write_text("k,v\n" + MANY + "7,zz\n")
    q = dw.read_csv(tmp_path / "in.csv", {"k": "int64", "v": "int64"}).filter(dw.col("v") > 0)
    with pytest.raises(SourceError, match="line 150002, column 'v'"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(dw.Config(batch_size=1_000))
    visible = [p.name for p in (tmp_path / "out").rglob("*") if p.is_file() and "_darwin_staging" not in p.parts]
    assert visible == [".darwin-sink.json"]


def test_what_the_csv_sink_writes_reads_back_as_it_was(tmp_path):
    """NULL is an empty unquoted field; NaN, '' and strings such as 'NULL' or 'NA' are values."""
    table = pa.table({"ts": pa.array([0, 1, 2, 3], pa.timestamp("ms")),
                      "s": ["a", "", None, "NULL"], "t": ["NA", "nan", "N/A", None],
                      "f": [1.5, float("nan"), None, -0.0], "i": [1, None, 3, -4]})
    dw.from_arrow(table).sink(dw.sinks.CSV(tmp_path / "out")).run()
    back = dw.read_csv(tmp_path / "out", table.schema).collect()
    assert [[repr(v) for v in row.values()] for row in back.to_pylist()] == \
        [[repr(v) for v in row.values()] for row in table.to_pylist()]
    (tmp_path / "inferred.csv").write_text("k,v,s\n1,,x\n,nan,\n")
    assert dw.read_csv(tmp_path / "inferred.csv").collect().to_pydict() == \
        {"k": [1, None], "v": [None, pytest.approx(float("nan"), nan_ok=True)], "s": ["x", None]}


def test_the_csv_sink_spells_nan_and_infinities_as_java_readers_parse_them(tmp_path):
    """Spark and Flink parse a double with Java's Double.parseDouble, which knows NaN, Infinity and
    -Infinity but not Arrow's nan, inf and -inf: Spark read those as NULL without an error."""
    import csv

    table = pa.table({"f": [float("nan"), float("inf"), 1.5, None, float("-inf"), -0.0], "s": list("abcdef")})
    dw.from_arrow(table).sink(dw.sinks.CSV(tmp_path / "out")).run()
    (part,) = (tmp_path / "out").glob("part-*.csv")
    with open(part, newline="") as f:
        assert [row[0] for row in csv.reader(f)] == ["f", "NaN", "Infinity", "1.5", "", "-Infinity", "-0"]
    for schema in (table.schema, None):
        back = dw.read_csv(tmp_path / "out", schema).collect()
        assert [repr(v) for v in back["f"].to_pylist()] == [repr(v) for v in table["f"].to_pylist()]


def test_read_ipc_file_stream_and_directory(tmp_path):
    table = pa.table({"x": [1, 2, 3]})
    (tmp_path / "d").mkdir()
    feather.write_feather(table, tmp_path / "d" / "a.arrow")
    with pa.OSFile(str(tmp_path / "d" / "b.arrows"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    assert dw.read_ipc(tmp_path / "d" / "a.arrow").collect().equals(table)
    assert dw.read_ipc(tmp_path / "d" / "b.arrows").agg(s=dw.sum("x")).collect()["s"].to_pylist() == [6]
    assert dw.read_ipc(tmp_path / "d").collect()["x"].to_pylist() == [1, 2, 3, 1, 2, 3]


@pytest.mark.parametrize("kind", ["csv", "ipc file", "ipc stream"])
@pytest.mark.parametrize("batch_size", [50_000, 64_000, 1 << 20])
def test_a_file_is_read_in_batches_of_the_size_configured(tmp_path, kind, batch_size):
    """Arrow reads a CSV file in blocks of 1 MB and an IPC file in the batches it was written in: a job
    ran in batches of those (70,000 rows, 7,000 here) whatever its batch size, each too little work to
    share between workers. Batches are batch_size rows across them, the last one shorter."""
    from darwin.io.file_sources import CsvSource, IpcSource

    n = 150_000
    table = pa.table({"k": pa.array(range(n), pa.int64()), "v": [i * 0.5 for i in range(n)]})
    path = tmp_path / {"csv": "t.csv", "ipc file": "t.arrow", "ipc stream": "t.arrows"}[kind]
    if kind == "csv":
        pacsv.write_csv(table, path)
        source = CsvSource(path, table.schema)
    else:
        new = pa.ipc.new_file if kind == "ipc file" else pa.ipc.new_stream
        with pa.OSFile(str(path), "wb") as sink, new(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=7_000)
        source = IpcSource(path)
    for columns in (("k", "v"), ("v",)):
        batches = list(source.batches(columns, batch_size))
        assert [b.num_rows for b in batches] == [min(batch_size, n - at) for at in range(0, n, batch_size)]
        assert pa.Table.from_batches(batches).equals(table.select(list(columns)))


def test_read_ipc_malformed_file(tmp_path):
    (tmp_path / "bad.arrow").write_bytes(b"not arrow at all")
    with pytest.raises(SourceError, match=r"cannot read Arrow IPC file '.*bad\.arrow'"):
        dw.read_ipc(tmp_path / "bad.arrow")


def test_a_directory_of_partition_directories_says_they_are_not_read(tmp_path):
    """Darwin's (or Spark's) partitioned output holds its files in dt=.../ directories, which a
    directory source does not read: 'holds no Parquet files' it said, of a directory holding them."""
    dw.from_arrow(pa.table({"g": [1, 2], "v": [3, 4]})).sink(dw.sinks.Parquet(tmp_path / "out", partition_by="g")).run()
    with pytest.raises(SourceError, match=r"holds no Parquet files \(\*\.parquet\) of its own, only in its "
                                          r"directories \['g=1', 'g=2'\], which are not read: read each"):
        dw.read_parquet(tmp_path / "out")
    assert dw.read_parquet(tmp_path / "out" / "g=1").collect().to_pydict() == {"v": [3]}


def test_read_parquet_directory(tmp_path):
    import pyarrow.parquet as pq

    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "p" / "part-1.parquet")
    pq.write_table(pa.table({"x": [3]}), tmp_path / "p" / "part-2.parquet")
    assert dw.read_parquet(tmp_path / "p").collect()["x"].to_pylist() == [1, 2, 3]


def test_a_window_over_a_parquet_directory_takes_the_ring_one_file_takes(tmp_path):
    """A directory knows a key's bounds from every file's statistics (it knew none: its windows went
    to the hash table, slower than the dense ring a single file of the same rows takes); a file
    without statistics for the column leaves them unknown."""
    import pyarrow.parquet as pq

    t = pa.table({"ts": pa.array([i * 500 for i in range(40)], pa.timestamp("ms")),
                  "k": [(i * 7) % 13 + 100 for i in range(40)], "v": list(range(40))})
    (tmp_path / "d").mkdir()
    for i in range(4):
        pq.write_table(t.slice(i * 10, 10), tmp_path / "d" / f"part-{i}.parquet")

    def query(path):
        return dw.read_parquet(path, time="ts").window(dw.Tumble("2s", on="ts")).group_by("k").agg(s=dw.sum("v"))
    assert dw.read_parquet(tmp_path / "d").plan.source.bounds("k") == (100, 112)
    assert "state=ring" in query(tmp_path / "d").explain()
    assert query(tmp_path / "d").collect().equals(query(tmp_path / "d").collect(dw.Config(mode="interpreted")))
    pq.write_table(t.slice(0, 5), tmp_path / "d" / "part-9.parquet", write_statistics=False)
    assert "state=ring" not in query(tmp_path / "d").explain()
