"""Integer tiles of a block, in one kernel call: RICE_1, or the bytes GZIP and NOCOMPRESS take.

The contract: :func:`int_tiles` walks the tiles of a block of integers (held as a 2-D array
of its rows along the last axis, with the block's and the tile's leading shapes; tiles of any
dimension, in the table's C order) from tile ``start``, and for each one gathers its values,
XORs the storage's ``flip`` (the top bit of offset-stored integers: uint16 as int16 + 32768,
int8 as uint8 - 128) and writes them to ``out`` at ``pos`` as RICE_1 (``kind`` 0,
:func:`dfits.kernels.riceencode.encode_into`, 8/16/32-bit), big-endian (1: GZIP_1 and
NOCOMPRESS, deflated by the caller) or with the bytes shuffled by significance (2: GZIP_2),
what :func:`dfits.kernels.tileencode.encode_tile` has always written. It sums the values as
an uncompressed image stores them (big-endian 32-bit words, each value at its byte offset in
the image: ``offsets`` gives each block row's first element) into ``total[0]``, for ZDATASUM.

It returns the tile it stopped at and the end of ``out`` used; it stops early when the next
tile might not fit (``bound`` bytes). No Python runs per tile; the deflate of GZIP tiles is
``zlib``'s, per tile, which releases the GIL.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np

from dfits.format.ztable import TileSpec
from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels.riceencode import encode_into, rice_bound
from dfits.kernels.tileencode import Batch

__all__ = ["KINDS", "int_batches", "int_tiles"]

#: the kernel's form of each algorithm's values
KINDS = {"RICE_1": 0, "GZIP_1": 1, "NOCOMPRESS": 1, "GZIP_2": 2}
_MASK = 4294967295


@inline
def _pack(t, n, size, kind, out, pos):
    # t[:n] big-endian into out at pos: value i's byte b at i * si + b * sb
    si, sb = (size, 1) if kind == 1 else (1, n)
    for i in range(n):
        u = np.uint64(t[i])
        at = pos + i * si
        for b in range(size):
            out[at + b * sb] = np.uint8((u >> np.uint64(8 * (size - 1 - b))) & np.uint64(255))
    return pos + size * n


@inline
def _word_share(u, size, offset):
    # a value's part of the ones'-complement sum of big-endian words, at byte offset
    if size == 8:
        return (u >> np.uint64(32)) + (u & np.uint64(_MASK))
    return u << np.uint64(8 * (4 - size - offset % 4))


@inline
def _int_tiles(x, ip, lead, tlead, offsets, flip, out, pos, sizes, total):
    # ip: last-axis tile width, first tile, kind, Rice block size, bound per tile
    tx, start, kind, blocksize, bound = ip[0], ip[1], ip[2], ip[3], ip[4]
    nx, nd, size = x.shape[1], lead.size, x.itemsize
    grid = np.empty(nd, np.int64)
    ntiles = -(-nx // tx)
    for d in range(nd):
        grid[d] = -(-lead[d] // tlead[d])
        ntiles *= grid[d]
    gx = -(-nx // tx)
    per = 1
    for d in range(nd):
        per *= tlead[d]
    t = np.empty(per * tx, x.dtype)
    o, h, idx = np.empty(nd, np.int64), np.empty(nd, np.int64), np.empty(nd, np.int64)
    for k in range(start, ntiles):
        if pos + bound > out.size:
            return k, pos
        rest = k // gx
        x0 = (k % gx) * tx
        w, rows = min(tx, nx - x0), 1
        for d in range(nd - 1, -1, -1):  # the tile's origin and extent on the leading axes
            o[d] = (rest % grid[d]) * tlead[d]
            rest //= grid[d]
            h[d] = min(tlead[d], lead[d] - o[d])
            rows *= h[d]
            idx[d] = 0
        acc, n = np.uint64(0), 0
        for _ in range(rows):
            r = 0
            for d in range(nd):
                r = r * lead[d] + o[d] + idx[d]
            for c in range(x0, x0 + w):
                t[n] = x[r, c] ^ flip
                acc += _word_share(np.uint64(t[n]), size, (offsets[r] + c) * size)
                n += 1
            for d in range(nd - 1, -1, -1):  # the next row of the tile (an odometer)
                idx[d] += 1
                if idx[d] < h[d]:
                    break
                idx[d] = 0
        acc = (acc & np.uint64(_MASK)) + (acc >> np.uint64(32)) + total[0]
        total[0] = (acc & np.uint64(_MASK)) + (acc >> np.uint64(32))
        if kind == 0:
            end = encode_into(t[:n], out, pos, blocksize, size)
        else:
            end = _pack(t, n, size, kind, out, pos)
        sizes[k] = end - pos
        pos = end
    return ntiles, pos


_kernel = entry(_int_tiles)


def int_tiles(x, ip, lead, tlead, offsets, flip, out, pos, sizes, total):
    """Run the kernel (see the module) on ``x`` (2-D, unsigned); ``(next tile, end)``."""
    return _kernel(x, ip, lead, tlead, offsets, x.dtype.type(flip), out, pos, sizes, total)


def _row_offsets(shape, starts, block) -> np.ndarray:
    """The image element offset of the first value of each of a block's rows."""
    strides = [int(np.prod(shape[a + 1 :])) for a in range(len(shape))]
    base = sum(s * st for s, st in zip(starts, strides, strict=True))
    if len(block) == 1:
        return np.array([base], np.int64)
    grid = np.indices(block[:-1], dtype=np.int64).reshape(len(block) - 1, -1)
    return (base + np.asarray(strides[:-1], np.int64) @ grid).astype(np.int64).reshape(-1)


