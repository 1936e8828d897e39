"""What file sinks commit, on random streams, against the reference interpreter: an upsert
sink's snapshot is the final table, a changelog sink's parts are the changelog, a partitioned
sink's directories read back as the result; checkpoints at random intervals on every backend.
Upserts by a key that is not unique follow their rules, checked against a plain Python model."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st
from test_joins import HOW, SETTINGS, STATES, assert_agree, streams

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal


def sink_run(query: dw.Table, sink_of, batch: int, state: str, every: int | None, read):
    """Run ``query`` into ``sink_of(directory)`` on the compiled engine, checkpointing every ``every``
    batches (None: no checkpoints); what ``read`` reads of the output directory."""
    with tempfile.TemporaryDirectory(prefix="darwin-sink-") as directory:
        work = Path(directory)
        config = dw.Config(batch_size=batch, state=state,
                           state_path=None if state == "memory" else str(work / "state"), state_delta_limit=1)
        if every is not None:
            config = config.replace(checkpoint_dir=str(work / "chk"), checkpoint_interval=f"{every} batches")
        query.sink(sink_of(work / "out")).run(config)
        return read(work / "out")


def reference(query: dw.Table, batch: int) -> dw.RunResult:
    return query.execute(dw.Config(batch_size=batch, mode="interpreted"))


EVERY = st.one_of(st.none(), st.integers(1, 4))


@SETTINGS
@given(left=streams("L"), right=streams("R"), batch=st.integers(1, 8), state=st.sampled_from(STATES))
def test_a_filter_over_an_updating_result_keeps_the_change_kinds(left, right, batch, state):
    """Rows leave a filtered updating result (-U passes, +U does not) and come back (+U alone)."""
    assert_agree(left.group_by("s", "k").agg(n=dw.count()).filter(col("n") > 1), batch, state)
    assert_agree(left.join(right, on=[("k", "k")], how="full").filter(col("v_right").is_null()), batch, state)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8), state=st.sampled_from(STATES), every=EVERY)
def test_an_upsert_snapshot_is_the_final_table(left, batch, state, every):
    for q in (left.group_by("k").agg(n=dw.count(), total=dw.sum("v"), high=dw.max("v")),
              left.group_by("s", "k").agg(n=dw.count()).filter(col("n") > 1),  # rows leave and come back
              left.agg(n=dw.count(), total=dw.sum("v"))):
        got = sink_run(q, lambda d: dw.sinks.Parquet(d, mode="upsert"), batch, state, every,
                       lambda out: pq.read_table(out / "snapshot.parquet"))
        assert_table_equal(got, reference(q, batch).table)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8), state=st.sampled_from(STATES), every=EVERY)
def test_an_upsert_by_a_ranking_or_session_key_is_the_final_table(left, batch, state, every):
    """Keys of top-N (partition and rank), deduplication and session windows: their rows are
    retracted before another takes the key, so the snapshot is the final table."""
    for q in (left.top_n(2, by="k", order=[dw.desc("v")], rank="r"), left.deduplicate("s", keep="last", order="v"),
              left.window(dw.Session("1s", on="t")).group_by("k").agg(n=dw.count(), total=dw.sum("v"))):
        got = sink_run(q, lambda d: dw.sinks.Parquet(d, mode="upsert"), batch, state, every,
                       lambda out: pq.read_table(out / "snapshot.parquet"))
        assert_table_equal(got, reference(q, batch).table)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8), state=st.sampled_from(STATES), every=EVERY)
def test_a_csv_upsert_snapshot_is_the_final_table(left, batch, state, every):
    q = left.group_by("s").agg(n=dw.count(), total=dw.sum("v"))
    expected = reference(q, batch).table
    types = pacsv.ConvertOptions(column_types=expected.schema, strings_can_be_null=True)
    got = sink_run(q, lambda d: dw.sinks.CSV(d, mode="upsert"), batch, state, every,
                   lambda out: pacsv.read_csv(out / "snapshot.csv", convert_options=types))
    assert_table_equal(got, expected)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8),
       state=st.sampled_from(STATES), every=EVERY)
def test_a_changelog_sink_writes_the_changelog(left, right, how, batch, state, every):
    for q in (left.group_by("k").agg(n=dw.count(), total=dw.sum("v")), left.join(right, on=[("k", "k")], how=how)):
        expected = reference(q, batch).changelog  # no part is written for an epoch without rows
        got = sink_run(q, lambda d: dw.sinks.Parquet(d, mode="changelog"), batch, state, every,
                       lambda out, schema=expected.schema: pq.read_table(out, schema=schema))
        assert_table_equal(got, expected)


def partitioned_result(out: Path, expected: pa.Table, columns: list[str], fmt: str) -> pa.Table:
    """The directory as Arrow reads a Hive-partitioned dataset, columns in ``expected``'s order."""
    partitioning = ds.partitioning(pa.schema([expected.schema.field(c) for c in columns]), flavor="hive")
    rest = pa.schema([f for f in expected.schema if f.name not in columns])
    fmt_ = ds.CsvFileFormat(convert_options=pacsv.ConvertOptions(column_types=rest, strings_can_be_null=True)) \
        if fmt == "csv" else "parquet"
    schema = pa.schema(list(rest) + list(partitioning.schema))  # given: no file is written for no rows
    got = ds.dataset(out, schema=schema, format=fmt_, partitioning=partitioning).to_table()
    return got.select(expected.schema.names).cast(expected.schema)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8), state=st.sampled_from(STATES), every=EVERY,
       fmt=st.sampled_from(["parquet", "csv"]))
