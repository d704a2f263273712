"""Sums and counts of the values inside a band ``lo <= x <= hi``, straight from stored bits.

These answer thresholded reductions, ``nansum(where(x > t, x, nan))`` and
``count(where(x > t, x, nan))``: the building blocks of masked moment maps and spectra
(``cube.where(cube > 3 * rms).sum("freq")``). A strict bound is a closed one moved by one
ulp (``x > t`` is ``x >= nextafter(t, inf)`` for the float64 values compared here), so one
closed band covers every comparison and every intersection of two.

The test is made on the physical value exactly as astropy decodes it (float32 rounding of
scaled integers included) widened to float64, so it selects exactly what numpy's comparison
of the decoded values selects. NaN and BLANK fail every comparison and are left out. The
selected values are accumulated as the other sums are (:mod:`dfits.kernels.sums`): in
float64, blocks with reassociation, blocks combined with Neumaier compensation. Scaled
8/16-bit integers take a faster route, comparing stored integers
(:mod:`dfits.kernels.rawbands`).

``rows``  ``u[A, B] → out[A]``       reduce the last axis
``cols``  ``u[A, B, C] → out[A, C]`` reduce the middle axis, vectorised along ``C``
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import (
    BLOCK,
    ROWS_PER_TILE,
    SUM_TILE,
    compensated,
    four_rows,
    inline,
    neumaier,
)
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import add_parts, flat, fold_sums, run, sum_plan
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, params
from dfits.kernels.rawbands import raw_band_sum, raw_interval

__all__ = [
    "band_adder",
    "band_col_loop",
    "band_kernels",
    "band_row_loop",
    "band_sum_count",
]


def band_sum_count(
    u: np.ndarray,
    spec: Spec,
    axis: Any = None,
    *,
    lo: float = -np.inf,
    hi: float = np.inf,
    dtype: Any = None,
    counts: bool = True,
    sums: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Sums and int64 counts of the values inside ``[lo, hi]`` over ``axis``.

    The bounds are compared with each physical value (as astropy decodes it) in float64;
    NaN and BLANK are never inside. An empty band (``lo > hi``, or a NaN bound) selects
    nothing. Sums are accumulated in float64 and come back as float64, or rounded once to
    ``dtype`` (float32) when given. ``counts=False`` or ``sums=False`` skips that result
    (None comes back in its place).
    """
    kind, scale, zero, blank = params(u, spec)
    axes, shape, out_dtype = sum_plan(u, axis, dtype)
    if not (counts or sums):
        raise ValueError("ask for sums, counts or both")
    if sums and out_dtype != np.float64 and layout_for(u, frozenset(axes)) is None:
        # awkward layouts combine sub-results: keep those in float64, round at the end
        total, n = band_sum_count(u, spec, axes, lo=lo, hi=hi, counts=counts)
        return total.astype(out_dtype), n  # type: ignore[union-attr]
    if u.size and kind.mode == "scaled" and kind.bitpix in (8, 16):
        span = raw_interval(kind.bitpix, scale, zero, float(lo), float(hi))
        if span is not None:
            return raw_band_sum(u, kind, scale, zero, blank, axes, span, out_dtype, counts, sums)
    outs = ([np.zeros(shape, out_dtype)] if sums else []) + (
        [np.zeros(shape, np.int64)] if counts else []
    )
    if u.size:
        rows, cols = band_kernels(kind, counts, sums)
        lo, hi = float(lo), float(hi)

        def call(form, v, outs_):
            # a result not asked for: an empty array the kernel never writes
            empty = {"rows": 0, "cols": (0, 0)}[form]
            total = outs_[0] if sums else np.empty(empty)
            n = outs_[-1] if counts else np.empty(empty, np.int64)
            (rows if form == "rows" else cols)(*flat(v), scale, zero, blank, lo, hi, total, n)

        outs = run(u, axes, outs, call, add_parts, fold_sums)
    return (outs[0] if sums else None), (outs[-1] if counts else None)


