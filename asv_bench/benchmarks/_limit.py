"""LIMIT kernels for the reductions ``benchmarks/compare.py`` does not cover.

Same recipe as ``compare.limit_kernels``: serial Numba loops over contiguous 64 Ki-value blocks
of a native unsigned ``np.memmap`` (so LLVM vectorises them), byte-swapped in registers with
``dfits.kernels._swap``, run block-parallel by ``prange``. They are told the layout: float
images hold no NaN, the int16 image has BSCALE > 0 and a BLANK.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import compare


@functools.cache
def _kernels() -> dict:
    from numba import njit, prange

    from dfits.kernels._swap import load_f4, load_f8, load_i2

    fm = {"reassoc", "nsz"}
    par, ser = njit(parallel=True, nogil=True, fastmath=fm), njit(nogil=True, fastmath=fm)
    blk = 1 << 16

    def float_kernels(load):
        @ser
        def block_sum(s):
            acc = 0.0
            for i in range(s.size):
                acc += load(s[i])
            return acc

        @ser
        def block_shifted(s, k):
            a1 = a2 = 0.0
            for i in range(s.size):
                d = load(s[i]) - k
                a1 += d
                a2 += d * d
            return a1, a2

        @ser
        def block_max(s):
            mx = -np.inf
            for i in range(s.size):
                mx = max(mx, load(s[i]))
            return mx

        @par
        def total(u):
            part = np.zeros((u.size + blk - 1) // blk)
            for b in prange(part.size):
                part[b] = block_sum(u[b * blk : (b + 1) * blk])
            return part.sum()

        @par
        def std(u):
            k, nb = float(load(u[0])), (u.size + blk - 1) // blk
            s1, s2 = np.zeros(nb), np.zeros(nb)
            for b in prange(nb):
                s1[b], s2[b] = block_shifted(u[b * blk : (b + 1) * blk], k)
            mean = s1.sum() / u.size
            return math.sqrt(max(s2.sum() / u.size - mean * mean, 0.0))

        @par
        def nanmax(u):
            part = np.empty((u.size + blk - 1) // blk)
            for b in prange(part.size):
                part[b] = block_max(u[b * blk : (b + 1) * blk])
            return part.max()

        return total, std, nanmax

    @ser
    def block_i2(s, blank):  # count, sum, sum of squares and max of the non-BLANK values
        cnt, mx = 0, -32768
        a1 = a2 = 0.0
        for i in range(s.size):
            v = load_i2(s[i])
            ok = v != blank
            w = float(v) if ok else 0.0
            cnt += ok
            a1 += w
            a2 += w * w
            mx = max(mx, v) if ok else mx
        return cnt, a1, a2, mx

    @par
    def stats_i2(u, blank):
        nb = (u.size + blk - 1) // blk
        cnt, mx = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
        s1, s2 = np.zeros(nb), np.zeros(nb)
        for b in prange(nb):
            cnt[b], s1[b], s2[b], mx[b] = block_i2(u[b * blk : (b + 1) * blk], blank)
        return cnt.sum(), s1.sum(), s2.sum(), mx.max()

    def i2(op):
        def run(u, m):
            n, s1, s2, mx = stats_i2(u, np.int16(m["BLANK"]))
            scale, zero = m["BSCALE"], m["BZERO"]
            if op == "sum":
                return scale * s1 + zero * n
            if op == "std":
                return scale * math.sqrt(max(s2 / n - (s1 / n) ** 2, 0.0))
            return scale * mx + zero

        return run

    out = {(16, op): i2(op) for op in ("sum", "std", "nanmax")}
    for bitpix, load in ((-64, load_f8), (-32, load_f4)):
        total, std, nanmax = float_kernels(load)
        out[bitpix, "sum"] = lambda u, m, f=total: f(u)
        out[bitpix, "mean"] = lambda u, m, f=total: f(u) / u.size
        out[bitpix, "std"] = lambda u, m, f=std: f(u)
        out[bitpix, "nanmax"] = lambda u, m, f=nanmax: f(u)
    return out


def limit_reduction(bitpix: int, op: str):
    """``kernel(u, meta)`` for a full reduction: compare's kernel where it has one, else ours."""
    theirs = compare.limit_kernels()
    if bitpix == -64 and op in ("sum", "mean", "std"):
        return theirs[op]
    if bitpix == 16 and op == "mean":
        return theirs["nanmean16"]
    return _kernels()[bitpix, op]
