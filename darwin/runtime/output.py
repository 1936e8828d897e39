"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class Output:
    """A batch of query results (``kind`` 'result') or of late input rows ('late')."""

    kind: str
    batch: pa.RecordBatch
