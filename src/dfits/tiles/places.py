"""Where a region's tiles are: their table rows, their descriptors, their heap bytes.

The contract: a tile's table row follows from its place in the grid (C order), so
:func:`tile_rows` names the tiles a region meets without reading anything, and
:func:`lookup_rows` reads the descriptors (heap spans, ZSCALE/ZZERO/ZBLANK) of those rows
alone: a 64 x 64 stamp of an image of 65,536 tiles reads a few hundred bytes of its table,
not all of it (cfitsio reads a row at a time too). :func:`fetch_spans` reads the tiles'
compressed bytes in as few coalesced reads as the heap allows. :func:`covering` and
:func:`in_order` say how a group of decoded tiles maps onto a chunk: into a small scratch
cover of whole tiles (stamps), or as the chunk itself with no copy (row tiles).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from dfits.format.descriptors import Descriptors, concat_descriptors, read_descriptors

__all__ = [
    "BATCH",
    "GAP",
    "batches",
    "compact",
    "covering",
    "extent",
    "fetch_spans",
    "in_order",
    "lookup_rows",
    "read_ranges",
    "rice_batches",
    "side_by_side",
    "tile_rows",
]

#: bytes: table rows or compressed tiles closer than this in the file are fetched in one read
GAP = 1 << 16
#: bytes of compressed tiles read and decoded at a time by :func:`rice_batches`
BATCH = 8 << 20


def tile_rows(tiles: Any, region: tuple[slice, ...]) -> np.ndarray:
    """The table rows (tile numbers, ascending: C order of the grid) that ``region`` meets.

    Built from the last axis out, one broadcast sum per axis (a stamp's few tiles cost a
    few numpy calls, not a mesh grid).

    >>> from types import SimpleNamespace
    >>> tiles = SimpleNamespace(tile=(16, 16), grid=(8, 8))
    >>> tile_rows(tiles, (slice(20, 40), slice(90, 100))).tolist()
    [13, 14, 21, 22]
    """
    rows = np.zeros(1, np.int64)
    stride = 1
    for sl, t, g in zip(region[::-1], tiles.tile[::-1], tiles.grid[::-1], strict=True):
        if sl.stop <= sl.start:
            return np.empty(0, np.int64)
        ids = np.arange(sl.start // t * stride, ((sl.stop - 1) // t + 1) * stride, stride)
        rows = (ids[:, None] + rows).reshape(-1)
        stride *= g
    return rows


def compact(tiles: Any, picks: tuple[np.ndarray, ...]) -> tuple[list, list, tuple, tuple]:
    """Where picked indices (per axis, any order) lie once the tiles holding none are left out.

    Returns, per axis, the met tiles (ascending), each grid position's start in the compacted
    image (meaningful at met tiles), each pick's index in the compacted image, and the
    compacted image's shape. ``image[np.ix_(*picks)] == compacted[np.ix_(*where)]``.

    >>> from types import SimpleNamespace
    >>> tiles = SimpleNamespace(tile=(1, 4), shape=(6, 10), grid=(6, 3))
    >>> met, starts, where, shape = compact(tiles, (np.array([0, 4]), np.array([1, 9])))
    >>> [m.tolist() for m in met], [w.tolist() for w in where], shape
    ([[0, 4], [0, 2]], [[0, 1], [1, 5]], (2, 6))
    """
    met, starts, where, shape = [], [], [], []
    for p, t, n, g in zip(picks, tiles.tile, tiles.shape, tiles.grid, strict=True):
        ids = np.unique(p // t)
        lengths = np.minimum((ids + 1) * t, n) - ids * t
        first = np.zeros(g, np.int64)
        first[ids] = np.cumsum(lengths) - lengths
        met.append(ids)
        starts.append(first)
        where.append(first[p // t] + p % t)
        shape.append(int(lengths.sum()))
    return met, starts, tuple(where), tuple(shape)


def lookup_rows(
    source: Any, table_offset: int, tiles: Any, where: str, rows: np.ndarray
) -> Descriptors:
    """The descriptors of the ascending table ``rows``, in their order, read from those rows
    alone (runs of rows closer than :data:`GAP` in one read) and checked against the heap."""
    width = tiles.row_bytes
    if not len(rows):
        return read_descriptors(b"", tiles, where, rows=rows)
    near = max(1, GAP // width)
    if int(rows[-1]) - int(rows[0]) <= near:
        runs = [rows]  # a stamp's rows: no gap to split at
    else:
        runs = np.split(rows, np.flatnonzero(np.diff(rows) > near) + 1)
    ranges = [
        (table_offset + int(r[0]) * width, table_offset + (int(r[-1]) + 1) * width) for r in runs
    ]
    blobs = read_ranges(source, ranges)
    parts = [
        read_descriptors(blob, tiles, where, rows=r, first=int(r[0]))
        for r, blob in zip(runs, blobs, strict=True)
    ]
    return concat_descriptors(parts)


def fetch_spans(source: Any, heap_offset: int, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The heap bytes of ``spans`` (bytes, offset) in one read-only buffer, and where each
    starts in it: spans closer than the gap are read together, so consecutive tiles are one
    read and, in the common case, one buffer without a copy. (Read-only either way: Numba
    types a writable array apart, and a stamp of two heap runs after one of one would load a
    second decoder signature.)"""
    if len(spans) <= _FEW:  # a stamp's few tiles: Python, where numpy's calls cost more
        listed = spans.tolist()
        groups = _near_groups(listed)
        offsets = [offset for _, offset in listed]
    else:
        counts, offsets = spans[:, 0], spans[:, 1]
        order = np.argsort(offsets, kind="stable")
        first, stop = offsets[order], offsets[order] + counts[order]
        ends = np.maximum.accumulate(stop)
        cut = np.flatnonzero(first[1:] > ends[:-1] + GAP) + 1
        groups = [
            (order[g], int(first[g[0]]), int(ends[g[-1]]))
            for g in np.split(np.arange(len(order)), cut)
        ]
    raw = read_ranges(source, [(heap_offset + a, heap_offset + b) for _, a, b in groups])
    starts = np.empty(len(spans), np.int64)
    base = 0
    for (members, a, _), got in zip(groups, raw, strict=True):
        if isinstance(members, list):
            for k in members:
                starts[k] = offsets[k] - a + base
        else:
            starts[members] = offsets[members] + (base - a)
        base += len(got)
    one = len(raw) == 1 and isinstance(raw[0], bytes)  # a bytearray's buffer is writable
    blob = np.frombuffer(raw[0] if one else b"".join(raw), np.uint8)
    return blob, starts


