"""Variable-length arrays (P/Q columns): their descriptors, and their elements in the heap.

The contract: given a :class:`~dfits.tables.columns.ColumnReader` of a P/Q column and the
bytes of a block of its rows' fields, :func:`descriptors` checks each row's (count, offset)
against the heap (a descriptor outside it is a ``DataError`` naming the row),
:func:`elements` gathers and decodes every element of those rows at once, one after the
other (numpy over whole runs, no loop per row: the runs are usually one slice, as writers
lay them out in row order), and :func:`arrays` cuts them into one numpy array per row, views
of that one decoded block, shaped by TDIMn as astropy shapes them. Arrow takes the elements
and counts straight (offsets + values). Strings (PA) and bits (PX) are cut per row.

A logical column of astropy <= 7.2's 0x00/0x01 bytes (:func:`holds_legacy_logicals`) reads
non-zero as True, as astropy 8 reads it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from dfits.errors import DataError
from dfits.format.tform import BINARY_WIDTH
from dfits.tables.fields import element_values, strings

__all__ = ["arrays", "descriptors", "elements", "holds_legacy_logicals"]

#: Heap bytes gathered per numpy fancy-index step when the runs are scattered: the index
#: array costs 8 bytes per byte gathered, so 8 MiB of runs cost 64 MiB of index at most.
_GATHER = 8 << 20


def descriptors(reader: Any, buf, start: int, stride: int, n: int, first: int):
    """Element counts, heap offsets and byte sizes (int64) of the arrays of ``n`` rows."""
    c = reader.column
    desc = np.dtype(">i4" if c.code == "P" else ">i8")
    field = np.lib.stride_tricks.as_strided(buf[start:], (n, c.width), (stride, 1))
    pairs = np.ascontiguousarray(field).view(desc).reshape(n, 2).astype(np.int64)
    code = c.form.element
    counts = pairs[:, 0]
    offsets = pairs[:, 1]
    heap = reader.heap_size
    # counts and offsets are bounded by the heap before any product or sum: a count near
    # 2**63 times the element width would wrap in int64 and pass the check
    most = heap * 8 if code == "X" else heap // BINARY_WIDTH[code]
    bad = (counts < 0) | (offsets < 0) | (offsets > heap) | (counts > most)
    safe = np.where(bad, 0, counts)
    sizes = (safe + 7) // 8 if code == "X" else safe * BINARY_WIDTH[code]
    bad |= offsets + sizes > heap
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{reader.where}, column {c.number} ({c.name!r}), row {first + i + 1}: the "
            f"array descriptor (count {counts[i]}, offset {offsets[i]}) lies outside "
            f"the heap of {reader.heap_size} bytes (THEAP = {reader.heap_offset})"
        )
    return counts, offsets, sizes


def _heap(reader: Any, lo: int, hi: int, populate: bool = True) -> np.ndarray:
    if hi <= lo:
        return np.zeros(0, np.uint8)
    at = reader.offset + reader.heap_offset + lo
    return reader.source.map(at, hi - lo, populate=populate)


def _runs(reader: Any, offsets: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The heap bytes of the runs ``(offsets, sizes)``, one after the other."""
    used = sizes > 0
    offsets, sizes = offsets[used], sizes[used]
    if not len(sizes):
        return np.zeros(0, np.uint8)
    ends = offsets + sizes
    lo, hi = int(offsets.min()), int(ends.max())
    # pre-faulted when the runs fill most of their range; the arrays of a few filtered rows
    # touch only their own pages of it
    heap = _heap(reader, lo, hi, populate=2 * int(sizes.sum()) >= hi - lo)
    if np.array_equal(offsets[1:], ends[:-1]):
        return heap[offsets[0] - lo : ends[-1] - lo]  # in row order, back to back: one slice
    out = np.empty(int(sizes.sum()), np.uint8)
    done = np.concatenate([[0], np.cumsum(sizes)])
    cuts = np.searchsorted(done, np.arange(0, done[-1], _GATHER), side="right") - 1
    for a, b in zip(cuts, [*cuts[1:], len(sizes)], strict=True):
        s = sizes[a:b]
        index = np.repeat(offsets[a:b] - lo - (done[a:b] - done[a]), s) + np.arange(s.sum())
        out[done[a] : done[b]] = heap[index]
    return out


