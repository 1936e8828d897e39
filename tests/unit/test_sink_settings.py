"""Sink modes, partitioning and upsert keys: bad settings are refused naming the problem, before
anything runs; the keys Darwin derives; partition directories that stay inside the output."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin import col
from darwin.errors import PlanError, SinkError
from darwin.io.output_dir import VERSIONS_KEPT, OutputDirectory
from darwin.io.partitions import DEFAULT_PARTITION, escape, render, segment, split
from darwin.plan.keys import unique_key
from darwin.state.checkpoint import KEEP

SINKS = [dw.sinks.Parquet, dw.sinks.CSV]


def bids() -> dw.Table:
    t = pa.table({"ts": pa.array([0, 1500, 2500, 500], pa.timestamp("ms")), "k": [1, 2, 1, 3],
                  "v": [1.0, 2.0, 3.0, 4.0], "s": ["a", "b", "a", None]})
    return dw.from_arrow(t, time="ts")


def updating() -> dw.Table:
    return bids().group_by("k").agg(n=dw.count(), total=dw.sum("v"))


# -- settings refused when the sink is made -------------------------------------------------------

@pytest.mark.parametrize("sink", SINKS)
def test_an_unknown_mode_is_refused_naming_the_modes(sink, tmp_path):
    with pytest.raises(SinkError, match=r"mode='upserts'.*unknown sink mode.*'append'.*'changelog'.*'upsert'"):
        sink(tmp_path, mode="upserts")


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("path, late", [("out", "out"), ("out", "out/late"), ("out/rows", "out"), ("out", ".")])
def test_late_rows_and_results_never_share_or_nest_directories(sink, tmp_path, monkeypatch, path, late):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SinkError, match="late rows need a directory of their own"):
        sink(path, late_path=late)


def test_a_sink_refused_its_late_directory_leaves_nothing_in_its_result_directory(tmp_path):
    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "notes.txt").write_text("mine")
    q = bids().window(dw.Tumble("1s", on="ts"), late_output=True).group_by("k").agg(n=dw.count())
    with pytest.raises(SinkError, match="is not empty"):
        q.sink(dw.sinks.Parquet(tmp_path / "out", late_path=tmp_path / "late")).run()
    assert not (tmp_path / "out").exists()  # neither made nor marked as a run's


def test_a_directory_holding_output_names_both_ways_out(tmp_path):
    q = bids().filter(col("k") > 1)
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run()
    with pytest.raises(SinkError) as e:
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run()
    assert "If that run took checkpoints" in str(e.value) and "if it took none, delete its files" in str(e.value)


def test_a_key_without_upsert_is_refused(tmp_path):
    with pytest.raises(SinkError, match=r"key=.*goes with mode='upsert'"):
        dw.sinks.Parquet(tmp_path, key="k")
    with pytest.raises(SinkError, match=r"key=.*goes with mode='upsert'"):
        dw.sinks.Parquet(tmp_path, mode="changelog", key=["k"])


def test_an_upsert_cannot_be_partitioned(tmp_path):
    with pytest.raises(SinkError, match=r"upsert.*cannot be partitioned"):
        dw.sinks.Parquet(tmp_path, mode="upsert", partition_by=["k"])


@pytest.mark.parametrize("bad", [[1], [""], 3, ["k", "k"]])
def test_partition_by_takes_distinct_column_names(bad, tmp_path):
    with pytest.raises(SinkError, match=r"partition_by"):
        dw.sinks.CSV(tmp_path, partition_by=bad)


def test_a_partition_column_readers_would_skip_is_refused(tmp_path):
    with pytest.raises(SinkError, match=r"'_k' starts with '_'.*skip"):
        dw.sinks.CSV(tmp_path, partition_by=["_k"])


# -- settings refused against the result, at q.sink(...) ------------------------------------------

@pytest.mark.parametrize("sink", SINKS)
def test_a_missing_partition_column_is_refused_naming_it(sink, tmp_path):
    with pytest.raises(SinkError, match=r"partition_by.*no column 'dt'.*\['ts', 'k', 'v', 's'\]"):
        bids().sink(sink(tmp_path, partition_by=["k", "dt"]))
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_partitioning_by_every_column_is_refused(tmp_path):
    with pytest.raises(SinkError, match=r"every column would be a partition column"):
        bids().select("k", "s").sink(dw.sinks.Parquet(tmp_path, partition_by=["s", "k"]))


def test_an_updating_result_cannot_be_appended(tmp_path):
    with pytest.raises(SinkError, match=r"mode='append'.*updating.*mode='changelog'.*mode='upsert'"):
        updating().sink(dw.sinks.Parquet(tmp_path, mode="append"))


@pytest.mark.parametrize("query", ["scan", "union", "outer join", "key dropped"])
def test_an_upsert_without_a_key_is_refused(query, tmp_path):
    t = bids()
    q = {"scan": t, "union": t.union(t), "outer join": t.join(t.select("k", "s"), on=[("k", "k")], how="left"),
         "key dropped": updating().select("n", "total")}[query]
    with pytest.raises(SinkError, match=r"mode='upsert'.*needs a key.*key=\["):
        q.sink(dw.sinks.Parquet(tmp_path, mode="upsert"))


def test_an_upsert_key_the_result_lacks_is_refused(tmp_path):
    with pytest.raises(SinkError, match=r"key=.*no column\(s\) \['auction'\].*\['k', 'n', 'total'\]"):
        updating().sink(dw.sinks.Parquet(tmp_path, mode="upsert", key=["auction"]))
    with pytest.raises(SinkError, match=r"key=.*no column\(s\) \['op'\]"):  # the change column is not the result's
        updating().sink(dw.sinks.Parquet(tmp_path, mode="upsert", key="op"))


def test_an_updating_result_with_a_column_named_op_is_refused():
    with pytest.raises(PlanError, match=r"column named 'op'.*rename it"):
        bids().group_by("k").agg(op=dw.count()).collect()


def test_a_resumed_job_needs_the_sink_it_ran_with(tmp_path):
    q = updating()
    config = dw.Config(batch_size=1, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="1 batch")
    q.sink(dw.sinks.Parquet(tmp_path / "out", mode="upsert")).run(config)
    with pytest.raises(SinkError, match=r"committed by a sink writing .*'upsert'.*this sink writes .*'changelog'"):
        q.sink(dw.sinks.Parquet(tmp_path / "out", mode="changelog")).run(config)


# -- keys Darwin derives ------------------------------------------------------------------------

def test_unique_keys_of_plans():
    t = bids()
    assert unique_key(updating().plan) == ("k",)
    assert unique_key(t.agg(n=dw.count()).plan) == ()  # one row at most
    assert unique_key(t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count()).plan) == \
        ("window_start", "window_end", "k")
    assert unique_key(updating().filter(col("n") > 1).select(key=col("k"), n=col("n")).plan) == ("key",)
    assert unique_key(updating().select("n", k2=col("k") + 1).plan) is None
    assert unique_key(t.plan) is None
    assert unique_key(t.join(t.select("k", "s"), on=[("k", "k")], how="full").plan) is None
    assert unique_key(t.top_n(2, by="s", order=[dw.desc("v")], rank="r").plan) == ("s", "r")
    assert unique_key(t.window(dw.Tumble("1s", on="ts")).table().top_n(1, by="k", order="v", rank="r").plan) == \
        ("window_start", "window_end", "k", "r")
    assert unique_key(updating().top_n(1, by="n", order="total").plan) == ("k",)  # rows of its input
    assert unique_key(t.top_n(1, by="k", order="v").plan) == ("k",)  # one row per partition
    assert unique_key(t.top_n(2, by="k", order="v").plan) is None
    assert unique_key(t.deduplicate(["k", "s"], keep="last").plan) == ("k", "s")
    over = dw.sum("v").over(partition_by="s", order_by="ts", rows=(2, 0))  # rows of its input, aggregates added
    assert unique_key(t.deduplicate("k").with_columns(m=over).plan) == ("k",)
    assert unique_key(t.with_columns(m=over).plan) is None
    assert unique_key(t.window(dw.Session("1s", on="ts")).group_by("s").agg(n=dw.count()).plan) == \
        ("window_start", "window_end", "s")


# -- partition directories ---------------------------------------------------------------------

def test_partition_values_are_rendered_and_escaped_as_spark_does():
    from datetime import datetime

    assert segment("hm", render("10:00")) == "hm=10%3A00"
    assert segment("dt", render(datetime(2015, 7, 15, 10, 0))) == "dt=2015-07-15 10%3A00%3A00"
    assert render(datetime(2015, 7, 15, 10, 0, 0, 250_000)) == "2015-07-15 10:00:00.25"
    assert [render(v) for v in (True, 7, 1.5, None)] == ["true", "7", "1.5", None]
    assert [render(v) for v in (float("nan"), float("inf"), -float("inf"))] == ["NaN", "Infinity", "-Infinity"]
    # as Java's Double.toString: scientific from 1e7 and below 1e-3 (Python wrote 10000000.0, 1e+20, 0.0001)
    floats = {1e7: "1.0E7", 1e-4: "1.0E-4", 123456789.125: "1.23456789125E8", 1e20: "1.0E20", 1e300: "1.0E300",
              -1e-5: "-1.0E-5", 9999999.0: "9999999.0", 0.001: "0.001", 100.0: "100.0", -0.0: "-0.0",
              0.1 + 0.2: "0.30000000000000004", 2.5e-7: "2.5E-7"}  # the names Spark 4 wrote for these
    assert {v: render(v) for v in floats} == floats
    assert segment("s", None) == segment("s", "") == f"s={DEFAULT_PARTITION}"
    assert escape("a=b/c%d") == "a%3Db%2Fc%25d"


def test_timestamp_partitions_are_named_as_spark_names_them_in_every_year(tmp_path):
    """Spark's partitionBy (its cast to string) pads the year to four digits, signs years before 0 and
    after 9999; glibc's %Y wrote 'ts=1-01-01 ...', and a year Python's datetime cannot hold raised a
    bare OverflowError. (The names are those Spark 4 wrote for these values.)"""
    ms = [-62_167_219_200_000 + 1, -62_135_596_800_000 + 5, -62_198_755_200_000, 253_402_300_800_000,
          -30_575_664_000_000, 5]
    t = pa.table({"ts": pa.array(ms, pa.timestamp("ms")), "id": list(range(len(ms)))})
    dw.from_arrow(t).sink(dw.sinks.Parquet(tmp_path / "out", partition_by="ts")).run()
    assert sorted(p.name for p in (tmp_path / "out").glob("ts=*")) == [
        "ts=+10000-01-01 00%3A00%3A00", "ts=-0001-01-01 00%3A00%3A00", "ts=0000-01-01 00%3A00%3A00.001",
        "ts=0001-01-01 00%3A00%3A00.005", "ts=1001-02-05 00%3A00%3A00", "ts=1970-01-01 00%3A00%3A00.005"]
    from datetime import datetime

    assert render(datetime(1, 1, 1, 0, 0, 0, 5000)) == "0001-01-01 00:00:00.005"
    batch = pa.record_batch({"t": pa.array([1_500_000, -1], pa.timestamp("us")), "v": [0, 1]})
    assert sorted(path for path, _ in split(batch, ("t",))) == ["t=1969-12-31 23%3A59%3A59.999999",
                                                                  "t=1970-01-01 00%3A00%3A01.5"]


@pytest.mark.parametrize("value", ["..", "../..", "../../etc/passwd", "/abs", "a/../../b", "\0", "%2F..", ".",
                                   "x" * 10, "\\..\\.."])
def test_a_partition_value_never_leaves_its_directory(value):
    name = segment("p", value)
    assert "/" not in name and "\0" not in name and name not in (".", "..")
    root = Path("/out")
    assert (root / name).parent == root


def test_split_keeps_the_order_of_rows_in_each_partition():
    batch = pa.record_batch({"p": [1, 2, 1, None, 2, 1], "s": ["", None, "x", "", "y", None], "v": list(range(6))})
    got = {path: rows["v"].to_pylist() for path, rows in split(batch, ("p",))}
    assert got == {"p=1": [0, 2, 5], "p=2": [1, 4], f"p={DEFAULT_PARTITION}": [3]}
    got = {path: rows["v"].to_pylist() for path, rows in split(batch, ("s",))}  # NULL and '' share one directory
    assert got == {f"s={DEFAULT_PARTITION}": [0, 1, 3, 5], "s=x": [2], "s=y": [4]}
    assert all(rows.schema.names == ["p", "v"] for _, rows in split(batch, ("s",)))


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "", "a//b", "./x"])
def test_recorded_file_names_outside_the_directory_are_refused(name, tmp_path):
    out = OutputDirectory(tmp_path / "out", "csv")
    with pytest.raises(SinkError, match="would leave the output directory"):
        out.commit_part({"name": name, "rows": 1, "crc32": 0})


def test_a_partition_directory_replaced_by_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    t = pa.table({"p": ["a"], "v": [1]})
    q = dw.from_arrow(t)
    out = tmp_path / "out"
    out.mkdir()
    sink = dw.sinks.CSV(out, partition_by=["p"])
    q.sink(sink)
    from darwin.io.sinks import ResultSpec

    sink.open(ResultSpec(t.schema), None, "job")
    (out / "_darwin_staging" / "p=a").symlink_to(elsewhere)
    with pytest.raises(SinkError, match="is a link or a file"):
        sink.write("result", t.to_batches()[0])
    assert not list(elsewhere.iterdir())


def test_sinks_keep_a_snapshot_for_every_kept_checkpoint():
    assert VERSIONS_KEPT == KEEP


def test_describe_names_the_settings(tmp_path):
    assert dw.sinks.Parquet("o", mode="upsert", key=["k"]).describe() == "parquet o upsert by k"
    assert dw.sinks.CSV("o", partition_by="dt").describe() == "csv o partitioned by dt"


def test_an_append_only_result_in_changelog_mode_is_all_inserts(tmp_path):
    bids().sink(dw.sinks.Parquet(tmp_path, mode="changelog")).run()
    written = pq.read_table(tmp_path)
    assert written.column("op").to_pylist() == ["+I"] * 4
    assert written.drop_columns(["op"]).equals(bids().collect())


def test_a_partition_value_too_long_for_a_directory_name_is_a_sink_error(tmp_path):
    q = dw.from_arrow(pa.table({"p": ["x" * 300], "v": [1]}))
    with pytest.raises(SinkError, match=r"cannot make partition directory .*p=xxx"):
        q.sink(dw.sinks.CSV(tmp_path / "out", partition_by="p")).run()
