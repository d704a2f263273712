"""HCOMPRESS_1 decoding: a tile's byte stream back to its integers, every read bounds-checked.

The stream (R. White's hcompress as cfitsio's ``fits_hdecompress`` reads it; the tiled image
convention, section 6.2): the magic bytes ``DD 99``; big-endian int32 ``nx`` (rows), ``ny``
(values per row) and ``scale``; the int64 sum of all values; three bytes giving the number of
bit planes of the four quadrants of H-transform coefficients. Then each quadrant's bit planes,
most significant first, each either written directly (a 0 nybble, then 4 bits per 2 × 2 block)
or quadtree-coded (an F nybble, then fixed Huffman codes of 4-bit masks, expanded level by
level); a 0 nybble closes the planes, and one sign bit follows for every non-zero coefficient.
:mod:`dfits.kernels.hinverse` turns the coefficients back into values.

No maintained Python package decodes HCOMPRESS (imagecodecs has no codec for it; astropy's is a
private extension), so this is a Numba port of that reader. Unlike the C, it never reads past
the tile's bytes (a stream that runs out is reported, not padded with whatever follows in
memory), checks the format codes, and sizes its work arrays from the tile's known shape: the
caller checks the stream's ``nx × ny`` against the tile before anything is allocated.
"""

from __future__ import annotations

import functools

import numpy as np

from dfits.kernels._cache import entry
from dfits.kernels._compile import inline, jit
from dfits.kernels.hinverse import hinv, log2_ceil, undigitize

__all__ = ["HEADER_BYTES", "hcompress_decode", "read_header"]

#: Magic (2), nx, ny, scale (4 each), sum (8), bit planes of the quadrants (3).
HEADER_BYTES = 25
_MAGIC = b"\xdd\x99"

# bit reader state, one int64 array: next byte, bits held, how many, ran out (1) or not
_POS, _BUF, _NBITS, _OVER = 0, 1, 2, 3

#: Huffman codes of the quadtree masks, by (length, code) -> mask value
_HUFF5 = np.array([6, 7, 9, 11, 13], np.int64)  # codes 26..30
_HUFF4 = np.array([3, 5, 10, 12, 15], np.int64)  # codes 8..12


@jit
def _byte(src, st):
    """The next byte, or 0 (and the ran-out flag) past the end of the tile."""
    p = st[_POS]
    st[_POS] = p + 1
    if p >= src.shape[0]:
        st[_OVER] = 1
        return np.int64(0)
    return np.int64(src[p])


@jit
def _bits(src, st, n):
    """The next ``n`` (at most 8) bits."""
    if st[_NBITS] < n:
        # only the low 16 bits can still be needed: keep the buffer from growing
        st[_BUF] = ((st[_BUF] << 8) | _byte(src, st)) & 0xFFFF
        st[_NBITS] += 8
    st[_NBITS] -= n
    return (st[_BUF] >> st[_NBITS]) & ((1 << n) - 1)


@jit
def _huffman(src, st):
    """One quadtree mask (0-15) from its fixed Huffman code (3 to 6 bits)."""
    c = _bits(src, st, 3)
    if c < 4:
        return np.int64(1) << c
    c = (c << 1) | _bits(src, st, 1)
    if c < 13:
        return _HUFF4[c - 8]
    c = (c << 1) | _bits(src, st, 1)
    if c < 31:
        return _HUFF5[c - 26]
    c = (c << 1) | _bits(src, st, 1)
    return np.int64(0) if c == 62 else np.int64(14)


@jit
def _bitins(masks, nqx, nqy, a, off, n, plane):
    """Spread 4-bit masks (one per 2 × 2 block) into bit ``plane`` of the quadrant at
    ``a[off]`` (rows ``n`` apart); blocks on an odd edge keep only their in-bounds bits."""
    k = 0
    for i in range(0, nqx, 2):
        for j in range(0, nqy, 2):
            v = masks[k]
            k += 1
            s00 = off + n * i + j
            if v & 8:
                a[s00] |= plane
            if j + 1 < nqy and v & 4:
                a[s00 + 1] |= plane
            if i + 1 < nqx:
                if v & 2:
                    a[s00 + n] |= plane
                if j + 1 < nqy and v & 1:
                    a[s00 + n + 1] |= plane


@jit
def _expand(src, st, b, nx, ny):
    """One quadtree level: the ``(nx+1)/2 × (ny+1)/2`` masks in ``b`` become ``nx × ny``
    bits (rows ``ny`` apart, in place), and each set bit is replaced by a new mask."""
    nx2, ny2 = (nx + 1) // 2, (ny + 1) // 2
    # back to front, so that no mask is overwritten before it is moved
    for i in range(nx2 - 1, -1, -1):
        for j in range(ny2 - 1, -1, -1):
            b[2 * (ny * i + j)] = b[ny2 * i + j]
    for i in range(0, nx, 2):
        for j in range(0, ny, 2):
            s00 = ny * i + j
            v = b[s00]
            b[s00] = (v >> 3) & 1
            if j + 1 < ny:
                b[s00 + 1] = (v >> 2) & 1
            if i + 1 < nx:
                b[s00 + ny] = (v >> 1) & 1
                if j + 1 < ny:
                    b[s00 + ny + 1] = v & 1
    for i in range(nx * ny - 1, -1, -1):
        if b[i]:
            b[i] = _huffman(src, st)


