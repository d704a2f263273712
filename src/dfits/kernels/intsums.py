"""Exact integer sums straight from stored integers: ``numpy.sum`` of integer data, and the
sums of scaled integers as ``bscale·Σx + bzero·n``.

Integer physical values (raw or offset) sum exactly in int64/uint64, with numpy's wrap-around
on overflow (:func:`integer_sum`). For scaled integer data ``Σ (bscale·x + bzero) =
bscale·Σx + bzero·n``: summing the stored integers exactly and scaling once is both faster and
more accurate than converting every value to float64 (:func:`scaled_integer_sum`, which
:func:`~dfits.kernels.sums.sum_count` takes for scaled 8/16/32-bit data). 8/16-bit values are
added in int32 lanes within blocks of :data:`NARROW_BLOCK` values: widening each value to
int64 is bound, on AVX-512 Intel cores, by the one shuffle port (2.4 GiB/s per thread against
11 GiB/s).

Layouts as in :mod:`dfits.kernels.sums`: ``rows`` reduces the last axis of ``u[A, B]``,
``cols`` the middle axis of ``u[A, B, C]``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import NARROW_BLOCK, SUM_TILE, TILE, four_rows, inline
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import add_parts, flat, fold_sums, kept_shape, run
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, normalize_axis, params

__all__ = [
    "integer_sum",
    "isum_kernels",
    "rawsum_kernels",
    "scaled_integer_sum",
    "sums_once",
]


def integer_sum(u: np.ndarray, spec: Spec, axis: Any = None) -> np.ndarray:
    """Exact integer sum (``int64``, or ``uint64`` for unsigned data), as ``numpy.sum``."""
    kind, scale, zero, blank = params(u, spec)
    axes = normalize_axis(axis, u.ndim)
    acc = np.dtype(np.uint64 if spec.physical.kind == "u" else np.int64)
    out = np.zeros(kept_shape(u, axes), acc)
    if u.size == 0:
        return out
    rows, cols = isum_kernels(kind)

    def call(form, v, outs):
        (rows if form == "rows" else cols)(*flat(v), scale, zero, blank, *outs)

    def combine(parts, _):
        return [np.sum([p[0] for p in parts], axis=0, dtype=acc)]

    return run(u, axes, [out], call, combine, fold_sums)[0]


def sums_once(u: np.ndarray, axes: tuple[int, ...], kind: Kind) -> bool:
    """Whether the raw-integer kernels write each sum once (not ``+=`` per block of rows)."""
    layout = layout_for(u, frozenset(axes))
    return layout is not None and (
        layout[0] == "rows" or kind.bitpix == 32 or layout[1].shape[1] <= NARROW_BLOCK
    )


def scaled_integer_sum(u, kind, scale, zero, blank, axes, skipna, out_dtype, counts=True):
    """Sums of scaled integers (``scale·Σraw + zero·n``) straight from the stored integers.

    Returns ``(sums, counts)`` as :func:`~dfits.kernels.sums.sum_count` does.
    """
    shape = kept_shape(u, axes)
    if out_dtype != np.float64 and not sums_once(u, axes, kind):
        # sub-results or blocks of rows are added up: do that in float64, round at the end
        total, n = scaled_integer_sum(u, kind, scale, zero, blank, axes, skipna, np.float64, counts)
        return total.astype(out_dtype), n
    total = np.zeros(shape, out_dtype)
    # only written with ``skipna``: calloc'd pages nobody touches cost nothing
    n = np.zeros(shape, np.int64)
    rows, cols = rawsum_kernels(kind)

    with_n = skipna and counts

    def call(form, v, outs):
        (rows if form == "rows" else cols)(*flat(v), blank, scale, zero, skipna, with_n, *outs)

    total, n = run(u, axes, [total, n], call, add_parts, fold_sums)
    if skipna:
        return total, (n if with_n else None)
    n_all = int(np.prod([u.shape[a] for a in axes]))
    return total, np.broadcast_to(np.int64(n_all), shape)


def _acc_type(kind: Kind):
    """The accumulator type of an integer sum: unsigned physical values (raw bytes, and
    16/32/64-bit with the unsigned BZERO) add in uint64, the others in int64 (a block sum must
    be added in that type: uint64 + int32 is float64 in numba)."""
    return np.uint64 if (kind.bitpix == 8) != (kind.mode == "offset") else np.int64


@functools.cache
def isum_kernels(kind: Kind):
    """Return ``(rows, cols)`` kernels summing integer physical values exactly.

    ``numpy.sum`` of an ``int16``/``uint16``/... array is an exact ``int64``/``uint64`` (with
    numpy's wrap-around on overflow); the caller zeroes ``out_sum`` with that dtype and the
    kernel accumulates in it. Only for kinds without missing values (raw or offset integers).
    """
    return _isum_rows(kind), _isum_cols(kind)


def _isum_rows(kind: Kind):
    phys = loaders(kind).phys
    narrow = kind.bitpix in (8, 16)
    acc_t = _acc_type(kind)

    @inline
    def rows(base, geo, scale, zero, blank, out_sum):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            t = out_sum[a]
            if narrow:  # int32 lanes within a block
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

    return entry(rows, kind)


def _isum_cols(kind: Kind):
    phys = loaders(kind).phys
    narrow = kind.bitpix in (8, 16)
    acc_t = _acc_type(kind)

    @inline
    def cols(base, geo, scale, zero, blank, out_sum):
        na, nb, nc, off, sa, sb = geo
        if narrow:  # int32 column tiles within a block of rows
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

    return entry(cols, kind)


@functools.cache
def rawsum_kernels(kind: Kind):
    """Return ``(rows, cols)`` kernels summing scaled 8/16/32-bit integers from stored values.

    Every stored value is summed (int32 lanes within blocks of :data:`NARROW_BLOCK` values for
    8/16 bits, int64 for 32) with the BLANKs counted alongside, and ``BLANK × count`` is taken
    off after: no select per value, half the widening.

    The kernels ``(base, geo, blank, scale, zero, skipna, with_n, out_total, out_n)`` write
    (``=`` for ``rows``, ``+=`` per block of rows for ``cols``) the scaled totals into
    ``out_total`` (any float dtype; NaN where a BLANK is summed without ``skipna``, as NaN
    does in ``numpy.sum``) and, when ``with_n``, the counts of non-BLANK values into the int64
    ``out_n``. No int64 map is filled on the way: for a moment map those maps were the larger
    part of each chunk task in a fresh process (fresh pages are dear).
    """
    return _rawsum_rows(kind), _rawsum_cols(kind)


def _signed(kind: Kind):
    """The stored integer's value, in the stored byte order of ``kind``."""
    return loaders(Kind(kind.bitpix, "raw", False, kind.swap)).phys


def _rawsum_rows(kind: Kind):
    signed = _signed(kind)
    has_blank = kind.has_blank
    narrow = kind.bitpix in (8, 16)
    step = NARROW_BLOCK if narrow else 1 << 62

    @inline
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

    return entry(rows, kind)


def _rawsum_cols(kind: Kind):
    four, one = _rawsum_steps(kind)
    signed = _signed(kind)
    step = NARROW_BLOCK if kind.bitpix in (8, 16) else 1 << 62
    lane = np.int32 if kind.bitpix in (8, 16) else np.int64  # tile sums within a block

    @inline
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
                        r0, r1, r2, r3 = four_rows(base, off + a * sa + first * sb + c0, sb, w)
                        four(r0, r1, r2, r3, w, ts, tk, blank)
                        first += 4
                    for b in range(first, b1):
                        o = off + a * sa + b * sb + c0
                        one(base[o : o + w], w, ts, tk, blank)
                    rows_in = np.int64(b1 - b0)
                    for c in range(w):
                        k = np.int64(tk[c])
                        raw = np.float64(np.int64(ts[c]) - k * bv)
                        t = scale * raw + zero * np.float64(rows_in - k)
                        tot[c0 + c] += np.nan if k > 0 and not skipna else t
                        if with_n:
                            out_n[a, c0 + c] += rows_in - k

    return entry(cols, kind)


def _rawsum_steps(kind: Kind):
    """The column kernel's steps: four rows, and one row, added into the tile's sums ``ts``
    and BLANK counts ``tk``."""
    signed = _signed(kind)
    has_blank = kind.has_blank
    narrow = kind.bitpix in (8, 16)

    @inline
    def four(r0, r1, r2, r3, w, ts, tk, blank):
        for c in range(w):
            x0, x1, x2, x3 = r0[c], r1[c], r2[c], r3[c]
            if narrow:
                v = (
                    np.int32(signed(x0, 1.0, 0.0, blank)) + np.int32(signed(x1, 1.0, 0.0, blank))
                ) + (np.int32(signed(x2, 1.0, 0.0, blank)) + np.int32(signed(x3, 1.0, 0.0, blank)))
                ts[c] = np.int32(ts[c] + np.int32(v))
            else:
                ts[c] += (
                    np.int64(signed(x0, 1.0, 0.0, blank)) + np.int64(signed(x1, 1.0, 0.0, blank))
                ) + (np.int64(signed(x2, 1.0, 0.0, blank)) + np.int64(signed(x3, 1.0, 0.0, blank)))
            if has_blank:
                k = (np.int32(x0 == blank) + np.int32(x1 == blank)) + (
                    np.int32(x2 == blank) + np.int32(x3 == blank)
                )
                tk[c] = tk[c] + k

    @inline
    def one(row, w, ts, tk, blank):
        for c in range(w):
            x = row[c]
            ts[c] = ts[c] + signed(x, 1.0, 0.0, blank)
            tk[c] = tk[c] + np.int64(has_blank and x == blank)

    return four, one
