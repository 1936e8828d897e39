"""Operator state: a backend protocol and the typed tables compiled code works on.

``memory`` is built; ``mmap`` and ``rocksdb`` implement the same ``StateBackend``.
"""

from darwin.state.backend import StateBackend, backend_for
from darwin.state.hash_table import HashTableState

__all__ = ["HashTableState", "StateBackend", "backend_for"]
