"""Moments and weighted sums of quantised tiles, dequantised block by block inside the kernel.

:func:`tile_moments` answers ``(n, mean, M2)`` (``var``, ``std`` and their NaN-skipping
forms) and :func:`tile_weighted_sums` the three sums of a moment map for a chunk of quantised
tiles (:func:`dfits.kernels.tilefill.tile_map`), without a float chunk: the kernels are
:mod:`dfits.kernels.moments`' and :mod:`dfits.kernels.weighted`' own steps
(:func:`~dfits.kernels.moments.row_block`, :func:`~dfits.kernels.moments.col_block`, the
weighted ``four``/``one`` rows), each fed a block that :func:`~dfits.kernels.tilefill.fill`
dequantises just before the step reads it: at most
:data:`~dfits.kernels.moments.MOMENTS_BLOCK` values of a row, four rows of a moment map's
column tile, or the :data:`~dfits.kernels.moments.ROWS_PER_PASS` × ``TILE`` block a column
variance step reads twice. Each stays in cache, where the float chunk was a memory pass
written and then read again.

The steps therefore see the same floats in the same order as the float chunk's kernels:
results equal those of :func:`dfits.kernels.moments.moments` and
:func:`dfits.kernels.weighted.weighted_sums` on the dequantised chunk, bit for bit (tested).
Axes that need a split view (reduced axes on both sides of a kept one) are split or folded
as the float route splits or folds them (:func:`_awkward`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import TILE, four_rows, inline
from dfits.kernels._loaders import Kind
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, params
from dfits.kernels.moments import (
    MOMENTS_BLOCK,
    ROWS_PER_PASS,
    _fold_moments,
    col_block,
    combine_moments,
    row_block,
)
from dfits.kernels.tilefill import c_view, fill, scratch, split_or_fold
from dfits.kernels.weighted import _TILE as _WTILE
from dfits.kernels.weighted import _weighted_steps

__all__ = ["tile_moments", "tile_weighted_sums"]


def tile_moments(
    tm: tuple, spec: Spec, shape: tuple[int, ...], axes: tuple[int, ...], skipna, band=None
):
    """``(n, mean, M2)`` over ``axes`` of the chunk of ``tm``, as
    :func:`dfits.kernels.moments.moments` gives them for the dequantised chunk (with a
    ``band`` ``(lo, hi)``: :func:`~dfits.kernels.moments.band_moments`); None for axes the
    float route splits otherwise than :func:`_awkward` does (the caller reads the floats)."""
    u = c_view(shape, np.dtype(f"u{spec.stored.itemsize}"))
    kind, scale, zero, blank = params(u, spec)
    layout = layout_for(u, frozenset(axes)) if u.size else None
    if layout is None:
        return _awkward(tm, spec, shape, axes, skipna, band) if u.size else None
    form, v = layout
    kept = tuple(n for d, n in enumerate(shape) if d not in axes)
    banded = band is not None
    every = not (banded or (skipna and kind.can_be_missing))
    rows, cols = _moment_kernels(kind, not every, banded)
    p = (scale, zero, blank, *((0.0, 0.0) if band is None else map(float, band)))
    if form == "rows":
        outs = [np.zeros(kept, np.int64), np.full(kept, np.nan), np.full(kept, np.nan)]
        ub, fb = scratch(kind, MOMENTS_BLOCK)
        rows(tm, v.shape[0], v.shape[1], p, *(o.reshape(v.shape[0]) for o in outs), ub, fb)
        return tuple(outs)
    ub, fb = scratch(kind, ROWS_PER_PASS * TILE)
    flat = (v.shape[0], v.shape[2])
    if every:
        # as the moment map of :func:`~dfits.kernels.moments.moments`: no counts written
        count = np.int64(np.prod([shape[a] for a in axes], dtype=np.int64))
        mean, m2 = np.empty(kept), np.empty(kept)
        no_counts = np.empty((v.shape[0], 0), np.int64)
        cols(tm, v.shape, p, no_counts, mean.reshape(flat), m2.reshape(flat), ub, fb)
        return np.broadcast_to(count, kept), mean, m2
    outs = [np.zeros(kept, np.int64), np.full(kept, np.nan), np.full(kept, np.nan)]
    cols(tm, v.shape, p, *(o.reshape(flat) for o in outs), ub, fb)
    return tuple(outs)


def _awkward(tm: tuple, spec: Spec, shape, axes: tuple[int, ...], skipna, band):
    """Axes that fit no kernel layout, as the float route reduces them
    (:func:`~dfits.kernels.tilefill.split_or_fold`): a band's moments folded
    (``_fold_moments``) or split, the moments split (no fold), merged by ``combine_moments``."""
    res = split_or_fold(
        tm, spec, shape, axes, lambda t, sh, ax: tile_moments(t, spec, sh, ax, skipna, band),
        None if band is None else _fold_moments, combine_moments,
    )  # fmt: skip
    return None if res is None else tuple(res)


@functools.cache
def _moment_kernels(kind: Kind, check: bool, banded: bool):
    """``(rows, cols)``: the moment kernels' loops over blocks that :func:`fill` dequantises."""
    block, cblock = row_block(kind, check, banded), col_block(kind, check, banded)

    @inline
    def rows(tm, nrow, length, p, out_n, out_mean, out_m2, ub, fb):
        scale, zero, blank, lo, hi = p
        for a in range(nrow):
            st = (0, 0.0, 0.0, 0.0)  # n, ref, mean, m2
            for b0 in range(0, length, MOMENTS_BLOCK):
                m = min(MOMENTS_BLOCK, length - b0)
                fill(tm, a * length + b0, m, fb)
                st = block(ub[:m], st, scale, zero, blank, lo, hi)
            n, ref, mean, m2 = st
            out_n[a] = n
            out_mean[a] = ref + mean if n > 0 else np.nan
            out_m2[a] = m2 if n > 0 else np.nan

    @inline
    def cols(tm, geo, p, out_n, out_mean, out_m2, ub, fb):
        na, nb, nc = geo
        s = np.empty(TILE)
        q = np.empty(TILE)
        c = np.zeros(TILE, np.int64)
        for a in range(na):
            for c0 in range(0, nc, TILE):
                w = min(c0 + TILE, nc) - c0
                on = out_n[a, c0 : c0 + w]
                om = out_mean[a, c0 : c0 + w]
                oq = out_m2[a, c0 : c0 + w]
                if check:
                    on[:] = 0
                om[:] = 0.0
                oq[:] = 0.0
                for b0 in range(0, nb, ROWS_PER_PASS):
                    b1 = min(b0 + ROWS_PER_PASS, nb)
                    for b in range(b0, b1):
                        k = (b - b0) * w
                        fill(tm, (a * nb + b) * nc + c0, w, fb[k : k + w])
                    # the block's rows lie ``w`` apart in the scratch, from its start
                    cblock(ub, -b0 * w, w, b0, b1, w, s, q, c, on, om, oq, p)
                for k in range(w):
                    if (on[k] if check else nb) == 0:
                        om[k] = np.nan
                        oq[k] = np.nan

    return entry(rows, kind, check, banded), entry(cols, kind, check, banded)


