"""Tile codecs of the tiled image convention: compressed bytes of one tile → its values.

RICE_1 and PLIO_1 are Numba loops that check every read (:mod:`dfits.kernels.rice`,
:mod:`dfits.kernels.plio`; they release the GIL); GZIP_1/GZIP_2 use ``zlib`` (which releases
the GIL too), bounded so that a tile never inflates past the size its pixels can take.
HCOMPRESS_1 has no maintained Python decoder outside astropy's private extension: it is a Numba
port of cfitsio's reader (:mod:`dfits.kernels.hcompress`), checked against astropy and funpack.

Every failure is a :class:`TileError` with the reason; the reader adds the file, HDU, tile
and algorithm. Nothing here knows files or dask.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from dfits.kernels.hcompress import hcompress_decode
from dfits.kernels.plio import plio_decode
from dfits.kernels.rice import rice_decode

__all__ = ["Codec", "TileError", "decode_tile"]


class TileError(ValueError):
    """A tile's bytes do not decode (corrupt, truncated, or of the wrong size)."""


@dataclass(frozen=True)
class Codec:
    """How one image's tiles are encoded (from its :class:`~dfits.format.tiles.TileLayout`)."""

    algorithm: str
    zbitpix: int
    blocksize: int = 32
    bytepix: int = 4
    quantised: bool = False
    smooth: int = 0


def decode_tile(
    codec: Codec, data: np.ndarray, npix: int, shape: tuple[int, ...] | None = None
) -> np.ndarray:
    """The ``npix`` values of one tile, 1-D.

    Integers come back in native order (Rice, PLIO, HCOMPRESS) or big-endian (gzip,
    NOCOMPRESS: the bytes as stored); lossless floats big-endian. Which integer width gzip
    tiles hold is read from their decompressed size, as cfitsio and astropy do. HCOMPRESS
    needs the tile's ``shape`` (numpy order), which its stream must match.
    """
    algorithm = codec.algorithm
    if algorithm == "RICE_1":
        return _rice(codec, data, npix)
    if algorithm == "HCOMPRESS_1":
        out = hcompress_decode(data, (npix,) if shape is None else shape, codec.smooth)
        if isinstance(out, str):
            raise TileError(out)
        return out
    if algorithm == "PLIO_1":
        words = np.frombuffer(data.tobytes(), ">i2").astype(np.int16)
        out = plio_decode(words, npix)
        if out is None:
            raise TileError("the PLIO line list is malformed (its length or an instruction)")
        return out
    if algorithm in ("GZIP_1", "GZIP_2"):
        raw = _inflate(data, npix * 8)
        if algorithm == "GZIP_2":
            size = len(raw) // max(npix, 1)
            if size * npix == len(raw) and size > 1:
                raw = np.frombuffer(raw, np.uint8).reshape(size, npix).T.tobytes()
        return _typed(codec, raw, npix, lossless=not codec.quantised)
    if algorithm == "NOCOMPRESS":
        return _typed(codec, data.tobytes(), npix, lossless=not codec.quantised)
    raise TileError(f"no decoder for {algorithm} (dfits does not decode it yet)")


def raw_tile(codec: Codec, data: np.ndarray, npix: int, gzipped: bool) -> np.ndarray:
    """The values of a fallback tile: UNCOMPRESSED_DATA, or GZIP_COMPRESSED_DATA inflated."""
    raw = _inflate(data, npix * 8) if gzipped else data.tobytes()
    return _typed(codec, raw, npix, lossless=True)


def _rice(codec: Codec, data: np.ndarray, npix: int) -> np.ndarray:
    if codec.bytepix not in (1, 2, 4):
        raise TileError(f"RICE_1 with BYTEPIX = {codec.bytepix} is not defined")
    out = rice_decode(data, npix, codec.blocksize, codec.bytepix)
    if isinstance(out, str):
        raise TileError(out)
    return out


def _inflate(data: np.ndarray, limit: int) -> bytes:
    """gzip (or zlib) bytes inflated, refusing to produce more than ``limit`` bytes."""
    d = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
    try:
        raw = d.decompress(data.tobytes(), limit + 1)
    except zlib.error as err:
        raise TileError(f"the gzip stream is corrupt: {err}") from err
    if len(raw) > limit:
        raise TileError(f"the gzip stream inflates past {limit} bytes, more than the tile holds")
    if not d.eof:
        raise TileError("the gzip stream is truncated")
    return raw


def _typed(codec: Codec, raw: bytes, npix: int, lossless: bool) -> np.ndarray:
    """Big-endian values of a tile's bytes, their width told by the tile's byte count."""
    nbytes = len(raw)
    floating = codec.zbitpix < 0 and lossless
    if npix and nbytes == npix * 8:
        dtype = ">f8" if floating else ">i8"
    elif npix and nbytes == npix * 4:
        dtype = ">f4" if floating else ">i4"
    elif npix and nbytes == npix * 2:
        dtype = ">i2"
    elif nbytes == npix:
        dtype = "u1"
    else:
        raise TileError(f"{nbytes} bytes decoded, which is no whole number of {npix} values")
    return np.frombuffer(raw, dtype)