@functools.cache
def band_kernels(kind: Kind, counted: bool = True, summed: bool = True):
    """Return ``(rows, cols)`` kernels ``(base, geo, scale, zero, blank, lo, hi, out_sum,
    out_n)`` writing the sums and int64 counts of the values inside ``[lo, hi]``.

    Sums are accumulated in float64 and stored in ``out_sum``'s dtype. Without ``counted``
    ``out_n`` is not written, without ``summed`` ``out_sum`` is not: a plain sum or a plain
    count fills one map of fresh memory per chunk instead of two.
    """
    return _band_rows(kind, counted, summed), _band_cols(kind, counted, summed)


def _taker(kind: Kind):
    """``take(x, scale, zero, blank, lo, hi)``: ``(value or 0.0, 1 or 0)`` for a stored value."""
    ld = loaders(kind)
    phys, f64 = ld.phys, ld.f64

    @inline
    def take(x, scale, zero, blank, lo, hi):
        # compute, then select: a branch here stops LLVM vectorising the loop
        p = np.float64(phys(x, scale, zero, blank))
        ok = (p >= lo) & (p <= hi)
        v = f64(x, scale, zero, blank)
        return (v if ok else 0.0), np.int64(ok)

    return take


def _band_block(kind: Kind):
    """``block(blk, scale, zero, blank, lo, hi)``: ``(sum, count)`` of the values of one
    block inside ``[lo, hi]``."""
    take = _taker(kind)

    @inline
    def block(blk, scale, zero, blank, lo, hi):
        s = 0.0
        c = 0
        for b in range(blk.size):
            v, k = take(blk[b], scale, zero, blank, lo, hi)
            s += v
            c += k
        return s, c

    return block


def band_row_loop(kind: Kind, counted: bool, summed: bool, read):
    """``loop(src, nrow, length, scale, zero, blank, lo, hi, out_sum, out_n)``: the row
    kernel, each row's blocks of at most ``BLOCK`` values from ``b0`` (``read(src, a,
    length, b0)``) summed and counted, then added with Neumaier compensation. The stored
    rows and the blocks :mod:`dfits.kernels.tilebands` dequantises run this one loop."""
    block = _band_block(kind)

    @inline
    def loop(src, nrow, length, scale, zero, blank, lo, hi, out_sum, out_n):
        for a in range(nrow):
            # the row's total kept with compensation, its blocks summed with reassociation
            total = 0.0
            comp = 0.0
            n = 0
            for b0 in range(0, length, BLOCK):
                blk = read(src, a, length, b0)
                s, c = block(blk, scale, zero, blank, lo, hi)
                n += c
                total, comp = neumaier(total, comp, s)
            if summed:
                out_sum[a] = compensated(total, comp)
            if counted:
                out_n[a] = n

    return loop


@inline
def _stored_block(src, a, length, b0):
    base, off, sa = src
    ua = base[off + a * sa : off + a * sa + length]
    # a block slice indexed from 0 vectorises (see the row sum in sums.py)
    return ua[b0 : min(b0 + BLOCK, length)]


def _band_rows(kind: Kind, counted: bool, summed: bool):
    loop = band_row_loop(kind, counted, summed, _stored_block)

    @inline
    def rows(base, geo, scale, zero, blank, lo, hi, out_sum, out_n):
        nrow, length, off, sa = geo
        loop((base, off, sa), nrow, length, scale, zero, blank, lo, hi, out_sum, out_n)

    return entry(rows, kind, counted, summed)


