"""Physical values of one table field from the bytes of a block of rows.

The contract: given ``rows``, a read-only ``uint8`` array of shape ``(n, stride)`` whose row
``i`` starts with the bytes of row ``i`` of the field (a zero-copy strided view over the mmap
of whole rows, or gathered field bytes), :func:`field_values` returns the column's values for
those rows: a :class:`~dfits.stored.stored.StoredChunk` over the strided big-endian field when
the fused kernels can reduce it (:func:`kernel_spec`), else a native numpy array computed as
astropy computes ``hdu.data[name]``:

* L: ``byte == 'T'`` (NUL and ``'F'`` are False); X: the bits, most significant first;
* A: ``str``, trailing blanks and NULs stripped (astropy's chararray);
* C/M: complex; TSCALn/TZEROn other than the unsigned conventions: float64, computed as
  ``stored * scale + zero`` in float64;
* TNULLn on a B/I/J/K column, scaled or not, and a blank (or TNULLn) field of an ASCII
  integer column: the column is float64 and those cells are NaN (:func:`nullable`: the one
  decode every numpy, dask and xarray route gives). DataFrames and Arrow take the stored
  integers and the null flags instead (:func:`field_integers`), so that their nullable
  integer types keep every value exact. The unsigned and int8 conventions ignore TNULLn,
  as astropy does (and as images ignore BLANK): their values are integers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dfits.format.columns import Column
from dfits.format.dtypes import DecodeSpec
from dfits.format.tform import STORED, is_unsigned_zero
from dfits.stored.stored import StoredChunk

__all__ = [
    "element_values",
    "field_integers",
    "field_values",
    "integer_dtype",
    "kernel_spec",
    "nullable",
    "strings",
    "with_nan",
]

_BITPIX = {"B": 8, "I": 16, "J": 32, "K": 64, "E": -32, "D": -64}


def nullable(column: Column) -> bool:
    """True for an integer column whose cells may be null: TNULLn on unscaled B/I/J/K, and
    every unscaled ASCII integer column (a blank field is null). Its values are float64 with NaN for
    the nulls (``column.dtype``); a DataFrame holds them as :func:`integer_dtype` integers
    with a mask. (Scaled columns are float64 anyway; their TNULLn cells are NaN.)"""
    if column.ascii:
        return column.code == "I" and not column.scaled
    return isinstance(column.null, int) and not column.scaled and column.code in "BIJK"


def integer_dtype(column: Column) -> np.dtype:
    """The integer dtype of a :func:`nullable` column's non-null values (pandas, Arrow):
    the stored type of a binary field, for ASCII astropy's choice by field width."""
    if column.ascii:
        width = column.form.width
        return np.dtype("i2" if width <= 4 else "i4" if width <= 9 else "i8")
    return STORED[column.code].newbyteorder("=")


def with_nan(values: np.ndarray, nulls: np.ndarray | None) -> np.ndarray:
    """``values`` as float64 with NaN where ``nulls``: the numpy form of a column whose
    cells may be null (the one place that turns null flags into NaN)."""
    out = np.asarray(values).astype(np.float64)
    if nulls is not None:
        out[nulls] = np.nan
    return out


def kernel_spec(column: Column) -> DecodeSpec | None:
    """The decode spec under which the kernels compute exactly astropy's values, or None.

    Unscaled B/I/J/K/E/D, the unsigned and int8 offsets, and J/K that are scaled or carry
    TNULLn (float64 arithmetic, TNULLn → NaN) qualify. Scaled or TNULLn B/I and scaled
    E/D do not: the kernels compute those in float32, and astropy's tables use float64.
    """
    code = column.code
    if column.ascii or code not in _BITPIX:
        return None
    bitpix = _BITPIX[code]
    if nullable(column):
        if code in "JK":
            return DecodeSpec(bitpix, column.dtype, "scaled", 1.0, 0.0, column.null)
        return None
    if not column.scaled:
        return DecodeSpec(bitpix, column.dtype)
    if is_unsigned_zero(code, column.scale, column.zero):
        return DecodeSpec(bitpix, column.dtype, "offset", 1.0, float(column.zero))
    if code in "JK":
        null = column.null if isinstance(column.null, int) else None
        return DecodeSpec(bitpix, column.dtype, "scaled", column.scale, column.zero, null)
    return None


