"""The oracle of the fuzz campaign's table cases: astropy's values as dfits gives them.

The per-column comparison is the route tests' :func:`tests.tables.test_access.check_column`
on astropy's values decoded as dfits decodes (:func:`tests.tablefiles.astropy_decoded`:
TNULLn cells and blank ASCII integers as NaN), after the oracle rules below, which
:func:`oracle_value` applies. They are astropy's known table quirks, where dfits gives the
same values in another form, or where astropy reads what dfits rightly refuses:

1. **B with TZERO -128** (int8): astropy's table gives float64, dfits int8 (as for
   images); compared as int8 when every value is one.
2. **Widened ASCII A fields**: astropy widens an A field to the next TBCOLn; the text is the
   same, trailing blanks stripped (:func:`tests.tables.test_routes._astropy_as_mapped`).
3. **Logical NULs**: astropy reads a NUL logical as False with a warning, as dfits does; the
   oracle's warnings are astropy's and are ignored.
4. **TNULLn**: what astropy's column definition holds (not dfits' reading of the card)
   decides the nulls of the oracle; astropy keeps a TNULLn outside the type's range, which
   matches no stored value, so it nulls nothing either way.
5. **astropy refuses, dfits reads**: no oracle for that column (counted as ``unchecked``).
   **dfits refuses, astropy reads**: allowed ("dfits refuses", never an escape).
6. **Scaled K** (TZEROn not 2**63): astropy 7/8 raises (its ``bzero64`` bug);
   ``astropy_decoded`` computes stored * TSCALn + TZEROn in float64 as astropy would.
7. **Complex and float NaN**: equal when both are NaN (payloads aside).
8. **PA/QA cells**: astropy gives each row's characters as an array, dfits the row's
   string; the oracle joins the characters (blanks inside kept) and strips the end, as
   ``check_column`` does.
9. **A ZTABLE column whose cells do not decode** (the oracle's decoder refuses them): dfits
   must refuse that column on every route that reads those tiles (``read(where=)`` may
   select rows of other tiles only); values are a ``mismatch``.
10. **TSCALn/TZEROn of a P/Q column** scale the elements of its arrays (the standard,
    cfitsio and dfits); astropy scales the first row's array only (in its stored dtype:
    integers truncate) and leaves the others: the oracle scales the stored elements of
    astropy's raw heap.
11. **Names**: dfits' column ``n`` is astropy's column ``n`` (TTYPEn with bytes outside
    printable ASCII: astropy puts ``?`` for them, dfits names the column ``col<n>``).
12. **No rows**: astropy's empty column of a TDIMn cell has no cell axes; dfits' keeps
    them. Both must have no rows.
13. **TSCALn/TZEROn on C/M**: astropy scales the real part and drops the imaginary one
    (float64); no oracle for the column (``unchecked``). dfits ignores them.
14. **TZEROn = 2**(n-1) with TSCALn other than 1** (not the unsigned convention): astropy
    keeps unsigned integers and wraps (stored * TSCALn + TZEROn modulo 2**n), TNULLn or not;
    the standard's values, and dfits', are float64: the oracle computes them from astropy's
    raw field (NaN for TNULLn).
15. **NUL bytes inside a PA/QA string**: astropy's characters drop them, dfits keeps them
    (the standard ends a string at its first NUL: neither does); compared without them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["as_numpy", "cells", "equal", "oracle_value"]

#: the stored dtype of a P/Q column's elements (of the numbers astropy may scale)
_STORED = {"B": ">u1", "I": ">i2", "J": ">i4", "K": ">i8", "E": ">f4", "D": ">f8"}


@dataclass
class _Null:
    """The column as astropy defines its nulls and scaling (rule 4), for astropy_decoded."""

    name: str
    dtype: np.dtype
    code: str
    ascii: bool
    null: Any
    scale: float
    zero: float


def oracle_value(data: Any, acol: Any, c: Any) -> Any:
    """astropy's values of dfits column ``c`` (astropy's column ``acol`` of ``data``) as
    dfits gives them, after the oracle rules of this module's docstring."""
    from tests.tablefiles import astropy_decoded
    from tests.tables.test_routes import _astropy_as_mapped

    if c.code in "CM" and (acol.bscale is not None or acol.bzero is not None):
        raise LookupError("rule 13: astropy scales a complex column into its real part")
    if c.code in "PQ" and c.form.element == "A":  # rule 8
        return ["".join(np.asarray(v).astype(str)).rstrip(" \x00") for v in data[acol.name]]
    if c.code in "PQ":
        return _scaled_arrays(data, acol, c)
    null = acol.null if isinstance(acol.null, (int, np.integer)) else c.null
    if c.ascii:
        null = acol.null
    bscale = 1.0 if acol.bscale is None else acol.bscale
    bzero = 0.0 if acol.bzero is None else acol.bzero
    view = _Null(acol.name, c.dtype, c.code, c.ascii, null, bscale, bzero)
    want = astropy_decoded(data, view)
    if c.dtype.kind == "f" and not c.ascii and c.code in "BIJK" and _shown_kind(data, acol) in "iu":
        # rule 14: astropy keeps (and wraps) integers that dfits scales
        raw = np.asarray(data.base[acol.name])
        want = raw.astype(np.float64) * bscale + bzero
        if isinstance(null, (int, np.integer)):
            want = np.where(raw == null, np.nan, want)
    if c.dtype == np.int8 and np.asarray(want).dtype.kind == "f":  # rule 1
        want = np.asarray(want)
        if not np.array_equal(want, want.astype(np.int8)):
            return want
        return want.astype(np.int8)
    if c.dtype.kind == "U":  # rule 2
        return _astropy_as_mapped(np.asarray(want), c.dtype, c.name)
    return want


