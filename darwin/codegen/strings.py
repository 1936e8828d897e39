"""Compiled work on the string pool: interning, hashing and gathering strings kept in chunks.

The pool's bytes live in chunks (numpy arrays it keeps alive); a string's address is
``chunk << 32 | position`` and kernels reach a chunk through its base address (``bases``, with
``sizes``), so chunks are added without copying the ones before. The hash table holds codes (-1
marks a free slot); ``hashes`` holds each code's hash, so growing the table never rereads a
string. Interned strings have odd hashes; a hash of 0 marks a code appended without interning
(``StringPool.append``), which the table never holds.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
POSITION_BITS = 32  # a chunk holds at most 4 GiB
POSITION_MASK = (1 << POSITION_BITS) - 1


@intrinsic
def _byte_pointer(typingctx, address):  # type: ignore[no-untyped-def]
    """The bytes at ``address`` (an int64 the pool took from a chunk it keeps alive)."""
    signature = types.CPointer(types.uint8)(types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.uint8)))

    return signature, codegen


@intrinsic
def _copy_bytes(typingctx, target, source, count):  # type: ignore[no-untyped-def]
    """memcpy of ``count`` bytes from address ``source`` to address ``target``: a string at a time,
    a slice assignment costs several times the copy (it builds and checks two array views)."""
    signature = types.void(types.int64, types.int64, types.int64)

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        pointer = context.get_value_type(types.CPointer(types.uint8))
        cgutils.raw_memcpy(builder, builder.inttoptr(args[0], pointer), builder.inttoptr(args[1], pointer), args[2], 1)
        return context.get_dummy_value()

    return signature, codegen


@njit(cache=True, nogil=True, inline="always")
def _chunk(bases: np.ndarray, sizes: np.ndarray, number: int) -> np.ndarray:
    return carray(_byte_pointer(bases[number]), (sizes[number],))  # type: ignore[call-arg]


@njit(cache=True, nogil=True)
def string_hash(data: np.ndarray, start: int, end: int) -> np.uint64:
    """FNV-1a of ``data[start:end]``, made odd (an interned string's hash is never 0)."""
    h = FNV_OFFSET
    for j in range(start, end):
        h = (h ^ np.uint64(data[j])) * FNV_PRIME
    return h | np.uint64(1)


@njit(cache=True, nogil=True)
def hash_strings(starts: np.ndarray, ends: np.ndarray, bases: np.ndarray, sizes: np.ndarray,
                 interned: np.ndarray) -> np.ndarray:
    """Each string's hash where ``interned``, else 0: the ``hashes`` of a pool read back whole."""
    hashes = np.zeros(interned.shape[0], dtype=np.uint64)
    for c in range(interned.shape[0]):
        if interned[c]:
            data = _chunk(bases, sizes, starts[c] >> POSITION_BITS)
            at = starts[c] & POSITION_MASK
            hashes[c] = string_hash(data, at, at + ends[c] - starts[c])
    return hashes


@njit(cache=True, nogil=True)
def intern_strings(in_offsets: np.ndarray, in_data: np.ndarray, present: np.ndarray, codes: np.ndarray,
                   slots: np.ndarray, hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   bases: np.ndarray, sizes: np.ndarray, position: int, count: int, row: int) \
        -> tuple[int, int, int]:
    """Write into ``codes`` the pool code of each present input string from ``row`` on, adding the
    new ones to the last chunk; stops at a new string that does not fit there.

    The caller makes room first: ``slots`` at least twice the strings the pool may hold after this
    call, ``starts``/``ends``/``hashes`` for every input string being new. Returns the row it
    stopped at (the number of rows when done), the new count and the last chunk's new position.
    """
    mask = slots.shape[0] - 1
    last = sizes.shape[0] - 1
    chunk = _chunk(bases, sizes, last)
    for i in range(row, codes.shape[0]):
        if not present[i]:
            codes[i] = 0
            continue
        start, end = in_offsets[i], in_offsets[i + 1]
        length = end - start
        h = string_hash(in_data, start, end)
        s = np.int64(h & np.uint64(mask))
        while True:
            c = slots[s]
            if c < 0:
                if position + length > chunk.shape[0]:
                    return i, count, position  # the caller adds a chunk and calls again from this row
                _copy_bytes(chunk.ctypes.data + position, in_data.ctypes.data + start, length)  # type: ignore[call-arg]
                starts[count] = (np.int64(last) << POSITION_BITS) | position
                ends[count] = starts[count] + length
                position += length
                hashes[count] = h
                slots[s] = count
                codes[i] = count
                count += 1
                break
            if hashes[c] == h and ends[c] - starts[c] == length:
                other = _chunk(bases, sizes, starts[c] >> POSITION_BITS)
                at = starts[c] & POSITION_MASK
                same = True
                for j in range(length):
                    if other[at + j] != in_data[start + j]:
                        same = False
                        break
                if same:
                    codes[i] = c
                    break
            s = (s + 1) & mask
    return codes.shape[0], count, position


@njit(cache=True, nogil=True)
def rehash_strings(hashes: np.ndarray, count: int, size: int) -> np.ndarray:
    """A hash table of ``size`` slots (a power of two) holding the interned codes below ``count``."""
    slots = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for c in range(count):
        if hashes[c] == 0:
            continue
        s = np.int64(hashes[c] & mask)
        while slots[s] >= 0:
            s = (s + 1) & (size - 1)
        slots[s] = c
    return slots


@njit(cache=True, nogil=True)
def string_offsets(starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Arrow large-string offsets of the strings ``codes`` (empty where not ``present``)."""
    n = codes.shape[0]
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    total = 0
    for i in range(n):
        if present[i]:
            c = codes[i]
            total += ends[c] - starts[c]
        offsets[i + 1] = total
    return offsets


@njit(cache=True, nogil=True)
def copy_strings(starts: np.ndarray, bases: np.ndarray, codes: np.ndarray, present: np.ndarray,
                 offsets: np.ndarray, out: np.ndarray) -> None:
    """The bytes of the strings ``codes`` into ``out`` at ``offsets`` (from ``string_offsets``).
    ``out`` is the caller's: an Arrow buffer from Arrow's pool, which reuses the memory of the
    batches before it, where a new array here would be fresh pages the kernel zeroes first."""
    target = out.ctypes.data
    for i in range(codes.shape[0]):
        if present[i]:
            start = starts[codes[i]]
            _copy_bytes(target + offsets[i], bases[start >> POSITION_BITS] + (start & POSITION_MASK),
                        offsets[i + 1] - offsets[i])  # type: ignore[call-arg]


@njit(cache=True, nogil=True)
def text_less(a: np.int64, b: np.int64, starts: np.ndarray, ends: np.ndarray, bases: np.ndarray) -> bool:
    """Whether the string of code ``a`` sorts before the string of code ``b``: their UTF-8 bytes
    compared unsigned, a prefix before the longer string (Flink's ``BinaryStringData.compareTo``;
    the order of code points). Codes are not in that order: a string pool appends as strings come."""
    if a == b:
        return False
    start_a, start_b = starts[a], starts[b]
    length_a, length_b = ends[a] - start_a, ends[b] - start_b
    bytes_a = carray(_byte_pointer(bases[start_a >> POSITION_BITS] + (start_a & POSITION_MASK)),  # type: ignore[call-arg]
                     (length_a,))
    bytes_b = carray(_byte_pointer(bases[start_b >> POSITION_BITS] + (start_b & POSITION_MASK)),  # type: ignore[call-arg]
                     (length_b,))
    for j in range(min(length_a, length_b)):
        if bytes_a[j] != bytes_b[j]:
            return bytes_a[j] < bytes_b[j]
    return length_a < length_b
