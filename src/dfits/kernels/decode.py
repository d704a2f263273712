"""Decode stored bits into native physical values in one pass.

Swap (for big-endian stored values), BSCALE/BZERO and BLANK → NaN happen in registers while
writing the output, instead of numpy's chain of ``astype`` / ``multiply`` / ``add`` / ``where``
passes (each a full read and write of the array). Values equal ``astropy.io.fits``
``hdu.data`` bit for bit. :func:`decode` takes a view of any shape and strides;
:func:`decode_rows` rows that a caller has already located in one flat base (section reads).
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels._loaders import Kind, loaders
from dfits.kernels._run import flat
from dfits.kernels._shape import layout_for
from dfits.kernels._spec import Spec, params

__all__ = ["decode", "decode_kernel", "decode_rows"]


@functools.cache
def decode_kernel(kind: Kind):
    """Return ``decode(base, geo, scale, zero, blank, out2)`` for 2-D views of any strides."""
    phys = loaders(kind).phys

    @inline
    def decode(base, geo, scale, zero, blank, out):
        nrow, length, off, sa = geo
        for a in range(nrow):
            ua = base[off + a * sa : off + a * sa + length]
            for b in range(length):
                out[a, b] = phys(ua[b], scale, zero, blank)

    return entry(decode, kind)


def decode(u: np.ndarray, spec: Spec, out: np.ndarray | None = None) -> np.ndarray:
    """Return the physical values of ``u`` as a new C-ordered native array (or fill ``out``)."""
    kind, scale, zero, blank = params(u, spec)
    if out is None:
        out = np.empty(u.shape, dtype=spec.physical)
    if u.size == 0:
        return out
    kernel = decode_kernel(kind)
    if u.ndim == 2 and out.flags.c_contiguous:
        # rows as they are (a stamp): coalescing axes buys nothing at two dimensions
        kernel(*flat(u), scale, zero, blank, out)
        return out
    layout = layout_for(u, frozenset(range(u.ndim)))
    if layout is not None and out.flags.c_contiguous:
        _, u2 = layout
        kernel(*flat(u2), scale, zero, blank, out.reshape(u2.shape))
    elif u.ndim <= 2:
        u2 = u.reshape((1,) * (2 - u.ndim) + u.shape) if u.ndim < 2 else u
        kernel(*flat(u2), scale, zero, blank, out.reshape(u2.shape) if u.ndim < 2 else out)
    else:
        for i in range(u.shape[0]):
            decode(u[i], spec, out[i])
    return out


def decode_rows(base: np.ndarray, geo: tuple[int, int, int, int], spec: Spec) -> np.ndarray:
    """Decode ``nrow`` rows of ``length`` values lying in ``base`` into a new native array.

    ``base`` is a 1-D contiguous native unsigned view; ``geo = (nrow, length, offset,
    row_stride)`` in elements (a negative stride runs upwards). Row ``a`` is
    ``base[offset + a·row_stride :][:length]``. For callers that keep one flat view of a
    whole data block and know where a region lies in it (section reads), so that no view per
    region has to be built and measured. Returns shape ``(nrow, length)``.
    """
    kind, scale, zero, blank = params(base, spec)
    nrow, length, off, sa = geo
    out = np.empty((nrow, length), dtype=spec.physical)
    if out.size == 0:
        return out
    last = off + (nrow - 1) * sa
    if base.ndim != 1 or min(off, last) < 0 or max(off, last) + length > base.size:
        # numba slices clamp silently: a bad geometry must not read the wrong values
        raise ValueError(f"rows {geo} do not lie within a base of {base.size} values")
    decode_kernel(kind)(base, geo, scale, zero, blank, out)
    return out
