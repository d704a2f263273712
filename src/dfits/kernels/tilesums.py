"""Sums and extremes of a window of quantised tiles, dequantised block by block in the kernel.

A chunk whose tiles lie wholly inside it is summed by :mod:`dfits.kernels.tilereduce`, tile
by tile. A chunk *not* on tile boundaries is a window of the tiles that cover it; before
these kernels it was dequantised into a float chunk and summed by
:func:`dfits.kernels.sums.sum_count`. :func:`window_sum_count` runs that function's own steps
(the row kernel's block sum and Neumaier add, the column adder four rows at a time) on blocks
that :func:`~dfits.kernels.tilefill.fill` dequantises just before they are read, so its sums
are the float route's bit for bit, without the float chunk. :func:`window_extrema` gives the
extremes and the counts of valid values and NaNs (exact, whatever the order), and
:func:`tile_indexed` the extremes with their first indices (``argmax``, a cube's peak
velocity), for windows and whole tiles alike.
Axes that fit no kernel layout are folded or split as the float route folds or splits them
(:func:`~dfits.kernels.tilefill.split_or_fold`), or declined (None).
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import (
    BLOCK,
    ROWS_PER_TILE,
    SUM_TILE,
    TILE,
    compensated,
    inline,
    neumaier,
)
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import add_parts, fold_sums
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, params
from dfits.kernels.extrema import _combine_minmax, _fold_minmax
from dfits.kernels.sums import _block_summer, column_adder
from dfits.kernels.tilefill import c_view, fill, fill_rows, scratch, split_or_fold

__all__ = ["tile_indexed", "window_extrema", "window_sum_count"]


def _plan(spec: Spec, shape: tuple[int, ...], axes: tuple[int, ...]):
    """``(kind, (scale, zero, blank), form, view shape, kept shape)``, or None to decline."""
    u = c_view(shape, np.dtype(f"u{spec.stored.itemsize}"))
    kind, scale, zero, blank = params(u, spec)
    layout = layout_for(u, frozenset(axes)) if u.size else None
    if layout is None:
        return None
    kept = tuple(n for d, n in enumerate(shape) if d not in axes)
    return kind, (scale, zero, blank), layout[0], layout[1].shape, kept


def window_sum_count(tm: tuple, spec: Spec, shape, axes: tuple[int, ...], skipna: bool):
    """``(total, n)`` over ``axes`` as :func:`dfits.kernels.sums.sum_count` gives them for
    the dequantised chunk (float64 sums), or None."""
    plan = _plan(spec, shape, axes)
    if plan is None:
        return _awkward_sums(tm, spec, shape, axes, skipna)
    kind, p, form, vshape, kept = plan
    counted = skipna and kind.can_be_missing
    rows, cols = _sum_kernels(kind, counted)
    total = np.zeros(kept)
    n = np.zeros(kept, np.int64)
    if form == "rows":
        ub, fb = scratch(kind, BLOCK)
        n_out = n.reshape(vshape[0]) if counted else np.empty(vshape[0], np.int64)
        rows(tm, vshape[0], vshape[1], p, total.reshape(vshape[0]), n_out, ub, fb)
    else:
        ub, fb = scratch(kind, 4 * SUM_TILE)
        flat = (vshape[0], vshape[2])
        n_out = n.reshape(flat) if counted else np.empty((0, 0), np.int64)
        cols(tm, vshape, p, total.reshape(flat), n_out, ub, fb)
    if counted:
        return total, n
    every = np.int64(np.prod([shape[a] for a in axes], dtype=np.int64))
    return total, np.broadcast_to(every, kept)


def _awkward_sums(tm: tuple, spec: Spec, shape, axes: tuple[int, ...], skipna: bool):
    """:func:`window_sum_count` over axes that fit no layout, folded or split as
    :func:`dfits.kernels.sums.sum_count` does (counts only where some can be missing)."""
    kind = params(c_view(shape, np.dtype(f"u{spec.stored.itemsize}")), spec)[0]
    counted = skipna and kind.can_be_missing

    def one(t, sh, ax):
        part = window_sum_count(t, spec, sh, ax, skipna)
        return None if part is None else part[: 1 + counted]

    res = split_or_fold(tm, spec, shape, axes, one, fold_sums, add_parts)
    if res is None or counted:
        return res if res is None else (res[0], res[1])
    every = np.int64(np.prod([shape[a] for a in axes], dtype=np.int64))
    return res[0], np.broadcast_to(every, res[0].shape)


@functools.cache
def _sum_kernels(kind: Kind, check: bool):
    """``(rows, cols)``: the sum kernels' loops over blocks that :func:`fill` dequantises."""
    sum_block = _block_summer(kind, check)
    add = column_adder(kind, check)

    @inline
    def rows(tm, nrow, length, p, out_sum, out_n, ub, fb):
        scale, zero, blank = p
        for a in range(nrow):
            total = 0.0
            comp = 0.0
            n = 0
            for b0 in range(0, length, BLOCK):
                m = min(BLOCK, length - b0)
                fill(tm, a * length + b0, m, fb)
                s, c = sum_block(ub[:m], scale, zero, blank)
                n += c
                total, comp = neumaier(total, comp, s)
            out_sum[a] = compensated(total, comp)
            out_n[a] = n

    @inline
    def cols(tm, geo, p, out_sum, out_n, ub, fb):
        scale, zero, blank = p
        na, nb, nc = geo
        part = np.empty(SUM_TILE)
        comp = np.empty(SUM_TILE)
        total = np.empty(SUM_TILE)
        cnt = np.empty(SUM_TILE, np.int64)
        single = nb <= ROWS_PER_TILE
        for a in range(na):
            for c0 in range(0, nc, SUM_TILE):
                w = min(c0 + SUM_TILE, nc) - c0
                total[:w] = 0.0
                comp[:w] = 0.0
                cnt[:w] = 0
                for b0 in range(0, nb, ROWS_PER_TILE):
                    b1 = min(b0 + ROWS_PER_TILE, nb)
                    part[:w] = 0.0
                    # four rows at a time, as the column adder takes a block's rows (then
                    # the last few one by one): the same additions in the same order
                    b = b0
                    while b < b1:
                        r = min(4, b1 - b)
                        fill_rows(tm, (a * nb + b) * nc + c0, nc, r, w, fb)
                        add(ub, 0, w, r, w, part, cnt, scale, zero, blank, 0.0, 0.0)
                        b += r
                    if not single:
                        for c in range(w):
                            total[c], comp[c] = neumaier(total[c], comp[c], part[c])
                dst = out_sum[a, c0 : c0 + w]
                if single:
                    dst[:] = part[:w]
                else:
                    for c in range(w):
                        dst[c] = compensated(total[c], comp[c])
                if check:
                    out_n[a, c0 : c0 + w] = cnt[:w]

    return entry(rows, kind, check), entry(cols, kind, check)


