"""Numba plumbing shared by every kernel: flags, block sizes, the compensated add.

Kernels are built by ``functools.cache``-d factories (one per encoding kind and option), so
nothing compiles at import and each variant compiles once per process on first use. They are
``nogil`` so dask's threaded scheduler runs them in parallel. Numba's on-disk cache is not used:
closures over per-kind loaders cannot be cached safely, and worker *processes* sharing one cache
directory is a known source of trouble; compilation of a variant takes well under a second.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["BLOCK", "FASTMATH", "NARROW_BLOCK", "TILE", "compensated", "jit", "neumaier"]

#: Contiguous values summed into one partial before the compensated add. Large enough that
#: the compensated add is negligible, small enough that each vector lane sums ≤ 256 terms
#: (8 lanes of f64 on AVX-512, fewer elsewhere), so the block's rounding error stays tiny.
BLOCK = 2048

#: Values of 8/16-bit integers summed in int32 lanes before they are added up in int64:
#: |Σ| ≤ 2**15 · 2**15 = 2**30, and uint16 sums stay below 2**31 too.
NARROW_BLOCK = 1 << 15

#: Columns handled together when reducing over a middle axis: keeps per-column accumulators
#: and the block being re-read (two-pass variance) in L1/L2.
TILE = 2048

#: Reassociation lets LLVM split a running sum over vector lanes (the whole point of the
#: in-register swap). We never allow ``nnan``/``ninf``: NaN tests must survive.
FASTMATH = frozenset({"reassoc", "nsz", "arcp"})


def jit(func):
    """Compile a kernel: nopython, no GIL, reassociating float math."""
    return njit(nogil=True, fastmath=set(FASTMATH), error_model="numpy")(func)


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
