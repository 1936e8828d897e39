"""The ``memory`` backend: state arrays in DRAM, copied into each checkpoint."""

from __future__ import annotations

from darwin.codegen.aggregates import AggLayout
from darwin.state.hash_table import HashTableState
from darwin.state.join_rows import JoinRows
from darwin.state.placement import InMemory
from darwin.types import Schema


class MemoryBackend:
    name = "memory"

    def hash_table(self, name: str, lay: AggLayout, new: bool = False) -> HashTableState:
        return HashTableState(name, lay.key_width, lay.value_dtypes)

    def stored_tables(self) -> list[str]:
        return []

    def drop_table(self, name: str) -> None:
        """Nothing outside the process: a checkpoint's copies go with the checkpoint."""

    def join_rows(self, name: str, schema: Schema, key_width: int) -> JoinRows:
        return JoinRows(name, schema, key_width)

    def scratch(self, name: str) -> InMemory:
        return InMemory()

    def close(self) -> None:
        pass
