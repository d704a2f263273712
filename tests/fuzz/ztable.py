"""The oracle of tile-compressed tables (ZTABLE): the original table, rebuilt without dfits.

astropy cannot decompress a ZTABLE (astropy #19983), and ``funpack`` refuses many valid
ones (cfitsio 4: NOCOMPRESS columns, PA columns, GZIP_2 on B/L/X/A/C/M, RICE_1 on M; some
abort), so neither reads a mutated one. This module rebuilds the plain table from the
mutated bytes with its own small decoder, written from the convention
(:mod:`dfits.format.tiledtable` describes it) and sharing no code with dfits: astropy parses
the header, ``zlib`` inflates GZIP_1/GZIP_2 cells, ``imagecodecs`` decodes RICE_1 cells
(dfits has its own Rice kernel). astropy then reads the rebuilt table, and its values are
the oracle of the ZTABLE's columns (:func:`tests.fuzz.tablecheck.compare_tables`).

:func:`rebuild` returns the rebuilt file's bytes and, per column, why its cells do not
decode (a corrupt gzip stream, a cell of the wrong size, a descriptor outside a heap): dfits
must refuse to read such a column. It raises :class:`NoOracle` where the header itself says
nothing certain (keywords missing or contradictory): then no column of the HDU is compared.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["Corrupted", "NoOracle", "Rebuilt", "rebuild"]

_WIDTH = {"L": 1, "X": 1, "B": 1, "I": 2, "J": 4, "K": 8, "A": 1, "E": 4, "D": 8, "C": 8,
          "M": 16, "P": 8, "Q": 16}  # fmt: skip
_SHUFFLED = {"I": 2, "J": 4, "E": 4, "K": 8, "D": 8}
_RICE = {"B": "u1", "I": ">i2", "J": ">i4"}
_FORM = re.compile(r"^\s*(\d*)([LXBIJKAEDCMPQ])([LXBIJKAEDCM]?)(\(\d+\))?\s*$")
_CELL = re.compile(r"^\s*1?([PQ])B(\(\d+\))?\s*$")
#: the most bytes the oracle rebuilds (a header may claim more; then it is no oracle)
_LIMIT = 16 << 20
_DROPPED = ("ZTABLE", "ZTILELEN", "ZNAXIS1", "ZNAXIS2", "ZPCOUNT", "ZTHEAP", "ZHEAPPTR",
            "THEAP", "CHECKSUM", "DATASUM")  # fmt: skip


class NoOracle(Exception):
    """The header does not say what the original table is: no comparison."""


class Corrupt(Exception):
    """One column's cells do not decode."""


