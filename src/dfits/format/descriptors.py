"""The rows of a compressed image's table: per tile, where its bytes lie in the heap.

The contract: :func:`parse_columns` lays out a binary table's row from TFIELDS/TTYPEn/TFORMn
(byte offset and format of each field); :func:`read_descriptors` turns table rows (all of
them, or only those of the tiles a read touches: a tile's row follows from its place in the
grid) into a :class:`Descriptors` record — for each tile the (count, offset) of its compressed
bytes (P or Q descriptors), of its fallback bytes (GZIP_COMPRESSED_DATA, UNCOMPRESSED_DATA)
and its ZSCALE/ZZERO/ZBLANK — checking that every descriptor points inside the heap. These
are offsets and a few numbers per tile, never pixel data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import HeaderError

__all__ = ["Column", "Descriptors", "concat_descriptors", "parse_columns", "read_descriptors"]

# bytes per element of each TFORM type code (X: bits, counted in bytes below)
_SIZES = {"L": 1, "X": 1, "B": 1, "I": 2, "J": 4, "K": 8, "A": 1, "E": 4, "D": 8}
_SIZES.update({"C": 8, "M": 16, "P": 8, "Q": 16})
_TFORM = re.compile(r"\s*(\d*)\s*([LXBIJKAEDCMPQ])\s*([LXBIJKAEDCM]?)\s*(?:\(\s*\d*\s*\))?.*", re.I)
_WANTED = (
    "COMPRESSED_DATA",
    "GZIP_COMPRESSED_DATA",
    "UNCOMPRESSED_DATA",
    "ZSCALE",
    "ZZERO",
    "ZBLANK",
)


@dataclass(frozen=True)
class Column:
    """One field of the row: its name, byte offset, type code and (for P/Q) element type."""

    name: str
    offset: int
    code: str
    element: str = ""

    @property
    def element_size(self) -> int:
        """Bytes per element of a variable-length array's heap data."""
        return _SIZES[self.element] if self.element else 0


