"""Quantised tiles read block by block: the dequantising fill that fused kernels call.

A chunk of a quantised float image arrives as the packed integers of its tiles (as
:mod:`dfits.kernels.tilereduce` takes them). The kernels of :mod:`dfits.kernels.tilemoments`
and :mod:`dfits.kernels.tilesums` run the float kernels' own steps on small blocks that
:func:`fill` dequantises just before the step reads them, so that no float chunk is written
and the values reach the steps in the order the float chunk's kernels read them.

:func:`fill` is compiled apart, in strict IEEE arithmetic, so that the dequantising
expression rounds as cfitsio's (the steps that call it reassociate). Each value is
:func:`~dfits.kernels.dequantize.dequantised`'s, rounded to the image's float type: astropy's
value bit for bit.

A chunk is a window of its tiles (``origin``: its first index in them; a chunk not on tile
boundaries decodes the whole tiles that cover it). :func:`tile_map` returns None for tiles
that do not form a regular grid in the packed order (the caller then reads the floats).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.lib.stride_tricks import as_strided

from dfits.kernels._loaders import Kind
from dfits.kernels._run import _split_axis
from dfits.kernels._shape import layout_for
from dfits.kernels.dequantize import after_run, dequantised, random_table
from dfits.kernels.tilegroup import quant_args

__all__ = ["c_view", "fill", "fill_rows", "scratch", "split_or_fold", "tile_map"]


def tile_map(packed, shapes, firsts, quant, shape, origin) -> tuple | None:
    """The tiles of a chunk as :func:`_fill` reads them, or None when they are not a regular
    grid of tiles in C order (``firsts`` relative to the tiles' first index).

    ``shape`` is the chunk's and ``origin`` its first index in the tiles.
    """
    shapes = np.asarray(shapes, np.int64)
    firsts = np.asarray(firsts, np.int64)
    ext = (firsts + shapes).max(axis=0)
    starts = [np.unique(firsts[:, d]) for d in range(firsts.shape[1])]
    grid = np.array([len(s) for s in starts], np.int64)
    tile = np.array([s[1] if len(s) > 1 else e for s, e in zip(starts, ext, strict=True)])
    at = np.stack(np.unravel_index(np.arange(len(firsts)), tuple(grid)), axis=1) * tile
    if len(firsts) != grid.prod() or (at != firsts).any():
        return None
    if (np.minimum(tile, ext - at) != shapes).any():
        return None
    origin = np.asarray(origin, np.int64)
    if (origin + np.asarray(shape) > ext).any():
        return None
    toff = np.concatenate(([0], np.cumsum(shapes.prod(axis=1))[:-1])).astype(np.int64)
    scale, zero, blanks, has_blank, method, seeds = quant_args(packed, quant)
    values, rstart = random_table()
    return (packed, np.asarray(shape, np.int64), origin, tile.astype(np.int64), grid, ext,
            toff, scale, zero, blanks, has_blank, method, seeds, values, rstart)  # fmt: skip


@njit(nogil=True, fastmath=False, error_model="numpy")
def fill(tm, start, m, dst):
    """``dst[:m]`` = the chunk's values at C-order positions ``start:start + m``.

    Strict arithmetic (compiled apart from the reassociating kernels that call it): each
    value is :func:`~dfits.kernels.dequantize.dequantised`'s, rounded to ``dst``'s type.
    """
    (packed, cshape, origin, tile, grid, ext, toff, scale, zero, blanks, has_blank, method,
     seeds, values, rstart) = tm  # fmt: skip
    last = cshape.size - 1
    width = cshape[last]
    i = 0
    while i < m:
        line = (start + i) // width
        col = start + i - line * width
        n = min(width - col, m - i)
        # the line's first tile (row-major in the grid) and its row inside that tile
        rest, tbase, gmul, jr, jmul = line, 0, grid[last], 0, 1
        for d in range(last - 1, -1, -1):
            idx = rest % cshape[d] + origin[d]
            rest //= cshape[d]
            g = idx // tile[d]
            tbase += g * gmul
            gmul *= grid[d]
            jr += (idx - g * tile[d]) * jmul
            jmul *= min(tile[d], ext[d] - g * tile[d])
        c = origin[last] + col
        while n > 0:
            g = c // tile[last]
            t = tbase + g
            wt = min(tile[last], ext[last] - g * tile[last])
            seg = min(wt - c + g * tile[last], n)
            p = jr * wt + c - g * tile[last]
            src = toff[t] + p
            # the pixel's place in the dither sequence: runs of 10,000 - start values per seed
            iseed = seeds[t]
            nextrand = 0
            if method > 0:
                nextrand = rstart[iseed]
                while p >= 10000 - nextrand:
                    p -= 10000 - nextrand
                    iseed = iseed + 1 if iseed < 9999 else 0
                    nextrand = rstart[iseed]
                nextrand += p
            b = 0
            while b < seg:
                r = min(seg - b, 10000 - nextrand)
                for k in range(r):
                    dst[i + b + k] = dequantised(
                        packed[src + b + k], scale[t], zero[t], blanks[t], has_blank, method,
                        np.float64(values[nextrand + k]),
                    )  # fmt: skip
                b += r
                if method > 0:
                    nextrand, iseed = after_run(nextrand, iseed, r, rstart)
            i += seg
            n -= seg
            c += seg


@njit(nogil=True, fastmath=False, error_model="numpy")
def fill_rows(tm, start, stride, r, w, dst):
    """``dst[k·w : (k + 1)·w]`` = the ``w`` values from C-order position ``start + k·stride``
    for ``k < r``: a column step's rows, packed ``w`` apart in the scratch."""
    for k in range(r):
        fill(tm, start + k * stride, w, dst[k * w : (k + 1) * w])


def split_or_fold(tm, spec, shape, axes, one, fold, combine) -> list | None:
    """Axes that fit no kernel layout (on both sides of a kept one), reduced as the float
    route (:func:`dfits.kernels._run.run`) reduces them, or None where it splits otherwise.

    ``one(tm, shape, axes)`` is the tile pass over axes that fit (its results as the float
    kernel's outputs). With ``fold`` and the last axis reduced, the others are reduced with it
    kept, then ``fold`` sums it out; else the float route splits along the first axis, here
    each plane of the chunk's tiles a pass, the parts merged by ``combine``: the float
    route's own fold and combine, on the same values.
    """
    u = c_view(shape, np.dtype(f"u{spec.stored.itemsize}"))
    if not u.size or not axes:
        return None
    last = axes[-1] == u.ndim - 1
    if fold is not None and last and layout_for(u, frozenset(axes[:-1])) is not None:
        part = one(tm, shape, axes[:-1])
        return None if part is None else fold(list(part))
    sub_axes = tuple(a - 1 for a in axes if a != 0)
    if 0 not in axes or _split_axis(u, axes) != 0 or layout_for(u[0], frozenset(sub_axes)) is None:
        return None
    sub_shape = tuple(n for d, n in enumerate(shape[1:]) if d not in sub_axes)
    plane_shape = (1, *shape[1:])
    parts = []
    for i in range(shape[0]):
        # plane i: the same tiles' map, a one-plane chunk i planes further in them
        origin = tm[2].copy()
        origin[0] += i
        plane = (tm[0], np.array(plane_shape, np.int64), origin, *tm[3:])
        part = one(plane, plane_shape, tuple(a + 1 for a in sub_axes))
        if part is None:
            return None
        parts.append([np.reshape(x, sub_shape) for x in part])
    return combine(parts, 0)


def scratch(kind: Kind, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A block of ``size`` values: the unsigned view the steps read, the float view filled."""
    u = np.empty(size, kind.view_dtype)
    return u, u.view(np.float32 if kind.bitpix == -32 else np.float64)


def c_view(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A C-ordered view of ``shape`` over no memory: what the layouts see of the chunk."""
    strides, step = [], dtype.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return as_strided(np.empty(1, dtype), shape, tuple(reversed(strides)), writeable=False)