def _fold(s: int) -> int:
    while s > _MASK:
        s = (s & _MASK) + (s >> 32)
    return s


def int_batches(
    spec: TileSpec, block: np.ndarray, starts: tuple[int, ...], out: np.ndarray
) -> Iterator[Batch]:
    """Batches of a block's integer tiles (whole tiles at ``starts``) for RICE_1, GZIP_1,
    GZIP_2 and NOCOMPRESS, about ``out``'s size each.

    >>> from dfits.format.imagehdu import parse_storage
    >>> from dfits.format.ztable import parse_compression
    >>> spec = parse_compression((2, 3), parse_storage("u2", "x"), "x", compression="NOCOMPRESS")
    >>> (b,) = int_batches(spec, np.arange(6, dtype="u2").reshape(2, 3), (0, 0), np.empty(64, "u1"))
    >>> b.rows.tolist(), b.sizes[:, 0].tolist(), bytes(b.pieces[0])[:4]  # uint16: int16 - 32768
    ([0, 1], [6, 6], b'\\x80\\x00\\x80\\x01')
    """
    size = abs(spec.storage.bitpix) // 8
    v = np.ascontiguousarray(block, dtype=spec.storage.native)
    x = v.view(f"u{size}").reshape(-1, v.shape[-1])
    npix = int(np.prod(spec.tile))
    kind = KINDS[spec.algorithm]
    bound = rice_bound(npix, spec.blocksize, size) if kind == 0 else size * npix
    if out.nbytes < bound:
        out = np.empty(bound, np.uint8)  # a tile larger than the caller's buffer
    ip = np.array([spec.tile[-1], 0, kind, spec.blocksize, bound], np.int64)
    lead = np.array(v.shape[:-1], np.int64)
    tlead = np.array(spec.tile[:-1], np.int64)
    offsets = _row_offsets(spec.shape, starts, v.shape)
    sub = [-(-b // t) for b, t in zip(v.shape, spec.tile, strict=True)]
    first = np.array([s // t for s, t in zip(starts, spec.tile, strict=True)], np.int64)
    idx = np.indices(sub, dtype=np.int64).reshape(len(sub), -1) + first[:, None]
    rows = np.ravel_multi_index(tuple(idx), spec.grid).astype(np.int64)
    n = rows.size
    data, total, k = np.zeros(n, np.int64), np.zeros(1, np.uint64), 0
    while k < n:
        ip[1], total[0] = k, 0
        stop, end = int_tiles(x, ip, lead, tlead, offsets, spec.storage.flip, out, 0, data, total)
        sizes = np.zeros((stop - k, 2), np.int64)
        sizes[:, 0] = data[k:stop]
        if spec.algorithm in ("RICE_1", "NOCOMPRESS"):
            pieces = [memoryview(out)[:end]]
        else:
            pieces = _deflate(spec, out, data[k:stop], sizes)
        zeros = np.zeros(stop - k)
        yield Batch(rows[k:stop], sizes, zeros, zeros.copy(), pieces, _fold(int(total[0])))
        k = stop


def _deflate(spec: TileSpec, out: np.ndarray, lengths: np.ndarray, sizes: np.ndarray) -> list:
    """Each tile's bytes in ``out`` deflated in gzip framing (31), as cfitsio writes."""
    pieces, at = [], 0
    for i, m in enumerate(lengths):
        z = zlib.compressobj(spec.gzip_level, zlib.DEFLATED, 31)
        piece = z.compress(out[at : at + m]) + z.flush()
        at += m
        sizes[i, 0] = len(piece)
        pieces.append(piece)
    return pieces
