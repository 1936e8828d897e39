"""Sources read in splits side by side give exactly the batches of the in-order read (issue 12).

Parquet splits are whole row groups (and files), in-memory tables slices of whole batches, the
Nexmark generator event-id ranges; a batch of the in-order read that spans two splits (Parquet
batches span row groups) is glued back. Checked split by split on one thread, and on 2 and 4
threads with workers stalled at random, from any offset.
"""

import random
from itertools import accumulate

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin.io.file_sources import FilesSource
from darwin.io.source import Split, joined, read_from, read_splits, splittable
from darwin.io.sources import ArrowSource, BatchSource, ParquetSource
from darwin.runtime import compiled
from darwin.runtime.workers import inject_delays
from nexmark import ysb
from nexmark.generator import GeneratorConfig
from nexmark.source import NexmarkStream, YsbAds

ROWS = 1000


def table(n: int = ROWS, first: int = 0) -> pa.Table:
    i = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"ts": pa.array(i * 10, pa.timestamp("ms")), "k": i % 17,
                     "s": pa.array([f"v{x % 23}" for x in i]), "v": (i % 13).astype(np.float64)})


def layout(batches) -> tuple[list[int], pa.Table | None]:
    batches = list(batches)
    return [b.num_rows for b in batches], pa.Table.from_batches(batches) if batches else None


def assert_same_batches(source, columns, batch_size, offset, split_rows):
    want = list(read_from(source, columns, batch_size, offset))
    ways = [list(read_splits(source, columns, batch_size, offset, split_rows))]
    rng = random.Random(offset * 31 + batch_size)
    with inject_delays(lambda worker: rng.random() * 0.002):
        for threads in (2, 4):
            ways.append(list(compiled.read_from(source, columns, batch_size, offset, threads)))
    for got in ways:
        assert [b.num_rows for b in got] == [b.num_rows for b in want]
        assert all(g.equals(w) for g, w in zip(got, want))


@pytest.fixture(scope="module")
def parquet_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("splits")
    pq.write_table(table(), d / "a.parquet", row_group_size=170)
    pq.write_table(table(333, ROWS), d / "b.parquet", row_group_size=100)
    return d


COLUMNS = st.sampled_from([("ts", "k", "s", "v"), ("k",), ("s", "ts"), ()])
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(columns=COLUMNS, batch_size=st.integers(1, 600), offset=st.integers(0, ROWS + 400),
       split_rows=st.integers(1, 900))
def test_parquet_row_group_splits_give_the_in_order_batches(parquet_files, columns, batch_size, offset, split_rows):
    assert_same_batches(ParquetSource(parquet_files / "a.parquet"), columns, batch_size, offset, split_rows)


@SETTINGS
@given(columns=COLUMNS, batch_size=st.integers(1, 600), offset=st.integers(0, ROWS + 400),
       split_rows=st.integers(1, 900))
def test_splits_of_several_parquet_files_give_the_in_order_batches(parquet_files, columns, batch_size, offset,
                                                                    split_rows):
    files = FilesSource(sorted(parquet_files.glob("*.parquet")), ParquetSource, "dir")
    assert files.splittable
    assert_same_batches(files, columns, batch_size, offset, split_rows)


@SETTINGS
@given(columns=COLUMNS, batch_size=st.integers(1, 600), offset=st.integers(0, ROWS + 10),
       split_rows=st.integers(1, 900), cuts=st.lists(st.integers(0, ROWS), max_size=4))
def test_slices_of_an_in_memory_table_give_the_in_order_batches(columns, batch_size, offset, split_rows, cuts):
    t = table()
    bounds = sorted({0, ROWS, *cuts})
    chunked = pa.concat_tables([t.slice(a, b - a) for a, b in zip(bounds, bounds[1:])])  # chunks of any sizes
    assert_same_batches(ArrowSource(chunked), columns, batch_size, offset, split_rows)


@settings(max_examples=12, deadline=None)
@given(stream=st.sampled_from(["person", "auction", "bid"]), batch_size=st.integers(1, 700),
       offset=st.integers(0, 3100), split_rows=st.integers(1, 2000), events=st.integers(0, 3000))
