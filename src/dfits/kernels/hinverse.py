"""The inverse H-transform of HCOMPRESS_1 tiles, with the decoder's optional smoothing.

HCOMPRESS (R. White, STScI; the tiled image convention, section 6.2) stores a tile's
H-transform coefficients, divided by ``scale`` when lossy. Decoding multiplies them back
(:func:`undigitize`) and inverts the transform level by level (:func:`hinv`): each level
un-shuffles the coefficients of the ``nxtop × nytop`` corner into 2 × 2 blocks and turns each
block's (sum, x difference, y difference, cross difference) back into four values, rounding
exactly as the encoder did. With ``smooth``, coefficients are first nudged towards values
interpolated from neighbouring blocks, by at most ``scale / 2`` (:func:`hsmooth`).

The arithmetic is cfitsio's 64-bit variant (``hinv64``, ``hsmooth64``: what astropy decodes
with), so lossy tiles decode to the very integers astropy and funpack give. The tile is a flat
C-order ``int64`` array of ``nx`` rows of ``ny`` values.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._compile import jit

__all__ = ["hinv", "undigitize"]


@jit
def undigitize(a, scale):
    """Multiply the coefficients back by the digitisation ``scale`` (lossless: 0 or 1)."""
    if scale > 1:
        for i in range(a.shape[0]):
            a[i] *= scale


@jit
def log2_ceil(n):
    """The smallest ``k`` with ``2**k >= n`` (what cfitsio's rounded ``log`` computes)."""
    k = 0
    while (np.int64(1) << k) < n:
        k += 1
    return k


@jit
def _unshuffle(a, off, n, n2, tmp):
    """Interleave ``n`` values ``n2`` apart from ``a[off]``: first half to even places,
    second half to odd places."""
    nhalf = (n + 1) >> 1
    for i in range(nhalf, n):
        tmp[i - nhalf] = a[off + n2 * i]
    for i in range(nhalf - 1, -1, -1):
        a[off + 2 * n2 * i] = a[off + n2 * i]
    for k in range(n - nhalf):
        a[off + n2 * (2 * k + 1)] = tmp[k]


@jit
def _round(h, prnd, nrnd, mask):
    return (h + (prnd if h >= 0 else nrnd)) & mask


@jit
def _block(a, s00, s10, bit0, bit1, prnd0, nrnd0, prnd1, nrnd1, mask0, mask1, shift):
    """Invert one whole 2 × 2 block (rows ``s00``, ``s10``)."""
    h0 = a[s00]
    hx = _round(a[s10], prnd1, nrnd1, mask1)
    hy = _round(a[s00 + 1], prnd1, nrnd1, mask1)
    hc = _round(a[s10 + 1], prnd0, nrnd0, mask0)
    # the low bit of hc belongs to hx and hy; bits 0 and 1 of all three to h0
    lowbit0 = hc & bit0
    hx = hx - lowbit0 if hx >= 0 else hx + lowbit0
    hy = hy - lowbit0 if hy >= 0 else hy + lowbit0
    lowbit1 = (hc ^ hx ^ hy) & bit1
    if h0 >= 0:
        h0 = h0 + lowbit0 - lowbit1
    else:
        h0 = h0 + (lowbit1 if lowbit0 == 0 else lowbit0 - lowbit1)
    a[s10 + 1] = (h0 + hx + hy + hc) >> shift
    a[s10] = (h0 + hx - hy - hc) >> shift
    a[s00 + 1] = (h0 - hx + hy - hc) >> shift
    a[s00] = (h0 - hx - hy + hc) >> shift


@jit
def _pair(a, s0, s1, bit1, prnd1, nrnd1, mask1, shift):
    """Invert a half block on an odd edge: ``s0`` holds the sum, ``s1`` the difference."""
    h0 = a[s0]
    hd = _round(a[s1], prnd1, nrnd1, mask1)
    lowbit1 = hd & bit1
    h0 = h0 - lowbit1 if h0 >= 0 else h0 + lowbit1
    a[s1] = (h0 + hd) >> shift
    a[s0] = (h0 - hd) >> shift


@jit
def _level(a, ny, nxtop, nytop, bits, shift):
    """One level of the inverse transform on the ``nxtop × nytop`` corner."""
    bit0, bit1, prnd0, nrnd0, prnd1, nrnd1, mask0, mask1 = bits
    oddx, oddy = nxtop % 2, nytop % 2
    for i in range(0, nxtop - oddx, 2):
        s00 = ny * i
        s10 = s00 + ny
        for _ in range(0, nytop - oddy, 2):
            _block(a, s00, s10, bit0, bit1, prnd0, nrnd0, prnd1, nrnd1, mask0, mask1, shift)
            s00 += 2
            s10 += 2
        if oddy:
            _pair(a, s00, s10, bit1, prnd1, nrnd1, mask1, shift)
    if oddx:
        i = nxtop - 1
        s00 = ny * i
        for _ in range(0, nytop - oddy, 2):
            _pair(a, s00, s00 + 1, bit1, prnd1, nrnd1, mask1, shift)
            s00 += 2
        if oddy:
            a[s00] = a[s00] >> shift


@jit
def hinv(a, nx, ny, smooth, scale):
    """Invert the H-transform of the ``nx × ny`` tile ``a`` (flat, C order) in place."""
    nmax = max(nx, ny)
    log2n = log2_ceil(nmax)
    if log2n == 0:
        return  # a single value: its coefficient is the value
    tmp = np.empty((nmax + 1) // 2, np.int64)
    shift = 1
    bit0 = np.int64(1) << (log2n - 1)
    bit1, bit2 = bit0 << 1, bit0 << 2
    mask0 = -bit0
    mask1, mask2 = mask0 << 1, mask0 << 2
    prnd0, prnd1, prnd2 = bit0 >> 1, bit1 >> 1, bit2 >> 1
    nrnd0, nrnd1, nrnd2 = prnd0 - 1, prnd1 - 1, prnd2 - 1
    a[0] = _round(a[0], prnd2, nrnd2, mask2)
    nxtop, nytop, nxf, nyf = 1, 1, nx, ny
    c = np.int64(1) << log2n
    for k in range(log2n - 1, -1, -1):
        # ntop[k-1] = (ntop[k] + 1) // 2, ntop[log2n] = n, built from the top down
        c >>= 1
        nxtop, nytop = nxtop << 1, nytop << 1
        if nxf <= c:
            nxtop -= 1
        else:
            nxf -= c
        if nyf <= c:
            nytop -= 1
        else:
            nyf -= c
        if k == 0:  # the last level divides by 4, and prnd0 is 0 there
            nrnd0 = 0
            shift = 2
        for i in range(nxtop):
            _unshuffle(a, ny * i, nytop, 1, tmp)
        for j in range(nytop):
            _unshuffle(a, j, nxtop, ny, tmp)
        if smooth:
            hsmooth(a, nxtop, nytop, ny, scale)
        bits = (bit0, bit1, prnd0, nrnd0, prnd1, nrnd1, mask0, mask1)
        _level(a, ny, nxtop, nytop, bits, shift)
        bit1, bit0 = bit0, bit0 >> 1
        mask1, mask0 = mask0, mask0 >> 1
        prnd1, prnd0 = prnd0, prnd0 >> 1
        nrnd1, nrnd0 = nrnd0, prnd0 - 1


@jit
def _limited(diff, coef, shift, smax):
    """The change of ``coef`` towards ``diff / 2**shift``, rounded towards zero, ±smax."""
    s = diff - (coef << shift)
    s = s >> shift if s >= 0 else (s + (np.int64(1) << shift) - 1) >> shift
    return max(min(s, smax), -smax)


@jit
def _slope(hm, h0, hp, coef, smax):
    """The adjusted x or y difference ``coef`` of a block between sums ``hm`` and ``hp``."""
    dmax = max(min(hp - h0, h0 - hm), 0) << 2
    dmin = min(max(hp - h0, h0 - hm), 0) << 2
    if dmin < dmax:  # monotonicity leaves room for a slope
        diff = max(min(hp - hm, dmax), dmin)
        return coef + _limited(diff, coef, 3, smax)
    return coef


@jit
def hsmooth(a, nxtop, nytop, ny, scale):
    """Nudge the differences of each 2 × 2 block towards its neighbours' interpolation."""
    smax = np.int64(scale >> 1)
    if smax <= 0:
        return
    ny2 = ny << 1
    for i in range(2, nxtop - 2, 2):
        s00 = ny * i
        for _ in range(0, nytop, 2):
            a[s00 + ny] = _slope(a[s00 - ny2], a[s00], a[s00 + ny2], a[s00 + ny], smax)
            s00 += 2
    for i in range(0, nxtop, 2):
        s00 = ny * i + 2
        for _ in range(2, nytop - 2, 2):
            a[s00 + 1] = _slope(a[s00 - 2], a[s00], a[s00 + 2], a[s00 + 1], smax)
            s00 += 2
    for i in range(2, nxtop - 2, 2):
        s00 = ny * i + 2
        for _ in range(2, nytop - 2, 2):
            _curvature(a, s00, s00 + ny, ny2, smax)
            s00 += 2


@jit
def _curvature(a, s00, s10, ny2, smax):
    """Adjust the cross difference of the block at ``s00`` from its four diagonal blocks."""
    hmm, hpm = a[s00 - ny2 - 2], a[s00 + ny2 - 2]
    hmp, hpp = a[s00 - ny2 + 2], a[s00 + ny2 + 2]
    h0 = a[s00]
    diff = hpp + hmm - hmp - hpm
    hx2, hy2 = a[s10] << 1, a[s00 + 1] << 1
    m1 = min(max(hpp - h0, 0) - hx2 - hy2, max(h0 - hpm, 0) + hx2 - hy2)
    m2 = min(max(h0 - hmp, 0) - hx2 + hy2, max(hmm - h0, 0) + hx2 + hy2)
    dmax = min(m1, m2) << 4
    m1 = max(min(hpp - h0, 0) - hx2 - hy2, min(h0 - hpm, 0) + hx2 - hy2)
    m2 = max(min(h0 - hmp, 0) - hx2 + hy2, min(hmm - h0, 0) + hx2 + hy2)
    dmin = max(m1, m2) << 4
    if dmin < dmax:
        diff = max(min(diff, dmax), dmin)
        a[s10 + 1] = a[s10 + 1] + _limited(diff, a[s10 + 1], 6, smax)
