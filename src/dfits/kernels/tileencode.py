"""One tile's values → its compressed bytes: the encoders of the tiled image convention.

The contract: :func:`encode_tile` takes one tile's native values (C order: FITS axis 1
fastest) and returns ``(compressed, fallback, zscale, zzero)``; :func:`encode_block` encodes
a block's tiles in batches. Integers are stored losslessly (RICE_1 through
:mod:`dfits.kernels.riceencode`, cfitsio's coder byte for byte; GZIP_1 and GZIP_2, the latter
with the bytes of each value shuffled by significance, through ``zlib`` in gzip format;
NOCOMPRESS as the big-endian bytes). Floats are quantised to 32-bit integers first: ZSCALE is
the tile's noise (cfitsio's "noise3", the median of ``|2 v[i] - v[i-2] - v[i+2]|`` × 0.6052697
over rows) divided by the level, ZZERO cfitsio's zero point (levels just above the reserved
values with NaN or SUBTRACTIVE_DITHER_2, else from 0); then ``q = rint((x - ZZERO) /
ZSCALE + r - 0.5)`` with ``r`` the convention's subtractive dither (the sequence
:mod:`dfits.kernels.dequantize` reads back with), NaN as -2147483647 (ZBLANK) and, for
SUBTRACTIVE_DITHER_2, an exact 0.0 as -2147483646. A float tile that cannot be quantised (no
noise: constant or too few pixels; infinities; a range wider than 32-bit integers) is stored
exactly, gzipped, as ``fallback`` (GZIP_COMPRESSED_DATA), as cfitsio does. Lossless floats
(level 0) are stored as their big-endian bytes, compressed. Quantised floats whose tiles span
at most the last two axes are encoded a block at a time by one kernel call
(:mod:`dfits.kernels.floattiles`), the others (and single tiles) by the same kernel, one tile
a call. Nothing here knows files or dask.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dfits.format.ztable import TileSpec
from dfits.kernels._cache import entry
from dfits.kernels.dequantize import random_table
from dfits.kernels.floattiles import dither_into, noise_of, quantise_tiles
from dfits.kernels.hencode import hcompress_encode
from dfits.kernels.plioencode import plio_encode
from dfits.kernels.riceencode import rice_encode

__all__ = ["Batch", "encode_block", "encode_tile", "noise3", "quantize_tile", "tile_regions"]

_N_RANDOM = 10000


_dither = entry(dither_into)
_noise = entry(noise_of)
#: the float kernel's form of each algorithm's levels (:mod:`dfits.kernels.floattiles`)
_KINDS = {"RICE_1": 0, "GZIP_1": 1, "NOCOMPRESS": 1, "GZIP_2": 2, "HCOMPRESS_1": 3}


def quantize_tile(
    x: np.ndarray, scale: float, zero: float, method: int, row: int, dither0: int
) -> np.ndarray:
    """The int32 levels of the float tile ``x`` (1-D) in table row ``row`` (0-based)."""
    values, starts = random_table()
    q = np.empty(x.size, np.int32)
    iseed = (row + dither0 - 1) % _N_RANDOM
    _dither(x, q, float(scale), float(zero), int(method), int(iseed), values, starts)
    return q


def noise3(tile: np.ndarray) -> float:
    """cfitsio's noise3 of a tile (rows along the last axis): 0.0 when it has none."""
    rows = np.ascontiguousarray(tile, np.float64).reshape(-1, tile.shape[-1])
    return float(_noise(rows.reshape(-1), rows.shape[0], rows.shape[1]))


def _gzip(raw: bytes, level: int) -> bytes:
    z = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: gzip framing, as cfitsio writes
    return z.compress(raw) + z.flush()


def _compress(spec: TileSpec, stored: np.ndarray, width: int) -> bytes:
    """Compressed bytes of stored values (signed native integers, or floats; 1-D, the
    tile's rows of ``width`` values one after the other)."""
    algorithm = spec.algorithm
    if algorithm == "RICE_1":
        return rice_encode(stored, spec.blocksize)
    if algorithm == "HCOMPRESS_1":
        # 2-D tiles (leading axes of length 1): rows of the tile's last axis
        return hcompress_encode(stored.reshape(-1, width), spec.hscale)
    if algorithm == "PLIO_1":
        # big-endian words, as the standard stores a 1PI column
        return plio_encode(stored).astype(">i2").tobytes()
    # the standard stores GZIP/NOCOMPRESS tile bytes big-endian: one swap per tile, on write
    big = stored.astype(stored.dtype.newbyteorder(">"), copy=False).tobytes()
    if algorithm == "NOCOMPRESS":
        return big
    if algorithm == "GZIP_2" and stored.itemsize > 1:
        # most significant bytes of every value first, then the next: long runs to deflate
        big = np.frombuffer(big, np.uint8).reshape(-1, stored.itemsize).T.tobytes()
    return _gzip(big, spec.gzip_level)