def _text(value: Any) -> str:
    return str(value).rstrip(" \x00").replace("\x00", "")


def _shown_kind(data: Any, acol: Any) -> str:
    """The dtype kind of astropy's own values of a column ("f" where it cannot give them)."""
    try:
        return np.asarray(data[acol.name]).dtype.kind
    except Exception:  # astropy's bzero64 bug on a scaled K (rule 6)
        return "f"


def _scaled_arrays(data: Any, acol: Any, c: Any) -> list:
    """Rule 10: TSCALn/TZEROn of a P/Q column scale its arrays' elements (the standard,
    cfitsio, dfits). astropy scales the first row's array only, in its stored dtype, and
    leaves the others: the oracle takes every row's stored elements from astropy's raw
    descriptors and heap and scales them into dfits' element dtype (float64 for a scale,
    the unsigned type for the offset of the unsigned convention)."""
    arrays = list(data[acol.name])
    scale = 1.0 if acol.bscale is None else acol.bscale
    zero = 0.0 if acol.bzero is None else acol.bzero
    element = c.element_dtype
    if (scale, zero) == (1, 0) or element.kind not in "iuf":
        return arrays
    stored = np.dtype(_STORED[c.form.element])
    heap = np.asarray(data._get_heap_data())  # astropy's heap bytes, from THEAP
    out = []
    for (count, at), shown in zip(np.asarray(data.base[acol.name]), arrays, strict=True):
        a = np.frombuffer(heap, stored, int(count), int(at)).reshape(np.shape(shown))
        if element.kind == "f":
            out.append((a.astype(np.float64) * scale + zero).astype(element))
        else:  # an integer offset (unsigned): exact in Python integers
            values = [int(v) * int(scale) + int(zero) for v in a.ravel()]
            out.append(np.array(values, object).reshape(a.shape).astype(element))
    return out


def as_numpy(route: str, table: Any, c: Any) -> Any:
    """One column of a whole-table route's result, as numpy cells (nulls as NaN)."""
    if route in ("read", "read(where=)"):
        return table[c.name]
    if route == "data[rows]":
        return table[c.name]
    if route == "to_pandas":
        series = table[c.name]
        if str(series.dtype)[:3] in ("Int", "UIn"):
            return series.to_numpy(np.float64, na_value=np.nan)
        return series.to_numpy()
    column = table[c.name].combine_chunks()  # to_arrow: back to Python cells
    return cells(_arrow_cells(column.to_pylist(), c))


def _arrow_cells(cells: list, c: Any) -> list:
    element = c.element_dtype if c.code in "PQ" else c.dtype
    complex_ = element.kind == "c"
    out = []
    for cell in cells:
        if cell is None:
            out.append(np.nan)
        elif isinstance(cell, list) and complex_:  # (real, imaginary) pairs
            flat = np.array(_flatten(cell), np.float64)
            with np.errstate(invalid="ignore"):  # inf * 1j (a mutated cell): nan + infj
                values = flat[0::2] + 1j * flat[1::2]
            out.append(complex(values[0]) if c.code in "CM" and not c.shape else values)
        elif isinstance(cell, list):
            flat = np.array([np.nan if v is None else v for v in _flatten(cell)])
            out.append(flat)
        else:
            out.append(cell)
    return out


def _flatten(cell: list) -> list:
    out = []
    for v in cell:
        out.extend(_flatten(v) if isinstance(v, list) else [v])
    return out


def equal(got: Any, want: Any) -> bool:
    """Values equal, cell by cell where cells are arrays, NaN equal to NaN."""
    if isinstance(want, str) or isinstance(got, str):
        # rule 15: NULs inside a string: astropy drops them, dfits keeps them
        return _text(got) == _text(want)
    g, w = cells(got), cells(want)
    if g.dtype == object or w.dtype == object:
        g, w = _rows(g), _rows(w)
        if len(g) != len(w):
            return False
        return all(equal(a, b) for a, b in zip(g, w, strict=True))
    if g.dtype.kind in "SU" or w.dtype.kind in "SU":
        g, w = np.char.rstrip(g.astype(str)), np.char.rstrip(w.astype(str))
        return g.shape == w.shape and bool(np.all(g == w))
    if g.size != w.size:
        return False
    g, w = g.reshape(-1), w.reshape(-1)
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        return bool(np.array_equal(g.astype(object), w.astype(object)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g, w = g.astype(np.complex128), w.astype(np.complex128)
        return bool(np.array_equal(g, w, equal_nan=True))


def _rows(values: np.ndarray) -> list:
    """The cells of a column, one per row (a 2-D array of cells: its rows)."""
    if not values.ndim:
        return [values[()]]
    return list(values)


def cells(values: Any) -> np.ndarray:
    """``values`` as an array; a list of cells (P/Q arrays) as a 1-d object array."""
    if isinstance(values, list):
        out = np.empty(len(values), object)
        out[:] = [np.asarray(v) if isinstance(v, (list, np.ndarray)) else v for v in values]
        return out
    return np.asarray(values)