def test_a_partitioned_sink_reads_back_as_the_result(left, batch, state, every, fmt):
    sink = {"parquet": dw.sinks.Parquet, "csv": dw.sinks.CSV}[fmt]
    q = left.with_columns(p=col("k") % 2, tag=dw.when(col("v") > 0, "a:b/../c=d%").otherwise(col("s")))
    expected = reference(q, batch).table

    def read(out: Path) -> pa.Table:
        assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))
        return partitioned_result(out, expected, ["p", "tag"], fmt)
    got = sink_run(q, lambda d: sink(d, partition_by=["p", "tag"]), batch, state, every, read)
    assert_table_equal(got, expected, sort=True)
    updating = left.group_by("k").agg(n=dw.count())  # a changelog, partitioned by its key
    log = reference(updating, batch).changelog
    got = sink_run(updating, lambda d: sink(d, partition_by=["k"]), batch, state, every,
                   lambda out: partitioned_result(out, log, ["k"], fmt))
    assert_table_equal(got, log, sort=True)


def model_upsert(changelog: pa.Table, key: list[str]) -> list[dict]:
    """The documented upsert rules, row by row: a write replaces the key's row (and moves it last);
    a retraction removes it if it is the row withdrawn."""
    def norm(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v
    rows: dict = {}
    for row in changelog.to_pylist():
        op = row.pop("op")
        k = tuple(norm(row[c]) for c in key)
        if op in ("+I", "+U"):
            rows.pop(k, None)
            rows[k] = row
        elif k in rows and [norm(v) for v in rows[k].values()] == [norm(v) for v in row.values()]:
            del rows[k]
    return list(rows.values())


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8),
       state=st.sampled_from(STATES), every=EVERY)
def test_an_upsert_by_a_key_that_is_not_unique_follows_its_rules(left, right, how, batch, state, every):
    joined = left.join(right, on=[("k", "k")], how=how)  # a key matches several rows: last write wins
    for q, key in ((joined, ["k", "k_right"]), (left.select("k", "v", "s"), ["k"])):
        got = sink_run(q, lambda d, key=key: dw.sinks.Parquet(d, mode="upsert", key=key), batch, state, every,
                       lambda out: pq.read_table(out / "snapshot.parquet"))
        expected = pa.Table.from_pylist(model_upsert(reference(q, batch).changelog, key), q.schema)
        assert_table_equal(got, expected)