def _stored_integers(spec: TileSpec, values: np.ndarray) -> np.ndarray:
    """Native values as the stored integers (the top bit flipped for BZERO offsets)."""
    size = abs(spec.storage.bitpix) // 8
    v = np.ascontiguousarray(values, dtype=spec.storage.native).reshape(-1)
    flip = spec.storage.flip
    if flip:
        v = v.view(f"u{size}") ^ np.array(flip, f"u{size}")
    return v.view("u1" if size == 1 else f"i{size}")


def encode_tile(spec: TileSpec, values: np.ndarray, row: int) -> tuple[bytes, bytes, float, float]:
    """``(compressed, fallback, zscale, zzero)`` of the tile in table row ``row``."""
    if spec.storage.bitpix > 0:
        return _compress(spec, _stored_integers(spec, values), values.shape[-1]), b"", 0.0, 0.0
    x = np.ascontiguousarray(values, dtype=spec.storage.native)
    if not spec.quantised:
        return _compress(spec, x.reshape(-1), x.shape[-1]), b"", 0.0, 0.0
    # one tile of the block kernel: its rows along the last axis, as every tile's
    width = x.shape[-1] if x.ndim else 1
    x3 = x.reshape(1, -1, width)
    out = np.empty(_bound(x3.size), np.uint8)
    (batch,) = _float_runs(spec, x3, x3.shape[1:], np.array([row], np.int64), out)
    data = b"".join(bytes(p) for p in batch.pieces)
    if batch.sizes[0, 1]:
        return b"", data, 0.0, 0.0
    return data, b"", float(batch.scale[0]), float(batch.zero[0])


@dataclass(frozen=True)
class Batch:
    """Tiles encoded in a row: table ``rows``, ``sizes`` (compressed, fallback bytes), ZSCALE,
    ZZERO, and their bytes in heap order as ``pieces`` (views into the caller's buffer among
    them: valid until the next batch is asked for)."""

    rows: np.ndarray
    sizes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray
    pieces: list
    #: quantised floats: the ones'-complement sum of the tiles' values as an uncompressed
    #: image stores them (each on a word boundary, so wherever they lie); None otherwise
    stored_sum: int | None = None


