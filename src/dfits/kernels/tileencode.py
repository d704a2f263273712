"""One tile's values → its compressed bytes: the encoders of the tiled image convention.

The contract: :func:`encode_tile` takes one tile's native values (C order: FITS axis 1
fastest) and returns ``(compressed, fallback, zscale, zzero)``. Integers are stored losslessly
(RICE_1 through imagecodecs' ``rcomp_encode``, cfitsio's coder; GZIP_1 and GZIP_2, the latter
with the bytes of each value shuffled by significance, through ``zlib`` in gzip format;
NOCOMPRESS as the big-endian bytes). Floats are quantised to 32-bit integers first: ZSCALE is
the tile's noise (cfitsio's "noise3", the median of ``|2 v[i] - v[i-2] - v[i+2]|`` × 0.6052697
over rows) divided by the level, ZZERO the middle of its range; then ``q = rint((x - ZZERO) /
ZSCALE + r - 0.5)`` with ``r`` the convention's subtractive dither (the sequence
:mod:`dfits.kernels.dequantize` reads back with), NaN as -2147483647 (ZBLANK) and, for
SUBTRACTIVE_DITHER_2, an exact 0.0 as -2147483646. A float tile that cannot be quantised (no
noise: constant or too few pixels; infinities; a range wider than 32-bit integers) is stored
exactly, gzipped, as ``fallback`` (GZIP_COMPRESSED_DATA), as cfitsio does. Lossless floats
(level 0) are stored as their big-endian bytes, compressed. Nothing here knows files or dask.
"""

from __future__ import annotations

import zlib

import numpy as np

from dfits.format.ztable import TileSpec
from dfits.kernels._cache import entry
from dfits.kernels._compile import inline
from dfits.kernels.dequantize import random_table
from dfits.kernels.hencode import hcompress_encode
from dfits.kernels.plioencode import plio_encode

__all__ = ["encode_tile", "noise3", "quantize_tile"]

_N_RANDOM = 10000
_RESERVED = 10  # integers at the bottom of int32 kept for NULL_VALUE, ZERO_VALUE and others
_LIMIT = 2.0 * (2147483647 - _RESERVED) - 4.0  # widest range of levels that fits


@inline
def _dither_body(x, q, scale, zero, method, iseed, values, starts):
    nextrand = starts[iseed]
    for i in range(x.size):
        v = np.float64(x[i])
        if np.isnan(v):
            q[i] = -2147483647  # NULL_VALUE of dfits.format.ztable, the ZBLANK written
        elif method == 2 and v == 0.0:
            q[i] = -2147483646
        elif method > 0:
            q[i] = np.int32(np.rint((v - zero) / scale + np.float64(values[nextrand]) - 0.5))
        else:
            q[i] = np.int32(np.rint((v - zero) / scale))
        if method > 0:
            # the sequence advances on every pixel, NaN or not, as the readers' does
            nextrand += 1
            if nextrand == 10000:
                iseed += 1
                if iseed == 10000:
                    iseed = 0
                nextrand = starts[iseed]


_dither = entry(_dither_body)


def quantize_tile(
    x: np.ndarray, scale: float, zero: float, method: int, row: int, dither0: int
) -> np.ndarray:
    """The int32 levels of the float tile ``x`` (1-D) in table row ``row`` (0-based)."""
    values, starts = random_table()
    q = np.empty(x.size, np.int32)
    iseed = (row + dither0 - 1) % _N_RANDOM
    _dither(x, q, float(scale), float(zero), int(method), int(iseed), values, starts)
    return q


@inline
def _stats_body(rows, meds, out):
    # one pass per row: the range and count of the non-NaN values, and the median of
    # |2 v[i] - v[i-2] - v[i+2]| over its finite values v (NaN when fewer than 5: cfitsio's
    # FnNoise3 skips such rows)
    nrow, n = rows.shape
    v = np.empty(n, np.float64)
    d = np.empty(max(n - 4, 1), np.float64)
    lo, hi, count = np.inf, -np.inf, 0
    for r in range(nrow):
        k = 0
        for i in range(n):
            x = np.float64(rows[r, i])
            if np.isnan(x):
                continue
            lo, hi, count = min(lo, x), max(hi, x), count + 1
            if np.isfinite(x):
                v[k] = x
                k += 1
        if k < 5:
            meds[r] = np.nan
            continue
        for i in range(2, k - 2):
            d[i - 2] = abs(2.0 * v[i] - v[i - 2] - v[i + 2])
        meds[r] = np.median(d[: k - 4])
    out[0], out[1], out[2] = lo, hi, count


_stats = entry(_stats_body)


def _tile_stats(tile: np.ndarray) -> tuple[float, float, int, float]:
    """``(min, max, count)`` of a tile's non-NaN values and its noise3 (0.0 when none)."""
    rows = np.ascontiguousarray(tile).reshape(-1, tile.shape[-1])
    meds, out = np.empty(rows.shape[0], np.float64), np.empty(3, np.float64)
    _stats(rows, meds, out)
    good = meds[~np.isnan(meds)]
    if good.size == 0 and rows.shape[0] > 1:
        # rows too short on their own: joined into one, as cfitsio does
        _stats(rows.reshape(1, -1), meds[:1], np.empty(3, np.float64))
        good = meds[:1][~np.isnan(meds[:1])]
    noise = 0.6052697 * float(np.median(good)) if good.size else 0.0
    return float(out[0]), float(out[1]), int(out[2]), noise


def noise3(tile: np.ndarray) -> float:
    """cfitsio's noise3 of a tile (rows along the last axis): 0.0 when it has none."""
    return _tile_stats(tile)[3]


def _scaling(tile: np.ndarray, level: float) -> tuple[float, float] | None:
    """ZSCALE and ZZERO of a float tile, or None when it must be stored exactly."""
    lo, hi, count, noise = _tile_stats(tile)
    if count == 0:
        return 1.0, 0.0  # all NaN: every level is ZBLANK, any scale will do
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    delta = -level if level < 0 else noise / level
    if not delta > 0 or (hi - lo) / delta > _LIMIT:
        return None
    return delta, (lo + hi) / 2


def _gzip(raw: bytes, level: int) -> bytes:
    z = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: gzip framing, as cfitsio writes
    return z.compress(raw) + z.flush()


def _compress(spec: TileSpec, stored: np.ndarray, width: int) -> bytes:
    """Compressed bytes of stored values (signed native integers, or floats; 1-D, the
    tile's rows of ``width`` values one after the other)."""
    algorithm = spec.algorithm
    if algorithm == "RICE_1":
        import imagecodecs

        return bytes(imagecodecs.rcomp_encode(stored, nblock=spec.blocksize))
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
    scaling = _scaling(x, spec.level)
    if scaling is None:
        # an unquantisable tile is stored exact, big-endian as the standard says
        exact = x.reshape(-1).astype(x.dtype.newbyteorder(">")).tobytes()
        return b"", _gzip(exact, spec.gzip_level), 0.0, 0.0
    scale, zero = scaling
    q = quantize_tile(x.reshape(-1), scale, zero, spec.method, row, spec.dither0)
    return _compress(spec, q, x.shape[-1]), b"", scale, zero
