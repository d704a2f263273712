"""The listing of a file's HDUs (``f.info()``, ``dfits info``), as astropy's ``info()``.

One row per HDU: index, name, version, kind, cards, dimensions and format. An image's
dimensions are its shape in numpy order and its format the physical dtype; a table's are
astropy's ``"{rows}R x {columns}C"`` and ``"[TFORM1, TFORM2, ...]"``, from the header alone
(listing a table parses none of its columns).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["print_info", "summary"]

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
    """Print the listing ``rows`` (``(index, name, ver, kind, cards, dims, format)``)."""
    lines = [
        f"Filename: {filename}",
        f"{'No.':>3}  {'Name':<12} {'Ver':>4}  {'Type':<16} {'Cards':>5}  "
        f"{'Dimensions':<22} Format",
    ]
    for i, name, ver, kind, cards, dims, form in rows:
        lines.append(f"{i:>3}  {name:<12} {ver:>4}  {kind:<16} {cards:>5}  {dims!s:<22} {form}")
    print("\n".join(lines), file=sys.stdout if output is None else output)
