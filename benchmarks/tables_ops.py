"""tables.py's timed operations: what each tool does for each case.

Every operation takes the file's path and a scratch folder and returns check values (sums,
row counts) that the driver compares across tools:

* ``sum1``: one column (``D0``) summed;
* ``cols3``: three columns (``E0``, ``D0``, ``J0``) read and summed (dfits: together through
  ``hdu.aggregate``, one pass; ``dfits-columns``: three ``column(n).sum()`` in one compute);
* ``pandas``: the whole table to a pandas DataFrame (dfits: ``to_pandas()``, every numeric
  column swapped out of the rows in one threaded pass; ``dfits-dask``: through
  ``to_dask_dataframe().compute()``);
* ``ascii``: every field of the ASCII table parsed to numbers;
* ``parquet``: three columns to Parquet through dfits' dask DataFrame (peak RSS is the figure).
"""

from __future__ import annotations

import functools
import mmap
from collections.abc import Callable

import numpy as np

from tables_files import ASCII_FIELDS, COLUMN, THREE, data_offset, row_dtype

Op = Callable[[str, str], list[float]]


def _rows(path: str) -> np.ndarray:
    """The rows of :func:`tables_files.write_table`'s file as a big-endian structured map."""
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        fh.seek(2880)
        head = fh.read(data_offset() - 2880)
    at = head.index(b"NAXIS2  =")  # NAXIS2 from the header: the padding is not rows
    nrows = int(head[at + 10 : at + 30])
    return np.ndarray(nrows, row_dtype(), mm, data_offset())


def _frame_check(frame) -> list[float]:
    return [float(len(frame)), float(frame[COLUMN].sum()), float(frame["J9"].sum())]


# -- dfits ---------------------------------------------------------------------------------
def dfits_sums(names) -> Op:
    def run(path: str, out: str) -> list[float]:
        import dask

        import dfits

        hdu = dfits.open(path)[1]
        return [float(v) for v in dask.compute(*(hdu.column(n).sum() for n in names))]

    return run


def dfits_aggregate(names) -> Op:
    def run(path: str, out: str) -> list[float]:
        import dask

        import dfits

        (sums,) = dask.compute(dfits.open(path)[1].aggregate("sum", list(names)))
        return [float(sums[n]) for n in names]

    return run


def dfits_pandas(path: str, out: str) -> list[float]:
    import dfits

    return _frame_check(dfits.open(path)[1].to_pandas())


def dfits_dask_pandas(path: str, out: str) -> list[float]:
    import dfits

    return _frame_check(dfits.open(path)[1].to_dask_dataframe().compute())


def dfits_ascii(path: str, out: str) -> list[float]:
    import dask

    import dfits

    hdu = dfits.open(path)[1]
    values = dask.compute(*(hdu.column(name) for name, *_ in ASCII_FIELDS))
    return [float(np.sum(v, dtype=np.float64)) for v in values]


def dfits_parquet(path: str, out: str) -> list[float]:
    import dfits

    frame = dfits.open(path)[1].to_dask_dataframe(list(THREE))
    frame.to_parquet(out, write_index=False)
    return [float(len(frame))]


# -- astropy -------------------------------------------------------------------------------
def astropy_sums(names) -> Op:
    def run(path: str, out: str) -> list[float]:
        from astropy.io import fits

        with fits.open(path, memmap=True) as hl:
            return [float(hl[1].data[n].sum()) for n in names]

    return run


def astropy_table_sums(path: str, out: str) -> list[float]:
    from astropy.table import Table

    table = Table.read(path, hdu=1)
    return [float(np.sum(table[n])) for n in THREE]


def astropy_pandas(path: str, out: str) -> list[float]:
    from astropy.table import Table

    return _frame_check(Table.read(path, hdu=1).to_pandas())


def astropy_ascii(path: str, out: str) -> list[float]:
    from astropy.io import fits

    with fits.open(path) as hl:
        data = hl[1].data
        return [float(np.sum(data[name], dtype=np.float64)) for name, *_ in ASCII_FIELDS]


# -- fitsio --------------------------------------------------------------------------------
def fitsio_sums(names) -> Op:
    def run(path: str, out: str) -> list[float]:
        import fitsio

        data = fitsio.read(path, ext=1, columns=list(names))
        return [float(data[n].sum()) for n in names]

    return run


def fitsio_pandas(path: str, out: str) -> list[float]:
    import fitsio
    import pandas as pd

    data = fitsio.read(path, ext=1)
    if not data.dtype.isnative:  # pandas takes native arrays only
        data = data.astype(data.dtype.newbyteorder("="))
    return _frame_check(pd.DataFrame(data))


def fitsio_ascii(path: str, out: str) -> list[float]:
    import fitsio

    data = fitsio.read(path, ext=1)
    return [float(np.sum(data[name], dtype=np.float64)) for name, *_ in ASCII_FIELDS]


# -- LIMIT ---------------------------------------------------------------------------------
@functools.cache
def _limit_kernel():
    """Sums of three strided big-endian fields (E, D, J) on 2 threads: each value swapped in
    a register as it is read (dfits' swap intrinsics), no parsing, no dask."""
    from numba import njit, prange

    from dfits.kernels._swap import load_f4, load_f8, load_i4

    @njit(parallel=True, nogil=True, cache=True)
    def sums(e, d, j):
        n = e.size
        parts = np.zeros((2, 3))
        for t in prange(2):
            se = sd = 0.0
            sj = 0
            for i in range(t * n // 2, (t + 1) * n // 2):
                se += load_f4(e[i])
                sd += load_f8(d[i])
                sj += load_i4(j[i])
            parts[t, 0], parts[t, 1], parts[t, 2] = se, sd, sj
        return parts.sum(axis=0)

    return sums


def limit_sums(names) -> Op:
    def run(path: str, out: str) -> list[float]:
        rows = _rows(path)
        # native unsigned views of the stored fields, strided by the row: nothing copied
        views = [rows[n].view(f"u{rows.dtype[n].itemsize}") for n in ("E0", "D0", "J0")]
        e, d, j = _limit_kernel()(*views)
        got = {"E0": e, "D0": d, "J0": j}
        return [float(got[n]) for n in names]

    return run


def limit_pandas(path: str, out: str) -> list[float]:
    import pandas as pd

    rows = _rows(path)
    # numpy's fastest whole-table read: each field swapped into its own native array once,
    # handed to pandas without a further copy
    data = {n: rows[n].astype(rows.dtype[n].newbyteorder("=")) for n in rows.dtype.names}
    return _frame_check(pd.DataFrame(data, copy=False))


#: case -> tool -> operation
OPS: dict[str, dict[str, Op]] = {
    "sum1": {
        "dfits": dfits_sums([COLUMN]),
        "astropy": astropy_sums([COLUMN]),
        "fitsio": fitsio_sums([COLUMN]),
        "LIMIT": limit_sums([COLUMN]),
    },
    "cols3": {
        "dfits": dfits_aggregate(THREE),
        "dfits-columns": dfits_sums(THREE),
        "astropy": astropy_sums(THREE),
        "astropy-table": astropy_table_sums,
        "fitsio": fitsio_sums(THREE),
        "LIMIT": limit_sums(THREE),
    },
    "pandas": {
        "dfits": dfits_pandas,
        "dfits-dask": dfits_dask_pandas,
        "astropy-table": astropy_pandas,
        "fitsio": fitsio_pandas,
        "LIMIT": limit_pandas,
    },
    "ascii": {"dfits": dfits_ascii, "astropy": astropy_ascii, "fitsio": fitsio_ascii},
    "parquet": {"dfits": dfits_parquet},
}
