"""Table HDUs as xarray Datasets: ``xr.open_dataset(path, engine="dfits", hdu="EVENTS")``.

The contract: :func:`table_dataset` gives a BINTABLE or ASCII TABLE HDU as a Dataset with a
``row`` dimension and one variable per column, each a lazily indexed :class:`ColumnArray`
(path, HDU index, column name: it pickles, and each indexing reads only that column's bytes
of the rows asked for, through the column's reader). With ``chunks=`` xarray builds dask
arrays in the column's row chunks (``preferred_chunks``), so memory stays one chunk per task.

* Cells with more than one element get extra dimensions ``<column>_dim_0``, ``_dim_1``, ...
  in numpy order (TDIMn reversed), as astropy's ``Table`` shapes them.
* TUNITn is the ``units`` attribute; TFORMn, TDIMn and the column number are attributes too.
* Integer columns that can hold nulls (TNULLn on B/I/J/K, and ASCII integer columns, whose
  blank fields are null) are float64 with NaN for the nulls, exactly as ``hdu.column`` gives
  them (one decode, :func:`dfits.tables.fields.nullable`); the integer dtype and TNULLn are in
  ``encoding`` (``dtype``, ``_FillValue``).
* A columns are ``str`` with trailing blanks stripped; L columns ``bool``; X columns ``bool``
  bits.
* Variable-length arrays (P/Q) are ``object`` variables holding one numpy array per row, as
  astropy's ``Table`` gives them; ``drop_variables`` leaves them out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from dfits.tables.fields import integer_dtype, nullable
from dfits.tables.frames import column_chunks
from dfits.xarray.files import open_file

__all__ = ["ColumnArray", "table_dataset"]


class ColumnArray(BackendArray):
    """One column's physical values, read block of rows by block of rows."""

    def __init__(self, path: str, hdu: int, name: str, storage_options: dict | None) -> None:
        self.path, self.hdu, self.name = path, hdu, name
        self.storage_options = storage_options
        reader = self._reader()
        self.shape = reader.shape
        self.dtype = np.dtype(reader.dtype)

    def _reader(self) -> Any:
        return open_file(self.path, self.storage_options)[self.hdu].column_reader(self.name)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._raw_getitem
        )

    def _raw_getitem(self, key: tuple) -> np.ndarray:
        # BASIC support: xarray hands ints and forward slices (it flips reversed ones itself)
        rows, cell = key[0], key[1:]
        squeeze = isinstance(rows, int | np.integer)
        if squeeze:
            rows = slice(int(rows), int(rows) + 1)
        first, stop, step = rows.indices(self.shape[0])
        values = np.asarray(self._reader().rows(first, max(stop, first)))
        values = values[(slice(None, None, step), *cell)]
        # [0, ...] keeps a 0-d array: a variable-length cell must not become the array itself
        return values[0, ...] if squeeze else values


def _variable(path: str, h: Any, column: Any, storage_options: dict | None) -> xr.Variable:
    data = ColumnArray(path, h.index, column.name, storage_options)
    dims = ["row"] + [f"{column.name}_dim_{k}" for k in range(len(column.shape))]
    attrs: dict[str, Any] = {"fits_column": column.number, "tform": column.tform}
    if column.unit:
        attrs["units"] = column.unit
    if len(column.shape) > 1:
        attrs["tdim"] = "(" + ",".join(str(n) for n in column.shape[::-1]) + ")"
    var = xr.Variable(dims, indexing.LazilyIndexedArray(data), attrs)
    if nullable(column):
        var.encoding.update(dtype=integer_dtype(column), _FillValue=column.null)
    rows = column_chunks(h.column_reader(column.name), None)[0]
    var.encoding["preferred_chunks"] = {"row": rows[0]}
    return var


def table_dataset(path: str, h: Any, storage_options: dict | None, filename: str) -> xr.Dataset:
    """The Dataset of table HDU ``h`` of ``path``: a ``row`` dimension, a variable a column."""
    variables = {c.name: _variable(path, h, c, storage_options) for c in h.columns}
    attrs = {"fits_hdu": h.index, "fits_extname": h.name, "fits_filename": filename}
    return xr.Dataset(variables, attrs=attrs)
