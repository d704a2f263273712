"""Table HDUs (BINTABLE and ASCII TABLE) on the reader seam: columns, rows, DataFrames.

What lives here, from the bytes up:

* :mod:`~dfits.tables.fields`: the one decode of a table field (TSCALn/TZEROn, TNULLn → NaN,
  the unsigned and int8 conventions, L, X, A, complex), shared by every route;
* :mod:`~dfits.tables.columns`: :class:`~dfits.tables.columns.ColumnReader`, one column read
  by blocks of rows (the :class:`~dfits.array.reader.Reader` of ``hdu.column``);
* :mod:`~dfits.tables.reduce`: ``hdu.aggregate``, several columns reduced in one pass;
* :mod:`~dfits.tables.rowdecode`: the one route of eager reads of several columns (``read``,
  ``to_pandas``, ``to_arrow``, row filters) and of ``aggregate``: one map per span of rows
  for every column;
* :mod:`~dfits.tables.frames`: pandas, Arrow and dask DataFrames;
* :mod:`~dfits.tables.access`: :class:`~dfits.tables.access.TableAccess`, the table methods
  of an HDU (``hdu.columns``, ``hdu[name]``, ``hdu.column``, ``aggregate``, ``to_pandas``...).

``docs/tables.md`` maps each FITS column kind to its numpy, pandas and Arrow types. This
package may import ``array``, ``io``, ``kernels`` and ``format``, never ``file`` or ``xarray``.
"""
