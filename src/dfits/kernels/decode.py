"""Decode stored big-endian bits into native physical values in one pass.

Swap, BSCALE/BZERO and BLANK → NaN happen in registers while writing the output, instead of
numpy's chain of ``astype`` / ``multiply`` / ``add`` / ``where`` passes (each a full read and
write of the array). Values equal ``astropy.io.fits`` ``hdu.data`` bit for bit.
"""

from __future__ import annotations

import functools

from dfits.kernels._compile import jit
from dfits.kernels._loaders import Kind, loaders

__all__ = ["decode_kernel"]


@functools.cache
def decode_kernel(kind: Kind):
    """Return ``decode(u2, scale, zero, blank, out2)`` for 2-D views of any strides."""
    phys = loaders(kind).phys

    @jit
    def decode(base, geo, scale, zero, blank, out):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            for b in range(length):
                out[a, b] = phys(ua[b], scale, zero, blank)

    return decode
