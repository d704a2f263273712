"""Whole tables: dask arrays per column, pandas and Arrow tables, dask DataFrames.

The contract: every function here takes :class:`~dfits.tables.columns.ColumnReader` records
(one per column, all of one HDU) and reads rows through them, so a DataFrame partition task
holds the readers and a row range, never data.

Types, chosen to match ``astropy.table.Table.read(...).to_pandas()`` where it has an answer:

* integers with TNULLn (and every ASCII integer column, whose blank fields are null; float64
  with NaN in numpy, :func:`dfits.tables.fields.nullable`): pandas' nullable
  ``Int16``/``Int32``/``Int64``/``UInt8``/... with ``<NA>``; Arrow integers with nulls;
  scaled integers with TNULLn: float64 with NaN in pandas, Arrow nulls;
* L: ``bool``; A: ``str`` with trailing blanks stripped (as astropy);
* multi-element cells (repeat > 1, TDIMn, X bits): pandas ``object`` holding one numpy array
  per row (the cell as ``hdu.column`` gives it: float64 with NaN under TNULLn), Arrow
  ``fixed_size_list`` of the flattened cell (the cell shape is in the field's metadata,
  ``tdim``);
* variable-length arrays (P/Q): ``object`` holding one numpy array per row (shaped by a
  TDIMn as astropy shapes them); Arrow ``list`` of the flattened array, the shape in the
  field's metadata (``array_shape``, ``-1`` for the length); PA: one string per row, pandas
  ``str`` and Arrow ``string``;
* complex (C/M): pandas complex; Arrow has no complex type, so a ``fixed_size_list`` of two
  floats (real, imaginary).

Parquet (:func:`to_parquet`) is written from the Arrow tables, so it stores array cells as
lists, never as text. A dask DataFrame's own ``to_parquet`` cannot infer a type for its
object columns of arrays (dask guesses from an empty sample); ``hdu.to_parquet`` is the route
for tables with array cells.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dfits.tables.columns import ColumnReader
from dfits.tables.fields import nullable, with_nan
from dfits.tables.filters import Filter
from dfits.tables.rowdecode import read_whole, spans

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "column_chunks",
    "default_rows",
    "read_columns",
    "to_arrow",
    "to_dask_dataframe",
    "to_pandas",
    "to_parquet",
]


def _cell_bytes(reader: ColumnReader) -> int:
    c = reader.column
    if c.code in "PQ":
        return 64  # a guess per row for the arrays and their object headers
    return max(int(np.prod(c.shape, dtype=np.int64)) * c.dtype.itemsize, 1)


#: Bytes of a memory page: a mapped row span costs at least this much per row it touches.
_PAGE = 4096


def default_rows(readers: Sequence[ColumnReader]) -> int:
    """Rows per chunk so that what a chunk holds stays about dask's chunk size: the values of
    ``readers`` plus, for each, the mapped rows it touches (a field every ``row_bytes``
    faults in every page of its row span, up to a page per row)."""
    import dask
    from dask.utils import parse_bytes

    target = parse_bytes(dask.config.get("array.chunk-size"))
    # The mapped pages count in the process's RSS as long as the chunk lives: a 2 GiB table
    # of 160-byte rows read three columns at a time would otherwise hold 3 x its span.
    per_row = sum(_cell_bytes(r) + min(r.row_bytes, _PAGE) for r in readers) or 1
    return max(int(target // per_row), 1)


def _series_values(reader: ColumnReader, values: Any, nulls: np.ndarray | None) -> Any:
    import pandas as pd

    c = reader.column
    values = np.asarray(values)
    n = values.shape[0]
    if c.code in "PQ" and c.element_dtype.kind == "U":
        return values.astype(str)  # one string per row: pandas' str, even with no rows
    if c.code in "PQ":
        return values  # an object array of one array per row already (tables.heap.arrays)
    if values.ndim > 1:
        if nullable(c):
            values = with_nan(values, nulls)  # the cells as hdu.column gives them
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = values[i]
        return out
    if nullable(c):
        mask = np.zeros(n, bool) if nulls is None else nulls
        return pd.arrays.IntegerArray(values, mask)
    return values


def _stop(readers: Sequence[ColumnReader], where: Filter | None, stop: int | None) -> int:
    if stop is not None:
        return stop
    some = [*readers, *(where.readers.values() if where is not None else ())]
    return some[0].nrows if some else 0


def to_pandas(
    readers: Sequence[ColumnReader],
    first: int = 0,
    stop: int | None = None,
    threads: int = 1,
    where: Filter | None = None,
):
    """Rows ``first`` to ``stop`` of the columns of ``readers`` as a pandas DataFrame, read
    span by span (:func:`dfits.tables.rowdecode.read_whole`: one map per span of rows, the
    plain numeric columns swapped out of it together on ``threads`` threads). With
    ``where``, only the rows it matches, indexed by their number."""
    import pandas as pd

    stop = _stop(readers, where, stop)
    rows, columns = read_whole(readers, first, stop, threads=threads, keep=where)
    data = {r.column.name: _series_values(r, *part)
            for r, part in zip(readers, columns, strict=True)}  # fmt: skip
    if rows is None:
        index = pd.RangeIndex(first, max(stop, first))
    else:
        index = pd.Index(rows, dtype=np.int64)
    # copy=False: the columns are new arrays already; pandas keeps them as they are
    return pd.DataFrame(data, index=index, copy=False)


def read_columns(
    readers: Sequence[ColumnReader], threads: int = 1, where: Filter | None = None
) -> dict[str, Any]:
    """Every row (or the rows ``where`` matches) of the columns, as ``hdu.column`` gives
    them (numpy, a nullable integer as float64 with NaN), read now, span by span
    (:func:`dfits.tables.rowdecode.read_whole`)."""
    stop = _stop(readers, where, None)
    _, columns = read_whole(readers, 0, stop, frame=False, threads=threads, keep=where)
    return {r.column.name: part[0] for r, part in zip(readers, columns, strict=True)}


def _partition(
    bounds: tuple[int, int], readers: Sequence[ColumnReader], where: Filter | None
) -> pd.DataFrame:
    # one thread: dask runs partitions side by side
    return to_pandas(readers, *bounds, where=where)


def to_dask_dataframe(
    readers: Sequence[ColumnReader],
    rows_per_partition: int | None = None,
    where: Filter | None = None,
):
    """A lazy dask DataFrame of the columns, ``rows_per_partition`` rows per partition:
    each partition equals the same rows of :func:`to_pandas`, dtypes included; with
    ``where``, only its matching rows of each partition (indexed by row number)."""
    import dask
    import dask.dataframe as dd

    nrows = readers[0].nrows if readers else 0
    step = rows_per_partition or default_rows(readers)
    if step < 1:
        raise ValueError(f"rows_per_partition must be positive, not {rows_per_partition!r}")
    bounds = [(a, min(a + step, nrows)) for a in range(0, nrows, step)] or [(0, 0)]
    meta = to_pandas(readers, 0, 0, where=where)
    divisions = [a for a, _ in bounds] + [max(nrows - 1, 0)]
    # dask's "dataframe.convert-string" (on when pyarrow is installed) would turn the object
    # columns that hold array cells into the text of their repr: the partitions and their
    # meta keep exactly the dtypes to_pandas gives, whatever the config says
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(
            _partition,
            bounds,
            readers=list(readers),
            where=where,
            meta=meta,
            divisions=divisions,
            enforce_metadata=False,
        )


def _arrow_column(reader: ColumnReader, values: Any, nulls: np.ndarray | None):
    import pyarrow as pa

    c = reader.column
    values = np.asarray(values)
    if c.code in "PQ":
        element = c.element_dtype
        if element.kind == "U":
            # one string per row (PA), as pandas and hdu.column give it: not a list of letters
            return pa.array(list(values), pa.string())
        # arrays shaped by TDIMn go flat: their shape is in the field's metadata (array_shape)
        cells = [np.ravel(v) for v in values]
        return pa.array(cells, pa.list_(pa.from_numpy_dtype(element)))
    n, cell = values.shape[0], math.prod(values.shape[1:])
    if values.dtype.kind == "c":
        pairs = np.ascontiguousarray(values).reshape(n, cell).view(values.real.dtype)
        return _fixed(pa.array(pairs.reshape(-1)), 2 * cell, n)
    flat = values.reshape(n, cell) if values.ndim > 1 else values
    if flat.dtype.kind == "U":
        leaf = pa.array(flat.reshape(-1).astype(object), pa.string())
    else:
        leaf = pa.array(flat.reshape(-1), mask=None if nulls is None else nulls.reshape(-1))
    if values.ndim > 1:
        return _fixed(leaf, flat.shape[1], flat.shape[0])
    return leaf


def _arrow_lists(reader: ColumnReader, values: np.ndarray, counts: np.ndarray) -> Any:
    """A list array straight from the elements and counts of variable-length arrays (the
    shape of a TDIMn is in the field's metadata, ``array_shape``)."""
    import pyarrow as pa

    ends = np.cumsum(counts, dtype=np.int64)
    offsets = np.concatenate([np.zeros(1, np.int64), ends])
    if values.dtype.kind == "c":
        # no complex type in Arrow: (real, imaginary) pairs, as fixed complex cells are
        pairs = np.ascontiguousarray(values).view(values.real.dtype)
        leaf = pa.FixedSizeListArray.from_arrays(pa.array(pairs), 2)
    else:
        leaf = pa.array(values, pa.from_numpy_dtype(reader.column.element_dtype))
    if offsets[-1] < 2**31:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), leaf)
    return pa.LargeListArray.from_arrays(pa.array(offsets), leaf)