def band_col_loop(counted: bool, summed: bool, add_rows):
    """``loop(src, na, nb, nc, p, out_sum, out_n)``: the column kernel over ``(na, nb, nc)``,
    column tiles of ``SUM_TILE`` values whose rows ``add_rows(src, a, b0, b1, c0, w, part,
    cnt, p)`` adds, ``ROWS_PER_TILE`` at a time, into partial sums and counts, the partials
    added with Neumaier compensation. The stored rows and the rows
    :mod:`dfits.kernels.tilebands` dequantises run this one loop."""

    @inline
    def loop(src, na, nb, nc, p, out_sum, out_n):
        part = np.empty(SUM_TILE)
        comp = np.empty(SUM_TILE)
        total = np.empty(SUM_TILE)
        cnt = np.empty(SUM_TILE, np.int64)
        for a in range(na):
            for c0 in range(0, nc, SUM_TILE):
                c1 = min(c0 + SUM_TILE, nc)
                w = c1 - c0
                total[:w] = 0.0
                comp[:w] = 0.0
                cnt[:w] = 0
                for b0 in range(0, nb, ROWS_PER_TILE):
                    part[:w] = 0.0
                    add_rows(src, a, b0, min(b0 + ROWS_PER_TILE, nb), c0, w, part, cnt, p)
                    if summed:
                        for c in range(w):
                            total[c], comp[c] = neumaier(total[c], comp[c], part[c])
                if summed:
                    for c in range(w):
                        out_sum[a, c0 + c] = compensated(total[c], comp[c])
                if counted:
                    out_n[a, c0:c1] = cnt[:w]

    return loop


def _band_cols(kind: Kind, counted: bool, summed: bool):
    add = band_adder(kind, counted, summed)

    @inline
    def stored_rows(src, a, b0, b1, c0, w, part, cnt, p):
        base, off, sa, sb = src
        scale, zero, blank, lo, hi = p
        add(base, off + a * sa + b0 * sb + c0, sb, b1 - b0, w, part, cnt, scale, zero, blank,
            lo, hi)  # fmt: skip

    loop = band_col_loop(counted, summed, stored_rows)

    @inline
    def cols(base, geo, scale, zero, blank, lo, hi, out_sum, out_n):
        na, nb, nc, off, sa, sb = geo
        loop((base, off, sa, sb), na, nb, nc, (scale, zero, blank, lo, hi), out_sum, out_n)

    return entry(cols, kind, counted, summed)


def band_adder(kind: Kind, counted: bool, summed: bool):
    """``add(base, o, sb, nrows, w, part, cnt, scale, zero, blank, lo, hi)``: ``nrows`` rows
    of ``w`` values from offset ``o``, ``sb`` apart, their values inside ``[lo, hi]`` added
    into ``part[:w]`` and counted into ``cnt[:w]``, four rows per pass (as the column sums
    read them): the column kernel's step, which :mod:`dfits.kernels.tilebands` runs on
    dequantised tiles."""
    four, one = _band_steps(_taker(kind), counted, summed)

    @inline
    def add(base, o, sb, nrows, w, part, cnt, scale, zero, blank, lo, hi):
        first = 0
        while first + 4 <= nrows:
            r0, r1, r2, r3 = four_rows(base, o + first * sb, sb, w)
            four(r0, r1, r2, r3, w, part, cnt, scale, zero, blank, lo, hi)
            first += 4
        for b in range(first, nrows):
            one(base[o + b * sb : o + b * sb + w], w, part, cnt, scale, zero, blank, lo, hi)

    return add


def _band_steps(take, counted: bool, summed: bool):
    """The column kernel's steps: four rows, and one row, into ``part`` and ``cnt``."""

    @inline
    def four(r0, r1, r2, r3, w, part, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            v0, k0 = take(r0[c], scale, zero, blank, lo, hi)
            v1, k1 = take(r1[c], scale, zero, blank, lo, hi)
            v2, k2 = take(r2[c], scale, zero, blank, lo, hi)
            v3, k3 = take(r3[c], scale, zero, blank, lo, hi)
            if summed:
                part[c] += (v0 + v1) + (v2 + v3)
            if counted:
                cnt[c] += (k0 + k1) + (k2 + k3)

    @inline
    def one(row, w, part, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            v, k = take(row[c], scale, zero, blank, lo, hi)
            if summed:
                part[c] += v
            if counted:
                cnt[c] += k

    return four, one
