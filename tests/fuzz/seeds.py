"""Seed files for the mutation fuzzer: generated files of every kind dfits reads, plus the
small uncompressed files of the shared corpus.

The generated seeds are written by astropy into memory, so they are valid FITS by
construction and cover every BITPIX, scaling (BSCALE/BZERO, unsigned and int8 offsets),
BLANK, several extensions, binary and ASCII tables and tile-compressed images. Seeds are
returned in a fixed order, so that case ``k`` of seed ``S`` is the same file everywhere.
:func:`extended_seeds` adds, for the extended profile only (the default profile's cases stay
the same), files whose scaling cards issue 51's mutations aim at: a GZIP_1 integer image
(the escape's kind), a scaled integer compressed image with BLANK, and a binary table with
TSCALn/TZEROn/TNULLn columns between two images.
"""

from __future__ import annotations

import functools
import io
import os
import warnings
from pathlib import Path

import numpy as np

from tests.format.checks import CORPUS

__all__ = ["corpus_dir", "extended_seeds", "seeds"]

#: corpus files above this size are left out: mutating them costs time and finds nothing new
_MAX_SEED_BYTES = 256 * 1024


def corpus_dir() -> Path | None:
    """The shared corpus (``DFITS_CORPUS`` overrides the checkout-relative default)."""
    for candidate in (os.environ.get("DFITS_CORPUS"), CORPUS, Path("/work/shared/corpus")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def _to_bytes(hdus: list) -> bytes:
    from astropy.io import fits

    buf = io.BytesIO()
    fits.HDUList(hdus).writeto(buf)
    return buf.getvalue()


def _images() -> dict[str, bytes]:
    from astropy.io import fits

    rng = np.random.default_rng(7)
    out = {}
    for dtype in ("uint8", "int16", "int32", "int64", "float32", "float64"):
        values = (rng.normal(0, 50, (6, 7)) + 60).astype(dtype)
        out[f"image-{dtype}"] = _to_bytes([fits.PrimaryHDU(values)])
    for dtype in ("uint16", "uint32", "uint64", "int8"):
        values = np.arange(24, dtype=dtype).reshape(2, 3, 4)
        out[f"image-{dtype}"] = _to_bytes([fits.PrimaryHDU(values)])
    scaled = fits.PrimaryHDU(np.arange(30, dtype=np.int16).reshape(5, 6))
    scaled.header["BSCALE"], scaled.header["BZERO"], scaled.header["BLANK"] = 0.5, 10.0, 7
    out["image-scaled-blank"] = _to_bytes([scaled])
    blank8 = fits.PrimaryHDU(np.arange(200, 230, dtype=np.uint8).reshape(5, 6))
    blank8.header["BLANK"] = 210
    out["image-u8-blank"] = _to_bytes([blank8])
    cube = np.linspace(-1, 1, 4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    cube[1, 2, 3] = np.nan
    out["multi-ext"] = _to_bytes(
        [
            fits.PrimaryHDU(),
            fits.ImageHDU(cube, name="SCI"),
            fits.ImageHDU(np.arange(12, dtype=">i4").reshape(3, 4), name="DQ"),
        ]
    )
    return out


def _tables() -> dict[str, bytes]:
    from astropy.io import fits

    cols = [
        fits.Column("A", "J", array=np.arange(5)),
        fits.Column("B", "D", array=np.linspace(0, 1, 5)),
        fits.Column("C", "8A", array=np.array(["a", "bb", "ccc", "", "e"])),
        fits.Column("V", "PJ()", array=[np.arange(i) for i in range(5)]),
    ]
    ascii_cols = [
        fits.Column("X", "I6", array=np.arange(4)),
        fits.Column("Y", "E12.4", array=np.linspace(0, 2, 4)),
    ]
    return {
        "bintable": _to_bytes([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]),
        "ascii-table": _to_bytes([fits.PrimaryHDU(), fits.TableHDU.from_columns(ascii_cols)]),
    }


def _compressed() -> dict[str, bytes]:
    from astropy.io import fits

    values = np.arange(16 * 20, dtype=np.int16).reshape(16, 20)
    floats = np.linspace(0, 1, 16 * 20, dtype=np.float32).reshape(16, 20)
    return {
        "rice": _to_bytes([fits.PrimaryHDU(), fits.CompImageHDU(values, tile_shape=(8, 20))]),
        "gzip-float": _to_bytes(
            [fits.PrimaryHDU(), fits.CompImageHDU(floats, compression_type="GZIP_1")]
        ),
    }


def _aimed() -> dict[str, bytes]:
    from astropy.io import fits

    ints = np.arange(12 * 10, dtype=np.int16).reshape(12, 10) - 60
    scaled = fits.CompImageHDU(ints, compression_type="RICE_1", tile_shape=(4, 10))
    scaled.header["BSCALE"], scaled.header["BZERO"], scaled.header["BLANK"] = 0.5, 3.0, -60
    cols = [
        fits.Column("S", "J", array=np.arange(6)),
        fits.Column("N", "I", array=np.array([1, -1, 3, -1, 5, 6]), null=-1),
        fits.Column("U", "I", array=np.arange(6, dtype=np.uint16) + 40000),
        fits.Column("F", "E", array=np.linspace(0, 1, 6)),
    ]
    table = fits.BinTableHDU.from_columns(cols, name="SCALED")
    # astropy scales S's values back on writing: the cards go in after (TSCAL1/TZERO1)
    table.header.insert("TFORM1", ("TZERO1", 1.0), after=True)
    table.header.insert("TFORM1", ("TSCAL1", 2.0), after=True)
    table.header.insert("TFORM3", ("TZERO3", 32768), after=True)  # unsigned
    return {
        "gzip-int": _to_bytes(
            [fits.PrimaryHDU(), fits.CompImageHDU(ints, compression_type="GZIP_1")]
        ),
        "rice-scaled-blank": _to_bytes([fits.PrimaryHDU(), scaled]),
        "image-table-image": _to_bytes(
            [
                fits.PrimaryHDU(ints),
                table,
                fits.ImageHDU(ints.astype(np.float32), name="AFTER"),
            ]
        ),
    }


@functools.cache
def extended_seeds() -> tuple[tuple[str, bytes], ...]:
    """The seeds of the extended profile: :func:`seeds`, then the aimed ones."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return seeds() + tuple(_aimed().items())


def _corpus() -> dict[str, bytes]:
    root = corpus_dir()
    if root is None:
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in (".fits", ".fit", ".fz"):
            continue
        if path.is_file() and path.stat().st_size <= _MAX_SEED_BYTES:
            out[f"corpus/{path.relative_to(root)}"] = path.read_bytes()
    return out


@functools.cache
def seeds() -> tuple[tuple[str, bytes], ...]:
    """Every seed as ``(name, bytes)``, generated ones first, in a fixed order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = {**_images(), **_tables(), **_compressed(), **_corpus()}
    return tuple(found.items())
