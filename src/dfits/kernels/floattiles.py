"""Quantised float tiles of a block, in one kernel call: noise, scaling, dither, Rice.

The contract: :func:`quantise_tiles` walks the tiles of a 3-D block of floats (planes, rows,
columns; tiles of ``ty`` × ``tx`` within each plane, in the table's order) from tile
``start``, and for each one computes (what :mod:`dfits.kernels.tileencode` has always written;
the noise is cfitsio's "noise3"):

* its range and count of non-NaN values, and its noise ("noise3": per tile row, the median of
  ``|2 v[i] - v[i-2] - v[i+2]|`` over the row's finite values, rows of fewer than 5 skipped;
  the median of those medians × 0.6052697; when every row is too short, the rows joined);
* ZSCALE (noise / level, or -level) and ZZERO (cfitsio's zero point: levels just above the
  reserved values with NaN or SUBTRACTIVE_DITHER_2, else from 0, else centred), or that the
  tile cannot be quantised (infinities, no noise, a range wider than 32-bit levels): then it
  stops *before* that tile, flagged, for the caller to store it exactly;
* the dithered levels (:func:`dither_into`, the sequence :mod:`dfits.kernels.dequantize` reads
  back with), written to ``out`` at ``pos`` as RICE_1 (``kind`` 0,
  :func:`dfits.kernels.riceencode.encode_into`), big-endian int32 (1: GZIP_1 and NOCOMPRESS,
  deflated by the caller), the bytes shuffled by significance (2: GZIP_2) or native int32 (3:
  HCOMPRESS_1's input).

It returns the tile it stopped at and the end of ``out`` used; it stops early when the next
tile might not fit. No Python runs per tile, and no allocation but the call's scratch. The
medians come from a selection in place (Hoare's, as cfitsio's ``quick_select``) that returns
what ``numpy.median`` does, the mean of the two middle values for an even count. The
selection and the row medians are called, not inlined: inlined in each of their places they
made the kernel take 32 s to compile (5 s now), for no speed.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline, jit
from dfits.kernels.riceencode import encode_into

__all__ = ["dither_into", "fast_median", "median_inplace", "noise_of", "quantise_tiles"]

_N_RANDOM = 10000
_RESERVED = 10  # integers at the bottom of int32 kept for NULL_VALUE, ZERO_VALUE and others
_ABOVE_RESERVED = 2147483637.0  # -(NULL_VALUE + N_RESERVED_VALUES): cfitsio's shift
_LIMIT = 2.0 * 2147483647.0 - _RESERVED  # cfitsio's widest range of levels it quantises
_LOWEST = -2147483644.0  # lowest undithered level: rounded with dither, > ZERO_VALUE
_SAMPLE = 256  # values sampled to bracket a median (fast_median)
_BRACKET = 24  # ranks either side of the sample's middle: 3 sigma of the median's rank in it


@inline
def dither_into(x, q, scale, zero, method, iseed, values, starts):
    """The int32 levels ``q`` of the float tile ``x`` (1-D) whose dither seed is ``iseed``."""
    nextrand = starts[iseed]
    for i in range(x.size):
        v = np.float64(x[i])
        if np.isnan(v):
            q[i] = -2147483647  # NULL_VALUE of dfits.format.ztable, the ZBLANK written
        elif method == 2 and v == 0.0:
            q[i] = -2147483646
        elif method > 0:
            q[i] = np.int32(np.rint((v - zero) / scale + np.float64(values[nextrand]) - 0.5))
        else:
            q[i] = np.int32(np.rint((v - zero) / scale))
        if method > 0:
            # the sequence advances on every pixel, NaN or not, as the readers' does
            nextrand += 1
            if nextrand == 10000:
                iseed += 1
                if iseed == 10000:
                    iseed = 0
                nextrand = starts[iseed]


@jit
def _select(a, lo, hi, k):
    # a[k] once a[lo:hi+1] is partitioned around it (cfitsio's quick_select, any k)
    while True:
        if hi <= lo:
            return a[k]
        if hi == lo + 1:
            if a[lo] > a[hi]:
                a[lo], a[hi] = a[hi], a[lo]
            return a[k]
        mid = (lo + hi) // 2
        if a[mid] > a[hi]:
            a[mid], a[hi] = a[hi], a[mid]
        if a[lo] > a[hi]:
            a[lo], a[hi] = a[hi], a[lo]
        if a[mid] > a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        a[mid], a[lo + 1] = a[lo + 1], a[mid]
        ll, hh = lo + 1, hi
        while True:
            ll += 1
            while a[lo] > a[ll]:
                ll += 1
            hh -= 1
            while a[hh] > a[lo]:
                hh -= 1
            if hh < ll:
                break
            a[ll], a[hh] = a[hh], a[ll]
        a[lo], a[hh] = a[hh], a[lo]
        if hh <= k:
            lo = ll
        if hh >= k:
            hi = hh - 1


@inline
def _median_ranks(a, n, k, even):
    # numpy's median of a[:n] whose middle ranks are k (and k + 1 when even), reordering it
    low = _select(a, 0, n - 1, k)
    if not even:
        return low
    high = a[k + 1]
    for i in range(k + 2, n):  # right of k, all >= a[k]: the next order statistic
        high = min(high, a[i])
    return (low + high) / 2.0


@inline
def median_inplace(a, n):
    """numpy's median of ``a[:n]`` (no NaN; n > 0), reordering it."""
    return _median_ranks(a, n, (n - 1) // 2, n % 2 == 0)


@inline
def fast_median(a, n, buf, sample):
    """:func:`median_inplace`, the same value, sooner for long arrays (Floyd and Rivest's
    idea): two values of a strided sample bracket the middle ranks, one branch-free pass
    keeps what lies between them in ``buf`` (``n`` long) and counts what lies below, and the
    selection runs on those few; when the bracket misses, on all of ``a``."""
    m = sample.size
    if n < 2 * m:
        return median_inplace(a, n)
    step = n // m
    for i in range(m):
        sample[i] = a[i * step]
    # the sample's middle ± 3 standard deviations of its rank (sqrt(m) / 2)
    lo = _select(sample, 0, m - 1, m // 2 - _BRACKET)
    hi = _select(sample, 0, m - 1, m // 2 + _BRACKET)
    below, inside = 0, 0
    for i in range(n):
        x = a[i]
        buf[inside] = x
        inside += (x >= lo) & (x <= hi)
        below += x < lo
    k, even = (n - 1) // 2, n % 2 == 0
    if below <= k and k + even < below + inside:
        return _median_ranks(buf, inside, k - below, even)
    return median_inplace(a, n)


@jit
def _row_median(t, start, n, v, d, sample):
    # median of |2 v[i] - v[i-2] - v[i+2]| over the finite values of t[start:start+n]
    k = 0
    for i in range(start, start + n):
        x = np.float64(t[i])
        if np.isfinite(x):
            v[k] = x
            k += 1
    if k < 5:
        return np.nan
    for i in range(2, k - 2):
        d[i - 2] = abs(2.0 * v[i] - v[i - 2] - v[i + 2])
    return fast_median(d, k - 4, v, sample)  # v is free again: the bracket's buffer


@inline
def _noise(t, h, w, v, d, meds, sample):
    # noise3 of a tile of h rows of w values (t: its values in order), 0.0 when none
    good = 0
    for r in range(h):
        m = _row_median(t, r * w, w, v, d, sample)
        if not np.isnan(m):
            meds[good] = m
            good += 1
    if good == 0 and h > 1:  # rows too short on their own: joined into one, as cfitsio does
        m = _row_median(t, 0, h * w, v, d, sample)
        if not np.isnan(m):
            meds[0] = m
            good = 1
    if good == 0:
        return 0.0
    return 0.6052697 * median_inplace(meds, good)


@inline
def noise_of(t, h, w):
    """noise3 of a tile of ``h`` rows of ``w`` float64 values (``t``, 1-D)."""
    v, d = np.empty(h * w, np.float64), np.empty(h * w, np.float64)
    return _noise(t, h, w, v, d, np.empty(h, np.float64), np.empty(_SAMPLE, np.float64))


@inline
def _fits(lo, hi, delta, zero):
    # every level of the range, dithered (± 1) and rounded, above ZERO_VALUE and within int32
    return (lo - zero) / delta >= _LOWEST and (hi - zero) / delta <= 2147483646.0


@inline
def _zero_point(lo, hi, delta, method, nans):
    # (ok, ZZERO): cfitsio's (fits_quantize_float/_double), levels GZIP packs well: just above
    # the reserved values with NaN or DITHER_2 (lo - delta * (NULL_VALUE + N_RESERVED_VALUES)),
    # else from 0 (lo rounded to a multiple of delta, trunc as C's (LONGLONG) cast), else
    # centred; centred too where float rounding would put a level out of int32 or on a
    # reserved value (cfitsio's own would overflow there), and exact where even that would
    if nans or method == 2:
        zero = lo + delta * _ABOVE_RESERVED
    elif (hi - lo) / delta < 2147483647.0 - _RESERVED:
        zero = np.trunc(lo / delta + 0.5) * delta
    else:
        zero = (lo + hi) / 2
    if _fits(lo, hi, delta, zero):
        return True, zero
    zero = (lo + hi) / 2
    return _fits(lo, hi, delta, zero), zero


@inline
def _scaling(t, n, h, w, level, method, v, d, meds, sample):
    # (ok, ZSCALE, ZZERO): ok False when the tile must be stored exactly
    lo, hi, count = np.inf, -np.inf, 0
    for i in range(n):
        x = np.float64(t[i])
        if not np.isnan(x):
            lo, hi, count = min(lo, x), max(hi, x), count + 1
    if count == 0:  # all NaN: every level is ZBLANK; cfitsio's dummy range 0..1, noise 1
        delta = -level if level < 0 else 1.0 / level
        return True, delta, delta * _ABOVE_RESERVED
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return False, 0.0, 0.0
    delta = -level if level < 0 else _noise(t, h, w, v, d, meds, sample) / level
    if not delta > 0 or (hi - lo) / delta > _LIMIT:
        return False, 0.0, 0.0
    ok, zero = _zero_point(lo, hi, delta, method, count < n)
    return ok, delta, zero


@inline
def _store(q, n, kind, blocksize, out, pos):
    # the levels q[:n] into out at pos, as the tile's algorithm wants them; the new end
    if kind == 0:
        return encode_into(q[:n], out, pos, blocksize, 4)
    for i in range(n):
        u = np.uint32(q[i])
        if kind == 1:
            for b in range(4):
                out[pos + 4 * i + b] = np.uint8((u >> np.uint32(24 - 8 * b)) & np.uint32(255))
        elif kind == 2:
            for b in range(4):
                out[pos + b * n + i] = np.uint8((u >> np.uint32(24 - 8 * b)) & np.uint32(255))
        else:
            for b in range(4):
                out[pos + 4 * i + b] = np.uint8((u >> np.uint32(8 * b)) & np.uint32(255))
    return pos + 4 * n


@inline
def _quantise_tiles(x, words, ip, level, rows, out, pos, sizes, scale, zero, values, starts, total):
    # ip: tile rows, tile columns, first tile, kind, Rice block size, dither method, ZDITHER0;
    # words: x's native 32-bit words (its values as FITS stores them, for ZDATASUM), summed
    # into total[0] for every tile gathered (the exact one it stops at too)
    ty, tx, start, kind, blocksize = ip[0], ip[1], ip[2], ip[3], ip[4]
    method, dither0 = ip[5], ip[6]
    planes, ny, nx = x.shape
    gy, gx = -(-ny // ty), -(-nx // tx)
    ntiles = planes * gy * gx
    t = np.empty(ty * tx, x.dtype)
    q = np.empty(ty * tx, np.int32)
    v, d = np.empty(ty * tx, np.float64), np.empty(ty * tx, np.float64)
    meds, sample = np.empty(ty, np.float64), np.empty(_SAMPLE, np.float64)
    bound = 5 * ty * tx + 64  # RICE_1 of 32-bit levels, every block raw, and the raw forms
    per = words.shape[2] // nx  # words per value: 1 (float32) or 2 (float64)
    for k in range(start, ntiles):
        if pos + bound > out.size:
            return k, pos, False
        p, rest = k // (gy * gx), k % (gy * gx)
        y0, x0 = (rest // gx) * ty, (rest % gx) * tx
        h, w = min(ty, ny - y0), min(tx, nx - x0)
        n = h * w
        acc = np.uint64(0)
        for r in range(h):
            for c in range(w):
                t[r * w + c] = x[p, y0 + r, x0 + c]
            for c in range(per * x0, per * (x0 + w)):  # the row just read, still in cache
                acc += np.uint64(words[p, y0 + r, c])
        acc += total[0]
        total[0] = (acc & np.uint64(4294967295)) + (acc >> np.uint64(32))
        ok, s, z = _scaling(t, n, h, w, level, method, v, d, meds, sample)
        if not ok:
            return k, pos, True
        iseed = (rows[k] + dither0 - 1) % _N_RANDOM
        dither_into(t[:n], q[:n], s, z, method, iseed, values, starts)
        end = _store(q, n, kind, blocksize, out, pos)
        sizes[k], scale[k], zero[k] = end - pos, s, z
        pos = end
    return ntiles, pos, False


def quantise_tiles(x, ip, level, rows, out, pos, sizes, scale, zero, values, starts, total):
    """Run the kernel (see the module); ``(next tile, end of out, next tile is exact)``.
    ``total[0]`` gains the sum of the 32-bit words of the tiles' values as FITS stores them
    (``x`` is native: those words are its own, read as native integers)."""
    words = x.view(np.uint32)
    return _kernel(x, words, ip, level, rows, out, pos, sizes, scale, zero, values, starts, total)


_kernel = entry(_quantise_tiles)