def parse_columns(header: Any, prefix: str = "") -> tuple[tuple[Column, ...], int]:
    """The columns a compressed image uses and the row length their TFORMn add up to.

    Examples
    --------
    >>> cols, nbytes = parse_columns({"TFIELDS": 3, "TTYPE1": "COMPRESSED_DATA",
    ...     "TFORM1": "1PB(60)", "TTYPE2": "ZSCALE", "TFORM2": "1D", "TTYPE3": "ZZERO",
    ...     "TFORM3": "1D"})
    >>> [(c.name, c.offset, c.code, c.element) for c in cols], nbytes
    ([('COMPRESSED_DATA', 0, 'P', 'B'), ('ZSCALE', 8, 'D', ''), ('ZZERO', 16, 'D', '')], 24)
    """
    tfields = header.get("TFIELDS", 0)
    if isinstance(tfields, bool) or not isinstance(tfields, int) or not 0 <= tfields <= 999:
        raise HeaderError(f"{prefix}TFIELDS = {tfields!r} must be an integer in 0..999")
    columns = []
    offset = 0
    for i in range(1, tfields + 1):
        tform = header.get(f"TFORM{i}")
        m = _TFORM.fullmatch(tform) if isinstance(tform, str) else None
        if m is None:
            raise HeaderError(f"{prefix}TFORM{i} = {tform!r} is not a binary table format")
        repeat = int(m[1]) if m[1] else 1
        code, element = m[2].upper(), m[3].upper()
        if code in "PQ" and not element:
            raise HeaderError(f"{prefix}TFORM{i} = {tform!r}: a descriptor without its type")
        name = str(header.get(f"TTYPE{i}", "")).strip().upper()
        if name in _WANTED:
            if repeat != 1:
                raise HeaderError(f"{prefix}TFORM{i} = {tform!r}: {name} holds one value")
            _check_kind(name, code, f"{prefix}TTYPE{i} = {name!r}, TFORM{i} = {tform!r}")
            columns.append(Column(name, offset, code, element))
        size = -(-repeat // 8) if code == "X" else repeat * _SIZES[code]
        offset += size
    if offset != header.get("NAXIS1", offset):
        raise HeaderError(
            f"{prefix}NAXIS1 = {header.get('NAXIS1')!r} but the TFORMn make rows of {offset} bytes"
        )
    return tuple(columns), offset


def _check_kind(name: str, code: str, what: str) -> None:
    """Refuse a ZSCALE/ZZERO/ZBLANK column whose cells are not numbers (strings, logicals,
    bits, complex, arrays): reading them as a number would take bytes of the next field
    (issue 51). ZBLANK is an integer; a byte of tile data is not a descriptor."""
    wanted = {"ZSCALE": "BIJKED", "ZZERO": "BIJKED", "ZBLANK": "BIJK"}.get(name, "PQ")
    if code not in wanted:
        kinds = ", ".join(wanted)
        raise HeaderError(f"{what}: the {name} column must be of type {kinds}, not {code}")


@dataclass(frozen=True)
class Descriptors:
    """Per tile (table row): heap spans and quantisation numbers.

    ``spans[name]`` is an ``(nrows, 2)`` int64 array of (bytes, heap offset) for each
    variable-length column; ``values[name]`` a float64 (ZSCALE, ZZERO) or int64 (ZBLANK)
    array for each scalar column.
    """

    spans: dict[str, np.ndarray]
    values: dict[str, np.ndarray]
    heap_size: int

    def __reduce__(self):
        return (Descriptors, (self.spans, self.values, self.heap_size))


_SCALAR = {"B": ">u1", "I": ">i2", "J": ">i4", "K": ">i8", "E": ">f4", "D": ">f8"}


def read_descriptors(
    data: bytes,
    layout: Any,
    prefix: str = "",
    rows: np.ndarray | None = None,
    first: int = 0,
) -> Descriptors:
    """Parse table rows for a :class:`TileLayout`: all of them, or only those a read needs.

    Parameters
    ----------
    data : bytes
        Consecutive rows of the table (``NAXIS1`` bytes each), the first of them row
        ``first`` (0-based).
    layout : TileLayout
        The image's tile layout (row width, columns, heap size).
    prefix : str
        Message prefix naming the file and HDU.
    rows : array of int, optional
        The rows wanted (0-based table rows, each within ``data``); by default every row
        of ``data``. The result's arrays follow this order.
    first : int
        The table row ``data`` starts at.

    Raises
    ------
    HeaderError
        When a descriptor points outside the heap (naming the column, the row and the
        offset) or a count is negative.
    """
    width = layout.row_bytes
    nrows = len(data) // width
    picked = None if rows is None else np.asarray(rows, np.int64) - first
    heap_size = layout.heap_stop - layout.heap_start
    spans: dict[str, np.ndarray] = {}
    values: dict[str, np.ndarray] = {}
    for col in layout.columns:
        if col.code in "PQ":
            word = np.dtype(">i4" if col.code == "P" else ">i8")
            pairs = _field(data, nrows, width, col.offset, word, 2, picked).astype(np.int64)
            if col.element_size != 1:
                pairs[:, 0] *= col.element_size
            _check_spans(pairs, heap_size, col.name, prefix, picked, first)
            spans[col.name] = pairs
        else:
            dtype = np.dtype(_SCALAR.get(col.code, ">f8"))
            raw = _field(data, nrows, width, col.offset, dtype, 0, picked)
            values[col.name] = raw.astype(np.int64 if col.name == "ZBLANK" else np.float64)
    return Descriptors(spans, values, heap_size)


def _field(
    data: bytes,
    nrows: int,
    width: int,
    offset: int,
    dtype: np.dtype,
    count: int,
    picked: np.ndarray | None,
) -> np.ndarray:
    """One column of ``nrows`` rows of ``width`` bytes (``count`` values per row, 0: one
    scalar), as a strided view of ``data``, then the rows ``picked``: no copy of the table,
    so a stamp's few rows cost a handful of numpy calls."""
    shape = (nrows, count) if count else (nrows,)
    strides = (width, dtype.itemsize) if count else (width,)
    if not nrows:
        return np.empty(shape, dtype)
    view = np.ndarray(shape, dtype, data, offset, strides)
    return view if picked is None else view[picked]


def concat_descriptors(parts: list[Descriptors]) -> Descriptors:
    """One record of several (rows read in separate runs), in the order given."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    spans = {k: np.concatenate([p.spans[k] for p in parts]) for k in first.spans}
    values = {k: np.concatenate([p.values[k] for p in parts]) for k in first.values}
    return Descriptors(spans, values, first.heap_size)


def _check_spans(
    pairs: np.ndarray,
    heap_size: int,
    name: str,
    prefix: str,
    picked: np.ndarray | None,
    first: int,
) -> None:
    count, offset = pairs[:, 0], pairs[:, 1]
    # The common case in two reductions: as unsigned, a negative count or offset is above
    # any heap size, so one maximum bounds both from both sides, and their sum cannot overflow.
    if not len(pairs) or (
        pairs.view(np.uint64).max() <= heap_size and (offset + count).max() <= heap_size
    ):
        return
    # an empty tile may point anywhere; `count > heap - offset` cannot overflow (offset >= 0)
    bad = (count < 0) | (offset < 0) | ((count > 0) & (count > heap_size - offset))
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        row = first + int(at if picked is None else picked[at])
        raise HeaderError(
            f"{prefix}{name} descriptor of row {row + 1} (tile {row}) points outside the "
            f"heap: {int(count[at])} bytes at heap offset {int(offset[at])}, but the heap "
            f"holds {heap_size} bytes"
        )
