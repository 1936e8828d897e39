"""The discarding sink counts what it is given: the rows a run produced (an updating result's changes)
and its late rows, on both engines and every state backend, as collect() and changelog() see them."""

import pyarrow as pa
import pytest

import darwin as dw

CASES = [("compiled", "memory"), ("compiled", "mmap"), ("compiled", "rocksdb"), ("interpreted", "memory")]


def events() -> dw.Table:
    """Keys 0-2 over 4 s, with two rows that arrive after their window closed."""
    ts = [0, 400, 1500, 200, 2500, 2600, 900, 3900]
    return dw.from_arrow(pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": [i % 3 for i in range(len(ts))],
                                   "v": list(range(len(ts)))}), time="ts", max_delay="0s")


def config(mode, state, tmp_path):
    return dw.Config(mode=mode, state=state, state_path=None if state == "memory" else tmp_path / "state",
                     batch_size=2)


@pytest.mark.parametrize("mode, state", CASES)
def test_a_windowed_result_and_its_late_rows_are_counted(mode, state, tmp_path):
    q = events().window(dw.Tumble("1s", on="ts"), late_output=True).group_by("k").agg(n=dw.count(), s=dw.sum("v"))
    expected = q.execute(config(mode, state, tmp_path / "a"))
    hole = dw.sinks.Blackhole()
    metrics = q.sink(hole).run(config(mode, state, tmp_path / "b")).metrics
    assert hole.rows == expected.table.num_rows == metrics["output_rows"] > 0
    assert expected.late is not None
    assert hole.late_rows == expected.late.num_rows == 2


@pytest.mark.parametrize("mode, state", CASES)
def test_an_updating_result_is_counted_as_its_changes(mode, state, tmp_path):
    q = events().group_by("k").agg(n=dw.count(), s=dw.sum("v"))
    changes = q.changelog(config(mode, state, tmp_path / "a"))
    hole = dw.sinks.Blackhole()
    q.sink(hole).run(config(mode, state, tmp_path / "b"))
    assert hole.rows == changes.num_rows > q.collect(config(mode, state, tmp_path / "c")).num_rows
    assert hole.late_rows == 0


def test_each_run_counts_from_zero():
    q = events().select("k")
    hole = dw.sinks.Blackhole()
    q.sink(hole).run()
    q.sink(hole).run()
    assert hole.rows == 8
