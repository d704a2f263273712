"""HCOMPRESS_1 encoding: one tile's integers to the stream :mod:`dfits.kernels.hcompress` reads.

The contract: :func:`hcompress_encode` takes a tile's integers as a 2-D array (``nx`` rows of
``ny`` values, C order) and a digitisation ``scale`` (0 or 1: lossless) and returns the stream
R. White's hcompress (cfitsio's ``fits_hcompress``, section 6.2 of the tiled image convention)
writes: the H-transform of the tile (sums and differences of 2 x 2 blocks, level by level, the
coefficients of each level grouped by shuffling), coefficients divided by ``scale`` rounding
half away from zero, then the magic bytes, ``nx``, ``ny``, ``scale``, the int64 sum, the bit
planes of the three quadrant classes, each quadrant's bit planes (quadtree-coded with the
fixed Huffman codes of 4-bit masks, or written directly when that is shorter), a 0 nybble, and
a sign bit per non-zero coefficient. All arithmetic is 64-bit, as cfitsio's 64-bit coder (and
every reader's) is, so 32-bit tiles never overflow. A plain-Python oracle would repeat these
~250 lines; the decoders are the check instead: dfits', astropy's and funpack's must give the
tile back exactly when ``scale`` is 0 (tests/kernels/test_hencode.py, tests/write).
"""

from __future__ import annotations

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline, jit
from dfits.kernels.hinverse import log2_ceil

__all__ = ["hcompress_encode"]

# Huffman codes (and their lengths) of the 16 quadtree masks
_CODE = np.array([0x3E, 0x00, 0x01, 0x08, 0x02, 0x09, 0x1A, 0x1B, 0x03, 0x1C, 0x0A, 0x1D, 0x0B,
                  0x1E, 0x3F, 0x0C], np.int64)  # fmt: skip
_NCODE = np.array([6, 3, 3, 4, 3, 4, 5, 5, 3, 5, 4, 5, 4, 5, 6, 4], np.int64)
# bit writer state: bytes written, bits held, free bits in the held byte
_OUT, _BUF, _FREE = 0, 1, 2


@jit
def _put(out, st, bits, n):
    """Append the low ``n`` (at most 8) bits of ``bits``."""
    st[_BUF] = ((st[_BUF] << n) | (bits & ((np.int64(1) << n) - 1))) & 0xFFFF
    st[_FREE] -= n
    if st[_FREE] <= 0:
        out[st[_OUT]] = (st[_BUF] >> (-st[_FREE])) & 0xFF
        st[_OUT] += 1
        st[_FREE] += 8


