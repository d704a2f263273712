"""A chunk's worth of tiles in one Numba call: decode each RICE_1 stream, place it, and
dequantise it on the way.

Decoding tiles one Python call at a time costs ~100 µs of dispatch, slicing and assignment
per tile, more than decoding a 1,000-pixel tile; a chunk of row tiles holds thousands. Here
one call walks every tile of a chunk: :func:`rice_group` decodes the streams (checked as
:mod:`dfits.kernels.rice` does), :func:`place_group` copies (or dequantises, with the same
arithmetic as :mod:`dfits.kernels.dequantize`) each tile's rows into the chunk.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels.dequantize import after_run, dequantise_run, random_table
from dfits.kernels.rice import _PARAMS, _decode

__all__ = ["PACKED", "place_group", "quant_args", "rice_group"]


@inline
def _rice_group_body(blob, starts, counts, npix, packed, blocksize, fsbits, fsmax, bbits, bytepix):
    pos = 0
    for t in range(starts.shape[0]):
        a = starts[t]
        status = _decode(
            blob[a : a + counts[t]], packed[pos : pos + npix[t]], blocksize, fsbits, fsmax,
            bbits, bytepix,
        )  # fmt: skip
        if status != 0:
            return t, status
        pos += npix[t]
    return -1, 0


_rice_group = entry(_rice_group_body)


#: the packed values' type for each RICE_1 BYTEPIX
PACKED = {1: np.dtype(np.uint8), 2: np.dtype(np.int16), 4: np.dtype(np.int32)}


def rice_group(blob, starts, counts, npix, blocksize: int, bytepix: int, out=None):
    """Decode every tile's stream (``blob[starts[t]:][:counts[t]]``) into one packed array
    (``out``, of ``npix.sum()`` values of :data:`PACKED`'s type, or a new one).

    Returns ``(packed, -1, 0)``, or ``(None, t, status)`` for the first tile that fails
    (status as :mod:`dfits.kernels.rice`).
    """
    fsbits, fsmax, bbits = _PARAMS[bytepix]
    packed = np.empty(int(npix.sum()), PACKED[bytepix]) if out is None else out
    bad, status = _rice_group(
        blob, starts, counts, npix, packed, blocksize, fsbits, fsmax, bbits, bytepix
    )
    return (packed, -1, 0) if bad < 0 else (None, bad, status)


@inline
def _place_body(
    packed,
    out,
    shapes,
    firsts,
    strides,
    deq,
    scale,
    zero,
    blank,
    has_blank,
    method,
    seeds,
    values,
    rstart,
):
    ndim = shapes.shape[1]
    pos = 0
    for t in range(shapes.shape[0]):
        length = shapes[t, ndim - 1]
        nrows = 1
        for d in range(ndim - 1):
            nrows *= shapes[t, d]
        iseed = seeds[t]
        # without a dither the sequence is not used: runs start at its beginning
        nextrand = rstart[iseed] if method > 0 else 0
        for r in range(nrows):
            # the row's position in the chunk: its index along each outer axis
            rest = r
            o = firsts[t, ndim - 1] * strides[ndim - 1]
            for d in range(ndim - 2, -1, -1):
                k = rest % shapes[t, d]
                rest //= shapes[t, d]
                o += (firsts[t, d] + k) * strides[d]
            if not deq:
                for b in range(length):
                    out[o + b] = packed[pos + b]
            else:
                # runs over which the dither index only counts up: vectorised loops
                src, dst = packed[pos : pos + length], out[o : o + length]
                b = 0
                while b < length:
                    m = min(length - b, 10000 - nextrand)
                    dequantise_run(src[b : b + m], dst[b : b + m], values[nextrand : nextrand + m],
                                   scale[t], zero[t], blank[t], has_blank, method)  # fmt: skip
                    b += m
                    if method > 0:
                        nextrand, iseed = after_run(nextrand, iseed, m, rstart)
            pos += length


# strict arithmetic: the dequantising expression must round as cfitsio's, vectorised or not
_place = entry(_place_body, fastmath=False)


def place_group(packed, out, shapes, firsts, quant=None) -> None:
    """Copy (or dequantise) packed tiles into the C-contiguous chunk ``out``.

    ``shapes[t]`` and ``firsts[t]`` are tile ``t``'s shape and first index in the chunk;
    ``quant`` is None, or ``(scale, zero, blank, method, seeds)`` with per-tile arrays
    (``blank`` None for no ZBLANK) and the tiles' first dither index ``seeds``.
    """
    strides = np.array([s // out.itemsize for s in out.strides], np.int64)
    flat = out.reshape(-1)
    values, rstart = random_table()
    n = shapes.shape[0]
    if quant is None:
        dummy, none = np.zeros(n), np.zeros(n, np.int64)
        blanks = np.zeros(n, packed.dtype)
        _place(packed, flat, shapes, firsts, strides, False, dummy, dummy, blanks, False, 0,
               none, values, rstart)  # fmt: skip
        return
    scale, zero, blanks, has_blank, method, seeds = quant_args(packed, quant)
    _place(packed, flat, shapes, firsts, strides, True, scale, zero, blanks, has_blank,
           method, seeds, values, rstart)  # fmt: skip


def quant_args(packed: np.ndarray, quant: tuple) -> tuple:
    """``(scale, zero, blanks, has_blank, method, seeds)`` as the kernels take them, from
    ``quant = (scale, zero, blank, method, seeds)`` (per-tile arrays, ``blank`` None for no
    ZBLANK): the blanks in the packed integers' type."""
    scale, zero, blank, method, seeds = quant
    info = np.iinfo(packed.dtype)
    blank = None if blank is None else np.asarray(blank, np.int64)
    # a ZBLANK the decoded integers cannot hold never matches one of them
    has_blank = blank is not None and bool(((blank >= info.min) & (blank <= info.max)).all())
    blanks = (blank if has_blank else np.zeros(len(seeds), np.int64)).astype(packed.dtype)
    return scale, zero, blanks, has_blank, int(method), seeds