def window_extrema(tm: tuple, spec: Spec, shape, axes: tuple[int, ...], want_max: bool, band=None):
    """``(value, valid count, NaN count)`` over ``axes`` (the value in the image's type, ±inf
    where nothing is valid), as :mod:`dfits.kernels.tilereduce` gives them, or None. With a
    ``band`` ``(lo, hi)`` only the values inside it are valid, the others counted as NaN
    (:func:`dfits.kernels.extrema` with ``band``: the peak of ``where(x > t)``)."""
    plan = _plan(spec, shape, axes)
    if plan is None:
        res = split_or_fold(
            tm, spec, shape, axes,
            lambda t, sh, ax: window_extrema(t, spec, sh, ax, want_max, band),
            functools.partial(_fold_minmax, want_max=want_max),
            functools.partial(_combine_minmax, want_max=want_max),
        )  # fmt: skip
        return None if res is None else tuple(res)
    kind, p, form, vshape, kept = plan
    p = (*p, *((-np.inf, np.inf) if band is None else (float(band[0]), float(band[1]))))
    geo = (vshape[0], vshape[1], 1) if form == "rows" else vshape
    acc = np.full(kept, -np.inf if want_max else np.inf)
    valid, nans = np.zeros(kept, np.int64), np.zeros(kept, np.int64)
    ub, fb = scratch(kind, TILE)
    flat = (geo[0], geo[2])
    _extreme_kernel(kind, want_max, band is not None)(
        tm, geo, p, acc.reshape(flat), valid.reshape(flat), nans.reshape(flat), ub, fb
    )
    return acc.astype(spec.physical), valid, nans


