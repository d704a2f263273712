"""Reductions of quantised tiles straight from their decoded integers: one pass, no floats.

A chunk of a quantised float image arrives as the packed integers of its tiles
(:func:`dfits.kernels.tilegroup.rice_group`) with each tile's shape, place in the chunk and
quantisation (ZSCALE, ZZERO, ZBLANK, the dither). :func:`reduce_tiles` walks them as
:func:`~dfits.kernels.tilegroup.place_group` does and, instead of writing each value into a
float chunk that a reduction then reads again, adds it to the reduction's partial:

* ``"sum"``: float64 sums and int64 counts (of values that are not NaN, with ``skipna``);
* ``"max"`` / ``"min"``: the extremes, with counts of valid values and of NaNs.

Each value is the one :func:`~dfits.kernels.dequantize.dequantised` gives, rounded to the
image's float type first (float32 for ZBITPIX -32), so it is astropy's value bit for bit;
extremes are therefore exactly numpy's on astropy's array. Sums accumulate in float64: when
the rows' axis is reduced, blocks of at most :data:`~dfits.kernels._compile.BLOCK` values are
summed with reassociation (vectorised) and added to the total with Neumaier compensation, as
in :mod:`dfits.kernels.sums`, so the result is within a few float64 ulps of the exactly
rounded sum (numpy's pairwise sum of float32 values differs from both by far more).

Kernels compile in strict IEEE arithmetic (no reassociation): the dequantising expression
must round as cfitsio's does. Only the block sum is a reassociating helper. Rows are walked in
runs over which the dither index only counts up, so the per-value loop is branch-free
arithmetic that LLVM vectorises (4M values of a SUBTRACTIVE_DITHER_2 image summed in 15 ms
against 95 ms with the dither advanced value by value, one thread, loaded machine).
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import BLOCK, inline, jit, neumaier
from dfits.kernels.dequantize import after_run, dequantised, random_table
from dfits.kernels.tilegroup import quant_args

__all__ = ["reduce_tiles"]


def reduce_tiles(packed, shapes, firsts, quant, shape, axes, op: str, skipna: bool, dtype):
    """Reduce the dequantised values of packed tiles over ``axes`` of the chunk ``shape``.

    Parameters
    ----------
    packed : numpy.ndarray
        The tiles' decoded integers, one tile after the other, each in C order.
    shapes, firsts : numpy.ndarray
        ``(ntiles, ndim)`` int64: each tile's shape and first index in the chunk.
    quant : tuple
        ``(scale, zero, blank, method, seeds)`` as :func:`~dfits.kernels.tilegroup.place_group`
        takes it.
    shape : tuple of int
        The chunk's shape (the tiles cover it).
    axes : tuple of int
        The reduced axes, sorted.
    op : {"sum", "max", "min"}
    skipna : bool
        For ``"sum"``: leave NaN (ZBLANK) out of the sums and counts.
    dtype : numpy.dtype
        The image's float type (float32 or float64): each value is rounded to it.

    Returns
    -------
    tuple
        ``"sum"``: ``(total, n)``; ``"max"``/``"min"``: ``(value, valid, nans)`` with the
        value in ``dtype`` (±inf where no value is valid). Shaped like the kept axes.
    """
    kept = tuple(n for d, n in enumerate(shape) if d not in axes)
    nout = int(np.prod(kept))
    ostrides = np.zeros(len(shape), np.int64)
    step = 1
    for d in range(len(shape) - 1, -1, -1):
        if d not in axes:
            ostrides[d] = step
            step *= shape[d]
    acc = np.zeros((2, nout))
    if op != "sum":
        acc[0] = -np.inf if op == "max" else np.inf
    cnt = np.zeros((2, nout), np.int64)
    values, rstart = random_table()
    scale, zero, blanks, has_blank, method, seeds = quant_args(packed, quant)
    double = np.dtype(dtype) == np.float64
    _reducer(op, skipna and op == "sum", double)(
        packed, shapes, firsts, ostrides, scale, zero, blanks, has_blank, method, seeds,
        values, rstart, acc, cnt,
    )  # fmt: skip
    if op == "sum":
        with np.errstate(invalid="ignore"):
            total = np.where(np.isfinite(acc[0]), acc[0] + acc[1], acc[0])
        return total.reshape(kept), cnt[0].reshape(kept)
    return acc[0].astype(dtype).reshape(kept), cnt[0].reshape(kept), cnt[1].reshape(kept)


@functools.cache
def _reducer(op: str, skipna: bool, double: bool):
    """The kernel of one reduction, NaN rule and float type."""
    row = _row_step(op, skipna, double)

    @inline
    def body(packed, shapes, firsts, ostrides, scale, zero, blank, has_blank, method, seeds,
             values, rstart, acc, cnt):  # fmt: skip
        ndim = shapes.shape[1]
        inner = ostrides[ndim - 1]
        buf = np.empty(BLOCK)
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
                # the row's first output slot: its index along each kept outer axis
                rest = r
                o = firsts[t, ndim - 1] * inner
                for d in range(ndim - 2, -1, -1):
                    k = rest % shapes[t, d]
                    rest //= shapes[t, d]
                    o += (firsts[t, d] + k) * ostrides[d]
                q = (scale[t], zero[t], blank[t], has_blank, method)
                nextrand, iseed = row(
                    packed[pos : pos + length], q, o, inner, acc, cnt, values, rstart, buf,
                    nextrand, iseed,
                )  # fmt: skip
                pos += length

    return entry(body, op, skipna, double, fastmath=False)


def _loader(double: bool):
    """``value(v, q, r)``: a quantised integer's value, rounded to the image's float type."""
    if double:

        @inline
        def value(v, q, r):
            return dequantised(v, q[0], q[1], q[2], q[3], q[4], r)
    else:

        @inline
        def value(v, q, r):
            return np.float64(np.float32(dequantised(v, q[0], q[1], q[2], q[3], q[4], r)))

    return value


def _row_step(op: str, skipna: bool, double: bool):
    """``row(seg, q, o, inner, acc, cnt, values, rstart, buf, nextrand, iseed)``: one tile row
    into the partials from slot ``o`` (``inner`` apart along the row; 0 when the row's axis
    is reduced); returns the dither position after it.

    The row is walked in runs over which the dither index only counts up (at most 10,000
    values; its wrap-around is handled between runs), so that each run's loop is plain
    arithmetic on contiguous values that LLVM vectorises; a reduced run's values go through
    ``buf`` and are added there by a reassociating helper (this kernel stays strict, so the
    dequantising expression rounds as cfitsio's).
    """
    value = _loader(double)
    step = _run_step(op, skipna, value)

    @inline
    def row(seg, q, o, inner, acc, cnt, values, rstart, buf, nextrand, iseed):
        n = seg.size
        dither = q[4] > 0
        b = 0
        while b < n:
            m = min(n - b, 10000 - nextrand, buf.size)
            step(seg[b : b + m], values[nextrand : nextrand + m], q, o + b * inner, inner,
                 acc, cnt, buf)  # fmt: skip
            b += m
            if dither:
                nextrand, iseed = after_run(nextrand, iseed, m, rstart)
        return nextrand, iseed

    return row


def _run_step(op: str, skipna: bool, value):
    """``step(sub, rv, q, o, inner, acc, cnt, buf)``: one run of a row (``rv``: its dither
    values) into the partials from slot ``o``."""
    if op == "sum":

        @inline
        def step(sub, rv, q, o, inner, acc, cnt, buf):
            m = sub.size
            c = 0
            if inner == 0:
                for i in range(m):
                    x = value(sub[i], q, np.float64(rv[i]))
                    ok = (x == x) or not skipna
                    buf[i] = x if ok else 0.0
                    c += np.int64(ok)
                acc[0, o], acc[1, o] = neumaier(acc[0, o], acc[1, o], _block_sum(buf, m))
                cnt[0, o] += c
            else:
                for i in range(m):
                    x = value(sub[i], q, np.float64(rv[i]))
                    ok = (x == x) or not skipna
                    acc[0, o + i * inner] += x if ok else 0.0
                    cnt[0, o + i * inner] += np.int64(ok)

        return step
    want_max = op == "max"

    @inline
    def step(sub, rv, q, o, inner, acc, cnt, buf):
        for i in range(sub.size):
            x = value(sub[i], q, np.float64(rv[i]))
            j = o + i * inner
            if x != x:
                cnt[1, j] += 1
            else:
                cnt[0, j] += 1
                if (x > acc[0, j]) if want_max else (x < acc[0, j]):
                    acc[0, j] = x

    return step


@jit
def _block_sum(buf, m):
    # reassociating (vectorised) sum of a run's values: runs are short (BLOCK at most), so
    # its rounding stays that of the block sums in dfits.kernels.sums
    s = 0.0
    for i in range(m):
        s += buf[i]
    return s
