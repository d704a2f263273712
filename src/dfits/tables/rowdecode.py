"""Spans of whole rows: every column of a table read from one map per span of rows.

The contract: :func:`spans` takes the :class:`~dfits.tables.columns.ColumnReader` of several
columns of one table, a row range and, optionally, a row filter (``keep``: the readers of the
fields it names and a test of their values), and yields one :class:`Span` per span of rows:
the row numbers the filter kept (None without one) and each column's part, as the reader's
own methods give it: ``(values, nulls)`` as :meth:`~ColumnReader.rows_and_nulls` (``frame``)
or :meth:`~ColumnReader.rows` (values as ``hdu.column`` gives them, nulls None); with
``lists``, a numeric or logical variable-length column's ``(elements, counts)`` as
:meth:`~ColumnReader.lists`. :func:`read_whole` joins the parts into whole columns. This is
the one route of every eager read of several columns: ``hdu.read``, ``to_pandas``,
``to_arrow``, ``hdu.where`` and the filtered forms of each, and of every reduction of several
columns (``hdu.aggregate``: with ``reduce``, each span's whole rows go to a function that
reduces every column from them, :mod:`dfits.tables.reduce`).

Why: read one column at a time, a table is mapped once per column, so memory is walked once
per column and every column's map holds the table's pages until it is let go. Here (plain
columns of a file that can be mapped) each span of :data:`SPAN_BYTES` of rows is mapped once:
the filter's fields are decoded from it, the matching rows are copied out of it once for
every column, every column is decoded from those rows, and the map is let go before the
next span, so resident memory is one span plus what the columns hold. Binary one-element
B/I/J/K/E/D columns (:func:`decodable`) are swapped by :mod:`dfits.kernels.fielddecode`,
every field of a block of rows in one pass, the rows split between ``threads`` (the kernel
releases the GIL); the others are decoded from the same rows by
:meth:`~ColumnReader.values_at` and :func:`dfits.tables.heap.elements`. Other readers
(remote files, tile-compressed tables) read each span through their own methods.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dfits.format.columns import Column
from dfits.format.tform import is_unsigned_zero
from dfits.tables import heap
from dfits.tables.columns import ColumnReader
from dfits.tables.fields import integer_dtype, nullable, with_nan

__all__ = ["Keep", "Span", "decodable", "read_whole", "spans"]

#: Bytes of rows mapped at a time: the map's resident pages stay bounded by this.
SPAN_BYTES = 64 << 20

_PAGE = 4096
#: Bytes of rows below which the kernel runs on the calling thread: handing out a small
#: block (a small table, a filter's few matching rows) costs more than it saves
_THREADED = 1 << 20
_SIZES = {"B": 1, "I": 2, "J": 4, "K": 8, "E": 4, "D": 8}


class Keep(Protocol):
    """A row filter as :func:`spans` uses it (:class:`dfits.tables.filters.Filter`)."""

    #: the readers of the fields it names, by name
    readers: Mapping[str, Any]
    #: rows per span for readers that are not mapped together (whole tiles), or None
    step: int | None

    def test(self, values: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """Which of ``n`` rows to keep (bool), from the named fields' values."""
        ...


@dataclass(frozen=True)
class Span:
    """What :func:`spans` yields: rows ``first`` to ``stop``, the row numbers a filter kept
    among them (None: every row) and each column's part (None: written into ``into``)."""

    first: int
    stop: int
    rows: np.ndarray | None
    parts: list[Any]


def decodable(reader: ColumnReader) -> bool:
    """True for a column the field kernel swaps (:mod:`dfits.kernels.fielddecode`)."""
    c = reader.column
    if c.ascii or c.code not in _SIZES or c.shape != () or not reader.source.mappable:
        return False
    return not c.scaled or is_unsigned_zero(c.code, c.scale, c.zero)


def _dtype(column: Column) -> np.dtype:
    # a nullable column comes out as its stored integers: the TNULLn cells are flagged after
    return integer_dtype(column) if nullable(column) else column.dtype


def _flip(reader: ColumnReader) -> int:
    """The bit that the unsigned and int8 conventions flip (adding TZERO), else 0."""
    c = reader.column
    return 1 << (8 * _SIZES[c.code] - 1) if c.scaled else 0