def elements(reader: Any, buf, start: int, stride: int, n: int, first: int):
    """Every element of the arrays of ``n`` rows, decoded, one after the other (a numeric
    or logical column), and each row's count."""
    c = reader.column
    code = c.form.element
    counts, offsets, sizes = descriptors(reader, buf, start, stride, n, first)
    raw = _runs(reader, offsets, sizes).reshape(-1, BINARY_WIDTH[code])
    if code == "L" and reader.legacy_logical:
        return raw[:, 0] != 0, counts  # astropy <= 7.2's 0x00/0x01
    return element_values(raw, c, code, ()), counts


def arrays(reader: Any, buf, start: int, stride: int, n: int, first: int) -> np.ndarray:
    """One numpy array per row (a ``str`` per row for PA), shaped by TDIMn."""
    c = reader.column
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    code = c.form.element
    if code in "AX":
        counts, offsets, sizes = descriptors(reader, buf, start, stride, n, first)
        lo, hi = int(offsets.min()), int((offsets + sizes).max())
        heap = _heap(reader, lo, hi)
        for i, (count, off, size) in enumerate(zip(counts, offsets, sizes, strict=True)):
            raw = heap[off - lo : off - lo + size].reshape(1, size)
            if code == "A":
                out[i] = strings(raw)[0] if size else ""
            else:
                bits = np.unpackbits(raw)[:count].astype(bool)
                out[i] = _shaped(c, reader.where, bits, first + i)
        return out
    values, counts = elements(reader, buf, start, stride, n, first)
    bounds = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    # plain slices: a quarter of np.split's cost per row (the views are the whole cost here)
    cells = (values[a:b] for a, b in itertools.pairwise(bounds.tolist()))
    if c.array_shape:
        cells = (_shaped(c, reader.where, cell, first + i) for i, cell in enumerate(cells))
    # fromiter stores each view as it comes: np.array(list) would first look into every
    # cell for a common shape (twice fromiter's cost per row, and a list of n views besides)
    return np.fromiter(cells, dtype=object, count=n)


def _shaped(column: Any, where: str, values: np.ndarray, row: int) -> np.ndarray:
    """A variable-length array in the shape TDIMn gives it (as astropy shapes it)."""
    shape = column.array_shape
    if not shape:
        return values
    per = math.prod(d for d in shape if d != -1)
    if values.size % per:
        c = column
        raise DataError(
            f"{where}, column {c.number} ({c.name!r}), row {row + 1}: an array of "
            f"{values.size} elements cannot take the shape {shape} of TDIM{c.number}"
        )
    return values.reshape(shape)


def holds_legacy_logicals(reader: Any, rows: int = 4096) -> bool:
    """True for a logical variable-length column written by astropy <= 7.2, which stored
    its values as 0x00/0x01 bytes instead of ``T``/``F``: as astropy 8 tells, the column's
    arrays hold a 0x01 byte and no byte but 0x00 and 0x01 (a standard column holds ``T``,
    ``F`` or NUL). Stops at the first other byte: one block of rows for a standard column."""
    seen = np.zeros(256, bool)
    for a in range(0, reader.nrows, rows):
        m = min(rows, reader.nrows - a)
        buf, start, stride = reader._field_bytes(a, m)
        _, offsets, sizes = descriptors(reader, buf, start, stride, m, a)
        seen[np.unique(_runs(reader, offsets, sizes))] = True
        if seen[2:].any():
            return False
    return bool(seen[1])
