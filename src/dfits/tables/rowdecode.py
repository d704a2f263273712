"""Whole numeric columns of a block of rows, swapped into native arrays in one pass.

The contract: :func:`decode_columns` takes the :class:`~dfits.tables.columns.ColumnReader` of
several columns of one table and a row range, and returns, for each column it can take (a
binary one-element B/I/J/K/E/D column, unscaled or under the unsigned / int8 convention, of
a file that can be mapped: :func:`decodable`), a new native array of its physical values,
equal to what ``np.asarray(reader.rows_and_nulls(first, stop)[0])`` gives (a column with
TNULLn: its stored integers).

Why: the general path decodes one column at a time, each first copied out of the strided
rows and then swapped; for a whole table of narrow rows that walks the table's memory once
per column. Here each span of rows is mapped once and :mod:`dfits.kernels.fielddecode`
swaps every field straight into its output column, block by block, in one pass; the rows
are split between ``threads`` (the kernel releases the GIL).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dfits.format.columns import Column
from dfits.format.tform import is_unsigned_zero
from dfits.tables.columns import ColumnReader
from dfits.tables.fields import integer_dtype, nullable

__all__ = ["decodable", "decode_columns"]

#: Bytes of rows mapped at a time: the map's resident pages stay bounded by this.
SPAN_BYTES = 64 << 20

_PAGE = 4096
_SIZES = {"B": 1, "I": 2, "J": 4, "K": 8, "E": 4, "D": 8}


def decodable(reader: ColumnReader) -> bool:
    """True for a column :func:`decode_columns` takes."""
    c = reader.column
    if c.ascii or c.code not in _SIZES or c.shape != () or not reader.source.mappable:
        return False
    return not c.scaled or is_unsigned_zero(c.code, c.scale, c.zero)


def _dtype(column: Column) -> np.dtype:
    return integer_dtype(column) if nullable(column) else column.dtype


def _flip(reader: ColumnReader) -> int:
    """The bit that the unsigned and int8 conventions flip (adding TZERO), else 0."""
    c = reader.column
    return 1 << (8 * _SIZES[c.code] - 1) if c.scaled else 0


def decode_columns(
    readers: Sequence[ColumnReader], first: int, stop: int, threads: int = 1
) -> dict[int, np.ndarray]:
    """Rows ``first`` to ``stop`` of each :func:`decodable` column, by its index in
    ``readers``, decoded in one pass over the rows per span on ``threads`` threads."""
    from dfits.kernels.fielddecode import decode_fields

    picked = [k for k, r in enumerate(readers) if decodable(r)]
    n = stop - first
    # a nullable column comes out as its stored integers: the caller flags the TNULLn cells
    outs = {k: np.empty(max(n, 0), _dtype(readers[k].column)) for k in picked}
    if not picked or n <= 0:
        return outs
    r0 = readers[0]
    offsets = np.array([readers[k].column.offset for k in picked], np.int64)
    sizes = np.array([_SIZES[readers[k].column.code] for k in picked], np.int64)
    flips = np.array([_flip(readers[k]) for k in picked], np.uint64)
    step = max(SPAN_BYTES // max(r0.row_bytes, 1), 1)
    threads = max(threads, 1)

    def part(a: int, b: int, rows: np.ndarray) -> None:
        decode_fields(rows, offsets, sizes, flips, [outs[k][a - first : b - first] for k in picked])

    with ThreadPoolExecutor(threads) as pool:
        for a in range(first, stop, step):
            b = min(a + step, stop)
            # one map per span, shared by the threads: every field comes out of it
            span = r0.source.map(
                r0.offset + a * r0.row_bytes, (b - a) * r0.row_bytes, populate=r0.row_bytes <= _PAGE
            )
            rows = span.reshape(b - a, r0.row_bytes)
            cuts = np.linspace(a, b, threads + 1).astype(np.int64).tolist()
            jobs = [pool.submit(part, x, y, rows[x - a : y - a])
                    for x, y in itertools.pairwise(cuts) if y > x]  # fmt: skip
            for job in jobs:
                job.result()
    return outs
