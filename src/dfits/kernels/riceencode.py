"""RICE_1 encoding: integers to the stream :mod:`dfits.kernels.rice` decodes, byte for byte
cfitsio's (``fits_rcomp``, ``fits_rcomp_short``, ``fits_rcomp_byte``; what
``imagecodecs.rcomp_encode`` wraps and fpack writes).

The contract: :func:`rice_encode` takes one tile's integers (``u1``/``i1``, ``i2``/``u2``,
``i4``/``u4``: ``bytepix`` 1, 2 or 4) and returns the stream: the first value raw
(``8 * bytepix`` bits), then per block of ``blocksize`` values the zig-zag mapped differences
of neighbours under an ``fsbits``-bit code ``fs + 1`` chosen from the block's mean (0: all
zero; the maximum: raw differences), each difference a unary high part and ``fs`` low bits,
bits packed from the most significant, the last byte padded with zeros. As cfitsio does, the
values are the signed type of their width (an unsigned byte 200 is -56), differences of 8- and
16-bit values are exact and those of 32-bit values wrap. :func:`encode_into` is the kernel
body, inlined by the chunk kernels of :mod:`dfits.kernels.tileencode`, which encode straight
into a chunk's output buffer with no call per tile.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["encode_into", "rice_bound", "rice_encode"]

#: per BYTEPIX: (bits of the block code, the code of a raw block, bits of a raw difference)
_PARAMS = {1: (3, 6, 8), 2: (4, 14, 16), 4: (5, 25, 32)}


def rice_bound(npix: int, blocksize: int, bytepix: int) -> int:
    """The most bytes :func:`rice_encode` writes for ``npix`` values (every block raw)."""
    fsbits, _, bbits = _PARAMS[bytepix]
    blocks = -(-npix // blocksize)
    return (bbits + blocks * fsbits + npix * bbits) // 8 + 2


@inline
def _put(out, pos, acc, nacc, value, n):
    # append the low n (<= 56) bits of value; acc keeps the last nacc (< 8) bits unwritten
    acc = (acc << np.uint64(n)) | (np.uint64(value) & ((np.uint64(1) << np.uint64(n)) - 1))
    nacc += n
    while nacc >= 8:
        nacc -= 8
        out[pos] = np.uint8((acc >> np.uint64(nacc)) & np.uint64(255))
        pos += 1
    return pos, acc, nacc


@inline
def _wrapped(d, bytepix):
    # a difference in the values' own width, signed: C's arithmetic on char / short / int
    half = np.int64(1) << (8 * bytepix - 1)
    return ((d + half) & (2 * half - 1)) - half


@inline
def encode_into(a, out, pos, blocksize, bytepix):
    """Append the RICE_1 stream of ``a`` (1-D integers) to ``out`` at ``pos``; the new end."""
    fsbits, fsmax, bbits = 5, 25, 32
    if bytepix == 1:
        fsbits, fsmax, bbits = 3, 6, 8
    elif bytepix == 2:
        fsbits, fsmax, bbits = 4, 14, 16
    n = a.shape[0]
    acc, nacc = np.uint64(0), 0
    last = np.int64(a[0])
    pos, acc, nacc = _put(out, pos, acc, nacc, last, bbits)
    diff = np.empty(blocksize, np.int64)
    for i in range(0, n, blocksize):
        m = min(blocksize, n - i)
        total = np.int64(0)
        for j in range(m):
            x = np.int64(a[i + j])
            d = _wrapped(x - last, bytepix)
            d = -2 * d - 1 if d < 0 else 2 * d
            diff[j] = d
            total += d
            last = x
        # the split point from the block's mean, in double precision as cfitsio computes it
        mean = (np.float64(total) - (m // 2) - 1) / m
        psum = np.int64(mean) >> 1 if mean > 0 else 0
        fs = 0
        while psum > 0:
            psum >>= 1
            fs += 1
        if fs >= fsmax:  # high entropy: the differences raw
            pos, acc, nacc = _put(out, pos, acc, nacc, fsmax + 1, fsbits)
            for j in range(m):
                pos, acc, nacc = _put(out, pos, acc, nacc, diff[j], bbits)
        elif fs == 0 and total == 0:  # all zero
            pos, acc, nacc = _put(out, pos, acc, nacc, 0, fsbits)
        else:
            pos, acc, nacc = _put(out, pos, acc, nacc, fs + 1, fsbits)
            low = (np.int64(1) << fs) - 1
            for j in range(m):
                top = diff[j] >> fs
                while top >= 32:  # long unary runs: zeros 32 at a time
                    pos, acc, nacc = _put(out, pos, acc, nacc, 0, 32)
                    top -= 32
                # the unary end and the low bits in one go: at most 32 + 24 bits
                code = (np.int64(1) << fs) | (diff[j] & low)
                pos, acc, nacc = _put(out, pos, acc, nacc, code, top + 1 + fs)
    if nacc > 0:
        out[pos] = np.uint8((acc << np.uint64(8 - nacc)) & np.uint64(255))
        pos += 1
    return pos


_encode = entry(encode_into)


def rice_encode(values: np.ndarray, blocksize: int = 32) -> bytes:
    """The RICE_1 stream of a tile's integers (1-D; 8, 16 or 32 bits).

    >>> import numpy as np
    >>> rice_encode(np.array([7, 7, 7], np.int16))  # the first value, then a zero block
    b'\\x00\\x07\\x00'
    """
    a = np.ascontiguousarray(values).reshape(-1)
    if a.dtype.kind not in "iu" or a.dtype.itemsize not in _PARAMS:
        raise ValueError(f"RICE_1 codes 8, 16 or 32-bit integers, not {a.dtype}")
    if a.size == 0:
        return b""
    out = np.empty(rice_bound(a.size, blocksize, a.itemsize), np.uint8)
    end = _encode(a, out, 0, int(blocksize), int(a.itemsize))
    return out[:end].tobytes()