@jit
def _qtree(src, st, a, off, n, nqx, nqy, nplanes, scratch):
    """Decode the bit planes of the ``nqx × nqy`` quadrant at ``a[off]``; 0 or -2 (bad code)."""
    log2n = log2_ceil(max(nqx, nqy))
    nblocks = ((nqx + 1) // 2) * ((nqy + 1) // 2)
    for bit in range(nplanes - 1, -1, -1):
        plane = np.int64(1) << bit
        code = _bits(src, st, 4)
        if code == 0:  # the plane written directly, a nybble per 2 x 2 block
            for k in range(nblocks):
                scratch[k] = _bits(src, st, 4)
        elif code != 0xF:
            return -1 if st[_OVER] else -2  # a code cut short by the end is truncation
        else:
            scratch[0] = _huffman(src, st)
            nx, ny, nfx, nfy = 1, 1, nqx, nqy
            c = np.int64(1) << log2n
            for _ in range(1, log2n):
                c >>= 1
                nx, ny = nx << 1, ny << 1
                if nfx <= c:
                    nx -= 1
                else:
                    nfx -= c
                if nfy <= c:
                    ny -= 1
                else:
                    nfy -= c
                _expand(src, st, scratch, nx, ny)
        _bitins(scratch, nqx, nqy, a, off, n, plane)
        if st[_OVER]:
            return -1
    return 0


@inline
def _decode(src, a, nx, ny, planes, smooth, scale, total):
    """Coefficients, signs, then the inverse transform; 0 or a negative status."""
    nx2, ny2 = (nx + 1) // 2, (ny + 1) // 2
    # big enough for every quadrant's masks, and for one mask where a quadrant is empty
    scratch = np.zeros(max(nx2 // 2 + 1, 1) * max(ny2 // 2 + 1, 1) + 1, np.uint8)
    st = np.zeros(4, np.int64)
    st[_POS] = 25
    quads = (
        (0, nx2, ny2, planes[0]),
        (ny2, nx2, ny // 2, planes[1]),
        (ny * nx2, nx // 2, ny2, planes[1]),
        (ny * nx2 + ny2, nx // 2, ny // 2, planes[2]),
    )
    for off, nqx, nqy, nplanes in quads:
        status = _qtree(src, st, a, off, ny, nqx, nqy, nplanes, scratch)
        if status != 0:
            return status
    if _bits(src, st, 4) != 0:
        return -1 if st[_OVER] else -3
    st[_NBITS] = 0
    for i in range(nx * ny):
        if a[i] != 0 and _bits(src, st, 1):
            a[i] = -a[i]
    if st[_OVER]:
        return -1
    a[0] = total
    undigitize(a, scale)
    hinv(a, nx, ny, smooth, scale)
    return 0


def read_header(data: np.ndarray) -> tuple[int, int, int, int, tuple[int, int, int]] | str:
    """``(nx, ny, scale, sum, planes)`` of a stream, or why it is not an HCOMPRESS stream."""
    if data.shape[0] < HEADER_BYTES:
        return f"the stream has {data.shape[0]} bytes, fewer than its {HEADER_BYTES}-byte header"
    head = data[:HEADER_BYTES].tobytes()
    if head[:2] != _MAGIC:
        return f"the stream starts with {head[:2]!r}, not the HCOMPRESS magic code b'\\xdd\\x99'"
    nx, ny, scale = (int.from_bytes(head[k : k + 4], "big", signed=True) for k in (2, 6, 10))
    total = int.from_bytes(head[14:22], "big", signed=True)
    return nx, ny, scale, total, (head[22], head[23], head[24])


@functools.cache
def _kernel():
    """The decoder, through the on-disk kernel cache: it compiles in ~15 s, loads in ms."""
    return entry(_decode, "hcompress")


_REASONS = {
    -1: "the HCOMPRESS stream ends before its last coefficient",
    -2: "a bit plane of the HCOMPRESS stream has an unknown format code",
    -3: "the HCOMPRESS stream lacks the end-of-planes code",
}


def hcompress_decode(data: np.ndarray, shape: tuple[int, ...], smooth: int) -> np.ndarray | str:
    """The int32 values of an HCOMPRESS_1 tile of ``shape`` (C order), or why it does not
    decode.

    The stream must describe the tile: ``ny`` values per row (the tile's last axis) and
    ``nx × ny`` values in all. ``smooth`` (the SMOOTH parameter) smooths lossy tiles as
    cfitsio does.
    """
    data = np.ascontiguousarray(data, np.uint8)
    header = read_header(data)
    if isinstance(header, str):
        return header
    nx, ny, scale, total, planes = header
    npix = int(np.prod(shape)) if shape else 1
    last = shape[-1] if shape else 1
    if nx <= 0 or ny <= 0 or nx * ny != npix or ny != last:
        return f"the stream is of a {nx} x {ny} tile, but the tile is {' x '.join(map(str, shape))}"
    if max(planes) > 64:
        return f"the stream claims {max(planes)} bit planes, more than 64-bit values hold"
    a = np.zeros(npix, np.int64)
    planes_ = np.array(planes, np.int64)
    status = _kernel()(data, a, nx, ny, planes_, int(smooth), scale, total)
    if status != 0:
        return _REASONS[status]
    # cfitsio (and so astropy) hands back 32-bit integers, whatever the arithmetic was
    return a.astype(np.int32)