def _fixed(leaf: Any, size: int, n: int) -> Any:
    import pyarrow as pa

    if size == 0:
        # zero-width cells: from_arrays cannot tell how many empty lists it holds
        return pa.array([[]] * n, pa.list_(leaf.type, 0))
    return pa.FixedSizeListArray.from_arrays(leaf, size)


def to_arrow(
    readers: Sequence[ColumnReader],
    first: int = 0,
    stop: int | None = None,
    where: Filter | None = None,
    threads: int = 1,
):
    """Rows ``first`` to ``stop`` (or those ``where`` matches) as a ``pyarrow.Table`` (see
    the module docstring), one chunk per span of rows
    (:func:`dfits.tables.rowdecode.spans`): each span's values become Arrow arrays before
    the next span is mapped."""
    import pyarrow as pa

    stop = _stop(readers, where, stop)
    chunks: list[list[Any]] = [[] for _ in readers]
    for span in spans(readers, first, stop, lists=True, threads=threads, keep=where):
        for r, part, into in zip(readers, span.parts, chunks, strict=True):
            c = r.column
            listed = c.code in "PQ" and c.form.element not in "AX"
            into.append(_arrow_lists(r, *part) if listed else _arrow_column(r, *part))
    arrays, fields = [], []
    for r, parts in zip(readers, chunks, strict=True):
        c = r.column
        array = _chunked(parts)
        meta = {"tform": c.tform}
        if c.unit:
            meta["unit"] = c.unit
        if len(c.shape) > 1 or (c.shape and c.code not in "PQ"):
            meta["tdim"] = str(c.shape)
        if c.array_shape:
            meta["array_shape"] = str(c.array_shape)
        arrays.append(array)
        fields.append(pa.field(c.name, array.type, metadata=meta))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _chunked(parts: list[Any]) -> Any:
    """One column's span arrays as one chunked array: lists whose offsets passed 32 bits in
    one span (a ``large_list``) make every span's so."""
    import pyarrow as pa

    kept = [p for p in parts if len(p)] or parts[:1]
    types = {p.type for p in kept}
    if len(types) > 1:
        large = next(t for t in types if pa.types.is_large_list(t))
        kept = [p.cast(large) for p in kept]
    return pa.chunked_array(kept, type=kept[0].type)


