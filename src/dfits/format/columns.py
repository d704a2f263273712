"""The columns of a BINTABLE or ASCII TABLE HDU, from its header alone.

The contract: :func:`parse_table` reads TFIELDS and, for each column n, TTYPEn, TFORMn,
TUNITn, TDIMn, TSCALn, TZEROn, TNULLn and (ASCII) TBCOLn, plus THEAP, and returns a
:class:`TableLayout`: every column's byte offset and width in a row, cell shape, physical
dtype and null value. It reads no data.

Bad input raises :class:`~dfits.errors.HeaderError` naming the file, the HDU, the column and
the keyword: TFIELDS missing, not an integer or above 999; TFORMn missing or not parseable;
the fields' widths not adding up to NAXIS1 (binary), TBCOLn missing, overlapping another
field or running past the row (ASCII); THEAP before the end of the rows or past PCOUNT;
TDIMn whose product is not the repeat count; TSCALn/TZEROn not numbers (undefined, a string,
a logical), or TSCALn = 0.

Merely unusual input still reads: a TTYPEn missing (the FITS standard makes it optional;
``nom-tam-fits/bt12.fits`` has none), or whose card holds bytes outside printable ASCII,
names the column ``col<n>`` as astropy's ``Table`` names a missing one; a TNULLn of a
binary column outside its type's range, or not an integer (undefined, a string, a
logical), never matches and is dropped, as in astropy's data; THEAP leaving a gap
after the rows (``astropy/theap-gap.fits``) and zero-width columns (``0D``) read normally.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from dfits.errors import HeaderError
from dfits.format.header import Header
from dfits.format.tform import (
    STORED,
    Form,
    parse_ascii_tform,
    parse_binary_tform,
    physical_dtype,
)

__all__ = ["Column", "TableLayout", "parse_table"]

_TDIM = re.compile(r"\s*\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)\s*")


@dataclass(frozen=True)
class Column:
    """One table column: where its field is in a row and what its values are.

    Attributes
    ----------
    number : int
        The ``n`` of its keywords (1-based).
    name : str
        TTYPEn (``col<n>`` when absent).
    tform : str
        TFORMn as written.
    form : Form
        The parsed TFORMn.
    offset : int
        Byte offset of the field in a row (TBCOLn - 1 for ASCII tables).
    unit : str or None
        TUNITn.
    shape : tuple of int
        Cell shape in numpy order: ``()`` for one element, ``(repeat,)``, or TDIMn reversed;
        for A columns the characters are the string's width, not an axis.
    scale, zero : float
        TSCALn and TZEROn (1 and 0 when absent).
    null : int, str or None
        TNULLn: an integer for B/I/J/K (None when out of range), a string for ASCII.
    dtype : numpy.dtype
        Physical dtype of the values (``object`` for variable-length arrays, whose elements
        have :attr:`element_dtype`; float64 for an integer column that may hold nulls:
        TNULLn on unscaled B/I/J/K, and every ASCII integer column).
    ascii : bool
        True for a column of an ASCII TABLE.
    array_shape : tuple of int
        For a variable-length array with a TDIMn of two or more axes, the shape each row's
        array is given (``-1`` for its length), as astropy gives it: ``(-1, *TDIM[-2::-1])``,
        or ``(1, -1)`` when TDIMn's last axis is 1; ``()`` (flat arrays) otherwise.
    """

    number: int
    name: str
    tform: str
    form: Form
    offset: int
    unit: str | None
    shape: tuple[int, ...]
    scale: float
    zero: float
    null: int | str | None
    dtype: np.dtype
    ascii: bool = False
    array_shape: tuple[int, ...] = ()

    @property
    def code(self) -> str:
        """The TFORM type code (``E``, ``J``, ``P``, ...)."""
        return self.form.code

    @property
    def width(self) -> int:
        """Bytes of the field in each row."""
        return self.form.width

    @property
    def element_dtype(self) -> np.dtype:
        """Physical dtype of one element (of each array, for P/Q columns)."""
        code = self.form.element or self.form.code
        width = self.shape[-1] if code == "A" and self.shape else self.form.repeat
        return physical_dtype(code, self.scale, self.zero, width)

    @property
    def scaled(self) -> bool:
        """True when TSCALn/TZEROn change the stored values."""
        return self.scale != 1 or self.zero != 0


@dataclass(frozen=True)
class TableLayout:
    """The row structure of a table HDU.

    Attributes
    ----------
    ascii : bool
        True for an ASCII TABLE, False for a BINTABLE.
    row_bytes, nrows : int
        NAXIS1 and NAXIS2.
    heap_offset : int
        Where the heap starts, from the start of the data (THEAP; rows' end by default).
    heap_size : int
        Bytes of heap from ``heap_offset`` on.
    columns : tuple of Column
    """

    ascii: bool
    row_bytes: int
    nrows: int
    heap_offset: int
    heap_size: int
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    def find(self, name: str) -> Column | None:
        """The column named ``name``: exact match first, then case-insensitive (astropy)."""
        for c in self.columns:
            if c.name == name:
                return c
        lower = name.lower()
        return next((c for c in self.columns if c.name.lower() == lower), None)


def parse_table(
    header: Header, ascii: bool, row_bytes: int, nrows: int, pcount: int, where: str
) -> TableLayout:
    """Describe the columns of a table HDU from its header.

    Parameters
    ----------
    header : Header
    ascii : bool
        True for ``XTENSION = 'TABLE'``.
    row_bytes, nrows, pcount : int
        NAXIS1, NAXIS2 and PCOUNT, checked by the layout scan.
    where : str
        Message prefix naming the file and HDU.

    Examples
    --------
    >>> h = Header(b"".join(c.ljust(80) for c in [b"TFIELDS = 2", b"TTYPE1  = 'A'",
    ...     b"TFORM1  = 'J'", b"TFORM2  = '2E'"]))
    >>> t = parse_table(h, False, 12, 3, 0, "x")
    >>> [(c.name, c.offset, c.shape, str(c.dtype)) for c in t.columns]
    [('A', 0, (), 'int32'), ('col2', 4, (2,), 'float32')]
    """
    nfields = header.get("TFIELDS")
    if not isinstance(nfields, int) or isinstance(nfields, bool) or not 0 <= nfields <= 999:
        raise HeaderError(f"{where}: TFIELDS = {nfields!r} must be an integer from 0 to 999")
    columns = []
    offset = 0
    for n in range(1, nfields + 1):
        column = _column(header, n, ascii, offset, where)
        columns.append(column)
        offset += column.width
    if ascii:
        _check_ascii_fields(columns, row_bytes, where)
    elif offset != row_bytes:
        raise HeaderError(
            f"{where}: the TFORMn widths add up to {offset} bytes but NAXIS1 = {row_bytes}"
        )
    heap_offset, heap_size = _heap(header, row_bytes * nrows, pcount, where)
    return TableLayout(ascii, row_bytes, nrows, heap_offset, heap_size, tuple(columns))


def _column(header: Header, n: int, ascii: bool, offset: int, where: str) -> Column:
    tform = header.get(f"TFORM{n}")
    name = header.get(f"TTYPE{n}")
    if name is not None and header.bad_cards and header.locate(f"TTYPE{n}") in header.bad_cards:
        name = None  # bytes outside printable ASCII (warned at open): the raw text is no name
    name = name.strip() if isinstance(name, str) and name.strip() else f"col{n}"
    at = f"{where}, column {n} ({name!r})"
    if tform is None:
        raise HeaderError(f"{at}: TFORM{n} missing (TFIELDS = {header.get('TFIELDS')})")
    try:
        form = parse_ascii_tform(tform) if ascii else parse_binary_tform(tform)
    except ValueError as err:
        raise HeaderError(f"{at}: TFORM{n}: {err}") from None
    if ascii:
        offset = _tbcol(header, n, at) - 1
    scale = _number(header, f"TSCAL{n}", 1.0, at)
    zero = _number(header, f"TZERO{n}", 0.0, at)
    if scale == 0:
        raise HeaderError(f"{at}: TSCAL{n} = 0: physical values cannot be computed")
    code = form.element or form.code
    if code in "LXA" or (ascii and code == "A"):
        scale, zero = 1.0, 0.0  # the standard gives them no meaning there; astropy ignores them
    unit = header.get(f"TUNIT{n}")
    shape = () if ascii else _shape(header, n, form, at)
    null = _null(header.get(f"TNULL{n}"), code, ascii)
    width = form.width if ascii else (shape[-1] if form.code == "A" else form.repeat)
    dtype = physical_dtype(form.code, scale, zero, width)
    if ascii and code == "I":
        # astropy's (and cfitsio's) choice by width
        dtype = np.dtype("i2" if form.width <= 4 else "i4" if form.width <= 9 else "i8")
    elif ascii and code in "FED":
        dtype = np.dtype("f8")
    unscaled = scale == 1 and zero == 0
    if (ascii and code == "I") or (null is not None and unscaled and dtype.kind in "iu"):
        # values that may be null (TNULLn, or a blank ASCII field) are float64 with NaN
        # for them, as astropy's Table gives a scaled integer column (DESIGN: one decode)
        dtype = np.dtype("f8")
    if form.code == "A" and not ascii:
        shape = shape[:-1]
    unit = unit.strip() if isinstance(unit, str) else None
    arrays = () if ascii else _array_shape(header, n, form, at)
    return Column(
        n, name, tform, form, offset, unit, shape, scale, zero, null, dtype, ascii, arrays
    )


def _tbcol(header: Header, n: int, at: str) -> int:
    tbcol = header.get(f"TBCOL{n}")
    if not isinstance(tbcol, int) or isinstance(tbcol, bool) or tbcol < 1:
        raise HeaderError(f"{at}: TBCOL{n} = {tbcol!r} must be a positive integer")
    return tbcol


def _number(header: Header, key: str, default: float, at: str) -> float:
    value = header.get(key, default)
    if value is None:
        raise HeaderError(f"{at}: {key} has no value (nothing follows '='): it must be a number")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise HeaderError(f"{at}: {key} = {value!r} is not a finite number")
    return value


def _shape(header: Header, n: int, form: Form, at: str) -> tuple[int, ...]:
    """Cell shape (numpy order) from TDIMn, or from the repeat count."""
    tdim = header.get(f"TDIM{n}")
    repeat = form.repeat
    if tdim is None or form.code in "PQ":
        # TDIM of a variable-length array shapes each array, not the cell: _array_shape
        if form.code == "A":
            return (repeat,)
        return () if repeat == 1 and form.code != "X" else (repeat,)
    dims = _tdim(tdim, n, at)
    if math.prod(dims) != repeat:
        raise HeaderError(
            f"{at}: TDIM{n} = {tdim!r} holds {math.prod(dims)} elements but TFORM{n} = "
            f"{header.get(f'TFORM{n}')!r} has {repeat}"
        )
    return tuple(reversed(dims))


def _tdim(tdim: object, n: int, at: str) -> tuple[int, ...]:
    """TDIMn's axes, as written (FITS order)."""
    m = _TDIM.fullmatch(tdim) if isinstance(tdim, str) else None
    if m is None:
        raise HeaderError(f"{at}: TDIM{n} = {tdim!r} is not '(n1,n2,...)'")
    return tuple(int(d) for d in m[1].split(","))


def _array_shape(header: Header, n: int, form: Form, at: str) -> tuple[int, ...]:
    """How each variable-length array of column ``n`` is shaped (see :class:`Column`)."""
    tdim = header.get(f"TDIM{n}")
    if tdim is None or form.code not in "PQ":
        return ()
    dims = _tdim(tdim, n, at)
    if len(dims) < 2 or form.element in "ALX":
        # astropy shapes only numeric arrays, and only by a TDIM of two axes or more
        return ()
    if any(d == 0 for d in dims[:-1]):
        raise HeaderError(f"{at}: TDIM{n} = {tdim!r} has a zero axis for variable-length arrays")
    if dims[-1] == 1:
        return (1, -1)
    return (-1, *dims[-2::-1])


def _null(value: object, code: str, ascii: bool) -> int | str | None:
    if value is None:
        return None
    if ascii:
        return str(value).strip()
    if code not in "BIJK" or isinstance(value, bool) or not isinstance(value, int):
        return None
    info = np.iinfo(STORED[code])
    # out of the stored type's range: no stored value can equal it (read anyway)
    return value if info.min <= value <= info.max else None


def _check_ascii_fields(columns: list[Column], row_bytes: int, where: str) -> None:
    # sorted by the byte span alone: two columns with the same span (fuzz seed 10 case
    # 4262) would otherwise compare the Column records themselves (a TypeError)
    spans = sorted(((c.offset, c.offset + c.width, c) for c in columns), key=lambda s: s[:2])
    for start, stop, c in spans:
        if stop > row_bytes:
            raise HeaderError(
                f"{where}, column {c.number} ({c.name!r}): TBCOL{c.number} = {start + 1} with "
                f"width {c.width} runs past the row (NAXIS1 = {row_bytes})"
            )
    for (_, stop, a), (start, _, b) in itertools.pairwise(spans):
        if start < stop:
            raise HeaderError(
                f"{where}, column {b.number} ({b.name!r}): TBCOL{b.number} = {start + 1} "
                f"overlaps column {a.number} ({a.name!r}), which ends at byte {stop}"
            )


def _heap(header: Header, main: int, pcount: int, where: str) -> tuple[int, int]:
    theap = header.get("THEAP", main)
    if not isinstance(theap, int) or isinstance(theap, bool):
        raise HeaderError(f"{where}: THEAP = {theap!r} is not an integer")
    if theap < main:
        raise HeaderError(
            f"{where}: THEAP = {theap} starts before the end of the rows (byte {main})"
        )
    if theap > main + pcount:
        raise HeaderError(
            f"{where}: THEAP = {theap} is past the end of the heap area "
            f"(rows end at byte {main}, PCOUNT = {pcount})"
        )
    return theap, main + pcount - theap
