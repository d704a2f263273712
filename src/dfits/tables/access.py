"""Table HDUs: ``hdu.columns``, ``hdu.column(name)``, DataFrames and Arrow tables.

The contract: :class:`TableAccess` gives an HDU of kind ``bintable`` or ``table`` its column
descriptions (parsed from the header on first use, :func:`dfits.format.columns.parse_table`)
and lazy or eager views of its rows, all through one
:class:`~dfits.tables.columns.ColumnReader` per column. Tile-compressed tables
(``ZTABLE = T``) give the original table's columns, read through
:class:`~dfits.tables.tiled.TiledColumnReader` (decompressed per tile);
tile-compressed images are ``compressed_image`` HDUs, not tables.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dfits.array.reader import dask_array
from dfits.errors import DfitsWarning, ExpressionError, HeaderError, UnsupportedError
from dfits.format.columns import Column, TableLayout, parse_table
from dfits.format.tiledtable import TiledTable, parse_tiled_table
from dfits.tables.columns import ColumnReader
from dfits.tables.filters import Filter, compile_filter
from dfits.tables.frames import (
    column_chunks,
    default_rows,
    read_columns,
    to_arrow,
    to_dask_dataframe,
    to_pandas,
    to_parquet,
)
from dfits.tables.tiled import TiledColumnReader, align_rows, tiled_readers

__all__ = ["TABLE_KINDS", "TableAccess", "table_layout"]

TABLE_KINDS = ("bintable", "table")


def table_layout(layout: Any, where: str) -> TableLayout | TiledTable:
    """The parsed columns of a table HDU's layout (of the original table for a tile-compressed
    one, ``ZTABLE = T``); raises for anything but a table."""
    header = layout.header
    if layout.kind not in TABLE_KINDS:
        raise UnsupportedError(f"{where}: {layout.kind} HDUs have no table columns")
    if layout.bitpix != 8 or len(layout.shape) != 2:
        raise HeaderError(
            f"{where}: a table needs BITPIX = 8 and NAXIS = 2, not BITPIX = {layout.bitpix} "
            f"and NAXIS = {len(layout.shape)}"
        )
    nrows, row_bytes = layout.shape
    pcount = header.get("PCOUNT", 0)
    if layout.kind == "bintable" and header.get("ZTABLE") is True:
        return parse_tiled_table(header, row_bytes, nrows, pcount, where)
    return parse_table(header, layout.kind == "table", row_bytes, nrows, pcount, where)


def _unique(columns: Sequence[Column], wanted: Sequence[Any], where: str) -> None:
    """Refuse a read by a name that two columns share: which one is meant cannot be told
    (astropy refuses the whole table's data then; dfits still lists the columns)."""
    seen: dict[str, Column] = {}
    for c in columns:
        first = seen.setdefault(c.name, c)
        if first is not c and c.name in wanted:
            raise HeaderError(
                f"{where}: TTYPE{first.number} and TTYPE{c.number} are both {c.name!r}: "
                "a column must be read by a name no other column has"
            )


def _threads(threads: int | None) -> int:
    """Threads of an eager read: dask's ``num_workers`` when set, else the CPU count."""
    if threads is not None:
        return threads
    import dask
    from dask.system import CPU_COUNT

    return dask.config.get("num_workers", None) or CPU_COUNT


def _rows(rows: int | None, readers: Sequence[ColumnReader]) -> int | None:
    """``rows``, or the default rows per chunk: whole tiles of a tile-compressed table."""
    return rows or (align_rows(default_rows(readers), readers) if readers else None)


class TableAccess:
    """Column access for an HDU; mixed into :class:`dfits.file.HDU`."""

    __slots__ = ()

    def _table(self) -> TableLayout:
        # parsed once per opened file and HDU: a 999-column header takes milliseconds
        memo = self._file.tables
        table = memo.get(self.index)
        if table is None:
            table = memo[self.index] = table_layout(self.layout, self._where())
        return table

    @property
    def is_table(self) -> bool:
        """True for BINTABLE and ASCII TABLE HDUs (not tile-compressed images)."""
        return self.kind in TABLE_KINDS

    @property
    def columns(self) -> tuple[Column, ...]:
        """Each column's name, TFORM, unit, cell shape, physical dtype, null and scale."""
        return self._table().columns

    @property
    def colnames(self) -> list[str]:
        """Column names, in order."""
        return self._table().names

    def column_reader(self, name: str) -> ColumnReader:
        """The :class:`~dfits.array.reader.Reader` of one column: ``read(region)`` gives the
        values of a block of rows (numeric fields as stored chunks, ``np.asarray`` them)."""
        return self._reader(name)

    def _reader(self, name: str) -> ColumnReader:
        return self._readers([name])[0]

    def _legacy(self, reader: ColumnReader) -> bool:
        # looked at once per opened file and column; the warning comes with the first look
        key = (self.index, "legacy logicals", reader.column.name)
        memo = self._file.tables
        if key not in memo:
            memo[key] = reader.holds_legacy_logicals()
            if memo[key]:
                warnings.warn(
                    f"{self._where()}, column {reader.column.number} ({reader.column.name!r}):"
                    " a logical variable-length column written by astropy <= 7.2, which "
                    "stored 0x00/0x01 bytes instead of 'T'/'F'; reading 0x01 as True and "
                    "0x00 as False, as astropy 8 does",
                    DfitsWarning,
                    stacklevel=4,
                )
        return memo[key]

    def _readers(self, columns: Sequence[str] | None) -> list[ColumnReader]:
        table = self._table()
        names = table.names if columns is None else columns
        if isinstance(names, str):
            names = [names]
        _unique(table.columns, names, self._where())
        found = [table.find(n) if isinstance(n, str) else None for n in names]
        for name, column in zip(names, found, strict=True):
            if column is None:
                raise KeyError(
                    f"{self._where()}: no column {name!r}; columns: {', '.join(table.names)}"
                )
        if isinstance(table, TiledTable):
            # one source for them all: a span of rows decompresses each tile once
            readers = tiled_readers(self._file.source, self.layout.data_offset, table, found,
                                    self._where())  # fmt: skip
        else:
            readers = [ColumnReader(
                self._file.source, self.layout.data_offset, table.row_bytes, table.nrows,
                column, table.heap_offset, table.heap_size, self._where(),
            ) for column in found]  # fmt: skip
        for k, r in enumerate(readers):
            c = r.column
            if c.code in "PQ" and c.form.element == "L" and self._legacy(r):
                readers[k] = replace(r, legacy_logical=True)
        return readers

    def _column_plan(self, name: str, rows_per_chunk: int | None = None):
        # the reader and chunks of column(name): its dask array's, and dfits.array.eager's
        reader = self._reader(name)
        return reader, column_chunks(reader, _rows(rows_per_chunk, [reader]))

    def column(self, name: str, rows_per_chunk: int | None = None):
        """One column's physical values as a lazy dask array, chunked by rows.

        Each chunk reads only the field's bytes of its rows. Numeric columns stay stored
        big-endian until a kernel reads them, so ``sum``, ``mean``, ``std``, ``min``/``max``
        and the ``nan`` forms run the fused swap kernels on the strided field. An integer
        column that may hold nulls (TNULLn, ASCII integers) is float64 with NaN for them
        (:func:`dfits.tables.fields.nullable`; ``docs/tables.md`` has the whole mapping).

        Parameters
        ----------
        name : str
            TTYPEn (exact, else case-insensitive).
        rows_per_chunk : int, optional
            Rows per chunk; by default about dask's ``array.chunk-size`` of values.
        """
        from dask.base import tokenize

        reader, chunks = self._column_plan(name, rows_per_chunk)
        token = tokenize(self._file.source.token, self.layout.data_offset, reader.column, chunks)
        return dask_array(reader, chunks, f"dfits-column-{self.index}-{token}", narrow=True)

    def _filter(self, where: str) -> Filter:
        if not isinstance(where, str):
            raise ExpressionError(f"{self._where()}: where= takes a string, not {where!r}")
        names = tuple(self._table().names)
        try:
            rule = compile_filter(where, names)
        except ExpressionError as err:
            raise ExpressionError(f"{self._where()}: {err}") from None
        readers = {name: self._reader(name) for name in rule.names}
        for r in readers.values():
            c = r.column
            if c.shape or (c.code in "PQ" and c.form.element != "A"):
                raise ExpressionError(
                    f"{self._where()}: where={where!r}: column {c.name!r} holds arrays "
                    f"({c.tform}); a row filter needs one value per row"
                )
        step = _rows(None, list(readers.values()))
        return Filter(where, names, readers, step, self._where())

    def where(self, expression: str) -> np.ndarray:
        """Row numbers (ascending, 0-based) of the rows where ``expression`` is True.

        One pass over the rows reads only the fields ``expression`` names, decoded as
        :meth:`column` decodes them (a null is NaN, and NaN compares False). The language
        is :mod:`dfits.tables.filters`': column names (backquoted when they are no Python
        name), numbers, strings, comparisons, arithmetic, ``& | ~`` (bitwise on integers),
        ``and or not`` and a few functions (``abs``, ``isnan``, ...).

        Raises
        ------
        ExpressionError
            For bad syntax, an unknown column or a construct outside the language, naming
            the token, before any data are read.

        Examples
        --------
        >>> hdu.where("(MAG < 20) & (FLAG == 0)")  # doctest: +SKIP
        array([    3,    17, ...])
        """
        rule = self._filter(expression)
        return rule.rows(0, self._table().nrows, _threads(None))

    def to_dask_dataframe(
        self,
        columns: Sequence[str] | None = None,
        rows_per_partition: int | None = None,
        where: str | None = None,
    ):
        """The table (or ``columns``) as a lazy dask DataFrame, ``rows_per_partition`` rows
        per partition (by default about dask's ``array.chunk-size`` of values); see
        :mod:`dfits.tables.frames` for the dtypes. With ``where`` (see :meth:`where`), each
        partition holds only its matching rows, indexed by row number."""
        rule = None if where is None else self._filter(where)
        readers = self._readers(columns)
        return to_dask_dataframe(readers, _rows(rows_per_partition, readers), rule)

    def aggregate(
        self,
        how: str,
        columns: Sequence[str] | None = None,
        *,
        rows_per_chunk: int | None = None,
        split_every: int | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The reduction ``how`` of several numeric columns at once, lazily, in one pass.

        Each task maps one span of rows once and reduces every requested column from it,
        so ``dask.compute(hdu.aggregate("sum", ["E", "D", "J"]))`` reads each byte of the
        table once (separate ``hdu.column(name).sum()`` calls walk the rows once per
        column). Each result equals the same reduction of :meth:`column`.

        Parameters
        ----------
        how : str
            ``sum``, ``mean``, ``var``, ``std``, ``min``, ``max``, their ``nan`` forms
            (``nansum``, ...) or ``count``: over all of a column's values (its cells too).
        columns : sequence of str, optional
            The columns (numbers or L); by default every numeric (not L), fixed-width one.
        rows_per_chunk : int, optional
            Rows per task; by default about dask's ``array.chunk-size`` of rows.
        split_every : int, optional
            dask's tree-reduction fan-in.
        **options
            ``ddof`` for ``var``/``std``.

        Returns
        -------
        dict of str to dask.array.Array
            Column name to its lazy 0-d result (numpy's dtype for the reduction).

        Examples
        --------
        >>> import dask  # doctest: +SKIP
        >>> sums = hdu.aggregate("sum", ["FLUX", "ENERGY"])  # doctest: +SKIP
        >>> dask.compute(sums)[0]["FLUX"]  # doctest: +SKIP
        """
        from dfits.tables.reduce import reduce_columns

        if columns is None:
            numeric = [c.name for c in self.columns if c.code not in "PQ" and c.dtype.kind in "iuf"]
            columns = numeric
        readers = self._readers(columns)
        if rows_per_chunk is None and any(isinstance(r, TiledColumnReader) for r in readers):
            rows_per_chunk = _rows(None, readers)  # whole tiles of a tile-compressed table
        return reduce_columns(readers, how, rows_per_chunk, split_every, **options)

    def to_pandas(
        self,
        columns: Sequence[str] | None = None,
        threads: int | None = None,
        where: str | None = None,
    ):
        """The table (or ``columns``) read now into a pandas DataFrame.

        Plain numeric columns are swapped out of the mapped rows in one pass on ``threads``
        threads (by default dask's ``num_workers``, else the CPU count); the whole table
        is held in memory, so for large tables prefer :meth:`to_dask_dataframe`. With
        ``where`` (see :meth:`where`), only the matching rows are read, indexed by row
        number: one pass over the fields the expression names, then those rows' fields."""
        readers = self._readers(columns)
        rule = None if where is None else self._filter(where)
        return to_pandas(readers, threads=_threads(threads), where=rule)

    def to_arrow(self, columns: Sequence[str] | None = None, where: str | None = None):
        """The table (or ``columns``) read now into a ``pyarrow.Table`` (small tables); with
        ``where`` (see :meth:`where`), only the matching rows."""
        readers = self._readers(columns)
        rule = None if where is None else self._filter(where)
        return to_arrow(readers, where=rule, threads=_threads(None))

    def read(
        self,
        columns: Sequence[str] | None = None,
        where: str | None = None,
        threads: int | None = None,
    ) -> dict[str, np.ndarray]:
        """The table's columns (or ``columns``) read now, as ``hdu.column(name)`` computes
        them, by name: one pass over the rows for all of them, where one ``hdu.column``
        graph per column would pay dask's overhead per column (wide tables).

        With ``where`` (see :meth:`where`), only the matching rows. ``threads`` is as for
        :meth:`to_pandas`.

        Examples
        --------
        >>> cols = hdu.read(["ENERGY", "PHA"])  # doctest: +SKIP
        >>> cols["PHA"]  # doctest: +SKIP
        array([10., nan, 30., 40.])
        """
        readers = self._readers(columns)
        rule = None if where is None else self._filter(where)
        return read_columns(readers, _threads(threads), rule)

    def to_parquet(
        self,
        path: str | os.PathLike[str],
        columns: Sequence[str] | None = None,
        rows_per_group: int | None = None,
    ) -> None:
        """Write the table (or ``columns``) to a Parquet file, a row group per
        ``rows_per_group`` rows (by default about dask's ``array.chunk-size`` of values),
        holding one group in memory at a time.

        The columns have :meth:`to_arrow`'s types: array cells (repeat, TDIMn, X bits,
        variable-length arrays) are Arrow lists, nullable integers keep their nulls, and
        each field carries its TFORM, unit and cell shape as metadata. ``path`` is replaced
        atomically: a failure leaves the old file in place.

        Examples
        --------
        >>> import numpy as np, tempfile, os, dfits, pyarrow.parquet as pq
        >>> from astropy.io import fits
        >>> folder = tempfile.mkdtemp()
        >>> cells = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> fits.BinTableHDU.from_columns([fits.Column("V", "3E", array=cells)]).writeto(
        ...     os.path.join(folder, "t.fits"))
        >>> dfits.open(os.path.join(folder, "t.fits"))[1].to_parquet(os.path.join(folder, "t.pq"))
        >>> pq.read_table(os.path.join(folder, "t.pq"))["V"].to_pylist()
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        """
        readers = self._readers(columns)
        to_parquet(readers, path, _rows(rows_per_group, readers))