def test_event_id_ranges_of_the_generator_give_the_in_order_batches(stream, batch_size, offset, split_rows, events):
    source = NexmarkStream(GeneratorConfig(events=events, seed=3), stream)
    columns = tuple(source.schema.names)
    assert_same_batches(source, columns, batch_size, offset, split_rows)
    # seeking gives the rows of the whole read from ``offset`` on
    batches = list(source.batches(columns, batch_size))
    # a batch holds at most batch_size rows, and whole epochs' worth where batch_size allows: a person
    # batch is not a fiftieth of one
    share = (1, 3, 46)[("person", "auction", "bid").index(stream)]
    epochs = batch_size // share  # of 50 events: the batch grid where they span more than batch_size ids
    full = epochs * share if epochs * 50 >= batch_size else None
    assert all(b.num_rows <= batch_size for b in batches)
    assert full is None or all(b.num_rows == full for b in batches[:-1])
    whole = pa.concat_tables(pa.Table.from_batches([b]) for b in batches) if events else None
    sought = list(read_from(source, columns, batch_size, offset))
    if whole is not None and offset < whole.num_rows:
        assert pa.Table.from_batches(sought).equals(whole.slice(offset))
    else:
        assert sum(b.num_rows for b in sought) == 0


def sources_to_resume(parquet_files):
    """A source of each kind a job resumes reading from an offset."""
    t = table()
    chunked = pa.concat_tables([t.slice(0, 333), t.slice(333, 400), t.slice(733)])
    return {"parquet": ParquetSource(parquet_files / "a.parquet"),
            "parquet files": FilesSource(sorted(parquet_files.glob("*.parquet")), ParquetSource, "dir"),
            "arrow": ArrowSource(chunked), "generator": NexmarkStream(GeneratorConfig(events=3000, seed=3), "bid")}


@SETTINGS
@given(kind=st.sampled_from(["parquet", "parquet files", "arrow", "generator"]),
       columns=st.sampled_from([("ts", "k", "s", "v"), ("k",), ("s", "ts")]),  # a scan reads a column at least
       batch_size=st.integers(1, 600), resumed_at=st.integers(1, 40))
def test_a_read_resumed_at_a_batch_boundary_gives_the_batches_of_the_read_from_the_start(
        parquet_files, kind, columns, batch_size, resumed_at):
    """A checkpoint is taken between two batches; the run resumed from it must read the batches the
    run never interrupted read after it, as an updating result emits per batch (other boundaries give
    another changelog). A Parquet file read from an offset counted its batches from the row group
    holding it, so a resumed run read batches of 3 and 10 rows where the first read 10 and 10."""
    source = sources_to_resume(parquet_files)[kind]
    if kind == "generator":
        columns = tuple(source.schema.names)
    whole = list(read_from(source, columns, batch_size))
    resumed_at = min(resumed_at, len(whole))
    offset = sum(b.num_rows for b in whole[:resumed_at])
    for threads in (1, 2):
        got = list(compiled.read_from(source, columns, batch_size, offset, threads))
        assert [b.num_rows for b in got] == [b.num_rows for b in whole[resumed_at:]]
        assert all(g.equals(w) for g, w in zip(got, whole[resumed_at:]))


def test_a_split_holds_its_own_first_row_and_rows(parquet_files):
    source = ParquetSource(parquet_files / "a.parquet")
    splits = list(source.splits(("k",), 64, 250, 300))
    assert splits[0].start == 250 and splits[0].continues is False
    assert [s.start + s.rows for s in splits[:-1]] == [s.start for s in splits[1:]]  # no row lost or doubled
    assert splits[-1].start + splits[-1].rows == ROWS
    assert all(s.rows >= 300 for s in splits[1:-1])  # whole row groups of 170 rows, at least split_rows
    assert all((s.start + s.rows) % 170 == 0 for s in splits[:-1])
    assert [s.continues for s in splits[1:]] == [s.start % 64 != 0 for s in splits[1:]]


