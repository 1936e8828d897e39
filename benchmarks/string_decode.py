"""Decoding pooled strings to Arrow, as a join's output does: nanoseconds per string.

Strings of Nexmark-like lengths (9 to 384 bytes, ~104 on average) are appended to a pool; batches
of random codes are decoded, as a join's output gathers kept rows in random order.

    python benchmarks/string_decode.py [--strings 2000000] [--batch 262144] [--runs 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

from darwin.runtime.encoding import StringPool

LENGTHS = (9, 12, 55, 63, 67, 138, 384)  # channel, name, description, url, bid extra, person extra, auction extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strings", type=int, default=2_000_000)
    parser.add_argument("--batch", type=int, default=1 << 18)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    lengths = rng.choice(LENGTHS, size=args.strings)
    data = rng.integers(97, 123, size=int(lengths.sum()), dtype=np.uint8)
    offsets = np.zeros(args.strings + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    pool = StringPool()
    pool.append(pa.LargeStringArray.from_buffers(args.strings, pa.py_buffer(offsets), pa.py_buffer(data)))
    codes = rng.integers(0, args.strings, size=args.batch)
    pool.decode(codes, None)  # compiles
    started = time.perf_counter()
    for _ in range(args.runs):
        out = pool.decode(codes, None)
    seconds = (time.perf_counter() - started) / args.runs
    print(f"{seconds / args.batch * 1e9:.0f} ns per string, {out.nbytes / seconds / 1e9:.2f} GB/s "
          f"({args.batch} random strings of {args.strings}, {args.runs} runs)")


if __name__ == "__main__":
    main()
