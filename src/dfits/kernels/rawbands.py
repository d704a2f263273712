"""Bands of scaled 8/16-bit integers from their stored integers: no float per value.

The physical value of scaled 8/16-bit data is monotone in the stored integer (each rounded
float32 step is), so the values inside a band ``[lo, hi]`` are those whose stored integer lies
in an interval, found once per band by tabulating all 256 or 65536 physical values exactly as
astropy computes them (:func:`raw_interval`). The kernels then compare integers and sum them
in int32 lanes, as the unmasked sums of scaled integers do (``scale·Σx + zero·n``,
:func:`dfits.kernels.intsums.rawsum_kernels`). :func:`dfits.kernels.bands.band_sum_count`
takes this route whenever the interval exists.
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import NARROW_BLOCK, SUM_TILE, four_rows, inline
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import add_parts, flat, fold_sums, kept_shape, run
from dfits.kernels.intsums import sums_once

__all__ = ["raw_band_sum", "raw_interval", "rawband_kernels"]


def raw_band_sum(u, kind, scale, zero, blank, axes, span, out_dtype, counts, sums):
    """Band sums and counts of scaled 8/16-bit integers from the stored integers in ``span``
    (as :func:`~dfits.kernels.bands.band_sum_count` returns them)."""
    shape = kept_shape(u, axes)
    if out_dtype != np.float64 and not sums_once(u, axes, kind):
        # blocks of rows are added up: do that in float64, round at the end
        total, n = raw_band_sum(u, kind, scale, zero, blank, axes, span, np.float64, counts, sums)
        return (None if total is None else total.astype(out_dtype)), n
    outs = [np.zeros(shape, out_dtype), np.zeros(shape, np.int64)]
    rows, cols = rawband_kernels(kind)
    first, last = np.int32(span[0]), np.int32(span[1])

    def call(form, v, outs_):
        kernel = rows if form == "rows" else cols
        kernel(*flat(v), blank, first, last, scale, zero, sums, counts, *outs_)

    total, n = run(u, axes, outs, call, add_parts, fold_sums)
    return (total if sums else None), (n if counts else None)


@functools.lru_cache(maxsize=256)
def raw_interval(bitpix: int, scale: float, zero: float, lo: float, hi: float):
    """The stored integers ``[first, last]`` of scaled 8/16-bit data whose physical values
    lie in ``[lo, hi]``, or None when those do not form one interval.

    Every stored integer's physical value is computed as astropy computes it (float32
    ``x·scale`` then ``+ zero``, each rounded) and compared in float64, as the per-value
    kernel does, so the interval selects exactly what numpy's comparison of decoded values
    selects. BLANK is not excluded here (the kernel tests it). An empty band comes back as
    ``(1, 0)``. Only a scale that makes some value NaN (``0·inf``) breaks monotonicity: None.
    """
    if bitpix == 8:
        x = np.arange(256, dtype=np.int32)
    elif bitpix == 16:
        x = np.arange(-(1 << 15), 1 << 15, dtype=np.int32)
    else:
        raise ValueError(f"no stored-integer interval for BITPIX {bitpix}")
    phys = x.astype(np.float32)
    with np.errstate(all="ignore"):  # an overflow or 0·inf here is what decoding gives too
        phys *= np.float32(scale)
        phys += np.float32(zero)
        wide = phys.astype(np.float64)  # a Python float bound would round to float32
        inside = np.flatnonzero((wide >= lo) & (wide <= hi))
    if inside.size == 0:
        return 1, 0
    first, last = int(inside[0]), int(inside[-1])
    if last - first + 1 != inside.size:
        return None
    return int(x[first]), int(x[last])


@functools.cache
def rawband_kernels(kind: Kind):
    """Return ``(rows, cols)`` kernels ``(base, geo, blank, first, last, scale, zero,
    with_sum, with_n, out_sum, out_n)`` for scaled 8/16-bit integers.

    The values kept are those whose stored integer ``x`` lies in ``[first, last]`` (from
    :func:`raw_interval`) and is not BLANK. Their integers and their number are added in
    int32 lanes over blocks of :data:`NARROW_BLOCK` values; ``scale·Σx + zero·n`` (float64)
    is added into ``out_sum`` and ``n`` into ``out_n`` (``=`` for ``rows``, ``+=`` per block of
    rows for ``cols``: both start zeroed) when ``with_sum``/``with_n``.
    """
    if kind.mode != "scaled" or kind.bitpix not in (8, 16):
        raise ValueError(f"stored-integer bands are for scaled 8/16-bit data, not {kind}")
    return _rawband_rows(kind), _rawband_cols(kind)


def _taker(kind: Kind):
    """``take(x, blank, first, last)``: ``(x or 0, 1 or 0)`` as int32, for a stored value."""
    signed = loaders(Kind(kind.bitpix, "raw", False, kind.swap)).phys
    has_blank = kind.has_blank

    @inline
    def take(x, blank, first, last):
        r = np.int32(signed(x, 1.0, 0.0, blank))
        ok = (r >= first) & (r <= last)
        if has_blank:
            ok = ok & (x != blank)
        return (r if ok else np.int32(0)), np.int32(ok)

    return take


def _rawband_rows(kind: Kind):
    take = _taker(kind)

    @inline
    def rows(base, geo, blank, first, last, scale, zero, with_sum, with_n, out_sum, out_n):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            s = 0
            n = 0
            for b0 in range(0, length, NARROW_BLOCK):
                blk = ua[b0 : min(b0 + NARROW_BLOCK, length)]
                s32 = np.int32(0)
                c32 = np.int32(0)
                for b in range(blk.size):
                    v, k = take(blk[b], blank, first, last)
                    s32 = np.int32(s32 + v)
                    c32 = np.int32(c32 + k)
                s += np.int64(s32)
                n += np.int64(c32)
            if with_sum:
                out_sum[a] = scale * np.float64(s) + zero * np.float64(n)
            if with_n:
                out_n[a] = n

    return entry(rows, kind)


def _rawband_cols(kind: Kind):
    four, one = _rawband_steps(_taker(kind))

    @inline
    def cols(base, geo, blank, first, last, scale, zero, with_sum, with_n, out_sum, out_n):
        na, nb, nc, off, sa, sb = geo
        ts = np.empty(SUM_TILE, np.int32)
        tk = np.empty(SUM_TILE, np.int32)
        for a in range(na):
            for c0 in range(0, nc, SUM_TILE):
                w = min(SUM_TILE, nc - c0)
                for b0 in range(0, nb, NARROW_BLOCK):
                    b1 = min(b0 + NARROW_BLOCK, nb)
                    ts[:w] = 0
                    tk[:w] = 0
                    o = off + a * sa + c0
                    row = b0
                    # four rows per pass, as in the column sums (accumulators touched once)
                    while row + 4 <= b1:
                        r0, r1, r2, r3 = four_rows(base, o + row * sb, sb, w)
                        four(r0, r1, r2, r3, w, ts, tk, blank, first, last)
                        row += 4
                    for b in range(row, b1):
                        one(base[o + b * sb : o + b * sb + w], w, ts, tk, blank, first, last)
                    for c in range(w):
                        n = np.int64(tk[c])
                        if with_sum:
                            t = scale * np.float64(ts[c]) + zero * np.float64(n)
                            out_sum[a, c0 + c] += t
                        if with_n:
                            out_n[a, c0 + c] += n

    return entry(cols, kind)


def _rawband_steps(take):
    """The column kernel's steps: four rows, and one row, into the int32 tile sums and counts."""

    @inline
    def four(r0, r1, r2, r3, w, ts, tk, blank, first, last):
        for c in range(w):
            v0, k0 = take(r0[c], blank, first, last)
            v1, k1 = take(r1[c], blank, first, last)
            v2, k2 = take(r2[c], blank, first, last)
            v3, k3 = take(r3[c], blank, first, last)
            ts[c] = np.int32(ts[c] + ((v0 + v1) + (v2 + v3)))
            tk[c] = np.int32(tk[c] + ((k0 + k1) + (k2 + k3)))

    @inline
    def one(row, w, ts, tk, blank, first, last):
        for c in range(w):
            v, k = take(row[c], blank, first, last)
            ts[c] = np.int32(ts[c] + v)
            tk[c] = np.int32(tk[c] + k)

    return four, one
