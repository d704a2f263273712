"""RICE_1 decoding with every byte accounted for.

The format (the tiled image convention, section 6.1; cfitsio's ``fits_rdecomp``): the first
pixel raw (``bytepix`` bytes, big-endian), then blocks of ``blocksize`` pixel differences,
each block led by an ``fsbits``-bit code ``fs + 1``: 0 means every difference is zero, the
maximum means the differences are stored raw (``8 * bytepix`` bits each), anything else that
each difference is a unary-coded high part and ``fs`` low bits. Differences are zig-zag
mapped (even: ``d / 2``, odd: ``-(d + 1) / 2``).

``imagecodecs.rcomp_decode`` (cfitsio's C) decodes the same streams faster, but it reports
neither how many bytes a stream used nor bytes left unused, so a tile corrupted past its
first few bytes decodes to garbage without an error. This loop checks every read against the
end of the tile's bytes and, as cfitsio (and astropy) do, refuses a stream that leaves bytes
unused: corruption is an error, never silently wrong values.
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline

__all__ = ["rice_decode"]

# bits needed to write each byte value (index of the highest set bit + 1)
_NBITS = np.array([int(v).bit_length() for v in range(256)], np.int64)

#: per BYTEPIX: (bits of the block code, the code of a raw block, bits of a raw difference)
_PARAMS = {1: (3, 6, 8), 2: (4, 14, 16), 4: (5, 25, 32)}


@inline
def _decode(src, out, blocksize, fsbits, fsmax, bbits, bytepix, nbits_of):
    """Decode ``src`` into ``out``; returns 0, -1 when the stream runs out, -2 when it leaves
    bytes unused."""
    n = src.shape[0]
    if n < bytepix + 1:
        return -1
    last = np.int64(0)
    for k in range(bytepix):
        last = (last << 8) | np.int64(src[k])
    mask = (np.int64(1) << bbits) - 1
    half = np.int64(1) << (bbits - 1)
    c = bytepix + 1
    b = np.int64(src[bytepix])
    nbits = 8
    npix = out.shape[0]
    for i in range(0, npix, blocksize):
        imax = min(i + blocksize, npix)
        nbits -= fsbits
        while nbits < 0:
            if c >= n:
                return -1
            b = (b << 8) | np.int64(src[c])
            c += 1
            nbits += 8
        fs = (b >> nbits) - 1
        b &= (np.int64(1) << nbits) - 1
        for k in range(i, imax):
            if fs < 0:
                diff = np.int64(0)
            elif fs == fsmax:
                # raw: bbits bits, the first ``nbits`` of them already in ``b``
                diff = b
                need = bbits - nbits
                while need >= 8:
                    if c >= n:
                        return -1
                    diff = (diff << 8) | np.int64(src[c])
                    c += 1
                    need -= 8
                if need > 0:
                    if c >= n:
                        return -1
                    b = np.int64(src[c])
                    c += 1
                    diff = (diff << need) | (b >> (8 - need))
                    nbits = 8 - need
                    b &= (np.int64(1) << nbits) - 1
                else:
                    b = np.int64(0)
                    nbits = 0
            else:
                while b == 0:
                    if c >= n:
                        return -1
                    b = np.int64(src[c])
                    c += 1
                    nbits += 8
                nzero = nbits - nbits_of[b]
                nbits -= nzero + 1
                b ^= np.int64(1) << nbits
                nbits -= fs
                while nbits < 0:
                    if c >= n:
                        return -1
                    b = (b << 8) | np.int64(src[c])
                    c += 1
                    nbits += 8
                diff = (np.int64(nzero) << fs) | (b >> nbits)
                b &= (np.int64(1) << nbits) - 1
            d = diff >> 1 if (diff & 1) == 0 else -(diff >> 1) - 1
            last = (last + d) & mask
            out[k] = last - ((last & half) << 1) if bytepix > 1 else last
    if c < n:
        return -2
    return 0


#: :func:`_decode` alone (:mod:`dfits.kernels.tilegroup` inlines it into its group loop)
_decode_kernel = entry(_decode)


def rice_decode(data: np.ndarray, npix: int, blocksize: int, bytepix: int) -> np.ndarray | str:
    """The ``npix`` values of a RICE_1 stream (native ``u1``, ``i2`` or ``i4``), or the reason
    it does not decode."""
    fsbits, fsmax, bbits = _PARAMS[bytepix]
    out = np.empty(npix, {1: np.uint8, 2: np.int16, 4: np.int32}[bytepix])
    if npix == 0:
        return out
    status = _decode_kernel(
        np.ascontiguousarray(data, np.uint8), out, blocksize, fsbits, fsmax, bbits, bytepix, _NBITS
    )
    if status == -1:
        return "the Rice stream ends before its last pixel"
    if status == -2:
        return "the Rice stream has unused bytes after its last pixel"
    return out