def field_values(buf: np.ndarray, start: int, stride: int, n: int, column: Column) -> Any:
    """Values of ``column`` for ``n`` rows whose field bytes start at ``buf[start]`` and
    repeat every ``stride`` bytes (``buf``: a flat ``uint8`` array, e.g. an mmap of rows)."""
    spec = kernel_spec(column)
    if spec is not None:
        # Zero-copy: the field's big-endian values, strided by the row length, straight
        # from the mapped rows; the kernels swap each value as they read it.
        item = spec.itemsize
        cell = column.shape
        strides = [item] * len(cell)
        for i in range(len(cell) - 2, -1, -1):
            strides[i] = strides[i + 1] * cell[i + 1]
        if n == 0 or column.width == 0:
            return StoredChunk(np.zeros((n, *cell), f"u{item}"), spec)
        u = np.ndarray((n, *cell), f"u{item}", buffer=buf, offset=start, strides=(stride, *strides))
        return StoredChunk(u, spec)
    width = column.width
    if n == 0 or width == 0:
        field = np.zeros((n, width), np.uint8)
    else:
        field = as_strided(buf[start:], (n, width), (stride, 1), writeable=False)
    return element_values(field, column, column.code, column.shape)


def field_integers(
    buf: np.ndarray, start: int, stride: int, n: int, column: Column
) -> tuple[np.ndarray, np.ndarray]:
    """The stored integers of a binary :func:`nullable` column and which cells are TNULLn
    (arguments as :func:`field_values`): what a DataFrame's nullable integers hold."""
    width = column.width
    if n == 0 or width == 0:
        field = np.zeros((n, width), np.uint8)
    else:
        field = as_strided(buf[start:], (n, width), (stride, 1), writeable=False)
    stored = STORED[column.code]
    values = np.ascontiguousarray(field).view(stored).reshape((n, *column.shape))
    # a DataFrame or Arrow column holds native integers in its own memory: this one numpy
    # pass is the swap and the copy out of the interleaved rows together (as element_values)
    ints = values.astype(stored.newbyteorder("="))
    return ints, ints == column.null


def element_values(field: np.ndarray, column: Column, code: str, shape: tuple[int, ...]):
    """Decode ``field`` (``(n, bytes)`` uint8) holding ``code`` elements into cells of
    ``shape``; shared by fixed fields and variable-length arrays."""
    n = field.shape[0]
    if code == "L":
        return (field == ord("T")).reshape((n, *shape))
    if code == "X":
        bits = np.unpackbits(field, axis=1)[:, : column.form.repeat]
        return bits.astype(bool).reshape((n, *shape))
    if code == "A":
        cells = math.prod(shape)
        if not cells or not n:
            return np.zeros((n, *shape), column.dtype)
        # TDIMn on A: each cell is an array of strings of the first dimension's width
        return strings(field.reshape(n * cells, -1)).reshape((n, *shape))
    stored = STORED[code]
    values = np.ascontiguousarray(field).view(stored).reshape((n, *shape))
    # a table field is interleaved with the row's other fields, so no kernel reads it in place:
    # this one numpy pass is the swap (and the copy out of the rows) together
    if not (column.scaled or nullable(column)) or code in "CM":
        return values.astype(stored.newbyteorder("="))
    if is_unsigned_zero(code, column.scale, column.zero):
        # the offset of 2**(n-1) (or -128 on bytes) is a flip of the top bit
        size = stored.itemsize
        native = values.astype(stored.newbyteorder("=")).view(f"u{size}")
        flipped = native ^ np.array(1 << (8 * size - 1), f"u{size}")
        return flipped.view(np.int8) if code == "B" else flipped
    nulls = values == column.null if isinstance(column.null, int) and code in "BIJK" else None
    # a signalling NaN casts to NaN and a huge value scales to inf, as IEEE says: no warning
    with np.errstate(invalid="ignore", over="ignore"):
        out = values.astype(np.float64)
        if column.scale != 1:
            out *= column.scale
        if column.zero != 0:
            out += column.zero
    if nulls is not None:
        out[nulls] = np.nan
    return out


def strings(field: np.ndarray) -> np.ndarray:
    """``(n, w)`` ASCII bytes as ``str`` values, trailing blanks and NULs stripped."""
    n, w = field.shape
    if w == 0:
        return np.full(n, "", dtype="U1")
    # Strip on the bytes: the bytes after each row's last one that is neither blank nor NUL
    # become NUL, which numpy's S type drops. (np.char.rstrip on str stops early on a value
    # with NULs inside, '\x00 \x00\x00\x00 ' -> '\x00 ': fuzz seed 5404 table case 15281.)
    keep = (field != 0x20) & (field != 0)
    ends = np.where(keep.any(axis=1), w - np.argmax(keep[:, ::-1], axis=1), 0)
    clean = np.where(np.arange(w) < ends[:, None], field, 0).astype(np.uint8)
    raw = clean.view(f"S{w}").reshape(n)
    # latin-1 keeps any stray high byte readable instead of failing the whole column
    return np.char.decode(raw, "latin-1").astype(f"U{w}")
