"""Several big-endian fields of a block of table rows, each swapped into its native column.

The contract: :func:`decode_fields` takes ``rows`` (a ``(n, row_bytes)`` ``uint8`` array of
whole table rows, e.g. an mmap of the stored bytes), each field's byte offset and value size
(1, 2, 4 or 8 bytes), a bit mask to flip in each value (the top bit for the unsigned
conventions TZERO = 2**15/2**31/2**63 and for int8 through TZERO = -128, else 0) and one
native output array per field (``n`` values of 1, 2, 4 or 8 bytes). Each value is read with
one unaligned load, byte-swapped in a register, flipped and stored: one pass, no copy of the
rows. The rows are taken a block at a time with every field of a block written before the
next block, so a table with narrow rows is read from memory once, not once per field.

The numpy oracle: ``rows[:, o:o + s].copy().view(">u{s}").astype("u{s}") ^ flip``.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["decode_fields"]

#: bytes of rows per block: the block stays in a core's L2 cache while every field is taken
_CACHE = 1 << 16


def decode_fields(
    rows: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, flips: np.ndarray, outs: list
) -> None:
    """Write field ``j`` of every row of ``rows`` into ``outs[j]`` (see the module docstring)."""
    from numba.typed import List

    n, width = rows.shape
    offs = np.ascontiguousarray(offsets, np.int64)
    size = np.ascontiguousarray(sizes, np.int64)
    if len(offs) and (offs.min() < 0 or (offs + size).max() > width):
        # the kernel's loads are unchecked: a field must lie inside its row
        raise ValueError(f"a field lies past the {width}-byte row: offsets {offs.tolist()}")
    for out, s in zip(outs, size, strict=True):
        if out.nbytes != n * s or not out.flags.c_contiguous:
            raise ValueError(f"an output must hold {n} contiguous values of {s} bytes")
    if not n or not len(offs):
        return
    flat = np.ascontiguousarray(rows).reshape(-1)
    targets = List([out.reshape(-1).view(np.uint8) for out in outs])
    masks = np.ascontiguousarray(flips, np.uint64)
    _kernel()(flat, width, n, offs, size, masks, targets)


@functools.cache
def _kernel():
    """Compiled (or loaded from dfits' on-disk cache, :mod:`dfits.kernels._cache`) on first
    use, never at import."""

    from dfits.kernels._cache import entry
    from dfits.kernels._compile import inline
    from dfits.kernels._swap import put_at, raw_u2_at, raw_u4_at, raw_u8_at, swap_bits

    @inline
    def decode(b, width, n, offs, sizes, masks, outs):
        step = max(16, _CACHE // max(width, 1))
        for a0 in range(0, n, step):
            a1 = min(a0 + step, n)
            for j in range(offs.shape[0]):
                o, s, out = offs[j], sizes[j], outs[j]
                if s == 1:
                    m1 = np.uint8(masks[j])
                    for i in range(a0, a1):
                        out[i] = b[i * width + o] ^ m1
                elif s == 2:
                    m2 = np.uint16(masks[j])
                    for i in range(a0, a1):
                        put_at(out, 2 * i, np.uint16(swap_bits(raw_u2_at(b, i * width + o)) ^ m2))
                elif s == 4:
                    m4 = np.uint32(masks[j])
                    for i in range(a0, a1):
                        put_at(out, 4 * i, np.uint32(swap_bits(raw_u4_at(b, i * width + o)) ^ m4))
                else:
                    m8 = masks[j]
                    for i in range(a0, a1):
                        put_at(out, 8 * i, np.uint64(swap_bits(raw_u8_at(b, i * width + o)) ^ m8))

    return entry(decode, "fielddecode")
