"""tables.py's ``where`` case: a row filter on two fields, then three columns of the matches.

The filter ``(E1 < 0.1) & (J1 > 800)`` keeps about 1 % of the rows of
:func:`tables_files.write_table`'s file (``E`` uniform in [0, 1), ``J`` in [-1000, 1000)); the
columns read are ``E0``, ``D0`` and ``J0``. Each tool returns the row count and the sums of
``D0`` and ``J0`` over the matches:

* ``dfits``: ``hdu.to_pandas(["E0", "D0", "J0"], where=...)`` (one pass over the two fields,
  then only the matching rows' fields); ``dfits-read``: ``hdu.read(..., where=...)`` (numpy);
* ``astropy-table``: ``Table.read`` + a boolean mask; ``astropy``: ``fits.open`` (memmap) +
  numpy on ``data[...]``;
* ``fitsio``: ``FITS[1].where(...)`` (cfitsio's row filter) + ``read(columns=, rows=)``;
* ``LIMIT``: one numpy pass over the memmap (the mask from the two big-endian fields), then
  the three fields of the matching rows taken and swapped.
"""

from __future__ import annotations

import numpy as np

from tables_ops import Op, _rows

EXPR = "(E1 < 0.1) & (J1 > 800)"
COLUMNS = ["E0", "D0", "J0"]


def _check(n: int, d0, j0) -> list[float]:
    d0, j0 = np.asarray(d0, np.float64), np.asarray(j0, np.int64)
    return [float(n), float(d0.sum()), float(j0.sum())]


def dfits_where(path: str, out: str) -> list[float]:
    import dfits

    frame = dfits.open(path)[1].to_pandas(COLUMNS, where=EXPR)
    return _check(len(frame), frame["D0"], frame["J0"])


def dfits_read_where(path: str, out: str) -> list[float]:
    import dfits

    cols = dfits.open(path)[1].read(COLUMNS, where=EXPR)
    return _check(len(cols["E0"]), cols["D0"], cols["J0"])


def astropy_table_where(path: str, out: str) -> list[float]:
    from astropy.table import Table

    table = Table.read(path, hdu=1)
    kept = table[(table["E1"] < 0.1) & (table["J1"] > 800)][COLUMNS]
    return _check(len(kept), kept["D0"], kept["J0"])


def astropy_where(path: str, out: str) -> list[float]:
    from astropy.io import fits

    with fits.open(path, memmap=True) as hl:
        data = hl[1].data
        rows = np.flatnonzero((data["E1"] < 0.1) & (data["J1"] > 800))
        kept = {n: np.asarray(data[n][rows]) for n in COLUMNS}
    return _check(len(rows), kept["D0"], kept["J0"])


def fitsio_where(path: str, out: str) -> list[float]:
    import fitsio

    with fitsio.FITS(path) as f:
        rows = f[1].where("E1 < 0.1 && J1 > 800")
        data = f[1].read(columns=COLUMNS, rows=rows)
    return _check(len(data), data["D0"], data["J0"])


def limit_where(path: str, out: str) -> list[float]:
    rows = _rows(path)
    keep = np.flatnonzero((rows["E1"] < 0.1) & (rows["J1"] > 800))
    taken = rows[keep]  # the matching rows, copied once
    kept = {n: taken[n].astype(taken.dtype[n].newbyteorder("=")) for n in COLUMNS}
    return _check(len(keep), kept["D0"], kept["J0"])


#: case -> tool -> operation
OPS: dict[str, dict[str, Op]] = {
    "where": {
        "dfits": dfits_where,
        "dfits-read": dfits_read_where,
        "astropy": astropy_where,
        "astropy-table": astropy_table_where,
        "fitsio": fitsio_where,
        "LIMIT": limit_where,
    },
}