@dataclass
class Corrupted:
    """A column's tiles that do not decode (tile number -> why) and the rows of a tile."""

    tile_rows: int
    tiles: dict[int, str]

    def hit(self, rows: np.ndarray | None) -> str:
        """Why rows ``rows`` (None: all) cannot be read ("" when they all can)."""
        tiles = self.tiles if rows is None else set(np.asarray(rows) // self.tile_rows)
        why = [f"tile {t}: {self.tiles[t]}" for t in sorted(tiles) if t in self.tiles]
        return "; ".join(why)


@dataclass
class Rebuilt:
    """The plain table's file bytes and, per column name, its tiles that do not decode."""

    blob: bytes
    corrupt: dict[str, Corrupted]


@dataclass
class _Col:
    name: str
    code: str  # L, X, B, ... or P/Q
    element: str  # the element code of a P/Q column
    width: int
    offset: int
    algorithm: str


def _int(header, key: str, default: int | None = None) -> int:
    value = header.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NoOracle(f"{key} = {value!r}")
    return value


def _columns(header) -> list[_Col]:
    out, offset = [], 0
    for n in range(1, _int(header, "TFIELDS") + 1):
        form = header.get(f"ZFORM{n}")
        m = _FORM.match(form) if isinstance(form, str) else None
        if m is None or (m[2] in "PQ") != bool(m[3]):
            raise NoOracle(f"ZFORM{n} = {form!r}")
        repeat = int(m[1] or 1)
        if m[2] == "X":
            width = (repeat + 7) // 8
        elif m[2] in "PQ":
            width = _WIDTH[m[2]] * min(repeat, 1)
        else:
            width = _WIDTH[m[2]] * repeat
        # compared without regard to case, as dfits reads it (a leniency: the values agree)
        algorithm = str(header.get(f"ZCTYP{n}", "GZIP_2")).upper()
        name = header.get(f"TTYPE{n}", f"col{n}")
        out.append(_Col(str(name), m[2], m[3], width, offset, algorithm))
        offset += width
    if offset != _int(header, "ZNAXIS1"):
        raise NoOracle(f"the ZFORMs add up to {offset} bytes, ZNAXIS1 says otherwise")
    return out


def _inflate(cell: bytes, nbytes: int) -> bytes:
    d = zlib.decompressobj(47)  # gzip (cfitsio's) or zlib
    try:
        raw = d.decompress(cell, nbytes + 1)
    except zlib.error as err:
        raise Corrupt(f"gzip: {err}") from None
    if len(raw) > nbytes or not d.eof:
        raise Corrupt(f"gzip stream of {len(raw)}+ bytes, {nbytes} expected")
    return raw


def _decode(algorithm: str, cell: bytes, nbytes: int, code: str, shuffle: int) -> bytes:
    if algorithm == "NOCOMPRESS":
        raw = cell
    elif algorithm in ("GZIP_1", "GZIP_2"):
        raw = _inflate(cell, nbytes)
        if algorithm == "GZIP_2" and shuffle > 1 and len(raw) == nbytes:
            raw = np.frombuffer(raw, np.uint8).reshape(shuffle, -1).T.tobytes()
    elif algorithm == "RICE_1" and code in _RICE:
        import imagecodecs

        dtype = np.dtype(_RICE[code])
        try:
            values = imagecodecs.rcomp_decode(
                cell, shape=(nbytes // dtype.itemsize,), dtype=dtype.newbyteorder("="), nblock=32
            )
        except Exception as err:  # imagecodecs' own error types
            raise Corrupt(f"rice: {err}") from None
        raw = np.asarray(values).astype(dtype).tobytes()
    else:
        raise Corrupt(f"{algorithm} for a {code} column")
    if len(raw) != nbytes:
        raise Corrupt(f"{len(raw)} bytes decoded, {nbytes} expected")
    return raw


@dataclass
class _Heap:
    """The original heap's size (where descriptors must lie) and the rebuilt heap: each
    array appended once, under a fresh descriptor, so that no column's array overwrites
    another's (a mutated original offset may point anywhere)."""

    size: int
    out: bytearray


def _variable(c: _Col, blob: bytes, nt: int, zheap: bytes, heap: _Heap) -> bytes:
    """The tile's descriptors, fresh, their arrays decoded and appended to ``heap``."""
    word = ">i4" if c.code == "P" else ">i8"
    desc = np.frombuffer(blob[: nt * c.width], word).reshape(nt, 2).astype(np.int64)
    where = np.frombuffer(blob[nt * c.width :], ">i8").reshape(nt, 2).astype(np.int64)
    elem = _WIDTH[c.element]
    fresh = np.zeros((nt, 2), word)
    for i, ((count, at), (clen, cat)) in enumerate(zip(desc.tolist(), where.tolist(), strict=True)):
        size = (count + 7) // 8 if c.element == "X" else count * elem
        if count < 0 or at < 0 or at + size > heap.size:
            raise Corrupt(f"descriptor ({count}, {at}) outside the heap of {heap.size}")
        if clen < 0 or cat < 0 or cat + clen > len(zheap):
            raise Corrupt(f"compressed array ({clen}, {cat}) outside the heap of {len(zheap)}")
        fresh[i] = (count, len(heap.out))
        if not size:
            continue
        if not clen:
            raise Corrupt("an array without bytes")
        data = zheap[cat : cat + clen]
        if clen != size:  # an array that did not shrink is stored as it is
            width = elem if elem in (2, 4, 8) and c.element != "X" else 1
            data = _decode(c.algorithm, data, size, c.element, width)
        heap.out += data
    return fresh.tobytes()


def _column(c: _Col, cells: list, tile: int, nrows: int, zheap: bytes, heap: _Heap):
    """Column ``c``'s fields of every row (zeros in the tiles that do not decode), and
    why each tile that does not decode does not."""
    fields, bad = np.zeros((nrows, c.width), np.uint8), {}
    for t, cell in enumerate(cells):
        nt = min(tile, nrows - t * tile)
        try:
            if cell is None:
                raise Corrupt("a cell outside the compressed heap")
            if c.code in "PQ":
                algorithm = "NOCOMPRESS" if c.algorithm == "NOCOMPRESS" else "GZIP_1"
                blob = _decode(algorithm, cell, nt * (c.width + 16), "B", 1)
                raw = _variable(c, blob, nt, zheap, heap)
            else:
                shuffle = _SHUFFLED.get(c.code, 1)
                raw = _decode(c.algorithm, cell, nt * c.width, c.code, shuffle)
        except Corrupt as err:
            bad[t] = str(err)
            continue
        fields[t * tile : t * tile + nt] = np.frombuffer(raw, np.uint8).reshape(nt, c.width)
    return fields, bad


def _cells(header, data: bytes, ncols: int) -> tuple[list[list[bytes]], bytes]:
    """Each column's compressed cells (one per tile, None outside the heap), and the heap."""
    row, ntiles = _int(header, "NAXIS1"), _int(header, "NAXIS2")
    pcount = _int(header, "PCOUNT", 0)
    theap = _int(header, "THEAP", row * ntiles)
    zheap = data[theap : row * ntiles + pcount]
    words, at = [], 0
    for n in range(1, ncols + 1):
        m = _CELL.match(str(header.get(f"TFORM{n}", "")))
        if m is None:
            raise NoOracle(f"TFORM{n} = {header.get(f'TFORM{n}')!r} is not a byte cell")
        words.append((">i4" if m[1] == "P" else ">i8", at))
        at += 8 if m[1] == "P" else 16
    if at != row or len(data) < row * ntiles:
        raise NoOracle("the compressed rows do not hold one cell per column")
    out = []
    for word, offset in words:
        cells = []
        for t in range(ntiles):
            n, where = np.frombuffer(data, word, 2, t * row + offset).astype(np.int64)
            ok = where >= 0 and n >= 0 and where + n <= len(zheap)
            cells.append(zheap[where : where + n] if ok else None)
        out.append(cells)
    return out, zheap


def _header(header, columns: list[_Col], pcount: int) -> bytes:
    from astropy.io import fits

    plain = header.copy()
    plain["NAXIS1"], plain["NAXIS2"] = header["ZNAXIS1"], header["ZNAXIS2"]
    plain["PCOUNT"] = pcount  # the rebuilt heap: the arrays back to back, after the rows
    for n in range(1, len(columns) + 1):
        plain[f"TFORM{n}"] = header[f"ZFORM{n}"]
        for key in (f"ZFORM{n}", f"ZCTYP{n}"):
            plain.remove(key, ignore_missing=True, remove_all=True)
    for key in _DROPPED:
        plain.remove(key, ignore_missing=True, remove_all=True)
    return fits.PrimaryHDU().header.tostring().encode() + plain.tostring().encode()


def rebuild(path: str, index: int) -> Rebuilt:
    """The original table of HDU ``index`` of ``path`` (a ZTABLE) and its corrupt columns."""
    import warnings

    from astropy.io import fits

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path, memmap=False) as hdul:
            header = hdul[index].header.copy()
            start = hdul.fileinfo(index)["datLoc"]
    blob = open(path, "rb").read()  # noqa: SIM115 - a small file, read once
    columns = _columns(header)
    nrows, tile = _int(header, "ZNAXIS2"), _int(header, "ZTILELEN")
    pcount = _int(header, "ZPCOUNT", 0)
    if header.get("ZTABLE") is not True or (not tile and nrows):
        raise NoOracle("ZTABLE or ZTILELEN")
    if nrows and -(-nrows // tile) != _int(header, "NAXIS2"):
        raise NoOracle("ZNAXIS2 / ZTILELEN is not the number of tiles")
    row = _int(header, "ZNAXIS1")
    theap = _int(header, "ZTHEAP", row * nrows)
    if row * nrows + pcount > _LIMIT or theap < row * nrows or theap > row * nrows + pcount:
        raise NoOracle("the original table's size or heap")
    size = _int(header, "NAXIS1") * _int(header, "NAXIS2") + _int(header, "PCOUNT", 0)
    if start + size > len(blob):
        raise NoOracle("the compressed data run past the file")
    cells, zheap = _cells(header, blob[start : start + size], len(columns))
    rows = np.zeros((nrows, row), np.uint8)
    heap = _Heap(row * nrows + pcount - theap, bytearray())
    corrupt = {}
    for c, tiles in zip(columns, cells, strict=True):
        fields, bad = _column(c, tiles, tile, nrows, zheap, heap)
        if bad:
            corrupt[c.name] = Corrupted(tile, bad)
        rows[:, c.offset : c.offset + c.width] = fields
    data = rows.tobytes() + bytes(heap.out)
    out = io.BytesIO()
    out.write(_header(header, columns, len(heap.out)))
    out.write(data + bytes(-len(data) % 2880))
    return Rebuilt(out.getvalue(), corrupt)