@functools.cache
def _extreme_kernel(kind: Kind, want_max: bool, banded: bool):
    """Extremes over the middle axis of ``(na, nb, nc)`` (rows: ``nc = 1``), row by row;
    ``banded``: of the values inside ``[lo, hi]`` (compared in float64, as the band kernels
    compare them), the others missing."""
    f64 = loaders(kind).f64

    @inline
    def step(x, acc, valid, nans, a, c, lo, hi):
        if (not ((x >= lo) & (x <= hi))) if banded else x != x:
            nans[a, c] += 1
        else:
            valid[a, c] += 1
            if (x > acc[a, c]) if want_max else (x < acc[a, c]):
                acc[a, c] = x

    @inline
    def cols(tm, geo, p, acc, valid, nans, ub, fb):
        scale, zero, blank, lo, hi = p
        na, nb, nc = geo
        if nc == 1:  # a row form: its values one block after another
            for a in range(na):
                for b0 in range(0, nb, TILE):
                    m = min(TILE, nb - b0)
                    fill(tm, a * nb + b0, m, fb)
                    for k in range(m):
                        step(f64(ub[k], scale, zero, blank), acc, valid, nans, a, 0, lo, hi)
            return
        for a in range(na):
            for c0 in range(0, nc, TILE):
                w = min(c0 + TILE, nc) - c0
                for b in range(nb):
                    fill(tm, (a * nb + b) * nc + c0, w, fb[:w])
                    for k in range(w):
                        x = f64(ub[k], scale, zero, blank)
                        step(x, acc, valid, nans, a, c0 + k, lo, hi)

    return entry(cols, kind, want_max, banded)


def tile_indexed(tm: tuple, spec: Spec, shape, axes: tuple[int, ...], want_max: bool):
    """``(value, index, first NaN index)`` over ``axes`` as :func:`dfits.kernels.extrema`
    gives them with indices (flat C-order indices over the reduced axes, the first
    occurrence on ties, -1 where none; the value is undefined where the index is -1), or
    None."""
    plan = _plan(spec, shape, axes)
    if plan is None:
        return None
    kind, p, form, vshape, kept = plan
    geo = (vshape[0], vshape[1], 1) if form == "rows" else vshape
    val = np.full(kept, -np.inf if want_max else np.inf)
    idx, nanidx = np.full(kept, -1, np.int64), np.full(kept, -1, np.int64)
    ub, fb = scratch(kind, TILE)
    flat = (geo[0], geo[2])
    _indexed_kernel(kind, want_max)(
        tm, geo, p, val.reshape(flat), idx.reshape(flat), nanidx.reshape(flat), ub, fb
    )
    return val.astype(spec.physical), idx, nanidx


@functools.cache
def _indexed_kernel(kind: Kind, want_max: bool):
    """Extremes and their first indices over the middle axis of ``(na, nb, nc)``."""
    f64 = loaders(kind).f64

    @inline
    def step(x, b, val, idx, nanidx, a, c):
        if x != x:
            if nanidx[a, c] < 0:
                nanidx[a, c] = b
        elif idx[a, c] < 0 or ((x > val[a, c]) if want_max else (x < val[a, c])):
            val[a, c] = x
            idx[a, c] = b

    @inline
    def cols(tm, geo, p, val, idx, nanidx, ub, fb):
        scale, zero, blank = p
        na, nb, nc = geo
        if nc == 1:  # a row form: its values one block after another
            for a in range(na):
                for b0 in range(0, nb, TILE):
                    m = min(TILE, nb - b0)
                    fill(tm, a * nb + b0, m, fb)
                    for k in range(m):
                        step(f64(ub[k], scale, zero, blank), b0 + k, val, idx, nanidx, a, 0)
            return
        for a in range(na):
            for c0 in range(0, nc, TILE):
                w = min(c0 + TILE, nc) - c0
                for b in range(nb):
                    fill(tm, (a * nb + b) * nc + c0, w, fb[:w])
                    for k in range(w):
                        step(f64(ub[k], scale, zero, blank), b, val, idx, nanidx, a, c0 + k)

    return entry(cols, kind, want_max)