def test_a_batch_spanning_several_short_splits_is_glued_whole():
    t = table(10)
    pieces = [t.slice(0, 3).to_batches()[0], t.slice(3, 2).to_batches()[0], t.slice(5, 5).to_batches()[0]]
    reads = [(Split(0, 3, ()), [pieces[0]]), (Split(3, 2, (), True), [pieces[1]]),
             (Split(5, 5, (), True), [pieces[2]])]
    assert layout(joined(reads))[0] == [10]
    reads[2] = (Split(5, 5, ()), [pieces[2]])
    assert layout(joined(reads))[0] == [5, 5]


def test_sources_without_splits_keep_the_in_order_read():
    t = table(50)
    source = BatchSource(t.schema, lambda: t.to_batches(max_chunksize=7))
    assert not splittable(source)
    assert layout(compiled.read_from(source, ("k",), 10, 3, 4))[0] == [4, 7, 7, 7, 7, 7, 7, 1]


def test_an_error_in_a_split_surfaces_in_the_reader(parquet_files):
    source = ParquetSource(parquet_files / "a.parquet")

    def failing(split, columns, batch_size):
        raise dw.errors.SourceError(f"bad split at {split.start}")
    source.read_split = failing
    with pytest.raises(dw.errors.SourceError, match="bad split at 0"):
        list(compiled.read_from(source, ("k",), 64, 0, 2))


@settings(max_examples=8, deadline=None)
@given(batch_size=st.integers(3000, 70_000), offset=st.integers(0, 140_000), split_rows=st.integers(1, 200_000))
def test_chunk_ranges_of_ysb_ads_give_the_batches_of_the_batch_factory(batch_size, offset, split_rows):
    config = GeneratorConfig(events=140_000, seed=5)
    factory = BatchSource(ysb.SCHEMA, lambda: ysb.generate(config.events, config.seed, config.first_event_rate))
    source = YsbAds(config)
    columns = ("ad_id", "event_type", "event_time")
    want = list(read_from(factory, columns, batch_size, offset))
    assert [b.num_rows for b in read_from(source, columns, batch_size, offset)] == [b.num_rows for b in want]
    assert_same_batches(source, columns, batch_size, offset, split_rows)
    got = list(compiled.read_from(source, columns, batch_size, offset, 2))
    assert all(g.equals(w) for g, w in zip(got, want))


def _chunked(t: pa.Table, cuts: list[int]) -> pa.Table:
    bounds = sorted({0, t.num_rows, *cuts})
    return pa.concat_tables([t.slice(a, b - a) for a, b in zip(bounds, bounds[1:])])


@SETTINGS
@given(columns=COLUMNS, batch_size=st.integers(1, 600), offset=st.integers(0, ROWS + 10),
       cuts=st.lists(st.integers(0, ROWS), max_size=40))
def test_a_table_of_many_chunks_is_read_in_batches_of_the_size_configured(columns, batch_size, offset, cuts):
    """Batches are cut every ``batch_size`` rows from the table's first row, across its chunks (a table
    of chunks of 20 rows was read in batches of 20 rows whatever the batch size); a batch within one
    chunk is a slice of it, not a copy."""
    chunked = _chunked(table(), cuts)
    got = list(read_from(ArrowSource(chunked), columns, batch_size, offset))
    grid = [min(ROWS, (at // batch_size + 1) * batch_size) for at in range(offset, ROWS)
            if at == offset or at % batch_size == 0]
    assert [b.num_rows for b in got] == [end - start for start, end in zip([offset, *grid], grid)]
    if got:
        assert pa.Table.from_batches(got).equals(table().select(list(columns)).slice(offset, ROWS - offset))
    if "k" in columns:
        chunk_starts = list(accumulate((len(c) for c in chunked.column("k").chunks), initial=0))
        at = offset
        for batch in got:
            within = any(a <= at and at + batch.num_rows <= b for a, b in zip(chunk_starts, chunk_starts[1:]))
            if within:  # shares the chunk's buffer
                chunk = chunked.column("k").chunks[max(i for i, a in enumerate(chunk_starts) if a <= at)]
                assert batch.column(columns.index("k")).buffers()[1].address == chunk.buffers()[1].address
            at += batch.num_rows


def _directory(tmp_path_factory, sizes: list[int], name: str, retype=None) -> list:
    """Parquet files of ``sizes`` rows, together the rows of ``table(sum(sizes))``; ``retype(i, t)`` may
    store file i's columns as other Arrow types."""
    d = tmp_path_factory.mktemp(name)
    whole = table(sum(sizes))
    for i, (start, n) in enumerate(zip(accumulate(sizes, initial=0), sizes)):
        part = whole.slice(start, n)
        pq.write_table(retype(i, part) if retype else part, d / f"part-{i:04d}.parquet", row_group_size=37)
    return sorted(d.glob("*.parquet"))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 90), min_size=2, max_size=30), batch_size=st.integers(1, 700),
       offset=st.integers(0, 800), split_rows=st.integers(1, 400), columns=COLUMNS)