def tile_regions(spec: TileSpec, starts: tuple[int, ...], block: tuple[int, ...]):
    """``(table row, region of the block)`` of every tile in a block at ``starts``, in the
    table's order."""
    first = [s // t for s, t in zip(starts, spec.tile, strict=True)]
    sub = [-(-b // t) for b, t in zip(block, spec.tile, strict=True)]
    for idx in np.ndindex(*sub):
        region = tuple(
            slice(i * t, min((i + 1) * t, b)) for i, t, b in zip(idx, spec.tile, block, strict=True)
        )
        tile = tuple(f + i for f, i in zip(first, idx, strict=True))
        yield int(np.ravel_multi_index(tile, spec.grid)), region


def _table_rows(spec: TileSpec, starts: tuple[int, ...], block: tuple[int, ...]) -> np.ndarray:
    """The table rows of a block's tiles, in the table's (C) order."""
    sub = [-(-b // t) for b, t in zip(block, spec.tile, strict=True)]
    first = np.array([s // t for s, t in zip(starts, spec.tile, strict=True)])
    idx = np.indices(sub).reshape(len(sub), -1) + first[:, None]
    return np.ravel_multi_index(tuple(idx), spec.grid).astype(np.int64)


def encode_block(
    spec: TileSpec, block: np.ndarray, starts: tuple[int, ...], out: np.ndarray
) -> Iterator[Batch]:
    """The tiles of a block (whole tiles, at ``starts``) as batches of about ``out``'s size.

    Quantised floats whose tiles span the last two axes at most go through the block kernel
    (:mod:`dfits.kernels.floattiles`: no Python per tile); other tiles one by one through
    :func:`encode_tile`. A tile whose values the algorithm cannot hold raises ``ValueError``
    naming it.
    """
    v = np.asarray(block)
    if spec.storage.bitpix < 0 and spec.quantised and all(t == 1 for t in spec.tile[:-2]):
        # a copy only for a chunk that is not native and contiguous (the kernel's one form)
        x = np.ascontiguousarray(v, dtype=spec.storage.native)
        x3 = x.reshape(-1, *x.shape[-2:]) if x.ndim > 1 else x.reshape(1, 1, -1)
        tile = spec.tile[-2:] if x.ndim > 1 else (1, spec.tile[-1])
        yield from _float_runs(spec, x3, tile, _table_rows(spec, starts, v.shape), out)
        return
    rows, sizes, scale, zero, pieces, held = [], [], [], [], [], 0
    for row, region in tile_regions(spec, starts, v.shape):
        try:
            data, fallback, s, z = encode_tile(spec, v[region], row)
        except ValueError as err:  # values the algorithm cannot hold (PLIO's range)
            raise ValueError(f"tile {row + 1}: {err}") from err
        rows.append(row)
        sizes.append((len(data), len(fallback)))
        scale.append(s)
        zero.append(z)
        pieces += [data, fallback]
        held += len(data) + len(fallback)
        if held >= out.nbytes:
            yield _batch(rows, sizes, scale, zero, pieces)
            rows, sizes, scale, zero, pieces, held = [], [], [], [], [], 0
    if rows:
        yield _batch(rows, sizes, scale, zero, pieces)


def _batch(rows, sizes, scale, zero, pieces) -> Batch:
    return Batch(np.array(rows, np.int64), np.array(sizes, np.int64).reshape(-1, 2),
                 np.array(scale, np.float64), np.array(zero, np.float64), pieces)  # fmt: skip


def _bound(npix: int) -> int:
    # the float kernel's room for one tile (floattiles: RICE_1 with every block raw)
    return 5 * npix + 64


def _float_runs(
    spec: TileSpec, x3: np.ndarray, tile: tuple[int, int], rows: np.ndarray, out: np.ndarray
) -> Iterator[Batch]:
    """Batches of a 3-D block's quantised float tiles from the block kernel."""
    ty, tx = tile
    if out.nbytes < _bound(ty * tx):
        out = np.empty(_bound(ty * tx), np.uint8)  # a tile larger than the caller's buffer
    kind = _KINDS[spec.algorithm]
    ip = np.array([ty, tx, 0, kind, spec.blocksize, spec.method, spec.dither0], np.int64)
    n = rows.size
    data, scale, zero = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    values, starts = random_table()
    total = np.zeros(1, np.uint64)
    k = 0
    while k < n:
        ip[2], total[0] = k, 0
        stop, end, exact = quantise_tiles(
            x3, ip, float(spec.level), rows, out, 0, data, scale, zero, values, starts, total
        )
        sizes = np.zeros((stop + exact - k, 2), np.int64)
        pieces = _finish(spec, out, data, k, stop, end, _widths(x3.shape, tile), sizes)
        if exact:
            fallback = _exact(spec, x3, tile, stop)
            sizes[-1, 1] = len(fallback)
            pieces.append(fallback)
        nxt = stop + int(exact)
        yield Batch(rows[k:nxt], sizes, scale[k:nxt], zero[k:nxt], pieces, _fold(total[0]))
        k = nxt


def _widths(shape: tuple[int, ...], tile: tuple[int, int]) -> np.ndarray:
    """Each tile's width, in the kernel's order (tiles at the right edge are narrower)."""
    gy, gx = -(-shape[1] // tile[0]), -(-shape[2] // tile[1])
    w = np.minimum(tile[1], shape[2] - np.arange(gx) * tile[1])
    return np.tile(w, shape[0] * gy)


def _fold(total: np.uint64) -> int:
    s = int(total)
    while s > 0xFFFFFFFF:
        s = (s & 0xFFFFFFFF) + (s >> 32)
    return s


def _finish(spec, out, data, k, stop, end, widths, sizes) -> list:
    """The heap pieces of tiles ``k:stop`` whose levels the kernel left in ``out[:end]``."""
    if spec.algorithm == "RICE_1":
        sizes[: stop - k, 0] = data[k:stop]
        return [memoryview(out)[:end]]
    pieces, at = [], 0
    for i in range(k, stop):
        raw = out[at : at + data[i]]
        at += data[i]
        if spec.algorithm == "HCOMPRESS_1":
            piece = hcompress_encode(raw.view(np.int32).reshape(-1, widths[i]), spec.hscale)
        elif spec.algorithm == "NOCOMPRESS":
            piece = raw.tobytes()
        else:
            piece = _gzip(raw, spec.gzip_level)
        sizes[i - k, 0] = len(piece)
        pieces.append(piece)
    return pieces


def _exact(spec: TileSpec, x3: np.ndarray, tile: tuple[int, int], k: int) -> bytes:
    """Tile ``k`` of a 3-D block stored exact: its big-endian values, gzipped."""
    ty, tx = tile
    gy, gx = -(-x3.shape[1] // ty), -(-x3.shape[2] // tx)
    p, rest = divmod(k, gy * gx)
    y0, x0 = (rest // gx) * ty, (rest % gx) * tx
    values = x3[p, y0 : y0 + ty, x0 : x0 + tx]
    # an unquantisable tile is stored exact, big-endian as the standard says
    return _gzip(values.astype(values.dtype.newbyteorder(">")).tobytes(), spec.gzip_level)