def _shared(readers: Sequence[Any]) -> ColumnReader | None:
    """A reader whose mapped rows hold every field of ``readers`` (plain columns of one
    table of a file that can be mapped), or None: each then reads through its own methods."""
    if not readers or not all(type(r) is ColumnReader for r in readers):
        return None
    r0 = readers[0]
    if not (r0.source.mappable and r0.row_bytes):
        return None
    same = all((r.source is r0.source or r.source == r0.source) and r.offset == r0.offset
               and r.row_bytes == r0.row_bytes for r in readers)  # fmt: skip
    return r0 if same else None


def _is_list(reader: Any, lists: bool) -> bool:
    c = reader.column
    return lists and c.code in "PQ" and c.form.element not in "AX"


def _nulls(values: np.ndarray, column: Column, frame: bool) -> tuple[np.ndarray, Any]:
    """A kernel-decoded column's part: its integers and TNULLn flags (``frame``), else the
    values as ``hdu.column`` gives them (float64 with NaN)."""
    if not nullable(column):
        return values, None
    nulls = values == column.null
    return (values, nulls) if frame else (with_nan(values, nulls), None)


@dataclass
class _Rows:
    """One call of :func:`spans`: its columns, options, thread pool and field kernel plan."""

    readers: Sequence[Any]
    frame: bool
    lists: bool
    threads: int
    pool: Any
    into: Mapping[int, np.ndarray] | None = None
    #: ``reduce(rows, first)``: the span's parts from its whole rows (see :func:`spans`)
    reduce: Callable[[np.ndarray, int], list[Any]] | None = None

    def __post_init__(self) -> None:
        widths = [(r.column.offset, r.column.offset + r.column.width) for r in self.readers]
        #: the bytes of a row that hold the fields: a filter's matching rows copy only these
        self.lo = min((a for a, b in widths if b > a), default=0)
        self.hi = max((b for a, b in widths if b > a), default=0)
        self.picked = [k for k, r in enumerate(self.readers) if decodable(r)]
        picked = [self.readers[k] for k in self.picked]
        self.fields = (
            np.array([r.column.offset for r in picked], np.int64),
            np.array([_SIZES[r.column.code] for r in picked], np.int64),
            np.array([_flip(r) for r in picked], np.uint64),
        )

    def swap(self, block: np.ndarray, at: int | None, shift: int) -> dict[int, np.ndarray]:
        """The decodable columns of ``block`` (rows cut ``shift`` bytes in), each into its
        ``into`` rows from ``at`` (not None) or a new array, the rows split between the
        threads."""
        from dfits.kernels.fielddecode import decode_fields

        m = block.shape[0]
        into = self.into if at is not None and self.into else {}
        outs = {k: into[k][at : at + m] if k in into else
                np.empty(m, _dtype(self.readers[k].column)) for k in self.picked}  # fmt: skip
        if not self.picked or not m:
            return outs
        targets = [outs[k] for k in self.picked]
        offsets, sizes, flips = self.fields
        fields = (offsets - shift, sizes, flips)
        if self.pool is None or block.nbytes < _THREADED:
            decode_fields(block, *fields, targets)
            return outs
        cuts = np.linspace(0, m, self.threads + 1).astype(np.int64).tolist()
        jobs = [self.pool.submit(decode_fields, block[x:y], *fields, [t[x:y] for t in targets])
                for x, y in itertools.pairwise(cuts) if y > x]  # fmt: skip
        for job in jobs:
            job.result()
        return outs

    def decode(
        self, block: np.ndarray, first: int, at: int | None = None, shift: int = 0
    ) -> list[Any]:
        """Each column's part of ``block`` (``(m, width)``: rows, row ``first`` first, cut
        ``shift`` bytes in; ``at``: where they go in ``into``)."""
        if self.reduce is not None:
            return self.reduce(block, first)
        m, width = block.shape
        outs = self.swap(block, at, shift)
        flat = block.reshape(-1)
        parts: list[Any] = []
        for k, r in enumerate(self.readers):
            c = r.column
            if k in outs:
                written = at is not None and k in (self.into or {})
                parts.append(None if written else _nulls(outs[k], c, self.frame))
            elif _is_list(r, self.lists):
                parts.append(heap.elements(r, flat, c.offset - shift, width, m, first))
            else:
                values, nulls = r.values_at(flat, c.offset - shift, width, m, first, self.frame)
                parts.append((np.asarray(values), nulls))  # stored chunks decoded off the map
        return parts

    def read(self, first: int, stop: int, rows: np.ndarray | None) -> list[Any]:
        """Each column's part of rows ``first`` to ``stop`` (or of ``rows``), through each
        reader's own methods."""
        parts: list[Any] = []
        for r in self.readers:
            if _is_list(r, self.lists):
                parts.append(r.lists(first, stop, rows))
                continue
            if rows is not None:
                values, nulls = r.take(rows, self.frame)
            elif self.frame:
                values, nulls = r.rows_and_nulls(first, stop)
            else:
                values, nulls = r.rows(first, stop), None
            parts.append((np.asarray(values), nulls))
        return parts


