"""Operator state: a backend protocol, the typed tables compiled code works on, checkpoints.

Backends: ``memory`` (DRAM arrays, copied into checkpoints), ``mmap`` (mapped files
with an undo log; checkpoints flush and record counts), ``rocksdb`` (an in-memory
delta merged into RocksDB; RocksDB's own checkpoints). Import the modules
themselves (``darwin.state.backend``, ``darwin.state.checkpoint``): the package
imports nothing, so loading it never starts Numba before the CPU target is chosen.
"""
