"""The string dictionary in a checkpoint: every string in code order, one Arrow file per checkpoint.

Each checkpoint holds its own copy (written from memory, listed with its checksum in
the manifest), so no file is shared between checkpoints and a damaged one breaks only
its own checkpoint. Codes after a restore are those of the checkpoint; strings interned
by read-ahead batches beyond the checkpoint's offset may be in it too, which is harmless
(codes are never compared for order, only decoded).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from darwin.errors import CheckpointError
from darwin.runtime.encoding import StringPool

DICTIONARY = "strings.arrow"


def save_dictionary(pool: StringPool, directory: Path) -> str:
    """Write the pool's strings into checkpoint ``directory``; the file's name, for the manifest."""
    values = pa.table({"value": pool.to_arrow()})
    with pa.OSFile(str(directory / DICTIONARY), "wb") as f, pa.ipc.new_file(f, values.schema) as writer:
        writer.write_table(values)
    return DICTIONARY


def load_dictionary(pool: StringPool, directory: Path) -> None:
    """Intern the checkpoint's strings into the empty ``pool``, so each gets its checkpointed code."""
    path = directory / DICTIONARY
    try:
        with pa.memory_map(str(path)) as f:
            values = pa.ipc.open_file(f).read_all().column("value").to_pylist()
    except (OSError, pa.ArrowInvalid) as e:
        raise CheckpointError(f"checkpoint {str(directory)!r}: cannot read its string dictionary: {e}") from None
    for value in values:
        pool.code(value)
