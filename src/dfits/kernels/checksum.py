"""Ones'-complement sums of stored bytes, and the encode pass that writes FITS values.

Two kernels, both returning 32-bit ones'-complement partial sums (the FITS checksum
convention, :mod:`dfits.format.checksum` for how partials combine):

* :func:`word_sum` sums the big-endian 32-bit words of a byte buffer (verification);
* :func:`encode_rows` turns native values into stored big-endian bytes in a caller's buffer
  (``out``, which the writer keeps small and reuses) and sums what it wrote in the same pass,
  so a checksummed write reads each value once. Unsigned and ``int8`` values are offset by
  flipping the top bit (``BZERO = 2**(n-1)``, exactly what ``v - BZERO`` is in two's
  complement).

Sums run in 64-bit accumulators folded every :data:`FOLD` values, far before any overflow.
Numpy oracles (:func:`word_sum_oracle`, :func:`encode_oracle`) define the results.
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels._swap import swap_bits

__all__ = [
    "FOLD",
    "UINT",
    "encode_oracle",
    "encode_rows",
    "sum_helpers",
    "value_sum",
    "word_sum",
    "word_sum_oracle",
]

#: Values summed into a 64-bit accumulator before the carries are folded back: each term is
#: below 2**33, so 2**20 of them stay far below 2**64.
FOLD = 1 << 20
_MASK = 0xFFFFFFFF
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@functools.cache
def _word_sum_kernel(swap: bool = True):
    @inline
    def kernel(words):
        total = np.uint64(0)
        n = words.size
        for start in range(0, n, FOLD):
            acc = np.uint64(0)
            for i in range(start, min(start + FOLD, n)):
                acc += np.uint64(swap_bits(words[i]) if swap else words[i])
            total += acc
            total = (total & np.uint64(_MASK)) + (total >> np.uint64(32))
        while total > np.uint64(_MASK):
            total = (total & np.uint64(_MASK)) + (total >> np.uint64(32))
        return total

    return entry(kernel, swap)


def word_sum(buf: np.ndarray) -> int:
    """Ones'-complement sum of ``buf`` (bytes, ``uint8``) as big-endian 32-bit words.

    A length that is not a multiple of 4 is summed as if padded with zero bytes.
    """
    raw = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    whole = raw.size - raw.size % 4
    total = int(_word_sum_kernel()(raw[:whole].view(np.uint32))) if whole else 0
    if whole < raw.size:
        tail = int.from_bytes(bytes(raw[whole:]).ljust(4, b"\0"), "big")
        total += tail
        total = (total & _MASK) + (total >> 32)
    return total


def value_sum(values: np.ndarray) -> int:
    """Ones'-complement sum of native 4- or 8-byte values (C-contiguous) as FITS stores them:
    the big-endian words of their bytes, each value on a word boundary.

    A stored word of a 4-byte value is the value's own bits, and those of an 8-byte value
    its high and low halves: the sum of the native 32-bit words, with no swap.

    >>> import numpy as np
    >>> value_sum(np.array([1.0], "f4")) == word_sum(np.array([1.0], ">f4").view(np.uint8))
    True
    """
    if values.dtype.itemsize not in (4, 8) or not values.flags.c_contiguous:
        raise ValueError(f"value_sum takes contiguous 4- or 8-byte values, not {values.dtype}")
    if sys.byteorder != "little" or values.dtype.byteorder not in "=|":
        # rare (a big-endian host or non-native input): one swapped copy, not the hot path
        return word_sum(values.astype(values.dtype.newbyteorder(">")).view(np.uint8))
    words = values.reshape(-1).view(np.uint32)
    return int(_word_sum_kernel(False)(words)) if words.size else 0


def word_sum_oracle(buf: np.ndarray) -> int:
    """The numpy definition of :func:`word_sum`."""
    raw = bytes(np.ascontiguousarray(buf).view(np.uint8).reshape(-1))
    raw += b"\0" * (-len(raw) % 4)
    total = int(np.frombuffer(raw, ">u4").sum(dtype=np.uint64))
    while total > _MASK:
        total = (total & _MASK) + (total >> 32)
    return total


@functools.cache
def _encode_kernel(itemsize: int):
    # Position of byte 0 of value i in its big-endian word: (i * itemsize) % 4. The value's
    # share of the sum is its bits shifted to that place; 8-byte values span two words.
    # numba widens integer arithmetic to int64: cast back before swapping the value's bytes
    utype = UINT[itemsize]
    share, fold = sum_helpers()

    @inline
    def kernel(src, out, flip, sums):
        nrow, n = src.shape
        for r in range(nrow):
            total = np.uint64(0)
            for start in range(0, n, FOLD):
                acc = np.uint64(0)
                for i in range(start, min(start + FOLD, n)):
                    v = utype(src[r, i] ^ flip)
                    out[r, i] = swap_bits(v)
                    acc += share(v, i, itemsize)
                total = fold(total + acc)
            sums[r] = fold(total)

    return entry(kernel, itemsize)


@functools.cache
def sum_helpers():
    """``share(v, i, itemsize)``: value ``i``'s bits placed in its big-endian word, as a
    64-bit addend; ``fold(total)``: carries folded back into 32 bits. Shared by the encoders,
    inlined into them (so each cached kernel holds all its code)."""

    @inline
    def share(v, i, itemsize):
        w = np.uint64(v)
        if itemsize == 8:
            return (w >> np.uint64(32)) + (w & np.uint64(_MASK))
        if itemsize == 4:
            return w
        if itemsize == 2:
            return w << np.uint64(16 * (1 - (i & 1)))
        return w << np.uint64(8 * (3 - (i & 3)))

    @inline
    def fold(total):
        total = (total & np.uint64(_MASK)) + (total >> np.uint64(32))
        while total > np.uint64(_MASK):
            total = (total & np.uint64(_MASK)) + (total >> np.uint64(32))
        return total

    return share, fold


def encode_rows(src: np.ndarray, out: np.ndarray, flip: int) -> np.ndarray:
    """Write the big-endian bytes of native values ``src`` into ``out``; sum each row.

    Parameters
    ----------
    src : ndarray, 2-D, C-contiguous
        Native values (any numeric dtype of 1, 2, 4 or 8 bytes), one row per byte run.
    out : ndarray
        Same shape, an unsigned type of the same item size; receives the stored bytes.
    flip : int
        XORed into every value first: the top bit for offset-stored unsigned integers, else 0.

    Returns
    -------
    ndarray of uint64
        Per row, the ones'-complement sum of its stored bytes as if the row began on a word
        boundary.
    """
    utype = UINT[src.dtype.itemsize]
    u = np.ascontiguousarray(src).view(utype)
    sums = np.zeros(u.shape[0], dtype=np.uint64)
    if u.size:
        _encode_kernel(src.dtype.itemsize)(u, out.view(utype), utype(flip), sums)
    return sums


def encode_oracle(src: np.ndarray, flip: int) -> tuple[np.ndarray, list[int]]:
    """The numpy definition of :func:`encode_rows`: stored bytes and per-row sums."""
    utype = UINT[src.dtype.itemsize]
    stored = (src.view(utype) ^ utype(flip)).astype(np.dtype(utype).newbyteorder(">"))
    return stored, [word_sum_oracle(row) for row in stored]
