"""compare.py's ``LIMIT`` tool: hand-written Numba kernels that swap in registers on a native
unsigned memmap of each case's data, told the layout, parsing nothing."""

from __future__ import annotations

import functools
import math

import numpy as np

from compare_setup import MASK16_THRESHOLD, MASK_THRESHOLD


@functools.cache
def limit_kernels() -> dict:
    """Serial Numba loops over contiguous blocks (so LLVM vectorises them), run by ``prange``."""
    from numba import njit, prange

    from dfits.kernels._swap import load_f4, load_f8, load_i2

    fm = {"reassoc", "nsz"}
    par, ser = njit(parallel=True, nogil=True, fastmath=fm), njit(nogil=True, fastmath=fm)
    blk = 1 << 16

    def summer(load):
        @ser
        def add(s):
            acc = 0.0
            for i in range(s.size):
                acc += load(s[i])
            return acc

        return add

    sum_f8, sum_f4 = summer(load_f8), summer(load_f4)

    @ser
    def shifted_f8(s, k):  # sums of (x - k) and (x - k)**2: one pass, no cancellation
        a1 = a2 = 0.0
        for i in range(s.size):
            d = load_f8(s[i]) - k
            a1 += d
            a2 += d * d
        return a1, a2

    @ser
    def valid_i2(s, blank):  # int32 lanes (a block of 2**16 int16 fits), BLANKs taken off after
        acc = np.int32(0)
        nb = np.int32(0)
        for i in range(s.size):
            v = load_i2(s[i])
            acc = np.int32(acc + np.int32(v))
            nb = np.int32(nb + np.int32(v == blank))
        return np.int64(acc) - np.int64(nb) * np.int64(blank), s.size - np.int64(nb)

    @par
    def total(u):
        part = np.zeros((u.size + blk - 1) // blk)
        for b in prange(part.size):
            part[b] = sum_f8(u[b * blk : (b + 1) * blk])
        return part.sum()

    @par
    def std(u):
        k, nb = load_f8(u[0]), (u.size + blk - 1) // blk
        s1, s2 = np.zeros(nb), np.zeros(nb)
        for b in prange(nb):
            s1[b], s2[b] = shifted_f8(u[b * blk : (b + 1) * blk], k)
        mean = s1.sum() / u.size
        return math.sqrt(max(s2.sum() / u.size - mean * mean, 0.0))

    @par
    def nanmean(u, blank, scale, zero):
        nb = (u.size + blk - 1) // blk
        tot, cnt = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
        for b in prange(nb):
            tot[b], cnt[b] = valid_i2(u[b * blk : (b + 1) * blk], blank)
        return (scale * tot.sum() + zero * cnt.sum()) / cnt.sum()

    tile = 8192  # pixels per task: float64 accumulators stay in L2, each plane streams 32 KiB

    @ser
    def plane_tile(p, t0, t1, out):  # out[t0:t1] = sum over planes c of p[c, t0:t1]
        acc = np.zeros(t1 - t0)
        c = 0
        while c + 4 <= p.shape[0]:  # four planes per pass over the accumulators
            r0, r1, r2, r3 = p[c, t0:t1], p[c + 1, t0:t1], p[c + 2, t0:t1], p[c + 3, t0:t1]
            for i in range(t1 - t0):
                acc[i] += (load_f4(r0[i]) + load_f4(r1[i])) + (load_f4(r2[i]) + load_f4(r3[i]))
            c += 4
        for cc in range(c, p.shape[0]):
            r = p[cc, t0:t1]
            for i in range(t1 - t0):
                acc[i] += load_f4(r[i])
        for i in range(t1 - t0):
            out[t0 + i] = acc[i]

    def over_tiles(tile_fn):  # a map through the planes of a float32 cube, tiles in parallel
        @par
        def run(u):
            p = u.reshape(u.shape[0], -1)
            out = np.empty(p.shape[1], np.float32)
            for t in prange((p.shape[1] + tile - 1) // tile):
                tile_fn(p, t * tile, min((t + 1) * tile, p.shape[1]), out)
            return out.reshape(u.shape[1:])

        return run

    moment0 = over_tiles(plane_tile)

    @ser
    def peak_tile(p, t0, t1, out):  # out[t0:t1] = first plane of each pixel's max (or NaN)
        best = np.empty(t1 - t0, np.float32)
        r = p[0, t0:t1]
        for i in range(t1 - t0):
            best[i] = load_f4(r[i])
            out[t0 + i] = 0
        for c in range(1, p.shape[0]):
            r = p[c, t0:t1]
            for i in range(t1 - t0):
                v, b = load_f4(r[i]), best[i]
                if v > b or (v != v and b == b):  # numpy's argmax: the first NaN wins
                    best[i] = v
                    out[t0 + i] = c

    @par
    def peakmap(u):
        p = u.reshape(u.shape[0], -1)
        out = np.empty(p.shape[1], np.int64)
        for t in prange((p.shape[1] + tile - 1) // tile):
            peak_tile(p, t * tile, min((t + 1) * tile, p.shape[1]), out)
        return out.reshape(u.shape[1:])

    @ser
    def masked_tile(p, t0, t1, out):  # plane_tile of the values above MASK_THRESHOLD
        acc = np.zeros(t1 - t0)
        thr = np.float32(MASK_THRESHOLD)
        c = 0
        while c + 4 <= p.shape[0]:
            r0, r1, r2, r3 = p[c, t0:t1], p[c + 1, t0:t1], p[c + 2, t0:t1], p[c + 3, t0:t1]
            for i in range(t1 - t0):
                v0, v1, v2, v3 = load_f4(r0[i]), load_f4(r1[i]), load_f4(r2[i]), load_f4(r3[i])
                v0 = v0 if v0 > thr else np.float32(0)
                v1 = v1 if v1 > thr else np.float32(0)
                v2 = v2 if v2 > thr else np.float32(0)
                v3 = v3 if v3 > thr else np.float32(0)
                acc[i] += (np.float64(v0) + v1) + (np.float64(v2) + v3)
            c += 4
        for cc in range(c, p.shape[0]):
            r = p[cc, t0:t1]
            for i in range(t1 - t0):
                v = load_f4(r[i])
                acc[i] += v if v > thr else np.float32(0)
        for i in range(t1 - t0):
            out[t0 + i] = acc[i]

    masked_moment0 = over_tiles(masked_tile)

    @ser
    def i2_plane_tile(p, t0, t1, blank, scale, zero, out):
        # int32 sums of the stored values and counts of BLANKs through all planes (<= 65536
        # planes), four planes per pass; scaled once per pixel at the end
        w = t1 - t0
        s = np.zeros(w, np.int32)
        k = np.zeros(w, np.int32)
        c = 0
        while c + 4 <= p.shape[0]:
            r0, r1, r2, r3 = p[c, t0:t1], p[c + 1, t0:t1], p[c + 2, t0:t1], p[c + 3, t0:t1]
            for i in range(w):
                x0, x1, x2, x3 = load_i2(r0[i]), load_i2(r1[i]), load_i2(r2[i]), load_i2(r3[i])
                v = (np.int32(x0) + np.int32(x1)) + (np.int32(x2) + np.int32(x3))
                b = (np.int32(x0 == blank) + np.int32(x1 == blank)) + (
                    np.int32(x2 == blank) + np.int32(x3 == blank)
                )
                s[i] = np.int32(s[i] + np.int32(v))
                k[i] = np.int32(k[i] + np.int32(b))
            c += 4
        for cc in range(c, p.shape[0]):
            r = p[cc, t0:t1]
            for i in range(w):
                x = load_i2(r[i])
                s[i] = np.int32(s[i] + np.int32(x))
                k[i] = np.int32(k[i] + np.int32(x == blank))
        n = p.shape[0]
        for i in range(w):
            raw = np.float64(s[i]) - np.float64(k[i]) * blank
            out[t0 + i] = np.float32(scale * raw + zero * (n - k[i]))

    @njit(inline="always", nogil=True)
    def keep16(u, blank, above):
        x = np.int32(load_i2(u))
        ok = (x > above) & (x != blank)
        return (x if ok else np.int32(0)), np.int32(ok)

    @ser
    def i2_masked_tile(p, t0, t1, blank, above, scale, zero, out):
        # i2_plane_tile of the stored integers above ``above`` (the threshold in stored
        # units): int32 sums and counts of the values kept, scaled once per pixel
        w = t1 - t0
        s = np.zeros(w, np.int32)
        k = np.zeros(w, np.int32)
        c = 0
        while c + 4 <= p.shape[0]:
            r0, r1, r2, r3 = p[c, t0:t1], p[c + 1, t0:t1], p[c + 2, t0:t1], p[c + 3, t0:t1]
            for i in range(w):
                v0, k0 = keep16(r0[i], blank, above)
                v1, k1 = keep16(r1[i], blank, above)
                v2, k2 = keep16(r2[i], blank, above)
                v3, k3 = keep16(r3[i], blank, above)
                s[i] = np.int32(s[i] + np.int32((v0 + v1) + (v2 + v3)))
                k[i] = np.int32(k[i] + np.int32((k0 + k1) + (k2 + k3)))
            c += 4
        for cc in range(c, p.shape[0]):
            r = p[cc, t0:t1]
            for i in range(w):
                v, kk = keep16(r[i], blank, above)
                s[i] = np.int32(s[i] + v)
                k[i] = np.int32(k[i] + kk)
        for i in range(w):
            out[t0 + i] = np.float32(scale * np.float64(s[i]) + zero * np.float64(k[i]))

    @par
    def masked_moment16(u, blank, above, scale, zero):
        p = u.reshape(u.shape[0], -1)
        out = np.empty(p.shape[1], np.float32)
        for t in prange((p.shape[1] + tile - 1) // tile):
            i2_masked_tile(p, t * tile, min((t + 1) * tile, p.shape[1]), blank, above, scale,
                           zero, out)  # fmt: skip
        return out.reshape(u.shape[1:])

    def above16(m):  # the threshold in stored integers (a positive BSCALE)
        return np.int32(math.floor((MASK16_THRESHOLD - m["BZERO"]) / m["BSCALE"]))

    @par
    def nanmoment16(u, blank, scale, zero):
        p = u.reshape(u.shape[0], -1)
        out = np.empty(p.shape[1], np.float32)
        for t in prange((p.shape[1] + tile - 1) // tile):
            i2_plane_tile(p, t * tile, min((t + 1) * tile, p.shape[1]), blank, scale, zero, out)
        return out.reshape(u.shape[1:])

    @ser
    def std_tile(p, t0, t1, out):  # out[t0:t1] = std over planes, sums shifted by plane 0
        w = t1 - t0
        k, s1, s2 = np.empty(w), np.zeros(w), np.zeros(w)
        for i in range(w):
            k[i] = load_f4(p[0, t0 + i])
        c = 0
        while c + 4 <= p.shape[0]:  # four planes per pass over the accumulators
            r0, r1, r2, r3 = p[c, t0:t1], p[c + 1, t0:t1], p[c + 2, t0:t1], p[c + 3, t0:t1]
            for i in range(w):
                d0, d1 = load_f4(r0[i]) - k[i], load_f4(r1[i]) - k[i]
                d2, d3 = load_f4(r2[i]) - k[i], load_f4(r3[i]) - k[i]
                s1[i] += (d0 + d1) + (d2 + d3)
                s2[i] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)
            c += 4
        for cc in range(c, p.shape[0]):
            r = p[cc, t0:t1]
            for i in range(w):
                d = load_f4(r[i]) - k[i]
                s1[i] += d
                s2[i] += d * d
        n = p.shape[0]
        for i in range(w):
            m = s1[i] / n
            out[t0 + i] = np.float32(math.sqrt(max(s2[i] / n - m * m, 0.0)))

    stdmap = over_tiles(std_tile)

    @par
    def spectrum(u):
        out = np.empty(u.shape[0])
        for c in prange(u.shape[0]):
            out[c] = sum_f4(u[c])
        return out

    return {
        "sum": lambda u, m: total(u),
        "mean": lambda u, m: total(u) / u.size,
        "std": lambda u, m: std(u),
        "moment0": lambda u, m: moment0(u),
        "nanmean16": lambda u, m: nanmean(u, np.int16(m["BLANK"]), m["BSCALE"], m["BZERO"]),
        "spectrum": lambda u, m: spectrum(u.reshape(u.shape[0], -1)),
        "nanmoment16": lambda u, m: nanmoment16(u, np.int16(m["BLANK"]), m["BSCALE"], m["BZERO"]),
        "stdmap": lambda u, m: stdmap(u),
        "maskedmoment0": lambda u, m: masked_moment0(u),
        "peakmap": lambda u, m: peakmap(u),
        "maskedmoment16": lambda u, m: masked_moment16(
            u, np.int16(m["BLANK"]), above16(m), m["BSCALE"], m["BZERO"]
        ),
    }
