"""Sums and counts of the values inside a band, of quantised tiles dequantised block by block.

:func:`tile_band_sum_count` answers what :func:`dfits.kernels.bands.band_sum_count` answers
(``(x > t).sum()``, ``nansum(where(x > t, x, nan))``, a masked moment map's counts) for a
chunk of quantised tiles (:func:`dfits.kernels.tilefill.tile_map`), without a float chunk:
the kernels are :mod:`dfits.kernels.bands`' own loops
(:func:`~dfits.kernels.bands.band_row_loop`, :func:`~dfits.kernels.bands.band_col_loop`)
and steps (:func:`~dfits.kernels.bands.band_adder`), fed blocks that
:func:`~dfits.kernels.tilefill.fill` dequantises just before they are read: at most
``BLOCK`` values of a row, or four rows of a column tile. The steps see the same floats in
the same order as the float chunk's kernels, so the sums and counts are theirs bit for bit
(tested). The band's moments and extremes run
:func:`dfits.kernels.tilemoments.tile_moments` and
:func:`dfits.kernels.tilesums.window_extrema` with the band. Axes that fit no kernel layout
are folded or split as the float route folds or splits them
(:func:`~dfits.kernels.tilefill.split_or_fold`), or declined (None).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import BLOCK, SUM_TILE, inline
from dfits.kernels._loaders import Kind
from dfits.kernels._run import add_parts, fold_sums
from dfits.kernels.bands import band_adder, band_col_loop, band_row_loop
from dfits.kernels.tilefill import fill, fill_rows, scratch, split_or_fold
from dfits.kernels.tilesums import _plan

__all__ = ["tile_band_sum_count"]


def tile_band_sum_count(
    tm: tuple,
    spec: Any,
    shape: tuple[int, ...],
    axes: tuple[int, ...],
    band: tuple[float, float],
    dtype: Any = None,
    counts: bool = True,
    sums: bool = True,
) -> tuple | None:
    """``(sums, counts)`` of the values inside ``band`` over ``axes`` of the chunk of ``tm``,
    as :func:`dfits.kernels.bands.band_sum_count` gives them for the dequantised chunk
    (``dtype``, ``counts`` and ``sums`` as there), or None to decline."""
    plan = _plan(spec, shape, axes)
    if not (counts or sums):
        return None
    if plan is None:
        return _folded(tm, spec, shape, axes, band, dtype, counts, sums)
    kind, (scale, zero, blank), form, vshape, kept = plan
    total = np.zeros(kept, np.float64 if dtype is None else dtype) if sums else None
    n = np.zeros(kept, np.int64) if counts else None
    rows, cols = _band_kernels(kind, counts, sums)
    p = (scale, zero, blank, float(band[0]), float(band[1]))
    if form == "rows":
        ub, fb = scratch(kind, BLOCK)
        # a result not asked for: an empty array the kernel never writes (as bands' call)
        out_sum = total.reshape(vshape[0]) if sums else np.empty(0)
        out_n = n.reshape(vshape[0]) if counts else np.empty(0, np.int64)
        rows(tm, vshape[0], vshape[1], p, out_sum, out_n, ub, fb)
    else:
        ub, fb = scratch(kind, 4 * SUM_TILE)
        flat = (vshape[0], vshape[2])
        out_sum = total.reshape(flat) if sums else np.empty((0, 0))
        out_n = n.reshape(flat) if counts else np.empty((0, 0), np.int64)
        cols(tm, vshape, p, out_sum, out_n, ub, fb)
    return total, n


def _folded(tm, spec, shape, axes, band, dtype, counts, sums) -> tuple | None:
    """Axes that fit no layout, folded or split as the float route does them: in float64
    (``fold_sums``, ``add_parts``), rounded to ``dtype`` last."""

    def one(t, sh, ax):
        part = tile_band_sum_count(t, spec, sh, ax, band, None, counts, sums)
        return None if part is None else [p for p in part if p is not None]

    res = split_or_fold(tm, spec, shape, axes, one, fold_sums, add_parts)
    if res is None:
        return None
    total = res[0] if sums else None
    if total is not None and dtype is not None:
        total = total.astype(dtype)
    return total, (res[-1] if counts else None)


@inline
def _tile_block(src, a, length, b0):
    tm, ub, fb = src
    m = min(BLOCK, length - b0)
    fill(tm, a * length + b0, m, fb)
    return ub[:m]


@functools.cache
def _band_kernels(kind: Kind, counted: bool, summed: bool):
    """``(rows, cols)``: the band kernels' loops over blocks that :func:`fill` dequantises."""
    row_loop = band_row_loop(kind, counted, summed, _tile_block)
    add = band_adder(kind, counted, summed)

    @inline
    def tile_rows(src, a, b0, b1, c0, w, part, cnt, p):
        tm, nb, nc, ub, fb = src
        scale, zero, blank, lo, hi = p
        # four rows at a time, as the band adder takes a block's rows (then the last few
        # one by one): the same additions in the same order
        b = b0
        while b < b1:
            r = min(4, b1 - b)
            fill_rows(tm, (a * nb + b) * nc + c0, nc, r, w, fb)
            add(ub, 0, w, r, w, part, cnt, scale, zero, blank, lo, hi)
            b += r

    col_loop = band_col_loop(counted, summed, tile_rows)

    @inline
    def rows(tm, nrow, length, p, out_sum, out_n, ub, fb):
        scale, zero, blank, lo, hi = p
        row_loop((tm, ub, fb), nrow, length, scale, zero, blank, lo, hi, out_sum, out_n)

    @inline
    def cols(tm, geo, p, out_sum, out_n, ub, fb):
        na, nb, nc = geo
        col_loop((tm, nb, nc, ub, fb), na, nb, nc, p, out_sum, out_n)

    return entry(rows, kind, counted, summed), entry(cols, kind, counted, summed)
