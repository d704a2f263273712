"""Fused sum / count / mean / variance partials straight from stored big-endian bits.

Two layouts cover every axis subset once the caller has coalesced axes (see ``_shape``):

``rows``  ``u[A, B] → out[A]``      reduce the last axis (full reductions: ``A = 1``; spectra)
``cols``  ``u[A, B, C] → out[A, C]`` reduce the middle axis, vectorised along ``C`` (moment maps)

Accuracy: values are accumulated in float64. A block of :data:`BLOCK` contiguous values (or
:data:`TILE` columns × ``BLOCK // 8`` rows) is summed with reassociation allowed, so LLVM
spreads it over vector lanes (how many depends on the CPU: the rounding does too); block
results are combined with Neumaier compensation in strict arithmetic. The error is therefore
bounded by the block size, not by the number of values: at worst ``γ(BLOCK)·Σ|x|`` whatever
the vector width, and for data with random low bits a few ulps of the exactly rounded sum on
10**7 values (tested), where a single running float64 sum drifts by ~10**3 ulps.

Variance: the row kernel sums ``d`` and ``d²`` for ``d = x - k`` in one pass per block, with
``k`` the block's first value, and takes ``M2 = Σd² - (Σd)²/n``. That loses about
``log2(κ)`` bits, ``κ = Σd² / M2``; a block whose ``κ`` exceeds :data:`_KAPPA` (its first
value an outlier) is redone while still in cache: its mean, then sums shifted by that mean.
Blocks are merged with Chan et al.'s pairwise update, their means taken relative to the
row's first shift, so that offset data (``10**9 + noise``) keep their low bits: ``M2`` of
such a row is within the worst-case bound ``γ(c)·(Σd² + 2|d̄|·Σ|d|)`` per block (about
10**-12 of M2 there; tested), where block means in absolute terms were ~3·10**-9 off. Such
data are where the vector width shows: their squares have few significant bits and round
with a bias, so the error grows with the longest run of additions (5·10**-14 with a scalar
loop, 10**-15 with AVX2's 16 accumulators).

The column kernel keeps two passes over each tile of rows (the tile is still in cache for the
second), four rows at a time like the column sum, and merges each 64-row block with Chan's
update written as selects, so that it vectorises; its order does not depend on the vector
width (lanes run across columns). Either way one memory pass yields
exact-combining ``(n, mean, M2)`` partials.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from dfits.kernels._compile import BLOCK, NARROW_BLOCK, TILE, compensated, jit, neumaier
from dfits.kernels._loaders import Kind, loaders

__all__ = ["isum_kernels", "moments_kernels", "rawsum_kernels", "sum_kernels"]

_ROWS_PER_TILE = BLOCK // 8

#: columns per tile of the column sum: 8192 float64 accumulators (64 KiB) stay in L2, and each
#: of the four rows read together streams 32 KiB of float32 before the next jump, long enough
#: for the hardware prefetcher (measured on a 256×1024×1024 float32 cube, one thread: 14.4 GB/s
#: with 2048 columns, 17.0 GB/s with 8192, 15.4 GB/s with whole rows)
SUM_TILE = 4 * TILE
#: values per block of the row variance kernel. Its per-block work (a shift, a cancellation
#: check, a Chan merge with three divisions) is heavier than a sum's, and at 2048 values it
#: cost 10-15 % of the loop; measured on 128 MiB of float64 in memory, one thread, Zen 5:
#: 4.2-4.4 ms with 2048, 3.96 ms with 8192, 3.87 ms with 16384 (LIMIT's one-pass std: 3.8 ms).
#: 8192 float64 (64 KiB) stay in L2 for a block redone in two passes. A scalar loop adds them
#: in one chain (worst case γ(8192) ≈ 10**-12 of Σd²); each vector lane adds a share.
MOMENTS_BLOCK = 8192
#: a block's one-pass ``M2 = Σd² - (Σd)²/c`` (``d = x - shift``) loses about log2(κ) bits to
#: cancellation, where ``κ = Σd² / M2``; above this the block is redone in two passes
_KAPPA = 64.0
#: rows re-read by the second (M2) pass: TILE × 64 float64 values ≈ 1 MiB stays in cache
_ROWS_PER_PASS = 64


@njit(inline="always", nogil=True)
def _four_rows(base, o, sb, w):
    """Four rows of ``w`` values from offset ``o``, ``sb`` apart (the column kernels' passes)."""
    return (
        base[o : o + w],
        base[o + sb : o + sb + w],
        base[o + 2 * sb : o + 2 * sb + w],
        base[o + 3 * sb : o + 3 * sb + w],
    )


@functools.cache
def _keeper(kind: Kind, banded: bool):
    """``keep(x, scale, zero, blank, lo, hi)``: whether a stored value takes part.

    Valid values (not NaN or BLANK), or with ``banded`` the physical values inside
    ``[lo, hi]`` compared as :mod:`dfits.kernels.bands` compares them (NaN and BLANK are
    never inside): the masked variance of ``where(x > t)``.
    """
    ld = loaders(kind)
    valid, phys = ld.valid, ld.phys
    if banded:

        @njit(inline="always", nogil=True)
        def keep(x, scale, zero, blank, lo, hi):
            p = np.float64(phys(x, scale, zero, blank))
            return (p >= lo) & (p <= hi)
    else:

        @njit(inline="always", nogil=True)
        def keep(x, scale, zero, blank, lo, hi):
            return valid(x, blank)

    return keep


def _column_adder(kind: Kind, check: bool, banded: bool = False):
    """``add(base, o, sb, nrows, w, acc, cnt, scale, zero, blank, lo, hi)``: ``nrows`` rows of
    ``w`` values from offset ``o``, ``sb`` apart, added column by column into ``acc[:w]``,
    the values kept (:func:`_keeper`) counted into ``cnt[:w]`` when ``check`` (the column
    kernels' first pass).

    Four rows per pass: the tile accumulators are loaded and stored once per four values
    instead of once per value (measured: the moment-0 kernel ran at 0.5x the speed of the full
    sum before, 0.8x after; the column variance took 24-25 ms per 128 MiB before, 13.8 after).
    """
    f64 = loaders(kind).f64
    keep = _keeper(kind, banded)

    @njit(inline="always", nogil=True)
    def add(base, o, sb, nrows, w, acc, cnt, scale, zero, blank, lo, hi):
        first = 0
        while first + 4 <= nrows:
            r0, r1, r2, r3 = _four_rows(base, o + first * sb, sb, w)
            if check:
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
            else:
                for c in range(w):
                    acc[c] += (f64(r0[c], scale, zero, blank) + f64(r1[c], scale, zero, blank)) + (
                        f64(r2[c], scale, zero, blank) + f64(r3[c], scale, zero, blank)
                    )
            first += 4
        for b in range(first, nrows):
            # a 1-D row slice keeps the inner loop simple enough to vectorise
            row = base[o + b * sb : o + b * sb + w]
            if check:
                for c in range(w):
                    x = row[c]
                    ok = keep(x, scale, zero, blank, lo, hi)
                    v = f64(x, scale, zero, blank)
                    acc[c] += v if ok else 0.0
                    cnt[c] += np.int64(ok)
            else:
                for c in range(w):
                    acc[c] += f64(row[c], scale, zero, blank)

    return add


@functools.cache
def sum_kernels(kind: Kind, skipna: bool):
    """Return ``(rows, cols)`` kernels writing float64 sums and int64 counts of valid values.

    Without ``skipna`` a missing value (NaN, BLANK) makes the sum NaN, as in ``numpy.sum``;
    the count is then the number of elements. With ``skipna`` missing values are left out of
    both, as in ``numpy.nansum`` and ``numpy.nanmean``.
    """
    ld = loaders(kind)
    valid, f64 = ld.valid, ld.f64
    check = skipna and kind.can_be_missing

    @jit
    def rows(base, geo, scale, zero, blank, out_sum, out_n):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            total = 0.0
            comp = 0.0
            n = 0
            for b0 in range(0, length, BLOCK):
                blk = ua[b0 : min(b0 + BLOCK, length)]
                s = 0.0
                # Index a block slice from 0: with ``range(b0, b1)`` LLVM cannot prove the
                # index non-negative, keeps numba's wrap-around and vectorises the loop as
                # gathers (3 GiB/s instead of 14 on AVX-512).
                if check:
                    c = 0
                    for b in range(blk.size):
                        x = blk[b]
                        ok = valid(x, blank)
                        v = f64(x, scale, zero, blank)
                        s += v if ok else 0.0
                        c += np.int64(ok)
                    n += c
                else:
                    for b in range(blk.size):
                        s += f64(blk[b], scale, zero, blank)
                    n += blk.size
                total, comp = neumaier(total, comp, s)
            out_sum[a] = compensated(total, comp)
            out_n[a] = n

    add = _column_adder(kind, check)

    @jit
    def cols(base, geo, scale, zero, blank, out_sum, out_n):
        # ``out_n`` is written only when values can be missing (``check``): otherwise every
        # column counts ``nb`` and the caller says so without an array pass.
        na, nb, nc, off, sa, sb = geo
        part = np.empty(SUM_TILE)
        comp = np.empty(SUM_TILE)
        total = np.empty(SUM_TILE)
        cnt = np.empty(SUM_TILE, np.int64)
        single = nb <= _ROWS_PER_TILE
        for a in range(na):
            for c0 in range(0, nc, SUM_TILE):
                c1 = min(c0 + SUM_TILE, nc)
                w = c1 - c0
                part[:w] = 0.0
                total[:w] = 0.0
                comp[:w] = 0.0
                cnt[:w] = 0
                for b0 in range(0, nb, _ROWS_PER_TILE):
                    b1 = min(b0 + _ROWS_PER_TILE, nb)
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

    return rows, cols


@functools.cache
def moments_kernels(kind: Kind, skipna: bool, banded: bool = False):
    """Return ``(rows, cols)`` kernels ``(base, geo, scale, zero, blank, lo, hi, out_n,
    out_mean, out_m2)`` writing ``n`` (int64), ``mean`` and ``M2`` (float64).

    ``M2`` is the sum of squared deviations from ``mean``. Without ``skipna`` a missing value
    makes ``mean`` and ``M2`` NaN (``n`` counts every element), as ``numpy.var`` does. With
    ``banded`` only the values inside ``[lo, hi]`` count (and ``skipna`` is implied); else
    ``lo`` and ``hi`` are not read.
    """
    f64 = loaders(kind).f64
    keep = _keeper(kind, banded)
    check = banded or (skipna and kind.can_be_missing)

    @njit(inline="always", nogil=True)
    def shifted(blk, k, scale, zero, blank, lo, hi):
        """Sums of ``d = x - k`` and ``d²`` over the values of ``blk`` kept, and their count."""
        s = 0.0
        q = 0.0
        c = 0
        for b in range(blk.size):
            x = blk[b]
            ok = not check or keep(x, scale, zero, blank, lo, hi)
            d = f64(x, scale, zero, blank) - k
            s += d if ok else 0.0
            q += d * d if ok else 0.0
            c += np.int64(ok)
        return s, q, c

    @jit
    def rows(base, geo, scale, zero, blank, lo, hi, out_n, out_mean, out_m2):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            n = 0
            # the row's mean is kept relative to ``ref`` (its first block's shift): block means
            # of offset data then differ in their low bits, which Chan's merge needs
            ref = 0.0
            mean = 0.0
            m2 = 0.0
            for b0 in range(0, length, MOMENTS_BLOCK):
                # a block slice indexed from 0 vectorises as plain loads (see ``sum_kernels``)
                blk = ua[b0 : min(b0 + MOMENTS_BLOCK, length)]
                # one pass of sums shifted by a value of the block itself (or the mean so far)
                x = blk[0]
                first_kept = not check or keep(x, scale, zero, blank, lo, hi)
                k = f64(x, scale, zero, blank) if first_kept else ref + mean
                s, q, c = shifted(blk, k, scale, zero, blank, lo, hi)
                if c == 0:
                    continue
                bq = q - s * (s / c)
                if bq * _KAPPA < q:
                    # the shift was far from the block's mean (an outlier first, or a missing
                    # first value after a jump), so the shortcut cancelled: redo the block,
                    # still in cache, as its mean and then sums shifted by that mean (the
                    # corrected two-pass form). NaN (missing values without skipna) and an
                    # all-equal block never come here.
                    k = shifted(blk, 0.0, scale, zero, blank, lo, hi)[0] / c
                    s, q, _ = shifted(blk, k, scale, zero, blank, lo, hi)
                    bq = q - s * (s / c)
                if n == 0:
                    ref = k
                n, mean, m2 = _chan(n, mean, m2, c, (k - ref) + s / c, bq)
            out_n[a] = n
            out_mean[a] = ref + mean if n > 0 else np.nan
            out_m2[a] = m2 if n > 0 else np.nan

    add = _column_adder(kind, check, banded)

    @jit
    def cols(base, geo, scale, zero, blank, lo, hi, out_n, out_mean, out_m2):
        # ``out_n`` is written only when values can be missing (``check``): otherwise every
        # column counts ``nb`` and the caller says so without a map of counts.
        na, nb, nc, off, sa, sb = geo
        s = np.empty(TILE)
        q = np.empty(TILE)
        c = np.zeros(TILE, np.int64)
        for a in range(na):
            for c0 in range(0, nc, TILE):
                c1 = min(c0 + TILE, nc)
                w = c1 - c0
                on = out_n[a, c0:c1]
                om = out_mean[a, c0:c1]
                oq = out_m2[a, c0:c1]
                if check:
                    on[:] = 0
                om[:] = 0.0
                oq[:] = 0.0
                o0 = off + a * sa + c0
                for b0 in range(0, nb, _ROWS_PER_PASS):
                    b1 = min(b0 + _ROWS_PER_PASS, nb)
                    # pass 1, sums (and counts of valid values)
                    s[:w] = 0.0
                    if check:
                        c[:w] = 0
                    add(base, o0 + b0 * sb, sb, b1 - b0, w, s, c, scale, zero, blank, lo, hi)
                    rows_in = b1 - b0
                    for k in range(w):
                        ck = c[k] if check else rows_in
                        s[k] = s[k] / ck if ck > 0 else 0.0
                    # pass 2, squared deviations from the block's means: the rows are still
                    # in cache (``_ROWS_PER_PASS`` × TILE values)
                    q[:w] = 0.0
                    first = b0
                    while first + 4 <= b1:
                        r0, r1, r2, r3 = _four_rows(base, o0 + first * sb, sb, w)
                        for k in range(w):
                            x0, x1, x2, x3 = r0[k], r1[k], r2[k], r3[k]
                            m = s[k]
                            d0 = f64(x0, scale, zero, blank) - m
                            d1 = f64(x1, scale, zero, blank) - m
                            d2 = f64(x2, scale, zero, blank) - m
                            d3 = f64(x3, scale, zero, blank) - m
                            if check:
                                d0 = d0 if keep(x0, scale, zero, blank, lo, hi) else 0.0
                                d1 = d1 if keep(x1, scale, zero, blank, lo, hi) else 0.0
                                d2 = d2 if keep(x2, scale, zero, blank, lo, hi) else 0.0
                                d3 = d3 if keep(x3, scale, zero, blank, lo, hi) else 0.0
                            q[k] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)
                        first += 4
                    for b in range(first, b1):
                        row = base[o0 + b * sb : o0 + b * sb + w]
                        for k in range(w):
                            x = row[k]
                            d = f64(x, scale, zero, blank) - s[k]
                            if check:
                                d = d if keep(x, scale, zero, blank, lo, hi) else 0.0
                            q[k] += d * d
                    # merge the block into the tile's partials (Chan et al.), written with
                    # selects instead of a call per column so that the loop vectorises
                    for k in range(w):
                        ck = c[k] if check else rows_in
                        n_a = on[k] if check else b0
                        n = n_a + ck
                        r = ck / n if ck > 0 else 0.0
                        delta = s[k] - om[k]
                        mean = om[k] + delta * r
                        m2 = oq[k] + q[k] + delta * delta * (n_a * r)
                        om[k] = mean if ck > 0 else om[k]
                        oq[k] = m2 if ck > 0 else oq[k]
                        if check:
                            on[k] = n
                for k in range(w):
                    if (on[k] if check else nb) == 0:
                        om[k] = np.nan
                        oq[k] = np.nan

    return rows, cols


