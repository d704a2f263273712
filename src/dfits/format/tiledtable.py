"""Tile-compressed binary tables (``ZTABLE = T``): the original table, from the header alone.

The contract: :func:`parse_tiled_table` takes the header of a ``ZTABLE = T`` BINTABLE and
returns a :class:`TiledTable`: the original table's header (:func:`restore_header`, as
``funpack`` restores it) and its columns (:func:`~dfits.format.columns.parse_table` on it, so
every column kind keeps the one decode), the rows of each tile, and for each column its
compression algorithm (ZCTYPn) and where its compressed cell lies in a row of the compressed
table. It reads no data.

The layout is the FITS tiled table convention (FITS 4.0, section 10.3) as cfitsio's
``fits_compress_table`` writes it (``fpack -table``):

* the original rows are cut into tiles of ZTILELEN rows (the last may be shorter); the
  compressed table has one row per tile and, for each original column ``n`` (TTYPEn kept),
  one variable-length byte cell (``1QB``, or ``1PB``) holding that column's bytes of the
  tile's rows, compressed by ZCTYPn (``GZIP_2`` when absent, as cfitsio reads it);
* before compression the column's fields are laid one after the other (column-major), the
  big-endian bytes as stored; GZIP_2 then shuffles the bytes of I, J, E, K and D elements by
  significance (all first bytes, then all second bytes, ...); RICE_1 codes the elements of B,
  I and J columns as 8-, 16- or 32-bit integers (block size 32); NOCOMPRESS stores them as
  they are;
* a variable-length (P/Q) column's cell holds, gzipped, the tile's original descriptors (as
  stored) followed by one 64-bit (length, heap offset) pair per row locating that row's
  array in the compressed table's heap, compressed on its own by ZCTYPn (GZIP_2 shuffling
  its elements by their width), or stored as it is when that is no smaller.

ZNAXIS1/ZNAXIS2/ZPCOUNT hold the original NAXIS1/NAXIS2/PCOUNT, ZFORMn the original TFORMn,
ZTHEAP (if any) the original THEAP, ZHECKSUM/ZDATASUM the original CHECKSUM/DATASUM.
Bad or contradictory keywords raise :class:`~dfits.errors.HeaderError` naming the keyword;
an algorithm the convention does not define for a column raises
:class:`~dfits.errors.UnsupportedError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfits.errors import HeaderError, UnsupportedError
from dfits.format.cards import END_CARD, format_card
from dfits.format.columns import Column, TableLayout, parse_table
from dfits.format.header import Header
from dfits.format.tform import BINARY_WIDTH, parse_binary_tform

__all__ = [
    "ALGORITHMS",
    "MAX_RATIO",
    "TiledColumn",
    "TiledTable",
    "parse_tiled_table",
    "restore_header",
    "shuffle_width",
]

#: The column compression algorithms of the convention.
ALGORITHMS = ("GZIP_1", "GZIP_2", "RICE_1", "NOCOMPRESS")
#: The most bytes one compressed byte can stand for (deflate's limit, about 1032:1; Rice's
#: is lower): a tile or a table that claims more than this is refused before any allocation.
MAX_RATIO = 1032
# the codes whose elements GZIP_2 shuffles in a fixed-width column (cfitsio's choice)
_SHUFFLED = {"I": 2, "J": 4, "E": 4, "K": 8, "D": 8}
_RICE = {"B": 1, "I": 2, "J": 4}
# keywords of the compressed table that the original table has not
_DROPPED = {"ZTABLE", "ZTILELEN", "ZNAXIS1", "ZNAXIS2", "ZPCOUNT", "ZTHEAP", "ZHEAPPTR",
            "THEAP", "CHECKSUM", "DATASUM"}  # fmt: skip
_RENAMED = {"ZHECKSUM": "CHECKSUM", "ZDATASUM": "DATASUM", "ZTHEAP": "THEAP"}


def shuffle_width(code: str, variable: bool) -> int:
    """Bytes per shuffled element under GZIP_2 (1: not shuffled) of a fixed-width column of
    ``code``, or of the arrays of a variable-length column of element ``code``.

    Examples
    --------
    >>> shuffle_width("E", False), shuffle_width("C", False), shuffle_width("C", True)
    (4, 1, 8)
    """
    if variable:
        width = BINARY_WIDTH[code] if code != "X" else 1
        return width if width in (2, 4, 8) else 1
    return _SHUFFLED.get(code, 1)


@dataclass(frozen=True)
class TiledColumn:
    """One original column and where its compressed cells are.

    Attributes
    ----------
    column : Column
        The original column (offsets in the original row).
    algorithm : str
        ZCTYPn, one of :data:`ALGORITHMS`.
    cell : int
        Byte offset of its compressed cell's descriptor in a row of the compressed table.
    cell_code : str
        ``P`` or ``Q``: the descriptor's kind (32- or 64-bit words).
    """

    column: Column
    algorithm: str
    cell: int
    cell_code: str

    @property
    def bytepix(self) -> int:
        """RICE_1: bytes per coded integer (1, 2 or 4)."""
        code = self.column.form.element or self.column.code
        return _RICE[code]


@dataclass(frozen=True)
class TiledTable:
    """A tile-compressed table: the original table and how its tiles are stored.

    It answers ``columns``, ``names``, ``nrows`` and ``find`` as the original table's
    :class:`~dfits.format.columns.TableLayout` does (``row_bytes`` and the heap are the
    compressed table's: the original's are in :attr:`table`).

    Attributes
    ----------
    header : Header
        The original table's header (:func:`restore_header`).
    table : TableLayout
        The original table's columns, row length, row count and heap.
    tile_rows : int
        ZTILELEN (at most the row count).
    ntiles : int
        Rows of the compressed table: one per tile.
    row_bytes : int
        NAXIS1 of the compressed table.
    heap_offset, heap_size : int
        Where the compressed table's heap starts (from its data's start) and its bytes.
    cells : tuple of TiledColumn
        One per original column, in order.
    """

    header: Header
    table: TableLayout
    tile_rows: int
    ntiles: int
    row_bytes: int
    heap_offset: int
    heap_size: int
    cells: tuple[TiledColumn, ...]

    # the original table's layout, as a TableLayout gives it (so a TiledTable stands for one)
    ascii = False

    @property
    def columns(self) -> tuple[Column, ...]:
        return self.table.columns

    @property
    def names(self) -> list[str]:
        return self.table.names

    @property
    def nrows(self) -> int:
        return self.table.nrows

    def find(self, name: str) -> Column | None:
        """The original column named ``name`` (as :meth:`TableLayout.find`)."""
        return self.table.find(name)

    def tiles(self, first: int, stop: int) -> range:
        """The tiles that hold rows ``first`` to ``stop``."""
        if stop <= first:
            return range(0)
        return range(first // self.tile_rows, (stop - 1) // self.tile_rows + 1)

    def rows_of(self, tile: int) -> tuple[int, int]:
        """The first row and the stop row of ``tile``."""
        first = tile * self.tile_rows
        return first, min(first + self.tile_rows, self.table.nrows)


def _int(header: Any, key: str, where: str, low: int = 0) -> int:
    value = header.get(key)
    if value is None and key in header:
        raise HeaderError(f"{where}: {key} has no value; a tile-compressed table needs it")
    if value is None:
        raise HeaderError(f"{where}: {key} missing; a tile-compressed table (ZTABLE = T) needs it")
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise HeaderError(f"{where}: {key} = {value!r} must be an integer >= {low}")
    return value


def restore_header(header: Header, where: str = "") -> Header:
    """The original table's header, as ``funpack`` restores it: NAXIS1/NAXIS2/PCOUNT from
    ZNAXIS1/ZNAXIS2/ZPCOUNT, TFORMn from ZFORMn, THEAP from ZTHEAP, CHECKSUM/DATASUM from
    ZHECKSUM/ZDATASUM, the compression keywords (ZTABLE, ZTILELEN, ZCTYPn, ...) dropped.

    Examples
    --------
    >>> cards = [("XTENSION", "BINTABLE"), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 16),
    ...     ("NAXIS2", 1), ("PCOUNT", 40), ("GCOUNT", 1), ("TFIELDS", 1), ("TTYPE1", "X"),
    ...     ("TFORM1", "1QB(40)"), ("ZTABLE", True), ("ZTILELEN", 10), ("ZNAXIS1", 8),
    ...     ("ZNAXIS2", 10), ("ZPCOUNT", 0), ("ZFORM1", "D"), ("ZCTYP1", "GZIP_2")]
    >>> h = restore_header(Header(b"".join(format_card(*c) for c in cards)))
    >>> h["NAXIS1"], h["NAXIS2"], h["TFORM1"], "ZTABLE" in h, "ZCTYP1" in h
    (8, 10, 'D', False, False)
    """
    nfields = header.get("TFIELDS")
    nfields = nfields if isinstance(nfields, int) and not isinstance(nfields, bool) else 0
    forms = {f"TFORM{n}" for n in range(1, nfields + 1)}
    zforms = {f"ZFORM{n}": f"TFORM{n}" for n in range(1, nfields + 1)}
    ctypes = {f"ZCTYP{n}" for n in range(1, nfields + 1)}
    sizes = {"NAXIS1": "ZNAXIS1", "NAXIS2": "ZNAXIS2", "PCOUNT": "ZPCOUNT"}
    out = []
    for i, card in enumerate(header.cards):
        key = card.keyword
        raw = header.card_bytes(i)
        if key in sizes:
            out.append(format_card(key, _int(header, sizes[key], where), card.comment))
        elif key in zforms or key in _RENAMED:
            new = zforms.get(key) or _RENAMED[key]
            out.append(new.ljust(8).encode() + raw[8:])
        elif key not in _DROPPED and key not in forms and key not in ctypes:
            out.append(raw)
    return Header(b"".join(out) + END_CARD)


def _algorithm(header: Header, column: Column, where: str) -> str:
    n = column.number
    value = header.get(f"ZCTYP{n}", "GZIP_2")  # cfitsio reads a missing ZCTYPn so
    name = value.strip().upper() if isinstance(value, str) else value
    at = f"{where}, column {n} ({column.name!r})"
    if name not in ALGORITHMS:
        raise UnsupportedError(
            f"{at}: ZCTYP{n} = {value!r}; tile-compressed tables use {', '.join(ALGORITHMS)}"
        )
    code = column.form.element or column.code
    if name == "RICE_1" and code not in _RICE:
        raise UnsupportedError(
            f"{at}: ZCTYP{n} = 'RICE_1' on TFORM{n} = {column.tform!r}; RICE_1 codes only "
            "B, I and J elements"
        )
    return name


def _cells(header: Header, nfields: int, row_bytes: int, where: str) -> list[tuple[int, str]]:
    """Offset and descriptor kind of each compressed cell in a row of the compressed table."""
    cells, offset = [], 0
    for n in range(1, nfields + 1):
        tform = header.get(f"TFORM{n}")
        try:
            form = parse_binary_tform(tform) if isinstance(tform, str) else None
        except ValueError:
            form = None
        if form is None or form.code not in "PQ" or form.element != "B" or form.repeat != 1:
            raise HeaderError(
                f"{where}, column {n}: TFORM{n} = {tform!r} of a tile-compressed table must be "
                "'1QB' or '1PB' (a variable-length byte array per tile)"
            )
        cells.append((offset, form.code))
        offset += form.width
    if offset != row_bytes:
        raise HeaderError(
            f"{where}: the TFORMn widths add up to {offset} bytes but NAXIS1 = {row_bytes}"
        )
    return cells


def _heap(header: Header, main: int, pcount: int, where: str) -> tuple[int, int]:
    theap = header.get("THEAP", main)
    if isinstance(theap, bool) or not isinstance(theap, int) or not main <= theap <= main + pcount:
        raise HeaderError(
            f"{where}: THEAP = {theap!r} must lie between the end of the rows ({main}) and "
            f"the end of the heap ({main + pcount})"
        )
    return theap, main + pcount - theap


def parse_tiled_table(
    header: Header, row_bytes: int, ntiles: int, pcount: int, where: str
) -> TiledTable:
    """The :class:`TiledTable` of a ``ZTABLE = T`` HDU whose NAXIS1, NAXIS2 and PCOUNT (the
    compressed table's, checked against the file by the layout scan) are ``row_bytes``,
    ``ntiles`` and ``pcount``.

    Raises
    ------
    HeaderError
        A missing or bad ZTILELEN/ZNAXIS1/ZNAXIS2/ZPCOUNT/ZFORMn, a compressed column that is
        no ``1QB``/``1PB`` cell, a tile count that does not match ZNAXIS2 and ZTILELEN, or an
        original table larger than its compressed heap could hold (:data:`MAX_RATIO`).
    UnsupportedError
        A ZCTYPn outside :data:`ALGORITHMS`, or RICE_1 on a column not of B, I or J.
    """
    nrows = _int(header, "ZNAXIS2", where)
    tile_rows = min(_int(header, "ZTILELEN", where, 1), max(nrows, 1))  # cfitsio clamps it
    naxis1 = _int(header, "ZNAXIS1", where)
    zpcount = _int(header, "ZPCOUNT", where)
    nfields = header.get("TFIELDS")
    if not isinstance(nfields, int) or isinstance(nfields, bool) or not 0 <= nfields <= 999:
        raise HeaderError(f"{where}: TFIELDS = {nfields!r} must be an integer from 0 to 999")
    for n in range(1, nfields + 1):
        if f"ZFORM{n}" not in header:
            raise HeaderError(f"{where}, column {n}: ZFORM{n} (the original TFORM{n}) missing")
    if math.ceil(nrows / tile_rows) != ntiles:
        raise HeaderError(
            f"{where}: NAXIS2 = {ntiles} tiles, but ZNAXIS2 = {nrows} rows in tiles of "
            f"ZTILELEN = {tile_rows} make {math.ceil(nrows / tile_rows)}"
        )
    cells = _cells(header, nfields, row_bytes, where)
    heap_offset, heap_size = _heap(header, row_bytes * ntiles, pcount, where)
    if naxis1 * nrows > MAX_RATIO * heap_size + 2880:
        raise HeaderError(
            f"{where}: ZNAXIS1 x ZNAXIS2 = {naxis1} x {nrows} bytes of rows cannot come out of "
            f"a compressed heap of {heap_size} bytes"
        )
    restored = restore_header(header, where)
    table = parse_table(restored, False, naxis1, nrows, zpcount, where)
    tiled = tuple(
        TiledColumn(c, _algorithm(header, c, where), offset, code)
        for c, (offset, code) in zip(table.columns, cells, strict=True)
    )
    return TiledTable(restored, table, tile_rows, ntiles, row_bytes, heap_offset, heap_size, tiled)
