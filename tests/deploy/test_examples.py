"""Every example of configs/ validates, and each runs to the output of the same query run in Python."""

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from example_files import CONFIGS, ENGINE_ONLY, EXAMPLES

import darwin as dw
from darwin import deploy


def rows(table: pa.Table, columns=None) -> list[tuple]:
    """The rows as sorted tuples (output files and collect() need not agree on order)."""
    columns = columns or table.column_names
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=repr)


def nexmark_bids(events: int, rate: int = 10_000_000) -> dw.Table:
    from nexmark.generator import GeneratorConfig
    from nexmark.source import NexmarkStream

    return dw.from_source(NexmarkStream(GeneratorConfig(events=events, first_event_rate=rate), "bid"), "date_time")


def test_there_is_an_example_per_kind_of_job():
    assert {"nexmark-q5-sql.yaml", "csv-python-join.yaml", "parquet-upsert.yaml", "kafka-exactly-once.yaml",
            "spark.yaml", "checkpointed.yaml", "streaming-until-stopped.yaml"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_validates(name):
    deployment = deploy.load(CONFIGS / name)
    planned = deploy.plan(deployment)  # sources, query and sink are built; nothing runs
    assert planned.table.columns
    assert deployment.summary().startswith(f"job {deployment.name}")


@pytest.mark.parametrize("name", ENGINE_ONLY)
def test_engine_only_configs_still_load(name):
    assert isinstance(dw.Config.from_yaml(CONFIGS / name), dw.Config)


def test_nexmark_q5_equals_the_reference_sql_query(examples):
    from nexmark.sql_queries import sql_query

    result = deploy.run(deploy.load(examples / "nexmark-q5-sql.yaml"))
    out = pq.ParquetDataset([str(f) for f in result.files]).read()
    expected = sql_query("q5", 50_000, 10_000).collect()
    assert out.num_rows > 0
    assert rows(out) == rows(expected)
    assert result.metrics["input_rows"] == 46_000


def test_csv_python_join_equals_the_function_run_directly(examples, monkeypatch):
    monkeypatch.syspath_prepend(str(examples))  # the module the deployment names, imported here too
    from darwin_examples.orders import orders_with_customers

    result = deploy.run(deploy.load(examples / "csv-python-join.yaml"))
    out = ds.dataset(examples / "out" / "orders-with-customers", format="csv", partitioning="hive").to_table()
    orders = dw.read_csv(examples / "data" / "orders", time="ts", max_delay="1s",
                         schema={"order_id": "int64", "customer_id": "int64", "amount": "float64",
                                 "ts": "timestamp[ms]"})
    customers = dw.read_csv(examples / "data" / "customers.csv",
                            schema={"id": "int64", "name": "string", "city": "string"})
    expected = orders_with_customers(orders=orders, customers=customers).collect()
    assert 0 < expected.num_rows < 60  # some orders are of an unknown customer
    columns = ["order_id", "name", "city", "amount"]
    assert rows(out, columns) == rows(expected, columns)
    assert len(result.files) == len(set(expected["city"].to_pylist()))  # one part per city


def test_parquet_upsert_holds_the_final_aggregate(examples):
    result = deploy.run(deploy.load(examples / "parquet-upsert.yaml"))
    assert [f.name for f in result.files] == ["snapshot.parquet"]
    out = pq.read_table(result.files[0])
    expected = nexmark_bids(20_000).group_by("auction").agg(bids=dw.count(), top_price=dw.max("price")).collect()
    assert rows(out) == rows(expected)


def _bid_volume(events: int, rate: int) -> pa.Table:
    return (nexmark_bids(events, rate).window(dw.Tumble("1s", on="date_time")).group_by("channel")
            .agg(bids=dw.count(), volume=dw.sum("price")).collect())


def test_checkpointed_example_takes_checkpoints_and_equals_python(examples):
    result = deploy.run(deploy.load(examples / "checkpointed.yaml"))
    assert result.metrics["checkpoints"] >= 2
    assert (examples / "state" / "bid-counts").is_dir()
    out = pq.ParquetDataset([str(f) for f in result.files]).read()
    columns = ["window_start", "window_end", "channel", "bids", "volume"]
    assert rows(out, columns) == rows(_bid_volume(50_000, 10_000), columns)


def test_spark_example_equals_darwin(examples):
    deployment = deploy.load(examples / "spark.yaml")
    assert deployment.config.engine == "spark"
    result = deploy.run(deployment)
    out = pq.ParquetDataset([str(f) for f in result.files]).read()
    columns = ["window_start", "window_end", "channel", "bids", "volume"]
    assert rows(out, columns) == rows(_bid_volume(10_000, 10_000), columns)


def test_the_streaming_example_runs_until_stopped_and_goes_on(examples):
    """The paced job runs until stopped: a stop takes a final checkpoint, the next run resumes there."""
    import threading
    import time

    from darwin.runtime.control import JobControl

    def stop_once_checkpointed(control: JobControl) -> None:
        while (status := control.status()) is None or status.checkpoints < 1 or not status.output_rows:
            time.sleep(0.1)
        control.stop()

    job = deploy.load(examples / "streaming-until-stopped.yaml")
    runs = []
    for _ in range(2):
        control = JobControl()
        threading.Thread(target=stop_once_checkpointed, args=(control,), daemon=True).start()
        runs.append(deploy.run(job, control=control, checkpoint_interval="1s"))
    first, second = runs
    assert first.stopped and second.stopped and second.resumed_from is not None
    assert second.metrics["input_rows"] > first.metrics["input_rows"] > 0
    out = pq.ParquetDataset([str(f) for f in second.files]).read()
    windows = rows(out, ["window_start", "auction"])
    assert len(windows) == len(set(windows)) == out.num_rows  # each window and auction committed once
