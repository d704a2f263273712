"""TFORMn values: the storage of one table field, and the physical dtype it reads as.

The contract: :func:`parse_binary_tform` and :func:`parse_ascii_tform` turn a TFORMn value
into a :class:`Form` (type code, repeat count, bytes per row, element type of a
variable-length array) or raise ``ValueError`` saying why; the caller adds the file, HDU,
column and keyword. :func:`physical_dtype` gives the native dtype astropy gives a column's
values once TSCALn/TZEROn are applied.

Binary table codes (FITS 4.0, table 18): L logical, X bit, B unsigned byte, I/J/K signed
16/32/64-bit integers, A character, E/D IEEE float32/float64, C/M complex pairs of them, and
P/Q array descriptors (two 32- or 64-bit integers: element count and heap offset).
ASCII table codes: Aw, Iw, Fw.d, Ew.d, Dw.d.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BINARY_WIDTH",
    "Form",
    "is_unsigned_zero",
    "parse_ascii_tform",
    "parse_binary_tform",
    "physical_dtype",
]

#: Bytes per element of each binary code (X counts bits, rounded up to whole bytes).
BINARY_WIDTH = {
    "L": 1, "X": 1, "B": 1, "I": 2, "J": 4, "K": 8, "A": 1,
    "E": 4, "D": 8, "C": 8, "M": 16, "P": 8, "Q": 16,
}  # fmt: skip

#: Stored (big-endian) dtype of one element of a numeric code.
STORED = {
    "B": np.dtype("u1"), "I": np.dtype(">i2"), "J": np.dtype(">i4"), "K": np.dtype(">i8"),
    "E": np.dtype(">f4"), "D": np.dtype(">f8"), "C": np.dtype(">c8"), "M": np.dtype(">c16"),
}  # fmt: skip

_BINARY = re.compile(r"\s*(\d*)\s*([LXBIJKAEDCMPQ])(.*?)\s*", re.IGNORECASE)
_VLA = re.compile(r"\s*([LXBIJKAEDCM])\s*(?:\(\s*(\d+)\s*\))?\s*", re.IGNORECASE)
_ASCII = re.compile(r"\s*([AIFED])\s*(\d+)(?:\.(\d+))?(?:E\d+)?\s*", re.IGNORECASE)
_UNSIGNED_ZERO = {"I": 2**15, "J": 2**31, "K": 2**63}


@dataclass(frozen=True)
class Form:
    """One parsed TFORMn.

    Attributes
    ----------
    code : str
        The type code (upper case).
    repeat : int
        Elements per row (bits for X, characters for A; 1 for an ASCII field).
    width : int
        Bytes the field takes in a row.
    element : str or None
        The element code of a variable-length array (P/Q), else None.
    decimals : int or None
        The ``d`` of an ASCII ``Fw.d``/``Ew.d``/``Dw.d``.
    """

    code: str
    repeat: int
    width: int
    element: str | None = None
    decimals: int | None = None


def parse_binary_tform(value: object) -> Form:
    """Parse a binary table's TFORMn (``rT``, ``rTa``, ``rPt(max)``).

    Examples
    --------
    >>> parse_binary_tform("16E")
    Form(code='E', repeat=16, width=64, element=None, decimals=None)
    >>> parse_binary_tform("1PJ(5)").element
    'J'
    >>> parse_binary_tform("1Y")
    Traceback (most recent call last):
    ValueError: TFORM '1Y' is not r followed by one of L, X, B, I, J, K, A, E, D, C, M, P, Q
    """
    if not isinstance(value, str):
        raise ValueError(f"TFORM {value!r} is not a string")
    m = _BINARY.fullmatch(value)
    if m is None:
        codes = ", ".join(BINARY_WIDTH)
        raise ValueError(f"TFORM {value!r} is not r followed by one of {codes}")
    repeat = int(m[1]) if m[1] else 1
    code = m[2].upper()
    rest = m[3]
    element = None
    if code in "PQ":
        vla = _VLA.fullmatch(rest)
        if vla is None:
            raise ValueError(f"TFORM {value!r}: the array descriptor needs an element type")
        if repeat > 1:
            raise ValueError(f"TFORM {value!r}: a {code} descriptor's repeat must be 0 or 1")
        element = vla[1].upper()
    width = (repeat + 7) // 8 if code == "X" else repeat * BINARY_WIDTH[code]
    return Form(code, repeat, width, element)


def parse_ascii_tform(value: object) -> Form:
    """Parse an ASCII table's TFORMn (``Aw``, ``Iw``, ``Fw.d``, ``Ew.d``, ``Dw.d``).

    Examples
    --------
    >>> parse_ascii_tform("E15.7")
    Form(code='E', repeat=1, width=15, element=None, decimals=7)
    """
    if not isinstance(value, str):
        raise ValueError(f"TFORM {value!r} is not a string")
    m = _ASCII.fullmatch(value)
    if m is None or int(m[2]) == 0:
        raise ValueError(f"TFORM {value!r} is not one of Aw, Iw, Fw.d, Ew.d, Dw.d")
    code = m[1].upper()
    if code in "FED" and m[3] is None:
        raise ValueError(f"TFORM {value!r}: {code} needs a number of decimals (w.d)")
    decimals = int(m[3]) if m[3] is not None else None
    return Form(code, 1, int(m[2]), None, decimals)


def is_unsigned_zero(code: str, scale: float, zero: float) -> bool:
    """True for the offset conventions that astropy reads as an integer type: TZERO =
    2**15/2**31/2**63 on I/J/K (unsigned) and TZERO = -128 on B (int8), with TSCAL = 1."""
    if scale != 1:
        return False
    return (code == "B" and zero == -128) or _UNSIGNED_ZERO.get(code) == zero


def physical_dtype(code: str, scale: float = 1.0, zero: float = 0.0, width: int = 1) -> np.dtype:
    """The native dtype of a binary (or ASCII) element's physical values.

    Examples
    --------
    >>> physical_dtype("I", 1, 32768), physical_dtype("J", 0.5, 0), physical_dtype("A", width=4)
    (dtype('uint16'), dtype('float64'), dtype('<U4'))
    """
    if code == "A":
        return np.dtype(f"U{max(width, 1)}")
    if code in "LX":
        return np.dtype(bool)
    if code in "PQ":
        return np.dtype(object)
    if code == "F":
        return np.dtype("f8")
    scaled = scale != 1 or zero != 0
    if scaled and code in "BIJK":
        if is_unsigned_zero(code, scale, zero):
            return np.dtype("i1") if code == "B" else np.dtype(f"u{STORED[code].itemsize}")
        return np.dtype("f8")
    if scaled and code in "ED":
        return np.dtype("f8")
    return STORED[code].newbyteorder("=")
