"""The column reader: one field of a table HDU, read by blocks of rows.

A :class:`ColumnReader` is a frozen record of (source, data offset, row length, row count,
column description, heap place): a path and a few integers, so tasks stay tiny and hold no
data. :meth:`ColumnReader.read` maps exactly the rows of a region (local files; remote files
gather only the field's bytes of each row, coalesced) and returns the field's values:

* numeric fields the kernels can reduce stay stored: a
  :class:`~dfits.stored.stored.StoredChunk` over the strided big-endian field, so
  ``column.sum()``, ``np.nanmax(column)``, ``column.std()`` run the fused JIT-swap kernels;
* ASCII numbers are parsed by :mod:`dfits.kernels.asciiparse` from the bytes;
* variable-length arrays (P/Q) are an object array holding one numpy array per row (read
  from the heap; a descriptor pointing outside the heap is a ``DataError``), shaped by a
  TDIMn of two or more axes as astropy shapes them (``(-1, *TDIM[-2::-1])``; an array whose
  length does not fit is a ``DataError``);
* everything else is decoded by :mod:`dfits.tables.fields`.

It implements :class:`dfits.array.reader.Reader`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import DataError
from dfits.format.columns import Column
from dfits.io.ranges import Runs
from dfits.tables import heap
from dfits.tables.fields import (
    field_integers,
    field_values,
    integer_dtype,
    nullable,
    strings,
    with_nan,
)

__all__ = ["ColumnReader"]

#: Bytes of rows one map of :meth:`ColumnReader.take` covers.
_TAKE_SPAN = 32 << 20


@dataclass(frozen=True)
class ColumnReader:
    """One column of a table HDU, addressable by slices of ``(rows, *cell)``."""

    source: Any
    offset: int
    row_bytes: int
    nrows: int
    column: Column
    heap_offset: int = 0
    heap_size: int = 0
    where: str = ""
    #: a logical variable-length column of 0x00/0x01 bytes (:meth:`holds_legacy_logicals`)
    legacy_logical: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.nrows, *self.column.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.column.dtype

    def read(self, index: tuple[slice, ...]) -> Any:
        """The values of the step-1 region ``index`` (rows first, then the cell's axes)."""
        first, stop = index[0].start or 0, index[0].stop
        if stop is None:
            stop = self.nrows
        values = self.rows(first, max(stop, first))
        cell = index[1:]
        if any(sl != slice(None) and sl.indices(n)[:2] != (0, n)
               for sl, n in zip(cell, self.column.shape, strict=False)):  # fmt: skip
            values = values[(slice(None), *cell)]
        return values

    def rows(self, first: int, stop: int) -> Any:
        """Values of rows ``first`` to ``stop`` (float64 with NaN for null cells)."""
        n = stop - first
        buf, start, stride = self._field_bytes(first, n)
        values, _ = self.values_at(buf, start, stride, n, first)
        return values

    def rows_and_nulls(self, first: int, stop: int) -> tuple[Any, np.ndarray | None]:
        """Rows ``first`` to ``stop`` as a DataFrame or Arrow table takes them: the values,
        except that a :func:`~dfits.tables.fields.nullable` column gives its integers
        (:func:`~dfits.tables.fields.integer_dtype`), and which cells are null (TNULLn, a
        blank ASCII field; None: none can be)."""
        n = stop - first
        buf, start, stride = self._field_bytes(first, n)
        return self.values_at(buf, start, stride, n, first, frame=True)

    def take(self, rows: np.ndarray, frame: bool = False) -> tuple[Any, np.ndarray | None]:
        """The rows ``rows`` (ascending row numbers) as :meth:`rows` gives them, or with
        ``frame`` as :meth:`rows_and_nulls` does: only those rows' fields are read (copied
        out of the map locally, gathered in coalesced requests remotely)."""
        rows = np.asarray(rows, np.int64)
        buf, start, stride = self._taken(rows)
        first = int(rows[0]) if len(rows) else 0
        return self.values_at(buf, start, stride, len(rows), first, frame)

    def _taken(self, rows: np.ndarray) -> tuple[np.ndarray, int, int]:
        """The fields of the rows numbered ``rows``, packed, as :meth:`_field_bytes` gives
        a block's (a message naming a row counts from the first of them)."""
        c = self.column
        rows = np.asarray(rows, np.int64)
        if len(rows) == 0 or c.width == 0:
            return np.zeros(0, np.uint8), 0, c.width
        if self.source.mappable:
            out = np.empty((len(rows), c.width), np.uint8)
            # a map per span of rows, let go before the next: the kernel maps whole 64 KiB
            # neighbourhoods around each touched page, so one map of every matching row's
            # span would hold the table's pages resident, however few rows match
            per = max(_TAKE_SPAN // max(self.row_bytes, 1), 1)
            cuts = np.flatnonzero(np.diff(rows // per)) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
                first, span = int(rows[a]), int(rows[b - 1] - rows[a]) + 1
                buf, start, stride = self._field_bytes(first, span)
                fields = np.lib.stride_tricks.as_strided(
                    buf[start:], (span, c.width), (stride, 1), writeable=False
                )
                out[a:b] = fields[rows[a:b] - first]
                del buf, fields
            return out.reshape(-1), 0, c.width
        starts = self.offset + rows * self.row_bytes + c.offset
        self.source.verify()
        return self.source.gather(Runs(starts, c.width)), 0, c.width

    def values_at(
        self, buf: np.ndarray, start: int, stride: int, n: int, first: int, frame: bool = False
    ) -> tuple[Any, np.ndarray | None]:
        """The values of the ``n`` rows from row ``first`` whose field bytes start at
        ``buf[start]``, ``stride`` bytes apart (as :meth:`rows`, null flags None), or with
        ``frame`` as :meth:`rows_and_nulls` gives them: lets a caller that holds a span of
        whole rows (several columns' reduction) decode each field from the one buffer."""
        c = self.column
        if c.ascii:
            values, nulls = self._ascii(buf, start, stride, n, first)
            if c.scaled and c.code in "IFED":
                # TSCALn/TZEROn apply to ASCII numbers as to binary ones (the standard's
                # 7.2.5, astropy): float64 stored * scale + zero, a blank field NaN
                values = values.astype(np.float64) * c.scale + c.zero
                if nulls is not None:
                    values[nulls] = np.nan
                return values, (nulls if frame else None)
            if c.code == "I":
                values = values.astype(integer_dtype(c)) if frame else with_nan(values, nulls)
            return values, (nulls if frame else None)
        if c.code in "PQ":
            return heap.arrays(self, buf, start, stride, n, first), None
        if frame and isinstance(c.null, int) and (nullable(c) or c.dtype.kind == "f"):
            # TNULLn applies (the unsigned and int8 conventions ignore it, as astropy does)
            ints, nulls = field_integers(buf, start, stride, n, c)
            if nullable(c):
                return ints, nulls
            return field_values(buf, start, stride, n, c), nulls
        return field_values(buf, start, stride, n, c), None

    def _field_bytes(self, first: int, n: int) -> tuple[np.ndarray, int, int]:
        """A flat uint8 array holding the field of rows ``first`` to ``first + n``, where
        the first row's field starts, and the stride between rows."""
        c = self.column
        if n == 0 or c.width == 0:
            return np.zeros(0, np.uint8), 0, c.width
        start = self.offset + first * self.row_bytes
        source = self.source
        if source.mappable:
            # Zero-copy: the rows stay where the mmap put them; readers of a narrow
            # column touch only the pages its fields lie on.
            nbytes = (n - 1) * self.row_bytes + c.offset + c.width
            return source.map(start, nbytes, populate=False), c.offset, self.row_bytes
        # Remote: only the field's bytes of each row, in coalesced requests.
        starts = start + c.offset + np.arange(n, dtype=np.int64) * self.row_bytes
        source.verify()
        return source.gather(Runs(starts, c.width)), 0, c.width

    def _ascii(self, buf, start, stride, n, first) -> tuple[np.ndarray, np.ndarray | None]:
        from dfits.kernels import asciiparse

        c = self.column
        if c.code == "A":
            field = np.lib.stride_tricks.as_strided(
                buf[start:], (n, c.width), (stride, 1), writeable=False
            )
            return (strings(field) if n else np.empty(0, c.dtype)), None
        null = np.frombuffer(str(c.null or "").encode("ascii", "replace"), np.uint8)
        floats = c.code in "FED"
        out = np.empty(n, np.float64 if floats else np.int64)
        status = np.empty(n, np.uint8)
        if n:
            parse = asciiparse.parse_floats if floats else asciiparse.parse_ints
            parse(buf, start, stride, n, c.width, null, c.null is not None, out, status)
        for i in np.flatnonzero(status >= asciiparse.SLOW):
            text = bytes(buf[start + i * stride : start + i * stride + c.width])
            out[i] = self._slow(text, status[i], floats, first + int(i))
        nulls = status == asciiparse.NULL
        return out, (nulls if nulls.any() else None)

    def _slow(self, text: bytes, status: int, floats: bool, row: int) -> float:
        from dfits.kernels import asciiparse

        if status == asciiparse.SLOW:
            try:
                return float(text.replace(b"D", b"E").replace(b"d", b"e"))
            except ValueError:
                pass
        c = self.column
        article = "a number" if floats else "an integer within int64"
        raise DataError(
            f"{self.where}, column {c.number} ({c.name!r}), row {row + 1}: field "
            f"{text!r} (TFORM{c.number} = {c.tform!r}) is not {article}"
        )

    def holds_legacy_logicals(self) -> bool:
        """True for a logical variable-length column of astropy <= 7.2's 0x00/0x01 bytes
        (:func:`dfits.tables.heap.holds_legacy_logicals`)."""
        return heap.holds_legacy_logicals(self)

    def lists(self, first: int, stop: int, rows: np.ndarray | None = None):
        """A numeric or logical variable-length column's elements of rows ``first`` to
        ``stop`` (or of the rows numbered ``rows``), decoded, one after the other, and each
        row's count: what an Arrow list array is made of."""
        n = stop - first if rows is None else len(rows)
        buf, start, stride = self._field_bytes(first, n) if rows is None else self._taken(rows)
        if n == 0:
            return np.zeros(0, self.column.element_dtype), np.zeros(0, np.int64)
        return heap.elements(self, buf, start, stride, n, first)
