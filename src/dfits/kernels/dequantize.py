"""Quantised tiles back to floats: the standard's dither sequence, ZBLANK → NaN, one pass.

A quantised float tile stores integers ``q``; its values are ``(q - r + 0.5) * ZSCALE +
ZZERO`` with ``r`` the subtractive dither (SUBTRACTIVE_DITHER_1 and _2), or ``q * ZSCALE +
ZZERO`` without it (NO_DITHER). ``r`` runs through the 10,000 float32 numbers of the Park-Miller
generator of the tiled image convention, starting at the tile's seed ``(row + ZDITHER0 - 1)
mod 10000``; SUBTRACTIVE_DITHER_2 keeps the integer -2147483646 as an exact 0.0, and ZBLANK
is NaN. The arithmetic is cfitsio's (``unquantize_i4r4``/``i4r8``, as astropy compiles it):
double precision, then rounded to the output type, so values equal astropy's bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = [
    "ZERO_VALUE",
    "advance",
    "after_run",
    "dequantise_run",
    "dequantised",
    "dequantize",
    "random_table",
]

#: The integer SUBTRACTIVE_DITHER_2 stores for an exact zero.
ZERO_VALUE = -2147483646
_N_RANDOM = 10000


@functools.cache
def random_table() -> tuple[np.ndarray, np.ndarray]:
    """The convention's 10,000 dither values (float32) and each one's start index
    ``int(value * 500)`` (computed in float32, as C does for ``float * int``)."""
    a, m, seed = 16807.0, 2147483647.0, 1.0
    values = np.empty(_N_RANDOM, np.float32)
    for i in range(_N_RANDOM):
        temp = a * seed
        seed = temp - m * int(temp / m)
        values[i] = seed / m
    if int(seed) != 1043618065:  # the convention's check of a correct implementation
        raise RuntimeError("the dither sequence came out wrong")
    starts = (values * np.float32(500)).astype(np.int64)
    return values, starts


@inline
def dequantised(v, scale, zero, blank, has_blank, method, r):
    """One quantised integer ``v`` as its float64 value (``r``: the pixel's dither value);
    inlined into every dequantising kernel so that all compute it with the same operations."""
    if has_blank and v == blank:
        return np.nan
    if method <= 0:
        return v * scale + zero
    if method == 2 and v == -2147483646:
        return 0.0
    return (v - r + 0.5) * scale + zero


@inline
def advance(nextrand, iseed, starts):
    """The next pixel's place in the dither sequence: ``(nextrand, iseed)``."""
    nextrand += 1
    if nextrand == 10000:
        iseed += 1
        if iseed == 10000:
            iseed = 0
        nextrand = starts[iseed]
    return nextrand, iseed


@inline
def after_run(nextrand, iseed, m, starts):
    """The dither position ``m`` values on, for a run that ends at or before the end of the
    sequence (``nextrand + m <= 10000``): ``(nextrand, iseed)``."""
    nextrand += m
    if nextrand == 10000:
        iseed = iseed + 1 if iseed < 9999 else 0
        nextrand = starts[iseed]
    return nextrand, iseed


@inline
def dequantise_run(src, dst, rv, scale, zero, blank, has_blank, method):
    """``dst[i]`` = the value of ``src[i]`` with dither value ``rv[i]``: plain arithmetic on
    contiguous values, which LLVM vectorises (callers split rows where the sequence wraps)."""
    for i in range(src.size):
        dst[i] = dequantised(src[i], scale, zero, blank, has_blank, method, np.float64(rv[i]))


@inline
def _dequantize_body(q, out, scale, zero, method, iseed, blank, has_blank, values, starts):
    nrow, ncol = out.shape
    nextrand = starts[iseed]
    k = 0
    for a in range(nrow):
        for b in range(ncol):
            r = np.float64(values[nextrand])
            out[a, b] = dequantised(q[k], scale, zero, blank, has_blank, method, r)
            k += 1
            if method > 0:
                nextrand, iseed = advance(nextrand, iseed, starts)


_dequantize = entry(_dequantize_body)


def dequantize(
    q: np.ndarray,
    out: np.ndarray,
    scale: float,
    zero: float,
    method: int,
    row: int,
    dither0: int,
    blank: int | None,
) -> None:
    """Write the float values of the quantised tile ``q`` (1-D, C order) into ``out``.

    Parameters
    ----------
    q : numpy.ndarray
        The tile's decoded integers, native order, flattened.
    out : numpy.ndarray
        A 2-D float32 or float64 view (any strides) with ``q.size`` values.
    scale, zero : float
        The tile's ZSCALE and ZZERO.
    method : int
        -1 for NO_DITHER, 1 or 2 for SUBTRACTIVE_DITHER_1 or _2.
    row, dither0 : int
        The tile's 0-based table row and ZDITHER0.
    blank : int or None
        The integer meaning "no value" (ZBLANK), or None.
    """
    values, starts = random_table()
    iseed = (row + dither0 - 1) % _N_RANDOM
    has_blank = blank is not None
    _dequantize(
        q,
        out,
        float(scale),
        float(zero),
        int(method),
        int(iseed),
        q.dtype.type(blank if has_blank and _fits(blank, q.dtype) else 0),
        has_blank and _fits(blank, q.dtype),
        values,
        starts,
    )


def _fits(value: int, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return info.min <= value <= info.max