def spans(
    readers: Sequence[Any],
    first: int,
    stop: int,
    *,
    frame: bool = True,
    lists: bool = False,
    threads: int = 1,
    keep: Keep | None = None,
    into: Mapping[int, np.ndarray] | None = None,
    reduce: Callable[[np.ndarray, int], list[Any]] | None = None,
) -> Iterator[Span]:
    """The parts of rows ``first`` to ``stop`` of ``readers``, span by span (see the module
    docstring); at least one span, empty for an empty range. ``into``: for mapped rows and
    no filter, whole arrays (rows ``first`` to ``stop``) that the decodable columns are
    swapped into, by index in ``readers``; their parts are None.

    ``reduce`` (``readers`` of one table's rows, no filter): rows ``first`` to ``stop`` are
    one span, mapped once (a remote file's in one ranged request, a tile-compressed table's
    tiles decompressed once), and its parts are ``reduce(rows, first)`` of its whole rows
    (``(m, row_bytes)`` ``uint8``, read-only)."""
    if reduce is not None and keep is not None:
        raise ValueError("a reduction of spans takes no row filter")
    tests = list(keep.readers.values()) if keep is not None else []
    r0 = _shared([*readers, *tests])
    if reduce is not None and readers:
        r0 = readers[0]  # whole rows of any source: the caller checked they are one table's
    threads = max(threads, 1)
    pool = ThreadPoolExecutor(threads) if threads > 1 and r0 is not None else None
    with pool or contextlib.nullcontext():
        cols = _Rows(readers, frame, lists, threads, pool, into, reduce)
        test = _Rows(tests, False, False, threads, pool)
        if stop <= first and r0 is not None and reduce is not None:
            yield Span(first, first, None, reduce(np.zeros((0, r0.row_bytes), np.uint8), first))
            return
        if stop <= first:
            rows = None if keep is None else np.zeros(0, np.int64)
            yield Span(first, first, rows, cols.read(first, first, rows))
            return
        if r0 is None or reduce is not None:
            # a reduction's span is its task's rows (reduce.py sizes them: one map each)
            step = (keep.step if keep is not None else None) or stop - first
        else:
            step = max(SPAN_BYTES // r0.row_bytes, 1)
        for a in range(first, stop, step):
            b = min(a + step, stop)
            if r0 is None:
                yield _read_span(cols, test, keep, a, b)
            else:
                yield _mapped_span(r0, cols, test, keep, a, b, a - first)


def _read_span(cols: _Rows, test: _Rows, keep: Keep | None, a: int, b: int) -> Span:
    if keep is None:
        return Span(a, b, None, cols.read(a, b, None))
    values = {name: part[0] for name, part in zip(keep.readers, test.read(a, b, None), strict=True)}
    rows = np.flatnonzero(keep.test(values, b - a)) + a
    return Span(a, b, rows, cols.read(a, b, rows))


def _mapped_span(r0: ColumnReader, cols: _Rows, test: _Rows, keep: Keep | None, a: int, b: int,
                 at: int) -> Span:  # fmt: skip
    rb = r0.row_bytes
    if not rb:
        return Span(a, b, None, cols.decode(np.zeros((b - a, 0), np.uint8), a, at))
    if not r0.source.mappable:
        r0.source.verify()  # a reduction's remote rows: one ranged request for the span
    # One map for every field of the span; pre-faulted when every page holds a row, but not
    # for a reduction: measured on 1 GiB of 160-byte rows with 2 threads, populating each
    # 128 MiB span took 0.29 s (median of 9) against 0.23 s faulting pages in as it reads.
    populate = rb <= _PAGE and cols.reduce is None
    span = r0.source.map(r0.offset + a * rb, (b - a) * rb, populate=populate)
    block = span.reshape(b - a, rb)
    if keep is None:
        return Span(a, b, None, cols.decode(block, a, at))
    found = test.decode(block, a)
    values = {name: part[0] for name, part in zip(keep.readers, found, strict=True)}
    kept = np.flatnonzero(keep.test(values, b - a))
    if not cols.readers:  # hdu.where: the row numbers only
        return Span(a, b, kept + a, [])
    # the matching rows' bytes that hold the selected fields, copied out of the map once
    # for every column (read-only, as the map is: the field kernel keeps one signature)
    block = block[kept, cols.lo : cols.hi]
    block.flags.writeable = False
    del span
    first = a + int(kept[0]) if len(kept) else a  # a message's row counts from here
    return Span(a, b, kept + a, cols.decode(block, first, shift=cols.lo))


class _Whole:
    """One column joined from its parts: copied into one array of ``n`` rows as they come,
    or (``n`` None: a filter's count, known at the end) joined at the end."""

    def __init__(self, n: int | None) -> None:
        self.n, self.at = n, 0
        self.values: np.ndarray | None = None
        self.nulls: np.ndarray | None = None
        self.parts: list[tuple[np.ndarray, Any]] = []

    def add(self, values: np.ndarray, nulls: np.ndarray | None) -> None:
        v, m = self.values, len(values)
        if self.n is not None and v is None and m == self.n:
            self.values, self.nulls, self.at = values, nulls, m  # one span: the part is whole
            return
        if self.n is not None and v is None:
            v = self.values = np.empty((self.n, *values.shape[1:]), values.dtype)
        if v is None or v.dtype != values.dtype or v.shape[1:] != values.shape[1:]:
            if v is not None:  # a part unlike the first: joined by numpy's rules at the end
                self.parts = [(v[: self.at], self._nulls(0, self.at))]
                self.values, self.n = None, None
            self.parts.append((values, nulls))
            return
        v[self.at : self.at + m] = values
        if nulls is not None:
            if self.nulls is None:
                self.nulls = np.zeros(v.shape, bool)
            self.nulls[self.at : self.at + m] = nulls
        self.at += m

    def _nulls(self, a: int, b: int) -> np.ndarray | None:
        return None if self.nulls is None else self.nulls[a:b]

    def result(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.values is not None:
            return self.values, self.nulls
        if len(self.parts) == 1:
            return self.parts[0]
        values = np.concatenate([v for v, _ in self.parts])
        if all(nl is None for _, nl in self.parts):
            return values, None
        nulls = [np.zeros(v.shape, bool) if nl is None else nl for v, nl in self.parts]
        return values, np.concatenate(nulls)


def read_whole(
    readers: Sequence[Any],
    first: int,
    stop: int,
    *,
    frame: bool = True,
    threads: int = 1,
    keep: Keep | None = None,
) -> tuple[np.ndarray | None, list[tuple[Any, np.ndarray | None]]]:
    """Rows ``first`` to ``stop`` (or those ``keep`` keeps) of every column of ``readers``
    as one ``(values, nulls)`` each (as :func:`spans` gives a span's), and the kept row
    numbers (None without ``keep``). Without a filter, the decodable columns are swapped
    straight into their whole arrays and the others copied in as each span is decoded."""
    n = max(stop - first, 0)
    into = None
    if keep is None and _shared(readers) is not None:
        into = {k: np.empty(n, _dtype(r.column)) for k, r in enumerate(readers) if decodable(r)}
    wholes = [_Whole(n if keep is None else None) for _ in readers]
    found = []
    for span in spans(readers, first, stop, frame=frame, threads=threads, keep=keep, into=into):
        if span.rows is not None:
            found.append(span.rows)
        for k, (whole, part) in enumerate(zip(wholes, span.parts, strict=True)):
            if part is not None and not (into and k in into):
                whole.add(*part)
    columns = []
    for k, (r, whole) in enumerate(zip(readers, wholes, strict=True)):
        columns.append(_nulls(into[k], r.column, frame) if into and k in into else whole.result())
    return (np.concatenate(found) if found else None), columns