def tile_weighted_sums(
    tm: tuple, spec: Spec, shape: tuple[int, ...], axis: int, weights: np.ndarray, threshold: Any
) -> np.ndarray:
    """``Σ I``, ``Σ I·w`` and ``Σ I·w²`` over ``axis`` of the chunk of ``tm``, stacked first,
    as :func:`dfits.kernels.weighted.weighted_sums` gives them for the dequantised chunk."""
    u = c_view(shape, np.dtype(f"u{spec.stored.itemsize}"))
    kind, scale, zero, blank = params(u, spec)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (shape[axis],):
        raise ValueError(f"weights must have shape ({shape[axis]},), not {w.shape}")
    geo = (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1 :])))
    kept = tuple(n for d, n in enumerate(shape) if d != axis)
    if not u.size:
        return np.zeros((3, *kept))
    out = np.empty((3, geo[0], geo[2]))
    thr = -np.inf if threshold is None else float(threshold)
    ub, fb = scratch(kind, 4 * _WTILE)
    _weighted_kernel(kind)(tm, geo, w, (scale, zero, blank, thr), out, ub, fb)
    return out.reshape((3, *kept))


@functools.cache
def _weighted_kernel(kind: Kind):
    """The weighted sums' column loop over rows that :func:`fill` dequantises, four at a time."""
    four, one = _weighted_steps(kind)

    @inline
    def cols(tm, geo, w, p, out, ub, fb):
        scale, zero, blank, thr = p
        na, nb, nc = geo
        s0 = np.empty(_WTILE)
        s1 = np.empty(_WTILE)
        s2 = np.empty(_WTILE)
        for a in range(na):
            for c0 in range(0, nc, _WTILE):
                n = min(c0 + _WTILE, nc) - c0
                s0[:n] = 0.0
                s1[:n] = 0.0
                s2[:n] = 0.0
                first = 0
                while first + 4 <= nb:
                    for k in range(4):
                        fill(tm, (a * nb + first + k) * nc + c0, n, fb[k * n : (k + 1) * n])
                    r0, r1, r2, r3 = four_rows(ub, 0, n, n)
                    four(r0, r1, r2, r3, w[first : first + 4], n, s0, s1, s2, scale, zero,
                         blank, thr)  # fmt: skip
                    first += 4
                for b in range(first, nb):
                    fill(tm, (a * nb + b) * nc + c0, n, fb[:n])
                    one(ub[:n], w[b], n, s0, s1, s2, scale, zero, blank, thr)
                out[0, a, c0 : c0 + n] = s0[:n]
                out[1, a, c0 : c0 + n] = s1[:n]
                out[2, a, c0 : c0 + n] = s2[:n]

    return entry(cols, kind)
