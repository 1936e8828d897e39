"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Output:
    """A batch of query results (``kind`` 'result'), of late input rows ('late'), or a barrier
    ('barrier', no batch): every input row so far is accounted for and state is consistent."""

    kind: str
    batch: pa.RecordBatch | None


BARRIER = Output("barrier", None)
