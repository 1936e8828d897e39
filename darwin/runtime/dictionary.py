"""The string dictionary in a checkpoint: every string in code order, and whether it was interned
(or appended uninterned), one Arrow file per checkpoint.

Each checkpoint holds its own copy (written from memory, listed with its checksum in
the manifest), so no file is shared between checkpoints and a damaged one breaks only
its own checkpoint. Codes after a restore are those of the checkpoint; strings interned
by read-ahead batches beyond the checkpoint's offset may be in it too, which is harmless
(codes are never compared for order, only decoded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from darwin.errors import CheckpointError
from darwin.runtime.encoding import StringPool

DICTIONARY = "strings.arrow"


def save_dictionary(pool: StringPool, directory: Path) -> str:
    """Write the pool's strings into checkpoint ``directory``; the file's name, for the manifest."""
    strings, interned = pool.contents()
    values = pa.table({"value": strings, "interned": pa.array(interned)})
    with pa.OSFile(str(directory / DICTIONARY), "wb") as f, pa.ipc.new_file(f, values.schema) as writer:
        writer.write_table(values)
    return DICTIONARY


def load_dictionary(pool: StringPool, directory: Path) -> None:
    """Make ``pool`` (holding at most the query's constants) the checkpoint's: each string gets its
    checkpointed code, and codes that were appended uninterned stay so."""
    path = directory / DICTIONARY
    try:
        with pa.memory_map(str(path)) as f:
            table = pa.ipc.open_file(f).read_all()
        values = table.column("value").combine_chunks()
        interned = table.column("interned").to_numpy() if "interned" in table.column_names \
            else np.ones(len(values), dtype=np.bool_)  # written before strings could be appended
    except (OSError, KeyError, pa.ArrowInvalid) as e:
        raise CheckpointError(f"checkpoint {str(directory)!r}: cannot read its string dictionary: {e}") from None
    try:
        pool.restore(values, interned)
    except ValueError as e:
        raise CheckpointError(f"checkpoint {str(directory)!r}: its string dictionary is damaged: {e}") from None