#: at most this many spans are grouped in Python (a stamp's few tiles), more by numpy
_FEW = 32


def _near_groups(spans: list[list[int]]) -> list[tuple[list[int], int, int]]:
    """Spans (bytes, offset) in groups closer than :data:`GAP`, by offset: each group's
    members (indices, ascending offset), first byte and end. What :func:`fetch_spans` does
    with numpy for many spans, in Python for a few (a stamp's), where numpy's calls cost
    more than the work.

    >>> _near_groups([[10, 1 << 20], [5, 0], [8, 5]])
    [([1, 2], 0, 13), ([0], 1048576, 1048586)]
    """
    order = sorted(range(len(spans)), key=lambda k: spans[k][1])
    groups: list[tuple[list[int], int, int]] = []
    for k in order:
        count, offset = spans[k]
        if groups and offset <= groups[-1][2] + GAP:
            members, a, end = groups[-1]
            members.append(k)
            groups[-1] = (members, a, max(end, offset + count))
        else:
            groups.append(([k], offset, offset + count))
    return groups


def batches(
    source: Any, heap_offset: int, spans: np.ndarray, npix: np.ndarray, packed: np.ndarray, decode
) -> bool:
    """Decode tiles (their ``spans``, ``npix`` values each) into the packed array ``packed``,
    reading their compressed bytes :data:`BATCH` at a time: a task then holds its decoded
    chunk and one batch of compressed bytes, not the whole chunk's compressed bytes too.

    ``decode(blob, starts, counts, npix, out, first)`` decodes one batch (tiles ``first``
    on) and returns False on failure, which stops here and is returned.
    """
    ends = np.cumsum(spans[:, 0])
    if ends[-1] < BATCH:  # a stamp's tiles, a small chunk's: one batch
        return decode(*fetch_spans(source, heap_offset, spans), spans[:, 0], npix, packed, 0)
    cuts = np.flatnonzero(np.diff(ends // BATCH)) + 1
    bounds = [0, *cuts.tolist(), len(spans)]
    firsts = np.concatenate(([0], np.cumsum(npix)))
    for a, b in itertools.pairwise(bounds):
        blob, starts = fetch_spans(source, heap_offset, spans[a:b])
        out = packed[firsts[a] : firsts[b]]
        if not decode(blob, starts, spans[a:b, 0], npix[a:b], out, a):
            return False
    return True


def rice_batches(
    source: Any, heap_offset: int, spans: np.ndarray, npix: np.ndarray, tiles: Any
) -> tuple[np.ndarray | None, int, int]:
    """Decode RICE_1 tiles into one packed array, :func:`batches` at a time, one Numba call
    per batch. Returns ``(packed, -1, 0)``, or ``(None, t, status)`` for the first tile
    that fails."""
    from dfits.kernels import tilegroup

    packed = np.empty(int(npix.sum()), tilegroup.PACKED[tiles.bytepix])
    failed: list[tuple[int, int]] = []

    def decode(blob, starts, counts, n, out, first) -> bool:
        got, bad, status = tilegroup.rice_group(
            blob, starts, counts, n, tiles.blocksize, tiles.bytepix, out=out
        )
        if got is None:
            failed.append((first + bad, status))
        return got is not None

    if batches(source, heap_offset, spans, npix, packed, decode):
        return packed, -1, 0
    return None, *failed[0]


def read_ranges(source: Any, ranges: list[tuple[int, int]]) -> list[Any]:
    """The bytes of each ``(start, stop)`` range of the file: ``pread`` locally, one
    coalescing request remotely."""
    if not ranges:
        return []
    if source.mappable:
        # compressed bytes are copied by pread: they are a fraction of the tile they decode to
        return [source.read_exact(a, b - a) for a, b in ranges]
    source.verify()
    return source.read_ranges(ranges)


def extent(region: tuple[slice, ...]) -> tuple[int, ...]:
    """The shape of a region of step-1 slices."""
    return tuple(sl.stop - sl.start for sl in region)


def covering(
    tiles: Any, region: tuple[slice, ...], counts: tuple[int, ...], itemsize: int
) -> tuple[slice, ...]:
    """The region of whole tiles holding ``region`` when it is small (at most twice the
    region, or 4 MiB): a stamp's partial tiles then decode as one group, in one Numba call,
    into this scratch cover; else ``region`` itself (tile by tile).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> t = SimpleNamespace(tile=(16, 16), shape=(100, 100))
    >>> covering(t, (slice(20, 40), slice(90, 100)), (20, 10), 2)
    (slice(16, 48, None), slice(80, 100, None))
    """
    cover = tuple(
        slice(r.start // t * t, min(-(-r.stop // t) * t, n))
        for r, t, n in zip(region, tiles.tile, tiles.shape, strict=True)
    )
    size, want = math.prod(extent(cover)), math.prod(counts)
    if not want or (size > 2 * want and size * itemsize > 1 << 22):
        return region
    return cover


def in_order(group: tuple, counts: tuple[int, ...], stored: np.dtype) -> bool:
    """True when a group's packed integers are its chunk as they stand: stored values (no
    dequantisation), each tile one contiguous run of the chunk (below its first axis longer
    than 1 it spans the chunk), the runs one after another from the chunk's start.

    Examples
    --------
    >>> packed = np.zeros(12, np.int16)
    >>> firsts = np.array([[0, 0], [1, 0], [2, 0]])
    >>> in_order((packed, np.array([[1, 4]] * 3), firsts, None), (3, 4), np.dtype("i2"))
    True
    >>> in_order((packed, np.array([[3, 2]] * 2), np.array([[0, 0], [0, 2]]), None),
    ...          (3, 4), np.dtype("i2"))
    False
    """
    packed, shapes, firsts, quant = group
    if quant is not None or packed.dtype != stored or packed.size != math.prod(counts):
        return False
    # the first tile's test in Python, first: tiles side by side (a stamp's cover of square
    # tiles) fail it, and then no numpy call is made
    first = shapes[0].tolist()
    outer = next((d for d, n in enumerate(first) if n != 1), 0)
    if first[outer + 1 :] != list(counts[outer + 1 :]):
        return False
    ndim = len(counts)
    first = np.argmax(shapes != 1, axis=1)[:, None]  # a 1-pixel tile: axis 0, still a run
    inner = np.arange(ndim) > first
    if not ((~inner | (shapes == counts)) & (~inner | (firsts == 0))).all():
        return False
    starts = np.ravel_multi_index(tuple(firsts.T), counts)
    sizes = shapes.prod(axis=1)
    return bool(starts[0] == 0 and (starts[1:] == np.cumsum(sizes)[:-1]).all())


def side_by_side(group: tuple, tile: tuple[int, ...], counts: tuple[int, ...]) -> np.ndarray | None:
    """A group's cover (``counts``) as one array, when its packed integers are stored
    values of whole tiles of the nominal ``tile`` shape, none cut by the image's edge: a
    reshape and a transpose of the packed tiles, one copy (for a stamp's few tiles this
    costs less than a placing kernel's call). None otherwise.

    Examples
    --------
    >>> packed = np.arange(8, dtype=np.int16)  # two 2 x 2 tiles, side by side
    >>> side_by_side((packed, None, None, None), (2, 2), (2, 4))
    array([[0, 1, 4, 5],
           [2, 3, 6, 7]], dtype=int16)
    """
    packed, quant = group[0], group[3]
    if quant is not None or any(c % t for c, t in zip(counts, tile, strict=True)):
        return None
    if packed.size != math.prod(counts):
        return None
    grid = [c // t for c, t in zip(counts, tile, strict=True)]
    n = len(tile)
    axes = [a for d in range(n) for a in (d, n + d)]  # each grid axis before its tile axis
    return packed.reshape(*grid, *tile).transpose(axes).reshape(counts)