def to_parquet(
    readers: Sequence[ColumnReader], path: str | os.PathLike[str], rows_per_group: int | None
) -> None:
    """Write the columns to one Parquet file, a row group per span of rows, through
    :func:`to_arrow` (so array cells are Arrow lists, the columns keep their FITS metadata);
    replaces ``path`` atomically: a failure leaves the old file, or none, in place."""
    import pyarrow.parquet as pq

    step = rows_per_group or default_rows(readers)
    if step < 1:
        raise ValueError(f"rows_per_group must be positive, not {rows_per_group!r}")
    nrows = readers[0].nrows if readers else 0
    target = os.fspath(path)
    fd, temp = tempfile.mkstemp(
        prefix=".dfits-", suffix=".parquet", dir=os.path.dirname(target) or "."
    )
    os.close(fd)
    try:
        schema = to_arrow(readers, 0, 0).schema
        with pq.ParquetWriter(temp, schema) as writer:
            for first in range(0, nrows, step):
                writer.write_table(to_arrow(readers, first, min(first + step, nrows)))
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise


def column_chunks(reader: ColumnReader, rows: int | None) -> tuple[tuple[int, ...], ...]:
    """Chunks of a column: blocks of ``rows`` rows, each cell whole."""
    step = rows or default_rows([reader])
    n = reader.nrows
    blocks = tuple(min(step, n - a) for a in range(0, n, step)) or (0,)
    return (blocks, *((d,) for d in reader.column.shape))
