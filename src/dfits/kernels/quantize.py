"""Floats to scaled FITS integers: ``round((x - BZERO) / BSCALE)``, NaN to BLANK, summed.

The contract: :func:`quantize_rows` writes, for every float ``x`` of a row, the big-endian
stored integer ``q = rint((x - bzero) / bscale)`` (round half to even, as numpy's ``rint``),
clipped to ``[lo, hi]`` (infinities land on the ends), or ``blank`` where ``x`` is NaN, into
the caller's buffer, and returns each row's ones'-complement sum as
:func:`~dfits.kernels.checksum.encode_rows` does: one pass reads each value once. Stored
8-bit integers are unsigned (FITS BITPIX 8), wider ones signed. :func:`quantize_oracle` is
the numpy definition.
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels._swap import swap_bits
from dfits.kernels.checksum import FOLD, UINT, sum_helpers, word_sum_oracle

__all__ = ["quantize_oracle", "quantize_rows"]

_STORED = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


@functools.cache
def _quantize_kernel(itemsize: int):
    utype, stype = UINT[itemsize], _STORED[itemsize]
    share, fold = sum_helpers()

    @inline
    def kernel(src, out, bscale, bzero, blank, lo, hi, sums):
        nrow, n = src.shape
        # compare in float: hi of int64 is not a float, but every rounded y >= float(hi) maps
        # to hi and every y <= float(lo) to lo, which is exact for the narrower types
        lo_f, hi_f = np.float64(lo), np.float64(hi)
        for r in range(nrow):
            total = np.uint64(0)
            for start in range(0, n, FOLD):
                acc = np.uint64(0)
                for i in range(start, min(start + FOLD, n)):
                    x = np.float64(src[r, i])
                    if np.isnan(x):
                        q = blank
                    else:
                        y = np.rint((x - bzero) / bscale)
                        q = hi if y >= hi_f else (lo if y <= lo_f else np.int64(y))
                    v = utype(stype(q))
                    out[r, i] = swap_bits(v)
                    acc += share(v, i, itemsize)
                total = fold(total + acc)
            sums[r] = fold(total)

    return entry(kernel, itemsize)


def quantize_rows(
    src: np.ndarray,
    out: np.ndarray,
    bscale: float,
    bzero: float,
    blank: int,
    lo: int,
    hi: int,
) -> np.ndarray:
    """Store float rows ``src`` as scaled integers in ``out``; sum each row.

    Parameters
    ----------
    src : ndarray, 2-D, float32 or float64
        Physical values, one row per byte run.
    out : ndarray
        Same shape, unsigned integers of the stored size; receives the big-endian bytes.
    bscale, bzero : float
        ``x = q * bscale + bzero`` is how readers undo it.
    blank : int
        The stored value of NaN.
    lo, hi : int
        The stored range of finite values (the type's range, less ``blank`` if at an end).

    Returns
    -------
    ndarray of uint64
        Per row, the ones'-complement sum of its stored bytes from a word boundary.
    """
    sums = np.zeros(src.shape[0], dtype=np.uint64)
    if src.size:
        size = out.dtype.itemsize
        kernel = _quantize_kernel(size)
        kernel(np.ascontiguousarray(src), out.view(UINT[size]), bscale, bzero, blank, lo, hi, sums)
    return sums


def quantize_oracle(
    src: np.ndarray, itemsize: int, bscale: float, bzero: float, blank: int, lo: int, hi: int
) -> tuple[np.ndarray, list[int]]:
    """The numpy definition of :func:`quantize_rows`: stored bytes and per-row sums."""
    x = src.astype(np.float64)
    with np.errstate(invalid="ignore"):
        y = np.rint((x - bzero) / bscale)
    q = np.full(x.shape, blank, dtype=np.int64)
    nan = np.isnan(x)
    q[~nan & (y >= float(hi))] = hi
    q[~nan & (y <= float(lo))] = lo
    mid = ~nan & (y < float(hi)) & (y > float(lo))
    q[mid] = y[mid].astype(np.int64)
    stype = np.dtype(_STORED[itemsize])
    stored = q.astype(stype)
    stored = stored.astype(stype.newbyteorder(">"))
    return stored, [word_sum_oracle(row) for row in stored]