@jit
def _chan(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    """Merge two ``(n, mean, M2)`` partials (Chan, Golub & LeVeque 1979)."""
    if n_a == 0:
        return n_b, mean_b, m2_b
    n = n_a + n_b
    delta = mean_b - mean_a
    mean = mean_a + delta * (n_b / n)
    m2 = m2_a + m2_b + delta * delta * (n_a * (n_b / n))
    return n, mean, m2


@functools.cache
def isum_kernels(kind: Kind):
    """Return ``(rows, cols)`` kernels summing integer physical values exactly.

    ``numpy.sum`` of an ``int16``/``uint16``/... array is an exact ``int64``/``uint64`` (with
    numpy's wrap-around on overflow); the caller zeroes ``out_sum`` with that dtype and the
    kernel accumulates in it. Only for kinds without missing values (raw or offset integers).
    """
    phys = loaders(kind).phys
    narrow = kind.bitpix in (8, 16)
    # unsigned physical values: raw bytes, and 16-bit with the BZERO = 2**15 offset; a block
    # sum must be added in the caller's accumulator type (uint64 + int32 is float64 in numba)
    acc_t = np.uint64 if (kind.bitpix == 8) != (kind.mode == "offset") else np.int64

    @jit
    def rows(base, geo, scale, zero, blank, out_sum):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            t = out_sum[a]
            if narrow:  # int32 lanes within a block, as in ``rawsum_kernels``
                for b0 in range(0, length, NARROW_BLOCK):
                    blk = ua[b0 : min(b0 + NARROW_BLOCK, length)]
                    s32 = np.int32(0)
                    for b in range(blk.size):
                        s32 = np.int32(s32 + np.int32(phys(blk[b], scale, zero, blank)))
                    t += acc_t(s32)
            else:
                for b in range(length):
                    t += phys(ua[b], scale, zero, blank)
            out_sum[a] = t

    @jit
    def cols(base, geo, scale, zero, blank, out_sum):
        na, nb, nc, off, sa, sb = geo
        if narrow:  # int32 column tiles, as in ``rawsum_kernels``
            s32 = np.empty(TILE, np.int32)
            for a in range(na):
                acc = out_sum[a]
                for c0 in range(0, nc, TILE):
                    w = min(TILE, nc - c0)
                    for b0 in range(0, nb, NARROW_BLOCK):
                        s32[:w] = 0
                        for b in range(b0, min(b0 + NARROW_BLOCK, nb)):
                            o = off + a * sa + b * sb + c0
                            row = base[o : o + w]
                            for c in range(w):
                                s32[c] = np.int32(
                                    s32[c] + np.int32(phys(row[c], scale, zero, blank))
                                )
                        for c in range(w):
                            acc[c0 + c] += acc_t(s32[c])
            return
        for a in range(na):
            acc = out_sum[a]
            for b in range(nb):
                o = off + a * sa + b * sb
                row = base[o : o + nc]
                for c in range(nc):
                    acc[c] += phys(row[c], scale, zero, blank)

    return rows, cols


@functools.cache
def rawsum_kernels(kind: Kind):
    """Return ``(rows, cols)`` kernels summing scaled 8/16/32-bit integers from stored values.

    For scaled integer data ``Σ (bscale·x + bzero) = bscale·Σx + bzero·n``: summing the stored
    integers exactly and scaling once is both faster and more accurate than converting every
    value to float64. Every stored value is summed (int32 lanes within blocks of
    :data:`NARROW_BLOCK` values for 8/16 bits, int64 for 32) with the BLANKs counted
    alongside, and ``BLANK × count`` is taken off after: no select per value, half the
    widening. On AVX-512 Intel cores the per-value int64 form is bound by the one shuffle port.

    The kernels write (``=`` for ``rows``, ``+=`` per block of rows for ``cols``) the scaled
    totals into ``out_total`` (any float dtype; NaN where a BLANK is summed without ``skipna``,
    as NaN does in ``numpy.sum``) and, when ``with_n``, the counts of non-BLANK values into the
    int64 ``out_n``. No int64 map is filled on the way: for a moment map those maps were the
    larger part of each chunk task in a fresh process (fresh pages are dear).
    """
    signed = loaders(Kind(kind.bitpix, "raw", False, kind.swap)).phys
    has_blank = kind.has_blank
    narrow = kind.bitpix in (8, 16)
    step = NARROW_BLOCK if narrow else 1 << 62
    lane = np.int32 if narrow else np.int64  # column-tile sums and counts within a block

    @jit
    def rows(base, geo, blank, scale, zero, skipna, with_n, out_total, out_n):
        nrow, length, off, sa = geo
        bv = np.int64(signed(blank, 1.0, 0.0, blank))
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            s = 0
            nb = 0
            for b0 in range(0, length, step):
                blk = ua[b0 : min(b0 + step, length)]
                if narrow:
                    s32 = np.int32(0)
                    c32 = np.int32(0)
                    for b in range(blk.size):
                        x = blk[b]
                        s32 = np.int32(s32 + np.int32(signed(x, 1.0, 0.0, blank)))
                        c32 = np.int32(c32 + np.int32(has_blank and x == blank))
                    s += np.int64(s32)
                    nb += np.int64(c32)
                else:
                    for b in range(blk.size):
                        x = blk[b]
                        s += np.int64(signed(x, 1.0, 0.0, blank))
                        nb += np.int64(has_blank and x == blank)
            n = length - nb
            raw = np.float64(s - nb * bv)
            out_total[a] = np.nan if nb > 0 and not skipna else scale * raw + zero * np.float64(n)
            if with_n:
                out_n[a] = n

    @jit
    def cols(base, geo, blank, scale, zero, skipna, with_n, out_total, out_n):
        # column tiles with int32 sums (8/16 bits) over up to a block of rows, four rows per
        # pass; the outputs are touched once per tile and block instead of once per row
        na, nb_, nc, off, sa, sb = geo
        bv = np.int64(signed(blank, 1.0, 0.0, blank))
        ts = np.empty(SUM_TILE, lane)
        tk = np.empty(SUM_TILE, lane)
        for a in range(na):
            tot = out_total[a]
            for c0 in range(0, nc, SUM_TILE):
                w = min(SUM_TILE, nc - c0)
                for b0 in range(0, nb_, step):
                    b1 = min(b0 + step, nb_)
                    ts[:w] = 0
                    tk[:w] = 0
                    first = b0
                    while first + 4 <= b1:
                        r0, r1, r2, r3 = _four_rows(base, off + a * sa + first * sb + c0, sb, w)
                        for c in range(w):
                            x0, x1, x2, x3 = r0[c], r1[c], r2[c], r3[c]
                            if narrow:
                                v = (
                                    np.int32(signed(x0, 1.0, 0.0, blank))
                                    + np.int32(signed(x1, 1.0, 0.0, blank))
                                ) + (
                                    np.int32(signed(x2, 1.0, 0.0, blank))
                                    + np.int32(signed(x3, 1.0, 0.0, blank))
                                )
                                ts[c] = np.int32(ts[c] + np.int32(v))
                            else:
                                ts[c] += (
                                    np.int64(signed(x0, 1.0, 0.0, blank))
                                    + np.int64(signed(x1, 1.0, 0.0, blank))
                                ) + (
                                    np.int64(signed(x2, 1.0, 0.0, blank))
                                    + np.int64(signed(x3, 1.0, 0.0, blank))
                                )
                            if has_blank:
                                k = (np.int32(x0 == blank) + np.int32(x1 == blank)) + (
                                    np.int32(x2 == blank) + np.int32(x3 == blank)
                                )
                                tk[c] = tk[c] + k
                        first += 4
                    for b in range(first, b1):
                        o = off + a * sa + b * sb + c0
                        row = base[o : o + w]
                        for c in range(w):
                            x = row[c]
                            ts[c] = ts[c] + signed(x, 1.0, 0.0, blank)
                            tk[c] = tk[c] + np.int64(has_blank and x == blank)
                    rows_in = np.int64(b1 - b0)
                    for c in range(w):
                        k = np.int64(tk[c])
                        raw = np.float64(np.int64(ts[c]) - k * bv)
                        t = scale * raw + zero * np.float64(rows_in - k)
                        tot[c0 + c] += np.nan if k > 0 and not skipna else t
                        if with_n:
                            out_n[a, c0 + c] += rows_in - k

    return rows, cols