@jit
def _shuffle(a, off, n, n2, tmp):
    """Group ``n`` values ``n2`` apart from ``a[off]``: even places first, then odd."""
    k = 0
    for i in range(1, n, 2):
        tmp[k] = a[off + i * n2]
        k += 1
    for i in range(2, n, 2):
        a[off + (i // 2) * n2] = a[off + i * n2]
    half = (n + 1) // 2
    for i in range(k):
        a[off + (half + i) * n2] = tmp[i]


@jit
def _round(v, rnd, mask):
    return (v + rnd if v >= 0 else v) & mask


@jit
def _round0(v, rnd2, mask2):
    return (v + rnd2 if v >= 0 else v + rnd2 - 1) & mask2


@jit
def _htrans(a, nx, ny, tmp):
    """The H-transform of ``a`` (``nx`` rows of ``ny``) in place."""
    shift, mask, prnd = 0, np.int64(-2), np.int64(1)
    nxtop, nytop = nx, ny
    for _ in range(log2_ceil(max(nx, ny))):
        mask2, prnd2 = mask << 1, prnd << 1
        oddx, oddy = nxtop % 2, nytop % 2
        for i in range(0, nxtop - oddx, 2):
            s00, s10 = i * ny, (i + 1) * ny
            for _j in range(0, nytop - oddy, 2):
                p, q, r, s = a[s10 + 1], a[s10], a[s00 + 1], a[s00]
                a[s10 + 1] = (p - q - r + s) >> shift
                a[s10] = _round((p + q - r - s) >> shift, prnd, mask)
                a[s00 + 1] = _round((p - q + r - s) >> shift, prnd, mask)
                a[s00] = _round0((p + q + r + s) >> shift, prnd2, mask2)
                s00 += 2
                s10 += 2
            if oddy:
                q, s = a[s10], a[s00]
                a[s10] = _round((q - s) << (1 - shift), prnd, mask)
                a[s00] = _round0((q + s) << (1 - shift), prnd2, mask2)
        if oddx:
            s00 = (nxtop - 1) * ny
            for _j in range(0, nytop - oddy, 2):
                r, s = a[s00 + 1], a[s00]
                a[s00 + 1] = _round((r - s) << (1 - shift), prnd, mask)
                a[s00] = _round0((r + s) << (1 - shift), prnd2, mask2)
                s00 += 2
            if oddy:
                a[s00] = _round0(a[s00] << (2 - shift), prnd2, mask2)
        for i in range(nxtop):
            _shuffle(a, ny * i, nytop, 1, tmp)
        for j in range(nytop):
            _shuffle(a, j, nxtop, ny, tmp)
        nxtop, nytop = (nxtop + 1) >> 1, (nytop + 1) >> 1
        shift, mask, prnd = 1, mask2, prnd2


@jit
def _onebit(a, off, n, nx, ny, b, bit):
    """The 4-bit masks of bit ``bit`` over the 2 x 2 blocks of a quadrant (``nx`` rows of
    ``ny``, rows ``n`` apart, from ``a[off]``); blocks cut by the edge count missing as 0."""
    k = 0
    for i in range(0, nx, 2):
        for j in range(0, ny, 2):
            s00 = off + n * i + j
            m = ((a[s00] >> bit) & 1) << 3
            if j + 1 < ny:
                m |= ((a[s00 + 1] >> bit) & 1) << 2
            if i + 1 < nx:
                m |= ((a[s00 + n] >> bit) & 1) << 1
                if j + 1 < ny:
                    m |= (a[s00 + n + 1] >> bit) & 1
            b[k] = m
            k += 1


@jit
def _reduce(b, nx, ny):
    """One quadtree level in place: which of each 2 x 2 block of masks are non-zero."""
    k = 0
    for i in range(0, nx, 2):
        for j in range(0, ny, 2):
            s00 = i * ny + j
            m = np.int64(b[s00] != 0) << 3
            if j + 1 < ny:
                m |= np.int64(b[s00 + 1] != 0) << 2
            if i + 1 < nx:
                m |= np.int64(b[s00 + ny] != 0) << 1
                if j + 1 < ny:
                    m |= np.int64(b[s00 + ny + 1] != 0)
            b[k] = m
            k += 1


@jit
def _codes(b, count, buf, hb, bmax):
    """Append the Huffman codes of the non-zero masks to ``buf`` (bytes, written later in
    reverse); False when the codes outgrow ``bmax`` bytes (direct bits are then shorter)."""
    for i in range(count):
        m = b[i]
        if m != 0:
            hb[0] |= _CODE[m] << hb[1]
            hb[1] += _NCODE[m]
            if hb[1] >= 8:
                buf[hb[2]] = hb[0] & 0xFF
                hb[2] += 1
                if hb[2] >= bmax:
                    return False
                hb[0] >>= 8
                hb[1] -= 8
    return True


@jit
def _direct(out, st, a, off, n, nqx, nqy, scratch, bit):
    _put(out, st, 0, 4)
    _onebit(a, off, n, nqx, nqy, scratch, bit)
    for i in range(((nqx + 1) // 2) * ((nqy + 1) // 2)):
        _put(out, st, scratch[i], 4)


@jit
def _quadrant(out, st, a, off, n, nqx, nqy, planes, scratch, buf):
    """Every bit plane of one quadrant, top first."""
    bmax = ((nqx + 1) // 2 * ((nqy + 1) // 2) + 1) // 2
    hb = np.zeros(3, np.int64)  # bits held, how many, bytes in buf
    for bit in range(planes - 1, -1, -1):
        hb[:] = 0
        _onebit(a, off, n, nqx, nqy, scratch, bit)
        nx, ny = (nqx + 1) >> 1, (nqy + 1) >> 1
        fits = _codes(scratch, nx * ny, buf, hb, bmax)
        for _ in range(1, log2_ceil(max(nqx, nqy))):
            if not fits:
                break
            _reduce(scratch, nx, ny)
            nx, ny = (nx + 1) >> 1, (ny + 1) >> 1
            fits = _codes(scratch, nx * ny, buf, hb, bmax)
        if not fits:
            _direct(out, st, a, off, n, nqx, nqy, scratch, bit)
            continue
        _put(out, st, 0xF, 4)
        if hb[2] == 0 and hb[1] == 0:
            _put(out, st, _CODE[0], _NCODE[0])  # no 1 bits in the plane
        elif hb[1] > 0:
            _put(out, st, hb[0] & ((np.int64(1) << hb[1]) - 1), hb[1])
        for i in range(hb[2] - 1, -1, -1):
            _put(out, st, buf[i], 8)


@jit
def _digitize(a, scale):
    if scale > 1:
        d = (scale + 1) // 2 - 1
        for i in range(a.size):
            v = a[i]
            a[i] = (v + d) // scale if v > 0 else -((d - v) // scale)


@jit
def _write_int(out, st, v, nbytes):
    for k in range(nbytes - 1, -1, -1):
        out[st[_OUT]] = (v >> (8 * k)) & 0xFF
        st[_OUT] += 1


@jit
def _signs(out, st, a):
    """Make ``a`` absolute; append its sign bits (1: negative), 8 per byte, zeros skipped."""
    byte, used = 0, 0
    for i in range(a.size):
        if a[i] != 0:
            byte = (byte << 1) | (1 if a[i] < 0 else 0)
            a[i] = abs(a[i])
            used += 1
            if used == 8:
                out[st[_OUT]] = byte
                st[_OUT] += 1
                byte, used = 0, 0
    if used:
        out[st[_OUT]] = (byte << (8 - used)) & 0xFF
        st[_OUT] += 1


@inline
def _encode_body(a, nx, ny, scale, out):
    tmp = np.empty((max(nx, ny) + 1) // 2, np.int64)
    _htrans(a, nx, ny, tmp)
    _digitize(a, scale)
    st = np.zeros(3, np.int64)
    st[_FREE] = 8
    out[0], out[1] = 0xDD, 0x99
    st[_OUT] = 2
    _write_int(out, st, nx, 4)
    _write_int(out, st, ny, 4)
    _write_int(out, st, scale, 4)
    _write_int(out, st, a[0], 8)
    a[0] = 0
    signs = np.zeros(a.size // 8 + 2, np.uint8)
    sign_st = np.zeros(3, np.int64)
    _signs(signs, sign_st, a)
    nx2, ny2 = (nx + 1) // 2, (ny + 1) // 2
    vmax = np.zeros(3, np.int64)
    for i in range(nx):
        for j in range(ny):
            q = np.int64(j >= ny2) + np.int64(i >= nx2)
            vmax[q] = max(vmax[q], a[i * ny + j])
    planes = np.zeros(3, np.int64)
    for q in range(3):
        while vmax[q] > 0:
            vmax[q] >>= 1
            planes[q] += 1
        out[st[_OUT]] = planes[q]
        st[_OUT] += 1
    scratch = np.empty(nx2 * ny2 + 1, np.int64)
    buf = np.empty(nx2 * ny2 // 2 + 2, np.int64)
    _quadrant(out, st, a, 0, ny, nx2, ny2, planes[0], scratch, buf)
    _quadrant(out, st, a, ny2, ny, nx2, ny // 2, planes[1], scratch, buf)
    _quadrant(out, st, a, ny * nx2, ny, nx // 2, ny2, planes[1], scratch, buf)
    _quadrant(out, st, a, ny * nx2 + ny2, ny, nx // 2, ny // 2, planes[2], scratch, buf)
    _put(out, st, 0, 4)  # the end of the planes
    if st[_FREE] < 8:
        out[st[_OUT]] = (st[_BUF] << st[_FREE]) & 0xFF
        st[_OUT] += 1
    for i in range(sign_st[_OUT]):
        out[st[_OUT]] = signs[i]
        st[_OUT] += 1
    return st[_OUT]


_encode = entry(_encode_body)


def hcompress_encode(tile: np.ndarray, scale: int = 0) -> bytes:
    """The HCOMPRESS_1 stream of a 2-D tile of integers (``scale`` 0 or 1: lossless).

    Examples
    --------
    >>> from dfits.kernels.hcompress import hcompress_decode
    >>> tile = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    >>> hcompress_decode(np.frombuffer(hcompress_encode(tile), np.uint8), (3, 4), 0).tolist()
    [-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5]
    """
    if tile.ndim != 2:
        raise ValueError(f"HCOMPRESS_1 codes 2-D tiles, not {tile.ndim}-D")
    nx, ny = tile.shape
    a = np.ascontiguousarray(tile, dtype=np.int64).reshape(-1).copy()
    # each quadrant-plane takes at most its direct bits (a nybble per 2 x 2 block) and a few
    # bytes; 64 planes bound 64-bit values
    out = np.zeros(32 + a.size // 8 + 4 * 64 * (a.size // 8 + 8), np.uint8)
    return out[: _encode(a, nx, ny, int(scale), out)].tobytes()
