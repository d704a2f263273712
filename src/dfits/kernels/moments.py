"""Means and squared deviations ``(n, mean, M2)`` straight from stored bits, in one memory pass.

``moments`` answers ``mean``/``var``/``std`` (and their NaN-skipping forms), ``band_moments``
the masked variance ``nanvar(where(x > t, x, nan))``. The partials combine exactly
(:func:`combine_moments`, Chan et al.), so dask can merge them across chunks. Layouts as in
:mod:`dfits.kernels.sums`: ``rows`` reduces the last axis of ``u[A, B]``, ``cols`` the middle
axis of ``u[A, B, C]``.

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
from typing import Any

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import TILE, four_rows, inline, jit
from dfits.kernels._loaders import Kind, keeper, loaders
from dfits.kernels._run import flat, kept_shape, run
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, normalize_axis, params
from dfits.kernels.sums import column_adder

__all__ = [
    "MOMENTS_BLOCK",
    "ROWS_PER_PASS",
    "band_moments",
    "col_block",
    "combine_moments",
    "moments",
    "moments_kernels",
    "row_block",
]

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
ROWS_PER_PASS = 64


def moments(u: np.ndarray, spec: Spec, axis: Any = None, *, skipna: bool = False):
    """``(n, mean, M2)`` over ``axis``: counts (int64), means and squared deviations (float64).

    Where nothing can be missing, or missing values are not skipped, every count is the
    number of values reduced, and ``n`` comes back as a read-only broadcast of that number.
    """
    kind, scale, zero, blank = params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    shape = kept_shape(u, axes)
    if u.size == 0:
        return np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)
    rows, cols = moments_kernels(kind, skipna)
    layout = layout_for(u, frozenset(axes))
    every = not (skipna and kind.can_be_missing)  # every value counts
    if layout is not None and layout[0] == "cols" and every:
        count = np.int64(np.prod([u.shape[a] for a in axes], dtype=np.int64))
        mean, m2 = _moment_map(cols, layout[1], shape, scale, zero, blank)
        return np.broadcast_to(count, shape), mean, m2
    outs = [np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)]

    def call(form, v, outs_):
        (rows if form == "rows" else cols)(*flat(v), scale, zero, blank, 0.0, 0.0, *outs_)
        if form == "cols" and every:
            outs_[0][...] = v.shape[1]  # counts the column kernel leaves to its caller

    return tuple(run(u, axes, outs, call, combine_moments, _fold_moments))


def _moment_map(cols, v, shape, scale, zero, blank):
    """Means and M2 of a moment map (``cols``, every value counting): the kernel writes every
    mean and M2 (no fill pass first) and no counts, which are all the same: a map less of
    fresh memory per chunk."""
    mean, m2 = np.empty(shape), np.empty(shape)
    flat_shape = (v.shape[0], v.shape[2])
    # no counts: an empty row per kept row, so the kernel's ``out_n[a, c0:c1]`` stays an
    # in-bounds (empty) slice, bounds checking on or off
    no_counts = np.empty((v.shape[0], 0), np.int64)
    cols(*flat(v), scale, zero, blank, 0.0, 0.0, no_counts, mean.reshape(flat_shape),
         m2.reshape(flat_shape))  # fmt: skip
    return mean, m2


def band_moments(
    u: np.ndarray, spec: Spec, axis: Any = None, *, lo: float = -np.inf, hi: float = np.inf
):
    """``(n, mean, M2)`` over ``axis`` of the values inside ``[lo, hi]`` (as
    :func:`~dfits.kernels.bands.band_sum_count` selects them): int64 counts, float64 means and
    squared deviations from them, NaN where nothing is inside. The masked variance,
    ``nanvar(where(x > t, x, nan))``, in one pass over the stored bytes.
    """
    kind, scale, zero, blank = params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    shape = kept_shape(u, axes)
    outs = [np.zeros(shape, np.int64), np.full(shape, np.nan), np.full(shape, np.nan)]
    if u.size == 0:
        return tuple(outs)
    rows, cols = moments_kernels(kind, True, banded=True)
    lo, hi = float(lo), float(hi)

    def call(form, v, outs_):
        (rows if form == "rows" else cols)(*flat(v), scale, zero, blank, lo, hi, *outs_)

    return tuple(run(u, axes, outs, call, combine_moments, _fold_moments))


def _fold_moments(parts: list[np.ndarray]) -> list[np.ndarray]:
    """``(n, mean, M2)`` over the last axis: the pooled mean, and M2 about it (Chan et al.)."""
    n, mean, m2 = parts
    tot = n.sum(axis=-1)
    has = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(has, n * mean, 0.0).sum(axis=-1) / tot
        delta = np.where(has, mean - pooled[..., None], 0.0)
        spread = np.where(has, m2 + n * delta * delta, 0.0).sum(axis=-1)
    empty = tot == 0
    return [tot, np.where(empty, np.nan, pooled), np.where(empty, np.nan, spread)]


def combine_moments(parts, _sub_size: int = 0):
    """Merge a list of ``(n, mean, M2)`` partials exactly (Chan et al.), elementwise."""
    n, mean, m2 = (np.asarray(x, dtype=float).copy() for x in parts[0])
    for pn, pmean, pm2 in parts[1:]:
        tot = n + pn
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = pmean - mean
            frac = np.where(tot > 0, pn / np.where(tot > 0, tot, 1), 0.0)
            new_mean = np.where(n == 0, pmean, np.where(pn == 0, mean, mean + delta * frac))
            new_m2 = np.where(
                n == 0, pm2, np.where(pn == 0, m2, m2 + pm2 + delta * delta * n * frac)
            )
        n, mean, m2 = tot, new_mean, new_m2
    return [n.astype(np.int64), mean, m2]


@functools.cache
def moments_kernels(kind: Kind, skipna: bool, banded: bool = False):
    """Return ``(rows, cols)`` kernels ``(base, geo, scale, zero, blank, lo, hi, out_n,
    out_mean, out_m2)`` writing ``n`` (int64), ``mean`` and ``M2`` (float64).

    ``M2`` is the sum of squared deviations from ``mean``. Without ``skipna`` a missing value
    makes ``mean`` and ``M2`` NaN (``n`` counts every element), as ``numpy.var`` does. With
    ``banded`` only the values inside ``[lo, hi]`` count (and ``skipna`` is implied); else
    ``lo`` and ``hi`` are not read. ``cols`` writes ``out_n`` only when values can be left
    out: otherwise every column counts every row and the caller says so.
    """
    check = banded or (skipna and kind.can_be_missing)
    return _moment_rows(kind, check, banded), _moment_cols(kind, check, banded)


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


def _shifter(kind: Kind, check: bool, banded: bool):
    """``shifted(blk, k, scale, zero, blank, lo, hi)``: sums of ``d = x - k`` and ``d²`` over
    the values of ``blk`` kept, and their count."""
    f64 = loaders(kind).f64
    keep = keeper(kind, banded)

    @inline
    def shifted(blk, k, scale, zero, blank, lo, hi):
        s = 0.0
        q = 0.0
        c = 0
        for b in range(blk.size):
            x = blk[b]
            ok = not check or keep(x, scale, zero, blank, lo, hi)
            # one select, then both sums: with a select on each sum LLVM left the loop
            # scalar (nanvar of rows ran one value at a time, AVX2 and SSE2 alike)
            d = f64(x, scale, zero, blank) - k
            d = d if ok else 0.0
            s += d
            q += d * d
            c += np.int64(ok)
        return s, q, c

    return shifted


def _moment_rows(kind: Kind, check: bool, banded: bool):
    block = row_block(kind, check, banded)

    @inline
    def rows(base, geo, scale, zero, blank, lo, hi, out_n, out_mean, out_m2):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            # the row's mean is kept relative to ``ref`` (its first block's shift): block means
            # of offset data then differ in their low bits, which Chan's merge needs
            st = (0, 0.0, 0.0, 0.0)  # n, ref, mean, m2
            for b0 in range(0, length, MOMENTS_BLOCK):
                # a block slice indexed from 0 vectorises as plain loads (see ``sums``)
                st = block(ua[b0 : min(b0 + MOMENTS_BLOCK, length)], st, scale, zero, blank,
                           lo, hi)  # fmt: skip
            n, ref, mean, m2 = st
            out_n[a] = n
            out_mean[a] = ref + mean if n > 0 else np.nan
            out_m2[a] = m2 if n > 0 else np.nan

    return entry(rows, kind, check, banded)


def row_block(kind: Kind, check: bool, banded: bool):
    """``block(blk, st, scale, zero, blank, lo, hi)``: the row state ``st = (n, ref, mean,
    M2)`` after one block of at most :data:`MOMENTS_BLOCK` values (the row kernel's step;
    :mod:`dfits.kernels.tilemoments` runs it on blocks of dequantised tiles)."""
    f64 = loaders(kind).f64
    keep = keeper(kind, banded)
    shifted = _shifter(kind, check, banded)

    @inline
    def block(blk, st, scale, zero, blank, lo, hi):
        n, ref, mean, m2 = st
        # one pass of sums shifted by a value of the block itself (or the mean so far)
        x = blk[0]
        first_kept = not check or keep(x, scale, zero, blank, lo, hi)
        k = f64(x, scale, zero, blank) if first_kept else ref + mean
        s, q, c = shifted(blk, k, scale, zero, blank, lo, hi)
        if c == 0:
            return st
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
        return n, ref, mean, m2

    return block


def _moment_cols(kind: Kind, check: bool, banded: bool):
    block = col_block(kind, check, banded)

    @inline
    def cols(base, geo, scale, zero, blank, lo, hi, out_n, out_mean, out_m2):
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
                for b0 in range(0, nb, ROWS_PER_PASS):
                    b1 = min(b0 + ROWS_PER_PASS, nb)
                    block(
                        base, o0, sb, b0, b1, w, s, q, c, on, om, oq, (scale, zero, blank, lo, hi)
                    )
                for k in range(w):
                    if (on[k] if check else nb) == 0:
                        om[k] = np.nan
                        oq[k] = np.nan

    return entry(cols, kind, check, banded)


def col_block(kind: Kind, check: bool, banded: bool):
    """``block(base, o0, sb, b0, b1, w, s, q, c, on, om, oq, p)``: rows ``b0:b1`` of a column
    tile (``w`` values from ``base[o0 + b·sb]``) merged into its partials ``on, om, oq``
    (``s, q, c``: scratch of the tile's width; ``p = (scale, zero, blank, lo, hi)``): the
    column kernel's step, which :mod:`dfits.kernels.tilemoments` runs on dequantised tiles."""
    add = column_adder(kind, check, banded)
    deviations = _deviations(kind, check, banded)
    merge = _merger(check)

    @inline
    def block(base, o0, sb, b0, b1, w, s, q, c, on, om, oq, p):
        scale, zero, blank, lo, hi = p
        # pass 1, sums (and counts of valid values), then the block's means
        s[:w] = 0.0
        if check:
            c[:w] = 0
        add(base, o0 + b0 * sb, sb, b1 - b0, w, s, c, scale, zero, blank, lo, hi)
        for k in range(w):
            ck = c[k] if check else b1 - b0
            s[k] = s[k] / ck if ck > 0 else 0.0
        # pass 2, squared deviations from them: the rows are still in cache
        # (``ROWS_PER_PASS`` × TILE values)
        q[:w] = 0.0
        deviations(base, o0, sb, b0, b1, w, s, q, scale, zero, blank, lo, hi)
        merge(w, b0, b1 - b0, s, q, c, on, om, oq)

    return block


def _deviations(kind: Kind, check: bool, banded: bool):
    """``deviations(base, o0, sb, b0, b1, w, s, q, ...)``: squared deviations of rows
    ``b0:b1`` of a tile from the block means ``s``, added into ``q`` (values kept only)."""
    f64 = loaders(kind).f64
    keep = keeper(kind, banded)

    @inline
    def deviations(base, o0, sb, b0, b1, w, s, q, scale, zero, blank, lo, hi):
        first = b0
        while first + 4 <= b1:
            r0, r1, r2, r3 = four_rows(base, o0 + first * sb, sb, w)
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

    return deviations


def _merger(check: bool):
    """``merge(w, b0, rows_in, s, q, c, on, om, oq)``: a block's means ``s`` and M2 ``q``
    merged into the tile's partials (Chan et al.), written with selects instead of a call per
    column so that the loop vectorises."""

    @inline
    def merge(w, b0, rows_in, s, q, c, on, om, oq):
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

    return merge
