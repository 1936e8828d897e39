"""The ``memory`` backend: state arrays in DRAM, copied into each checkpoint."""

from __future__ import annotations

from darwin.codegen.aggregates import AggLayout
from darwin.state.hash_table import HashTableState


class MemoryBackend:
    name = "memory"

    def hash_table(self, name: str, lay: AggLayout) -> HashTableState:
        return HashTableState(name, lay.key_width, lay.value_dtypes)

    def close(self) -> None:
        pass
