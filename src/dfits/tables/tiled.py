"""Columns of tile-compressed tables (``ZTABLE = T``), decompressed per tile as rows are read.

The contract: :func:`tiled_readers` gives, for columns of a
:class:`~dfits.format.tiledtable.TiledTable`, one :class:`TiledColumnReader` each, which keeps
the :class:`~dfits.tables.columns.ColumnReader` contract, so every table route (``hdu.column``,
``hdu.data``, ``aggregate``, DataFrames, Arrow, ``where=``) reads ZTABLE HDUs. The readers of
one call share a :class:`TiledRows` source whose "rows" are the original rows narrowed to
those columns' fields: mapping a span of them decompresses only those columns' cells of the
tiles it touches (:func:`decode_cell`: GZIP_1, GZIP_2 unshuffled, RICE_1 of B/I/J as cfitsio
codes them, NOCOMPRESS) into the big-endian fields the original rows held, which the one
decode (:mod:`dfits.tables.fields`) reads. Variable-length arrays of the rows asked for are
decompressed into a block of their own (fresh descriptors, the arrays back to back) that
:mod:`dfits.tables.heap` decodes as an uncompressed table's.

Bad data raise :class:`~dfits.errors.DataError` naming the file, HDU, column and tile: a
cell that does not decompress to its rows' bytes, a descriptor outside the heap (the
compressed one, or the original's), a cell claiming more than
:data:`~dfits.format.tiledtable.MAX_RATIO` times its compressed bytes (so no header word
sizes an allocation). Default chunks hold whole tiles (:func:`align_rows`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dfits.errors import DataError
from dfits.format.columns import Column
from dfits.format.tform import BINARY_WIDTH
from dfits.format.tiledtable import MAX_RATIO, TiledColumn, TiledTable, shuffle_width
from dfits.tables import heap
from dfits.tables.columns import ColumnReader

__all__ = ["TiledColumnReader", "TiledRows", "align_rows", "decode_cell", "tiled_readers"]


class CellError(ValueError):
    """A compressed cell does not decode (the reader adds file, HDU, column and tile)."""


def _inflate(data: np.ndarray, limit: int) -> np.ndarray:
    d = zlib.decompressobj(47)  # 32 + 15: a gzip (cfitsio's) or zlib header, detected
    try:
        raw = d.decompress(memoryview(np.ascontiguousarray(data)), limit + 1)
    except zlib.error as err:
        raise CellError(f"the gzip stream is corrupt: {err}") from None
    if len(raw) <= limit and not d.eof:
        raise CellError("the gzip stream is truncated")
    return np.frombuffer(raw, np.uint8)


def decode_cell(
    algorithm: str, data: np.ndarray, nbytes: int, shuffle: int = 1, bytepix: int = 1
) -> np.ndarray:
    """The ``nbytes`` big-endian bytes one compressed cell ``data`` holds (``uint8``).

    ``shuffle``: the element width GZIP_2 shuffled (1: none); ``bytepix``: the integer width
    RICE_1 coded (block size 32, as cfitsio's tables). Raises :class:`CellError`.

    Examples
    --------
    >>> import gzip
    >>> raw = np.arange(3, dtype=">i2").view(np.uint8)
    >>> shuffled = raw.reshape(-1, 2).T.tobytes()
    >>> cell = np.frombuffer(gzip.compress(shuffled), np.uint8)
    >>> decode_cell("GZIP_2", cell, 6, shuffle=2).view(">i2")
    array([0, 1, 2], dtype='>i2')
    """
    if nbytes > MAX_RATIO * len(data) + 64:
        raise CellError(f"{len(data)} compressed bytes cannot hold the {nbytes} bytes expected")
    if algorithm == "NOCOMPRESS":
        raw = np.asarray(data, np.uint8)
    elif algorithm == "RICE_1":
        from dfits.kernels.rice import rice_decode

        out = rice_decode(np.asarray(data, np.uint8), nbytes // bytepix, 32, bytepix)
        if isinstance(out, str):
            raise CellError(out)
        # native back to stored (big-endian) bytes: the one field decode reads those
        raw = out.astype(out.dtype.newbyteorder(">")).view(np.uint8)
    else:
        raw = _inflate(data, nbytes)
        if algorithm == "GZIP_2" and shuffle > 1 and len(raw) == nbytes:
            # all first bytes of the elements, then all second bytes, ...: put them back
            raw = raw.reshape(shuffle, nbytes // shuffle).T.reshape(-1)
    if len(raw) != nbytes:
        raise CellError(f"it decodes to {len(raw)} bytes where its rows hold {nbytes}")
    return raw


def align_rows(step: int, readers: Sequence[Any]) -> int:
    """``step`` rows rounded down to whole tiles (at least one) when ``readers`` read a
    tile-compressed table, so that no tile is decompressed by two chunks; else ``step``."""
    tile = max((r.tile_rows for r in readers if isinstance(r, TiledColumnReader)), default=1)
    return max(tile, step // tile * tile) if tile > 1 else step


@dataclass(frozen=True)
class _Block:
    """Bytes in memory addressed as a source (the rebuilt arrays of some rows)."""

    mappable: ClassVar[bool] = True
    data: np.ndarray

    def map(self, offset: int, nbytes: int, **_: Any) -> np.ndarray:
        return self.data[offset : offset + nbytes]


@dataclass(frozen=True)
class TiledRows:
    """The original rows of a tile-compressed table, narrowed to the fields of ``cells``
    (one after the other): a byte source whose ``map`` decompresses the tiles it touches."""

    #: no multi-column pass over "mapped" rows: each column decompresses only its own cells
    mappable: ClassVar[bool] = False

    file: Any
    offset: int
    tile_rows: int
    nrows: int
    cell_bytes: int  # NAXIS1 of the compressed table
    heap_offset: int
    heap_size: int
    table_heap: int  # the original heap's size: its descriptors must point inside it
    cells: tuple[TiledColumn, ...]
    where: str = ""

    @property
    def row_bytes(self) -> int:
        return sum(c.column.width for c in self.cells)

    def field_offset(self, k: int) -> int:
        return sum(c.column.width for c in self.cells[:k])

    @property
    def token(self) -> tuple[Any, ...]:
        numbers = tuple(c.column.number for c in self.cells)
        return (*self.file.token, "ztable", self.offset, numbers)

    def verify(self) -> None:
        getattr(self.file, "verify", lambda: None)()  # local files check at each map

    def map(self, start: int, nbytes: int, **_: Any) -> np.ndarray:
        """The narrowed rows' bytes ``start`` to ``start + nbytes`` (a new array)."""
        width = self.row_bytes
        if nbytes <= 0 or width == 0:
            return np.zeros(max(nbytes, 0), np.uint8)
        first, stop = start // width, min(-(-(start + nbytes) // width), self.nrows)
        rows = self.rows_block(first, stop).reshape(-1)
        return rows[start - first * width : start - first * width + nbytes]

    def _fail(self, k: int, tile: int, why: str) -> DataError:
        c, a = self.cells[k].column, tile * self.tile_rows
        rows = f"rows {a + 1}..{min(a + self.tile_rows, self.nrows)}"
        at = f"{self.where}, column {c.number} ({c.name!r}), tile {tile + 1} ({rows})"
        return DataError(f"{at}: the {self.cells[k].algorithm} cell: {why}")

    def compressed(self, first: int, stop: int, ks: Sequence[int]) -> dict[tuple[int, int], Any]:
        """The compressed cells of columns ``ks`` in tiles ``first`` to ``stop``, by
        ``(tile, k)``: views of one map of the heap span they lie in."""
        n = stop - first
        rows = self.file.map(self.offset + first * self.cell_bytes, n * self.cell_bytes)
        rows = rows.reshape(n, self.cell_bytes)
        spans = {}
        for k in ks:
            cell = self.cells[k]
            word = np.dtype(">i4" if cell.cell_code == "P" else ">i8")
            field = np.ascontiguousarray(rows[:, cell.cell : cell.cell + 2 * word.itemsize])
            pairs = field.view(word).reshape(n, 2).astype(np.int64)
            for i, (count, at) in enumerate(pairs.tolist()):  # ints: no int64 overflow
                if count < 0 or at < 0 or at + count > self.heap_size:
                    why = f"its descriptor (count {count}, offset {at}) lies outside the heap"
                    raise self._fail(k, first + i, f"{why} of {self.heap_size} bytes")
                spans[first + i, k] = (int(at), int(count))
        used = [(a, c) for a, c in spans.values() if c > 0]
        lo = min((a for a, _ in used), default=0)
        hi = max((a + c for a, c in used), default=0)
        data = self.file.map(self.offset + self.heap_offset + lo, hi - lo, populate=False)
        return {key: data[a - lo : a - lo + c] for key, (a, c) in spans.items()}

    def _decoded(self, k: int, tile: int, data: np.ndarray) -> np.ndarray:
        """Column ``k``'s bytes of ``tile``: its fields, column-major (for a variable-length
        column, its descriptors and then each row's (length, offset) in the heap)."""
        cell = self.cells[k]
        c = cell.column
        a = tile * self.tile_rows
        n = min(a + self.tile_rows, self.nrows) - a
        try:
            if c.code in "PQ":
                # the descriptors are always gzipped (cfitsio), whatever ZCTYPn says
                algorithm = "NOCOMPRESS" if cell.algorithm == "NOCOMPRESS" else "GZIP_1"
                return decode_cell(algorithm, data, n * (c.width + 16))
            shuffle = shuffle_width(c.code, False)
            bytepix = cell.bytepix if cell.algorithm == "RICE_1" else 1
            return decode_cell(cell.algorithm, data, n * c.width, shuffle, bytepix)
        except CellError as err:
            raise self._fail(k, tile, str(err)) from None

    def rows_block(self, first: int, stop: int, only: int | None = None) -> np.ndarray:
        """Rows ``first`` to ``stop``, narrowed, as an ``(n, row_bytes)`` ``uint8`` array (or
        ``(n, width)``: the field of cell ``only``)."""
        ks = range(len(self.cells)) if only is None else [only]
        n, width = stop - first, sum(self.cells[k].column.width for k in ks)
        out = np.zeros((max(n, 0), width), np.uint8)
        if n <= 0 or width == 0:
            return out
        t0, t1 = first // self.tile_rows, (stop - 1) // self.tile_rows + 1
        ks = [k for k in ks if self.cells[k].column.width]
        cells = self.compressed(t0, t1, ks)
        for t in range(t0, t1):
            a = t * self.tile_rows
            b = min(a + self.tile_rows, self.nrows)
            lo, hi = max(a, first), min(b, stop)
            for k in ks:
                c = self.cells[k].column
                raw = self._decoded(k, t, cells[t, k])
                fields = raw[: (b - a) * c.width].reshape(b - a, c.width)
                at = 0 if only is not None else self.field_offset(k)
                out[lo - first : hi - first, at : at + c.width] = fields[lo - a : hi - a]
        return out

    def arrays(self, k: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The variable-length arrays of column ``k`` in rows ``rows`` (ascending): their
        element counts and their bytes, decompressed, one after the other."""
        counts = np.zeros(len(rows), np.int64)
        parts: list[np.ndarray] = []
        if not len(rows):
            return counts, np.zeros(0, np.uint8)
        tiles = rows // self.tile_rows
        cells = self.compressed(int(tiles[0]), int(tiles[-1]) + 1, [k])
        for t in np.unique(tiles):
            t = int(t)
            pick = np.flatnonzero(tiles == t)
            blob = self._decoded(k, t, cells[t, k])
            counts[pick] = self._tile_arrays(k, t, blob, rows[pick] - t * self.tile_rows, parts)
        data = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        return counts, data

    def _tile_arrays(self, k: int, t: int, blob: np.ndarray, picks: np.ndarray, parts: list):
        """The counts of the rows ``picks`` (within tile ``t``) and their arrays' bytes,
        appended to ``parts``."""
        cell = self.cells[k]
        c = cell.column
        n = len(blob) // (c.width + 16)
        word = ">i4" if c.code == "P" else ">i8"
        original = blob[: n * c.width].view(word).reshape(n, 2).astype(np.int64)
        stored = blob[n * c.width :].view(">i8").reshape(n, 2).astype(np.int64)
        code = c.form.element
        elem = BINARY_WIDTH[code]
        counts = original[picks, 0]
        first = t * self.tile_rows
        spans = []
        for row in picks:
            (count, at), (clen, cat) = original[row].tolist(), stored[row].tolist()
            size = (count + 7) // 8 if code == "X" else count * elem  # ints: no overflow
            where = f"row {first + row + 1}"
            if count < 0 or at < 0 or at + size > self.table_heap:
                why = f"the array descriptor (count {count}, offset {at}) lies outside the "
                raise self._fail(k, t, f"{where}: {why}table's heap of {self.table_heap} bytes")
            if clen < 0 or cat < 0 or cat + clen > self.heap_size:
                why = f"the compressed array (length {clen}, offset {cat}) lies outside the "
                raise self._fail(k, t, f"{where}: {why}heap of {self.heap_size} bytes")
            if size and not clen:
                raise self._fail(k, t, f"{where}: an array of {count} elements has no bytes")
            spans.append((where, size, int(clen), int(cat)))
        # one map of the heap span that the tile's arrays lie in
        used = [(cat, clen) for _, size, clen, cat in spans if size]
        lo = min((a for a, _ in used), default=0)
        hi = max((a + n for a, n in used), default=0)
        data = self.file.map(self.offset + self.heap_offset + lo, hi - lo, populate=False)
        for where, size, clen, cat in spans:
            parts.append(self._array(k, t, where, size, data[cat - lo : cat - lo + clen]))
        return counts

    def _array(self, k: int, t: int, where: str, size: int, data: np.ndarray) -> np.ndarray:
        if not size:
            return np.zeros(0, np.uint8)
        if len(data) == size:
            return data  # cfitsio stores an array that does not shrink as it is
        cell = self.cells[k]
        shuffle = shuffle_width(cell.column.form.element, True)
        try:
            bytepix = cell.bytepix if cell.algorithm == "RICE_1" else 1
            return decode_cell(cell.algorithm, data, size, shuffle, bytepix)
        except CellError as err:
            raise self._fail(k, t, f"{where}: {err}") from None


@dataclass(frozen=True)
class TiledColumnReader(ColumnReader):
    """A :class:`~dfits.tables.columns.ColumnReader` over a :class:`TiledRows` source: the
    fixed-width fields read through the source's narrowed rows, the variable-length arrays
    through :meth:`TiledRows.arrays`."""

    #: this column's place in the source's cells
    cell: int = 0

    @property
    def tile_rows(self) -> int:
        return self.source.tile_rows

    def _block(self, rows: np.ndarray) -> tuple[ColumnReader, np.ndarray]:
        """A plain reader over the arrays of ``rows`` rebuilt in memory: fresh 64-bit
        descriptors, then the arrays back to back (the heap)."""
        counts, data = self.source.arrays(self.cell, rows)
        c = self.column
        code = c.form.element
        sizes = (counts + 7) // 8 if code == "X" else counts * BINARY_WIDTH[code]
        n = len(rows)
        desc = np.empty((n, 2), ">i8")
        desc[:, 0] = counts
        desc[:, 1] = np.cumsum(sizes) - sizes
        block = np.concatenate([desc.view(np.uint8).reshape(-1), data])
        column = replace(c, form=replace(c.form, code="Q", width=16), offset=0)
        inner = ColumnReader(_Block(block), 0, 16, n, column, 16 * n, len(data), self.where,
                             self.legacy_logical)  # fmt: skip
        return inner, block

    def _arrays(self, rows: np.ndarray, first: int, frame: bool) -> tuple[Any, Any]:
        inner, block = self._block(rows)
        return inner.values_at(block, 0, 16, len(rows), first, frame)

    def rows(self, first: int, stop: int) -> Any:
        if self.column.code not in "PQ":
            return super().rows(first, stop)
        return self._arrays(np.arange(first, max(stop, first)), first, False)[0]

    def rows_and_nulls(self, first: int, stop: int) -> tuple[Any, np.ndarray | None]:
        if self.column.code not in "PQ":
            return super().rows_and_nulls(first, stop)
        return self._arrays(np.arange(first, max(stop, first)), first, True)

    def take(self, rows: np.ndarray, frame: bool = False) -> tuple[Any, np.ndarray | None]:
        rows = np.asarray(rows, np.int64)
        if self.column.code not in "PQ":
            return super().take(rows, frame)
        return self._arrays(rows, int(rows[0]) if len(rows) else 0, frame)

    def _field_bytes(self, first: int, n: int) -> tuple[np.ndarray, int, int]:
        """This column's fields of rows ``first`` to ``first + n`` (only its cells)."""
        width = self.column.width
        if n <= 0 or width == 0:
            return np.zeros(0, np.uint8), 0, width
        return self.source.rows_block(first, first + n, self.cell).reshape(-1), 0, width

    def _taken(self, rows: np.ndarray) -> tuple[np.ndarray, int, int]:
        """The fields of rows ``rows``, from the tiles that hold them only."""
        c = self.column
        rows = np.asarray(rows, np.int64)
        out = np.zeros((len(rows), c.width), np.uint8)
        if not len(rows) or not c.width:
            return out.reshape(-1), 0, c.width
        tiles = rows // self.tile_rows
        for t in np.unique(tiles):
            pick = np.flatnonzero(tiles == t)
            a = int(t) * self.tile_rows
            block = self.source.rows_block(a, min(a + self.tile_rows, self.nrows), self.cell)
            out[pick] = block[rows[pick] - a]
        return out.reshape(-1), 0, c.width

    def lists(self, first: int, stop: int, rows: np.ndarray | None = None):
        rows = np.arange(first, max(stop, first)) if rows is None else np.asarray(rows, np.int64)
        if not len(rows):
            return np.zeros(0, self.column.element_dtype), np.zeros(0, np.int64)
        inner, block = self._block(rows)
        return heap.elements(inner, block, 0, 16, len(rows), int(rows[0]))

    def holds_legacy_logicals(self) -> bool:
        """:func:`dfits.tables.heap.holds_legacy_logicals` over the arrays, tile by tile."""
        seen = np.zeros(256, bool)
        for a in range(0, self.nrows, self.tile_rows):
            rows = np.arange(a, min(a + self.tile_rows, self.nrows))
            seen[np.unique(self.source.arrays(self.cell, rows)[1])] = True
            if seen[2:].any():
                return False
        return bool(seen[1])


def tiled_readers(
    file: Any, offset: int, tiled: TiledTable, columns: Sequence[Column], where: str
) -> list[TiledColumnReader]:
    """One reader per column of ``columns`` (original columns of ``tiled``, of the HDU whose
    data start at byte ``offset`` of ``file``), all over one :class:`TiledRows`."""
    numbers = list(dict.fromkeys(c.number for c in columns))
    cells = tuple(tiled.cells[n - 1] for n in numbers)
    source = TiledRows(
        file, offset, tiled.tile_rows, tiled.nrows, tiled.row_bytes, tiled.heap_offset,
        tiled.heap_size, tiled.table.heap_size, cells, where,
    )  # fmt: skip
    readers = []
    for c in columns:
        k = numbers.index(c.number)
        column = replace(c, offset=source.field_offset(k))
        readers.append(TiledColumnReader(source, 0, source.row_bytes, tiled.nrows, column, 0,
                                         tiled.table.heap_size, where, cell=k))  # fmt: skip
    return readers
