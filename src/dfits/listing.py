"""The listing of a file's HDUs (``f.info()``, ``dfits info``), as astropy's ``info()``, and
of a table's columns (``dfits info``, the notebook repr).

One row per HDU: index, name, version, kind, cards, dimensions and format. An image's
dimensions are its shape in numpy order and its format the physical dtype; a table's are
astropy's ``"{rows}R x {columns}C"`` and ``"[TFORM1, TFORM2, ...]"``, from the header alone
(listing a table parses none of its columns).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dfits.format.columns import Column

__all__ = ["column_rows", "columns_text", "print_info", "summary"]

_TABLE_KINDS = ("bintable", "table")


def summary(hdu: Any) -> tuple[Any, str]:
    """``(dimensions, format)`` of an HDU for a listing."""
    if hdu.kind in _TABLE_KINDS:
        header = hdu.layout.header
        nrows, ncols = header.get("NAXIS2", 0), header.get("TFIELDS", 0)
        if isinstance(ncols, int) and 0 <= ncols <= 999:
            forms = [str(header.get(f"TFORM{j}", "")) for j in range(1, ncols + 1)]
            return f"{nrows}R x {ncols}C", f"[{', '.join(forms)}]"
    dtype = hdu.layout.decode
    return hdu.shape, "" if dtype is None else str(dtype.physical)


def print_info(filename: str, rows: Iterable[tuple[Any, ...]], output: Any = None) -> None:
    """Print the listing ``rows`` (``(index, name, ver, kind, cards, dims, format)``).

    Columns are as wide as their longest entry (at least astropy's widths), so that a long
    name (``COMPRESSED_IMAGE``) or kind never pushes the columns after it out of line.

    >>> print_info("x.fits", [(1, "COMPRESSED_IMAGE", 1, "compressed_image", 9, (2, 3), "int16")])
    Filename: x.fits
    No.  Name              Ver  Type             Cards  Dimensions             Format
      1  COMPRESSED_IMAGE    1  compressed_image     9  (2, 3)                 int16
    """
    rows = list(rows)
    wide = [
        max([least, *(len(str(r[k])) for r in rows)]) for k, least in ((1, 12), (3, 16), (5, 22))
    ]
    name, kind, dims = wide
    lines = [
        f"Filename: {filename}",
        f"{'No.':>3}  {'Name':<{name}} {'Ver':>4}  {'Type':<{kind}} {'Cards':>5}  "
        f"{'Dimensions':<{dims}} Format",
    ]
    for i, n, ver, k, cards, d, form in rows:
        lines.append(f"{i:>3}  {n:<{name}} {ver:>4}  {k:<{kind}} {cards:>5}  {d!s:<{dims}} {form}")
    print("\n".join(lines), file=sys.stdout if output is None else output)


def column_rows(columns: Sequence[Column]) -> list[tuple[str, str, str, str, str]]:
    """``(name, TFORM, unit, dtype, cell shape)`` of each column, as text for a listing.

    The dtype is the physical one (what ``hdu.column`` gives); variable-length columns show
    ``object`` and their elements' dtype; the shape is the cell's, in numpy order, empty for
    one element.
    """
    rows = []
    for c in columns:
        dtype = str(c.dtype)
        if c.code in "PQ":
            element = "str" if c.element_dtype.kind == "U" else str(c.element_dtype)
            dtype = f"object (arrays of {element})" if element != "str" else "object (str)"
        shape = str(c.shape) if c.shape and not (c.code == "A" and len(c.shape) == 1) else ""
        rows.append((c.name, c.tform, c.unit or "", dtype, shape))
    return rows


def columns_text(columns: Sequence[Column], indent: str = "    ") -> str:
    """The columns as an aligned text table (``dfits info`` prints it under a table HDU)."""
    head = ("Name", "Format", "Unit", "Dtype", "Shape")
    rows = [head, *column_rows(columns)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    lines = []
    for r in rows:
        cells = [f"{v:<{w}}" for v, w in zip(r, widths, strict=False)] + [r[-1]]
        lines.append((indent + "  ".join(cells)).rstrip())
    return "\n".join(lines)
