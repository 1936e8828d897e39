"""A Darwin pipeline with engine 'spark' on a real Spark standalone cluster: a master and two workers
on 127.0.0.1, started with the scripts the pyspark package ships and stopped by their PIDs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import darwin as dw
from darwin import col
from darwin.testing import assert_table_equal


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A standalone master and workers started by ``sbin/spark-daemon.sh``; ``stop`` kills them by PID."""

    def __init__(self, root: Path, workers: int) -> None:
        import pyspark

        home = Path(pyspark.__file__).parent
        self.pid_dir, self.port = root / "pids", _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {**os.environ, "SPARK_HOME": str(home), "SPARK_PID_DIR": str(self.pid_dir),
                    "SPARK_LOG_DIR": str(root / "logs"), "SPARK_MASTER_HOST": "127.0.0.1",
                    "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(root / "work"),
                    "SPARK_IDENT_STRING": f"darwin-test-{os.getpid()}", "PYSPARK_PYTHON": sys.executable,
                    "SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": "1g", "SPARK_NO_DAEMONIZE": ""}
        self.env.pop("SPARK_NO_DAEMONIZE")
        self.daemon = str(home / "sbin" / "spark-daemon.sh")
        self.logs = root / "logs"
        self._start("org.apache.spark.deploy.master.Master", 1, "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(_free_port()))
        for i in range(1, workers + 1):
            self._start("org.apache.spark.deploy.worker.Worker", i, "--host", "127.0.0.1", "--webui-port",
                        str(_free_port()), self.url)

    def _start(self, cls: str, instance: int, *args: str) -> None:
        subprocess.run(["bash", self.daemon, "start", cls, str(instance), *args], env=self.env, check=True,
                       capture_output=True, timeout=120)

    def pids(self) -> list[int]:
        return [int(p.read_text().strip()) for p in sorted(self.pid_dir.glob("*.pid"))]

    def wait_for_workers(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = "".join(p.read_text(errors="replace") for p in self.logs.glob("*Master*.out"))
            if text.count("Registering worker") >= n:
                return
            time.sleep(1)
        raise AssertionError(f"{n} workers did not register with the master in {timeout}s")

    def stop(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, workers=2)
    try:
        assert len(c.pids()) == 3, "the master and two workers should have written their PID files"
        c.wait_for_workers(2)
        yield c
    finally:
        from darwin.spark import stop_spark

        stop_spark()  # the session bound to the cluster goes before the cluster
        c.stop()


def test_a_pipeline_runs_on_a_standalone_cluster(cluster):
    n = 20_000
    table = pa.table({"ts": pa.array([i * 10 for i in range(n)], pa.timestamp("ms")),
                      "k": [i % 7 for i in range(n)], "v": list(range(n))})
    q = (dw.from_arrow(table, time="ts").filter(col("v") % 3 != 0)
         .window(dw.Tumble("10s", on="ts")).group_by("k").agg(n=dw.count(), total=dw.sum("v")))
    config = dw.Config(engine="spark", spark_master=cluster.url,
                       spark_conf={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                   "spark.executor.memory": "512m", "spark.pyspark.python": sys.executable,
                                   "spark.sql.shuffle.partitions": "4"})
    from darwin.spark import spark_session

    got = q.collect(config)
    sc = spark_session("darwin", config.spark_master, config.spark_conf).sparkContext
    assert sc.master == cluster.url
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # the driver is listed too
    assert executors == 2, f"expected an executor on each of the two workers, found {executors}"
    assert_table_equal(got, q.collect(dw.Config()), sort=True)
    assert got.num_rows == 20 * 7
