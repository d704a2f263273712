"""Numba plumbing shared by every kernel: flags, block and tile sizes, the compensated add.

Kernels are built by ``functools.cache``-d factories (one per encoding kind and option), so
nothing compiles at import. They are ``nogil`` so dask's threaded scheduler runs them in
parallel. Each factory's loop body goes through :func:`dfits.kernels._cache.entry`, which
compiles it with these flags into Numba's on-disk cache: a variant compiles once per machine
(0.2-4 s; row kernels are the quick ones, column kernels with their four-row passes the slow
ones) and loads in milliseconds in every later process.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "BLOCK",
    "FASTMATH",
    "NARROW_BLOCK",
    "ROWS_PER_TILE",
    "SUM_TILE",
    "TILE",
    "compensated",
    "four_rows",
    "inline",
    "jit",
    "neumaier",
]

#: Contiguous values summed into one partial before the compensated add. Large enough that
#: the compensated add is negligible, small enough that the block's rounding stays small: a
#: scalar loop adds all 2048 in one chain (at worst γ(2048)·Σ|x|, 2·10**-13 relative), each
#: vector lane a share (8 lanes of f64 with AVX-512, times LLVM's unrolling).
BLOCK = 2048

#: Values of 8/16-bit integers summed in int32 lanes before they are added up in int64:
#: |Σ| ≤ 2**15 · 2**15 = 2**30, and uint16 sums stay below 2**31 too.
NARROW_BLOCK = 1 << 15

#: Columns handled together when reducing over a middle axis: keeps per-column accumulators
#: and the block being re-read (two-pass variance) in L1/L2.
TILE = 2048

#: Rows of a column tile summed into one partial before the compensated add (as ``BLOCK``).
ROWS_PER_TILE = BLOCK // 8

#: columns per tile of the column sum: 8192 float64 accumulators (64 KiB) stay in L2, and each
#: of the four rows read together streams 32 KiB of float32 before the next jump, long enough
#: for the hardware prefetcher (measured on a 256×1024×1024 float32 cube, one thread: 14.4 GB/s
#: with 2048 columns, 17.0 GB/s with 8192, 15.4 GB/s with whole rows)
SUM_TILE = 4 * TILE

#: Reassociation lets LLVM split a running sum over vector lanes (the whole point of the
#: in-register swap). We never allow ``nnan``/``ninf``: NaN tests must survive.
FASTMATH = frozenset({"reassoc", "nsz", "arcp"})


def jit(func):
    """Compile a helper that kernels call (not inline): nopython, no GIL, reassociating math."""
    return njit(nogil=True, fastmath=set(FASTMATH), error_model="numpy")(func)


@njit(inline="always", nogil=True)
def four_rows(base, o, sb, w):
    """Four rows of ``w`` values from offset ``o``, ``sb`` apart (the column kernels' passes).

    Column kernels read four rows per pass so that their tile accumulators are loaded and
    stored once per four values instead of once per value (measured: the moment-0 kernel ran
    at 0.5x the speed of the full sum before, 0.8x after).
    """
    return (
        base[o : o + w],
        base[o + sb : o + sb + w],
        base[o + 2 * sb : o + 2 * sb + w],
        base[o + 3 * sb : o + 3 * sb + w],
    )


@njit(nogil=True, error_model="numpy", fastmath=False)
def neumaier(total, comp, value):
    """Compensated (Neumaier) addition in strict IEEE arithmetic.

    Compiled on its own *without* fast-math flags so that reassociation allowed in the calling
    kernel cannot cancel the compensation term away (LLVM keeps flags per instruction when it
    inlines). ``fastmath=False`` must be explicit: numba compiles a callee whose option is
    unset with its caller's flags, and LLVM then folds ``(total - t) + value`` to 0 (the
    compensation was silently gone: 13 ulps off on 10**7 values instead of 0).
    Returns the new ``(total, comp)``; the sum is ``total + comp``.
    """
    t = total + value
    if abs(total) >= abs(value):
        comp += (total - t) + value
    else:
        comp += (value - t) + total
    return t, comp


@njit(nogil=True, error_model="numpy", fastmath=False)
def compensated(total, comp):
    """The compensated sum ``total + comp``, or ``total`` once it is infinite or NaN.

    The compensation of an infinite sum is NaN (``inf - inf``); ``total`` is then the answer.
    Compiled without fast-math for the same reason as :func:`neumaier`: numba's ``isfinite``
    is ``x - x == x - x``, which a reassociating caller folds to True.
    """
    return total + comp if np.isfinite(total) else total


#: Decorator of the inlined parts of kernels (loaders, steps, loop bodies): compiled as part of
#: the kernel that calls them, with its flags.
inline = njit(inline="always", nogil=True)
