"""``hdu.data`` of a table HDU: astropy's ``hdu.data[name]`` and ``hdu.data.columns``, lazily.

astropy's ``hdu.data`` of a table is a ``FITS_rec``: ``data["FLUX"]`` is a column,
``data[10:20]`` some rows, ``data.columns`` the column descriptions, ``len(data)`` the row
count. :class:`TableData` keeps that shape of API without reading anything when it is made:

* ``data[name]`` is the column's lazy dask array, exactly ``hdu[name]`` (``hdu.column``);
* ``data[rows]`` (an int, a slice, an integer or boolean array) reads those rows now, into
  a numpy structured array whose fields have the columns' physical dtypes (``dtype``): the
  values are those of ``hdu.column(name)[rows]``, computed together;
* ``data.columns``, ``data.names`` (astropy's ``FITS_rec.names``), ``len(data)``,
  ``data.shape`` and ``data.dtype`` come from the header.

The values follow the one decode of :mod:`dfits.tables.fields`: a nullable integer column is
float64 with NaN, variable-length cells are object fields holding arrays.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from dfits.format.columns import Column

__all__ = ["TableData", "table_dtype"]


def _field(column: Column) -> tuple[Any, ...]:
    # cells keep their shape (an A column's characters are its dtype's width, not an axis)
    if column.code in "PQ":
        return (column.name, np.dtype(object))
    shape = column.shape
    return (column.name, column.dtype, shape) if shape else (column.name, column.dtype)


def table_dtype(columns: tuple[Column, ...], where: str = "") -> np.dtype:
    """The structured dtype of a table's rows in physical values (native byte order):
    one field per column, with the column's :attr:`~dfits.format.columns.Column.dtype` and
    cell shape; variable-length columns are ``object`` fields."""
    names = [c.name for c in columns]
    for c in columns:
        if names.count(c.name) > 1:
            from dfits.errors import HeaderError

            raise HeaderError(
                f"{where}: TTYPE{c.number} ({c.name!r}) names another column too: a table's "
                "rows have a dtype only when its columns' names differ"
            )
    return np.dtype([_field(c) for c in columns])


class TableData:
    """A table HDU's data, addressed as astropy's ``FITS_rec``; reads only on demand.

    Examples
    --------
    >>> import numpy as np, tempfile, os, dfits
    >>> from astropy.io import fits
    >>> path = os.path.join(tempfile.mkdtemp(), "t.fits")
    >>> fits.BinTableHDU.from_columns([
    ...     fits.Column("FLUX", "E", array=np.array([1.5, 2.5, 3.5], np.float32)),
    ...     fits.Column("ID", "J", array=np.array([7, 8, 9], np.int32)),
    ... ]).writeto(path)
    >>> data = dfits.open(path)[1].data
    >>> len(data), data.names
    (3, ['FLUX', 'ID'])
    >>> float(data["FLUX"].sum().compute())
    7.5
    >>> data[1:]["ID"]
    array([8, 9], dtype=int32)
    """

    __slots__ = ("_hdu",)

    def __init__(self, hdu: Any) -> None:
        self._hdu = hdu

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns' descriptions (``hdu.columns``)."""
        return self._hdu.columns

    @property
    def names(self) -> list[str]:
        """Column names, in order (astropy's ``FITS_rec.names``)."""
        return self._hdu.colnames

    @property
    def dtype(self) -> np.dtype:
        """The rows' structured dtype in physical values (:func:`table_dtype`)."""
        return table_dtype(self.columns, self._hdu._where())

    @property
    def shape(self) -> tuple[int]:
        """``(rows,)``, as a ``FITS_rec``'s."""
        return (len(self),)

    def __len__(self) -> int:
        return self._hdu._table().nrows

    def __iter__(self) -> Iterator[str]:
        # iterating a mapping of columns: their names (rows would read the whole table)
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._hdu._table().find(name) is not None

    def __getitem__(self, key: Any) -> Any:
        """``data[name]``: the lazy column; ``data[rows]``: those rows, read now."""
        if isinstance(key, str):
            return self._hdu.column(key)
        return self.rows(key)

    def rows(self, index: Any) -> Any:
        """Rows ``index`` (int, slice, integer or boolean array) as a numpy structured array
        of :attr:`dtype` (an int gives one ``numpy.void`` record), read now: only the chunks
        of each column that hold those rows are read."""
        from dfits.array.scheduler import compute

        names = self.names
        key = index if isinstance(index, (int, np.integer, slice)) else np.asarray(index)
        values = compute(*(self._hdu.column(n)[key] for n in names))
        scalar = isinstance(key, (int, np.integer))
        n = 1 if scalar else (len(values[0]) if values else 0)
        out = np.empty(n, dtype=self.dtype)
        for name, v in zip(names, values, strict=True):
            if out.dtype[name].kind == "O":
                cells = np.empty(n, dtype=object)  # one array per row, never a 2-D block
                for i, cell in enumerate([v] if scalar else v):
                    # dask hands one cell back as a 0-d array: the row's string or array
                    cells[i] = cell[()] if isinstance(cell, np.ndarray) and not cell.ndim else cell
                out[name] = cells
            else:
                out[name] = v
        return out[0] if scalar else out

    def __repr__(self) -> str:
        return f"<dfits.TableData {len(self)} rows: {', '.join(self.names)}>"
