"""The string dictionary in checkpoints: append-only segments, so a checkpoint writes only new strings.

Segment ``strings-<first code>.arrow`` holds the strings with codes from ``first`` on, in
code order. A checkpoint lists its segments with their CRC-32; segments are never changed
after a checkpoint lists them (a rerun after a crash may rewrite an unlisted one).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from darwin.errors import CheckpointError
from darwin.runtime.encoding import StringPool
from darwin.state.checkpoint import crc32_of, fsync_path


def save_new_strings(pool: StringPool, segments: list[dict[str, Any]], directory: Path) -> list[dict[str, Any]]:
    """Write the strings past the listed segments as a new segment; what to add to the list."""
    first = sum(seg["count"] for seg in segments)
    count = len(pool) - first
    if count <= 0:
        return []
    directory.mkdir(exist_ok=True)
    path = directory / f"strings-{first:012d}.arrow"
    values = pa.table({"value": pa.array([pool.value(i) for i in range(first, first + count)], pa.string())})
    tmp = path.with_suffix(".tmp")
    with pa.OSFile(str(tmp), "wb") as f, pa.ipc.new_file(f, values.schema) as writer:
        writer.write_table(values)
    fsync_path(tmp)
    os.replace(tmp, path)
    fsync_path(directory)
    return [{"name": path.name, "count": count, "crc32": crc32_of(path)}]


def load_strings(segments: list[dict[str, Any]], directory: Path) -> Iterator[str]:
    """The strings of the listed segments, in code order; a missing or changed segment is an error."""
    for seg in segments:
        path = directory / seg["name"]
        if not path.exists() or crc32_of(path) != seg["crc32"]:
            raise CheckpointError(f"string dictionary segment {str(path)!r}, which the checkpoint lists, is "
                                  "missing or does not match its checksum")
        with pa.memory_map(str(path)) as f:
            yield from pa.ipc.open_file(f).read_all().column("value").to_pylist()
