"""Sums and counts of float64 values straight from stored bits: ``sum``, ``nansum``, ``count``.

Two layouts cover every axis subset once the caller has coalesced axes (see ``_shape``):

``rows``  ``u[A, B] → out[A]``      reduce the last axis (full reductions: ``A = 1``; spectra)
``cols``  ``u[A, B, C] → out[A, C]`` reduce the middle axis, vectorised along ``C`` (moment maps)

Accuracy: values are accumulated in float64. A block of :data:`BLOCK` contiguous values (or
:data:`SUM_TILE` columns × :data:`ROWS_PER_TILE` rows) is summed with reassociation allowed,
so LLVM spreads it over vector lanes (how many depends on the CPU: the rounding does too);
block results are combined with Neumaier compensation in strict arithmetic. The error is
therefore bounded by the block size, not by the number of values: at worst
``γ(BLOCK)·Σ|x|`` whatever the vector width, and for data with random low bits a few ulps of
the exactly rounded sum on 10**7 values (tested), where a single running float64 sum drifts
by ~10**3 ulps. Scaled 8/16/32-bit integers are summed as integers instead
(:mod:`dfits.kernels.intsums`).
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
from dfits.kernels._loaders import Kind, keeper, loaders
from dfits.kernels._run import add_parts, flat, fold_sums, run, sum_plan
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, params
from dfits.kernels.intsums import scaled_integer_sum

__all__ = ["column_adder", "sum_count", "sum_kernels"]


def sum_count(
    u: np.ndarray,
    spec: Spec,
    axis: Any = None,
    *,
    skipna: bool = False,
    dtype: Any = None,
    counts: bool = True,
):
    """Sums and int64 counts of (valid, with ``skipna``) values over ``axis``.

    Values are accumulated in float64. The sums come back as float64, or as ``dtype``
    (float32) when given: the kernel then rounds each finished sum once as it stores it,
    so a large partial (a moment map) never exists in float64 as well.

    When no value can be missing from the count (``skipna`` off, or an encoding without NaN
    or BLANK) the counts are all alike and come back as a read-only broadcast array. A caller
    that needs only the sums may pass ``counts=False``; the counts may then come back as
    None (scaled integers skip the count map, which for a moment map is 8 bytes of fresh
    memory per pixel).
    """
    kind, scale, zero, blank = params(u, spec)
    axes, shape, out_dtype = sum_plan(u, axis, dtype)
    if u.size == 0:
        return np.zeros(shape, out_dtype), np.zeros(shape, np.int64)
    if kind.mode == "scaled" and kind.bitpix in (8, 16, 32):
        return scaled_integer_sum(u, kind, scale, zero, blank, axes, skipna, out_dtype, counts)
    if out_dtype != np.float64 and layout_for(u, frozenset(axes)) is None:
        # awkward layouts combine sub-results: keep those in float64, round at the end
        total, n = sum_count(u, spec, axes, skipna=skipna)
        return total.astype(out_dtype), n
    rows, cols = sum_kernels(kind, skipna)
    counted = skipna and kind.can_be_missing
    outs = [np.zeros(shape, out_dtype)] + ([np.zeros(shape, np.int64)] if counted else [])

    def call(form, v, outs_):
        if counted:
            n_out = outs_[1]
        else:  # not written by ``cols``; ``rows`` writes one count per row
            n_out = np.empty(v.shape[0] if form == "rows" else (0, 0), np.int64)
        (rows if form == "rows" else cols)(*flat(v), scale, zero, blank, outs_[0], n_out)

    res = run(u, axes, outs, call, add_parts, fold_sums)
    if counted:
        return res[0], res[1]
    return res[0], np.broadcast_to(np.int64(np.prod([u.shape[a] for a in axes])), shape)


@functools.cache
def sum_kernels(kind: Kind, skipna: bool):
    """Return ``(rows, cols)`` kernels writing float64 sums and int64 counts of valid values.

    Without ``skipna`` a missing value (NaN, BLANK) makes the sum NaN, as in ``numpy.sum``;
    the count is then the number of elements. With ``skipna`` missing values are left out of
    both, as in ``numpy.nansum`` and ``numpy.nanmean``.
    """
    check = skipna and kind.can_be_missing
    return _sum_rows(kind, check), _sum_cols(kind, check)


def _block_summer(kind: Kind, check: bool):
    """``sum_block(blk, scale, zero, blank)``: the block's sum and count (of valid values when
    ``check``, else of all)."""
    ld = loaders(kind)
    valid, f64 = ld.valid, ld.f64
    if check:

        @inline
        def sum_block(blk, scale, zero, blank):
            s = 0.0
            c = 0
            for b in range(blk.size):
                x = blk[b]
                ok = valid(x, blank)
                v = f64(x, scale, zero, blank)
                s += v if ok else 0.0
                c += np.int64(ok)
            return s, c
    else:

        @inline
        def sum_block(blk, scale, zero, blank):
            s = 0.0
            for b in range(blk.size):
                s += f64(blk[b], scale, zero, blank)
            return s, blk.size

    return sum_block


def _sum_rows(kind: Kind, check: bool):
    sum_block = _block_summer(kind, check)

    @inline
    def rows(base, geo, scale, zero, blank, out_sum, out_n):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            total = 0.0
            comp = 0.0
            n = 0
            for b0 in range(0, length, BLOCK):
                # Index a block slice from 0: with ``range(b0, b1)`` LLVM cannot prove the
                # index non-negative, keeps numba's wrap-around and vectorises the loop as
                # gathers (3 GiB/s instead of 14 on AVX-512).
                s, c = sum_block(ua[b0 : min(b0 + BLOCK, length)], scale, zero, blank)
                n += c
                total, comp = neumaier(total, comp, s)
            out_sum[a] = compensated(total, comp)
            out_n[a] = n

    return entry(rows, kind, check)


def _sum_cols(kind: Kind, check: bool):
    add = column_adder(kind, check)

    @inline
    def cols(base, geo, scale, zero, blank, out_sum, out_n):
        # ``out_n`` is written only when values can be missing (``check``): otherwise every
        # column counts ``nb`` and the caller says so without an array pass.
        na, nb, nc, off, sa, sb = geo
        part = np.empty(SUM_TILE)
        comp = np.empty(SUM_TILE)
        total = np.empty(SUM_TILE)
        cnt = np.empty(SUM_TILE, np.int64)
        single = nb <= ROWS_PER_TILE
        for a in range(na):
            for c0 in range(0, nc, SUM_TILE):
                c1 = min(c0 + SUM_TILE, nc)
                w = c1 - c0
                part[:w] = 0.0
                total[:w] = 0.0
                comp[:w] = 0.0
                cnt[:w] = 0
                for b0 in range(0, nb, ROWS_PER_TILE):
                    b1 = min(b0 + ROWS_PER_TILE, nb)
                    part[:w] = 0.0
                    o = off + a * sa + b0 * sb + c0
                    add(base, o, sb, b1 - b0, w, part, cnt, scale, zero, blank, 0.0, 0.0)
                    if not single:
                        for c in range(w):
                            total[c], comp[c] = neumaier(total[c], comp[c], part[c])
                dst = out_sum[a, c0:c1]
                if single:
                    # one block (e.g. 32 channels of a cube chunk): nothing to compensate
                    dst[:] = part[:w]
                else:
                    for c in range(w):
                        dst[c] = compensated(total[c], comp[c])
                if check:
                    out_n[a, c0:c1] = cnt[:w]

    return entry(cols, kind, check)


def column_adder(kind: Kind, check: bool, banded: bool = False):
    """``add(base, o, sb, nrows, w, acc, cnt, scale, zero, blank, lo, hi)``: ``nrows`` rows of
    ``w`` values from offset ``o``, ``sb`` apart, added column by column into ``acc[:w]``,
    the values kept (:func:`~dfits.kernels._loaders.keeper`) counted into ``cnt[:w]`` when
    ``check`` (the column kernels' first pass).

    Four rows per pass (:func:`~dfits.kernels._compile.four_rows`; the column variance took
    24-25 ms per 128 MiB one row at a time, 13.8 ms so).
    """
    four, one = _column_steps(kind, check, banded)

    @inline
    def add(base, o, sb, nrows, w, acc, cnt, scale, zero, blank, lo, hi):
        first = 0
        while first + 4 <= nrows:
            r0, r1, r2, r3 = four_rows(base, o + first * sb, sb, w)
            four(r0, r1, r2, r3, w, acc, cnt, scale, zero, blank, lo, hi)
            first += 4
        for b in range(first, nrows):
            # a 1-D row slice keeps the inner loop simple enough to vectorise
            one(base[o + b * sb : o + b * sb + w], w, acc, cnt, scale, zero, blank, lo, hi)

    return add


def _column_steps(kind: Kind, check: bool, banded: bool):
    """The column adder's steps, ``four`` rows into the accumulators and ``one`` row: counting
    the values kept with ``check``, else adding every value (chosen here, not in the loop)."""
    if check:
        return _kept_steps(kind, banded)
    f64 = loaders(kind).f64

    @inline
    def four(r0, r1, r2, r3, w, acc, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            acc[c] += (f64(r0[c], scale, zero, blank) + f64(r1[c], scale, zero, blank)) + (
                f64(r2[c], scale, zero, blank) + f64(r3[c], scale, zero, blank)
            )

    @inline
    def one(row, w, acc, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            acc[c] += f64(row[c], scale, zero, blank)

    return four, one


def _kept_steps(kind: Kind, banded: bool):
    f64 = loaders(kind).f64
    keep = keeper(kind, banded)

    @inline
    def four(r0, r1, r2, r3, w, acc, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            x0, x1, x2, x3 = r0[c], r1[c], r2[c], r3[c]
            k0 = keep(x0, scale, zero, blank, lo, hi)
            k1 = keep(x1, scale, zero, blank, lo, hi)
            k2 = keep(x2, scale, zero, blank, lo, hi)
            k3 = keep(x3, scale, zero, blank, lo, hi)
            v0 = f64(x0, scale, zero, blank) if k0 else 0.0
            v1 = f64(x1, scale, zero, blank) if k1 else 0.0
            v2 = f64(x2, scale, zero, blank) if k2 else 0.0
            v3 = f64(x3, scale, zero, blank) if k3 else 0.0
            acc[c] += (v0 + v1) + (v2 + v3)
            cnt[c] += (np.int64(k0) + np.int64(k1)) + (np.int64(k2) + np.int64(k3))

    @inline
    def one(row, w, acc, cnt, scale, zero, blank, lo, hi):
        for c in range(w):
            x = row[c]
            ok = keep(x, scale, zero, blank, lo, hi)
            v = f64(x, scale, zero, blank)
            acc[c] += v if ok else 0.0
            cnt[c] += np.int64(ok)

    return four, one
