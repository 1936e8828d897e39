"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Output:
    """A batch of query results (``kind`` 'result'), of late input rows ('late'), or a barrier
    ('barrier', no batch): every input row so far is accounted for and state is consistent."""

    kind: str
    batch: pa.RecordBatch | None


BARRIER = Output("barrier", None)


class RunResult:
    """What one run produced: the result table, the late rows (if kept) and the run's metrics."""

    def __init__(self, table: pa.Table, late: pa.Table | None, metrics: dict[str, Any]) -> None:
        self.table, self.late, self.metrics = table, late, metrics

    def __repr__(self) -> str:
        return f"RunResult({self.table.num_rows} rows, metrics={self.metrics})"
