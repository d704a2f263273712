"""What a tile-compressed image that dfits writes holds: its tiles, table header and rows.

The contract: :func:`parse_compression` checks the caller's choice (algorithm, tile shape,
quantisation) against the image's shape and storage, before anything is written, and returns
a frozen :class:`TileSpec`. :func:`table_header` builds the ``ZIMAGE = T`` binary table's
header block — table keywords, Z keywords as the tiled image convention (and astropy, fpack)
write them, the caller's cards checked as :func:`~dfits.format.imagehdu.image_header` checks
them, DATASUM/CHECKSUM placeholders — and :func:`table_rows` the big-endian rows: per tile
the (bytes, heap offset) descriptors of COMPRESSED_DATA (and GZIP_COMPRESSED_DATA, which holds
the float tiles that cannot be quantised, losslessly) and ZSCALE/ZZERO of quantised floats.
Tiles are numbered in C order of the tile grid (numpy axes; FITS axis 1 fastest).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import OptionError, UnsupportedError
from dfits.format.cards import BLOCK_SIZE, END_CARD, format_card
from dfits.format.checksum import CHECKSUM_ZERO, checksum_card
from dfits.format.compressed import DEFAULT_NAME
from dfits.format.imagehdu import Storage, UserCard, kept_cards
from dfits.format.tiles import QUANTIZE_METHODS

__all__ = ["COMPRESSIONS", "NULL_VALUE", "TileSpec", "parse_compression", "table_header",
           "table_rows"]  # fmt: skip

#: The algorithms dfits writes.
COMPRESSIONS = ("RICE_1", "GZIP_1", "GZIP_2", "PLIO_1", "HCOMPRESS_1", "NOCOMPRESS")
#: The stored integer of a NaN in quantised float tiles (cfitsio's, written as ZBLANK).
NULL_VALUE = -2147483647
_MAX_DESCRIPTOR = 2**31 - 1
# a caller's table or compression keywords would contradict the ones written here
_Z_OWNED = re.compile(
    r"Z(IMAGE|CMPTYPE|BITPIX|NAXIS\d*|TILE\d+|NAME\d+|VAL\d+|QUANTIZ|DITHER0|BLANK|SIMPLE|"
    r"TENSION|EXTEND|PCOUNT|GCOUNT|HECKSUM|DATASUM|MASKCMP|SCALE|ZERO|BLOCKED)|"
    r"T(TYPE|FORM|UNIT|NULL|SCAL|ZERO|DISP|DIM|BCOL)\d+|TFIELDS|THEAP"
)


@dataclass(frozen=True)
class TileSpec:
    """How one image is tiled and encoded.

    Attributes
    ----------
    algorithm : str
        One of :data:`COMPRESSIONS`.
    shape, tile : tuple of int
        The image's and a whole tile's shape, numpy order.
    storage : Storage
        How the image's values are stored (ZBITPIX; the top-bit flip and BZERO of unsigned).
    level : float
        Floats: 0 for lossless; > 0: ZSCALE = noise / level per tile; < 0: ZSCALE = -level.
    method : int
        Dither of quantised floats: -1 (NO_DITHER), 1 or 2 (SUBTRACTIVE_DITHER_1/_2).
    dither0 : int
        ZDITHER0, the first tile's dither seed (1..10000).
    blocksize : int
        RICE_1 pixels per block (ZVAL1 of ``BLOCKSIZE``: 16 or 32).
    gzip_level : int
        The deflate level of GZIP_1/GZIP_2 tiles and of the exact float tiles (1..9; 1:
        cfitsio's and fpack's ``Z_BEST_SPEED``). The file does not record it: any reader
        inflates any level.
    hscale : int
        HCOMPRESS_1's digitisation scale of the H-transform's coefficients (0: lossless).
    """

    algorithm: str
    shape: tuple[int, ...]
    tile: tuple[int, ...]
    storage: Storage
    level: float = 16.0
    method: int = 2
    dither0: int = 1
    blocksize: int = 32
    gzip_level: int = 1
    hscale: int = 0

    @property
    def quantised(self) -> bool:
        """Floats stored as dithered 32-bit integers, one ZSCALE/ZZERO per tile."""
        return self.storage.bitpix < 0 and self.level != 0

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(-(-n // t) for n, t in zip(self.shape, self.tile, strict=True))

    @property
    def ntiles(self) -> int:
        return math.prod(self.grid)

    @property
    def bytepix(self) -> int:
        """Bytes of each encoded integer (quantised floats: 4)."""
        return 4 if self.quantised else abs(self.storage.bitpix) // 8


def _tile_shape(shape: tuple[int, ...], tile: Any, what: str, algorithm: str) -> tuple[int, ...]:
    if tile is None and algorithm == "HCOMPRESS_1" and len(shape) > 1:
        # fpack's default for HCOMPRESS: 16 rows (all of a shorter image), one more while the
        # last tile would be one row (a 1-D tile, which astropy cannot decode)
        rows = min(16, shape[-2])
        while shape[-2] % rows == 1:
            rows += 1
        return (1,) * (len(shape) - 2) + (rows, shape[-1])
    if tile is None:
        # fpack's and astropy's default: one image row per tile
        return (1,) * (len(shape) - 1) + shape[-1:]
    out = tuple(int(t) for t in tile)
    if len(out) != len(shape) or any(t < 1 for t in out):
        raise OptionError(f"{what}: tile_shape {tile!r} must be {len(shape)} positive integers")
    return tuple(min(t, n) for t, n in zip(out, shape, strict=True))


def parse_compression(
    shape: tuple[int, ...], storage: Storage, what: str, *, compression: str,
    tile_shape: Any = None, quantize_level: float = 16.0,
    quantize_method: str = "SUBTRACTIVE_DITHER_2", dither_seed: int = 1,
    compression_level: int | None = None, rice_blocksize: int = 32, hcompress_scale: int = 0,
) -> TileSpec:  # fmt: skip
    """The :class:`TileSpec` of an image, or the reason it cannot be written so.

    Raises
    ------
    UnsupportedError
        An algorithm dfits does not write, RICE_1 of 64-bit integers or of lossless floats,
        an image without pixels.
    OptionError
        A bad tile shape, quantisation level, method, dither seed, compression level (GZIP
        only, 1..9) or Rice block size (16 or 32); a ``ValueError`` too.
    """
    algorithm = str(compression).upper()
    if algorithm not in COMPRESSIONS:
        raise UnsupportedError(
            f"{what}: compression {compression!r}: dfits writes {', '.join(COMPRESSIONS)}"
        )
    if not shape or math.prod(shape) == 0:
        raise UnsupportedError(f"{what}: a tile-compressed image needs pixels, not {shape}")
    level = float(quantize_level)
    if not math.isfinite(level):
        raise OptionError(f"{what}: quantize_level {quantize_level!r} must be finite")
    method = QUANTIZE_METHODS.get(str(quantize_method).upper())
    if method is None:
        raise OptionError(f"{what}: quantize_method {quantize_method!r}: one of {QUANTIZE_METHODS}")
    if isinstance(dither_seed, bool) or not 1 <= int(dither_seed) <= 10000:
        raise OptionError(f"{what}: dither_seed {dither_seed!r} must be in 1..10000")
    spec = TileSpec(algorithm, tuple(shape), _tile_shape(tuple(shape), tile_shape, what, algorithm),
                    storage, level, method, int(dither_seed),
                    _blocksize(algorithm, rice_blocksize, what),
                    _gzip_level(algorithm, compression_level, what),
                    _hscale(algorithm, hcompress_scale, what))  # fmt: skip
    if algorithm == "PLIO_1" and not 0 < storage.bitpix < 64:
        raise UnsupportedError(
            f"{what}: PLIO_1 codes integers of 8 to 32 bits (values 0..2**24-1), not "
            f"BITPIX {storage.bitpix}; use RICE_1 or GZIP_1/2"
        )
    if algorithm == "HCOMPRESS_1":
        _check_hcompress(spec, what)
    if algorithm == "RICE_1" and storage.bitpix == 64:
        raise UnsupportedError(f"{what}: RICE_1 does not encode 64-bit integers; use GZIP_1/2")
    if algorithm == "RICE_1" and storage.bitpix < 0 and level == 0:
        raise UnsupportedError(f"{what}: RICE_1 of floats needs quantisation (quantize_level≠0)")
    return spec


def _gzip_level(algorithm: str, level: Any, what: str) -> int:
    if level is None:
        return 1  # cfitsio's (fpack's) Z_BEST_SPEED
    if not algorithm.startswith("GZIP"):
        raise OptionError(f"{what}: compression_level {level!r} applies to GZIP_1/GZIP_2 only, "
                          f"not {algorithm}")  # fmt: skip
    if isinstance(level, bool) or not isinstance(level, int | np.integer) or not 1 <= level <= 9:
        raise OptionError(f"{what}: compression_level {level!r} must be an integer in 1..9")
    return int(level)


def _hscale(algorithm: str, scale: Any, what: str) -> int:
    if isinstance(scale, bool) or not isinstance(scale, int | np.integer) or scale < 0:
        raise OptionError(f"{what}: hcompress_scale {scale!r} must be an integer >= 0")
    if scale and algorithm != "HCOMPRESS_1":
        raise OptionError(f"{what}: hcompress_scale applies to HCOMPRESS_1 only, not {algorithm}")
    return int(scale)


def _check_hcompress(spec: TileSpec, what: str) -> None:
    if spec.storage.bitpix == 64:
        raise UnsupportedError(f"{what}: HCOMPRESS_1 does not encode 64-bit integers")
    if len(spec.shape) < 2 or min(spec.shape[-2:]) < 2:
        raise UnsupportedError(f"{what}: HCOMPRESS_1 codes 2-D tiles: not a {spec.shape} image")
    # every tile, the edge ones too, must be 2-D (astropy decodes no other)
    last = [n % t or t for n, t in zip(spec.shape[-2:], spec.tile[-2:], strict=True)]
    if any(t > 1 for t in spec.tile[:-2]) or min(spec.tile[-2:]) < 2 or min(last) < 2:
        raise OptionError(
            f"{what}: tile_shape {spec.tile}: HCOMPRESS_1 tiles are 2-D: only the last two "
            "axes longer than 1, and every tile (the edge ones too) at least 2 along both"
        )


def _blocksize(algorithm: str, blocksize: Any, what: str) -> int:
    if isinstance(blocksize, bool) or blocksize not in (16, 32):
        raise OptionError(f"{what}: rice_blocksize {blocksize!r} must be 16 or 32")
    if algorithm != "RICE_1" and blocksize != 32:
        raise OptionError(f"{what}: rice_blocksize applies to RICE_1 only, not {algorithm}")
    return int(blocksize)


def _columns(spec: TileSpec, heap: int, longest: tuple[int, int]) -> list[tuple[str, str]]:
    kind = "P" if heap <= _MAX_DESCRIPTOR else "Q"
    # PLIO's line lists are 16-bit words, counted in words, as cfitsio writes them
    code, size = ("I", 2) if spec.algorithm == "PLIO_1" else ("B", 1)
    cols = [("COMPRESSED_DATA", f"1{kind}{code}({longest[0] // size})")]
    if spec.quantised:
        cols += [("GZIP_COMPRESSED_DATA", f"1{kind}B({longest[1]})"), ("ZSCALE", "1D"),
                 ("ZZERO", "1D")]  # fmt: skip
    return cols


def _row_bytes(cols: list[tuple[str, str]]) -> int:
    sizes = {"P": 8, "Q": 16, "D": 8}
    return sum(sizes[form[1]] for _, form in cols)


def table_header(
    spec: TileSpec, heap: int, longest: tuple[int, int], *, cards: list[UserCard] = (),  # type: ignore[assignment]
    extname: str | None = None, checksum: bool = True, what: str = "",
    zsums: tuple[str, str] | None = None,
) -> bytes:  # fmt: skip
    """The header block of the compressed image's table, for a heap of ``heap`` bytes whose
    longest COMPRESSED_DATA and GZIP_COMPRESSED_DATA arrays are ``longest``; ``zsums``: the
    uncompressed image HDU's CHECKSUM and DATASUM, written as ZHECKSUM and ZDATASUM."""
    cols = _columns(spec, heap, longest)
    head: list[tuple[Any, ...]] = [
        ("XTENSION", "BINTABLE", "binary table extension"), ("BITPIX", 8), ("NAXIS", 2),
        ("NAXIS1", _row_bytes(cols)), ("NAXIS2", spec.ntiles), ("PCOUNT", heap), ("GCOUNT", 1),
        ("TFIELDS", len(cols)),
    ]  # fmt: skip
    for i, (name, form) in enumerate(cols, 1):
        head += [(f"TTYPE{i}", name), (f"TFORM{i}", form)]
    bitpix = spec.storage.bitpix
    head += [("ZIMAGE", True, "extension contains compressed image"), ("ZBITPIX", bitpix),
             ("ZNAXIS", len(spec.shape))]  # fmt: skip
    head += [(f"ZNAXIS{i}", n) for i, n in enumerate(reversed(spec.shape), 1)]
    head += [(f"ZTILE{i}", n) for i, n in enumerate(reversed(spec.tile), 1)]
    head += [("ZCMPTYPE", spec.algorithm, "compression algorithm")]
    if spec.algorithm == "RICE_1":
        head += [("ZNAME1", "BLOCKSIZE"), ("ZVAL1", spec.blocksize), ("ZNAME2", "BYTEPIX"),
                 ("ZVAL2", spec.bytepix)]  # fmt: skip
    if spec.algorithm == "HCOMPRESS_1":
        # cfitsio's sign: a negative SCALE is absolute (a positive one is × the tile's noise)
        head += [("ZNAME1", "SCALE"), ("ZVAL1", -float(spec.hscale) or 0.0), ("ZNAME2", "SMOOTH"),
                 ("ZVAL2", 0)]  # fmt: skip
    if spec.quantised:
        method = {v: k for k, v in QUANTIZE_METHODS.items()}[spec.method]
        head += [("ZQUANTIZ", method), ("ZDITHER0", spec.dither0), ("ZBLANK", NULL_VALUE)]
    elif bitpix < 0:
        head += [("ZQUANTIZ", "NONE", "floats stored losslessly")]
    if spec.storage.bzero is not None:
        head += [("BSCALE", 1), ("BZERO", spec.storage.bzero)]
    want = {"BITPIX": bitpix, "NAXIS": len(spec.shape)}
    want |= {f"NAXIS{i + 1}": n for i, n in enumerate(reversed(spec.shape))}
    kept = [c for c in kept_cards(cards, want, bitpix, what) if not _Z_OWNED.fullmatch(c[0])]
    if extname is not None:
        kept = [c for c in kept if c[0] != "EXTNAME"]
        head += [("EXTNAME", extname)]
    elif not any(c[0] == "EXTNAME" for c in kept):
        # astropy's CompImageHDU and fpack name an unnamed image's table so
        head += [("EXTNAME", DEFAULT_NAME, "name of this binary table extension")]
    raw = b"".join(format_card(*c) for c in head) + b"".join(c[2] for c in kept)
    if zsums is not None:
        raw += checksum_card("ZHECKSUM", zsums[0], "HDU checksum of the uncompressed image")
        raw += checksum_card("ZDATASUM", zsums[1], "data checksum of the uncompressed image")
    if checksum:
        raw += checksum_card("DATASUM", "0", "data unit checksum")
        raw += checksum_card("CHECKSUM", CHECKSUM_ZERO, "HDU checksum")
    raw += END_CARD
    return raw + b" " * (-len(raw) % BLOCK_SIZE)


def table_rows(
    spec: TileSpec, heap: int, spans: np.ndarray, fallback: np.ndarray, scale: np.ndarray,
    zero: np.ndarray,
) -> bytes:  # fmt: skip
    """The table's rows: ``spans``/``fallback`` ``(ntiles, 2)`` (bytes, heap offset) of each
    tile's COMPRESSED_DATA / GZIP_COMPRESSED_DATA, ``scale``/``zero`` its ZSCALE/ZZERO."""
    word = ">i4" if heap <= _MAX_DESCRIPTOR else ">i8"
    fields = [("c", word, (2,))]
    if spec.quantised:
        fields += [("g", word, (2,)), ("s", ">f8"), ("z", ">f8")]
    rows = np.zeros(spec.ntiles, dtype=fields)
    rows["c"] = spans
    if spec.algorithm == "PLIO_1":
        rows["c"][:, 0] //= 2  # counted in 16-bit words (1PI)
    if spec.quantised:
        rows["g"], rows["s"], rows["z"] = fallback, scale, zero
    return rows.tobytes()