def test_a_directory_of_small_files_is_read_in_batches_spanning_files(tmp_path_factory, sizes, batch_size, offset,
                                                                       split_rows, columns):
    """Batches are cut every ``batch_size`` rows from the first file's first row, across files: a
    directory of 400 files of 10,000 rows was read in 400 batches (at a batch size of 65,536), each
    paying a step's costs, and two workers fell back to one."""
    files = FilesSource(_directory(tmp_path_factory, sizes, "small"), ParquetSource, "dir")
    rows = sum(sizes)
    got = list(read_from(files, columns, batch_size, offset))
    grid = [min(rows, (at // batch_size + 1) * batch_size) for at in range(offset, rows)
            if at == offset or at % batch_size == 0]
    assert [b.num_rows for b in got] == [end - start for start, end in zip([offset, *grid], grid)]
    if got and columns:
        assert pa.Table.from_batches(got).equals(table(rows).select(list(columns)).slice(offset))
    assert_same_batches(files, columns, batch_size, offset, split_rows)


def test_files_storing_a_column_as_other_arrow_types_are_read_each_in_its_own_batches(tmp_path_factory):
    """int32 in one file and int64 in another are both Darwin's int64, but batches of both cannot be
    concatenated: each file's batches pass as they are (the engine converts each batch), split or not.
    A column of only NULLs, which Arrow types null, takes the other files' type and spans files."""
    def narrow(i, t):
        return t.set_column(1, "k", t.column("k").cast(pa.int32())) if i == 1 else t

    def empty(i, t):
        return t.set_column(3, "v", pa.nulls(t.num_rows)) if i == 1 else t
    narrowed = FilesSource(_directory(tmp_path_factory, [30, 30, 30], "types", narrow), ParquetSource, "dir")
    assert [b.num_rows for b in read_from(narrowed, ("ts", "k"), 50)] == [30, 30, 30]
    assert layout(read_from(narrowed, ("ts", "s"), 50))[0] == [50, 40]  # k not read: the files agree
    for columns in [("ts", "k"), ("ts", "s")]:
        assert_same_batches(narrowed, columns, 50, 7, 20)
    nulls = FilesSource(_directory(tmp_path_factory, [30, 30, 30], "nulls", empty), ParquetSource, "dir")
    sizes, got = layout(read_from(nulls, ("k", "v"), 50))
    assert sizes == [50, 40] and got.column("v").type == pa.float64()
    assert got.column("v").null_count == 30 and got.column("v").to_pylist()[:3] == [0.0, 1.0, 2.0]
    assert_same_batches(nulls, ("k", "v"), 50, 7, 20)


def test_a_directory_of_int96_times_spans_files_in_milliseconds(tmp_path):
    """Spark's legacy INT96 times are read as milliseconds, though the file's schema says nanoseconds."""
    for i in range(3):
        pq.write_table(table(30, 30 * i).select(["ts", "k"]), tmp_path / f"p{i}.parquet",
                       use_deprecated_int96_timestamps=True)
    files = FilesSource(sorted(tmp_path.glob("*.parquet")), ParquetSource, "dir")
    sizes, got = layout(read_from(files, ("ts", "k"), 50))
    assert sizes == [50, 40] and got.column("ts").type == pa.timestamp("ms")
    assert got.column("ts").equals(table(90).column("ts"))
    assert_same_batches(files, ("ts", "k"), 50, 7, 20)
