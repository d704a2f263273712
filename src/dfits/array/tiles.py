"""The tile reader: a compressed image read by regions, each decoding only its own tiles.

A :class:`TileReader` is a frozen record of (source, data offset, tile layout, per-tile heap
descriptors, decode spec): a path and integers, so tasks stay small and hold no data. Its
:meth:`TileReader.read` finds the tiles a region overlaps, fetches their compressed bytes in
a few coalesced reads (``pread`` locally, ranged requests remotely), decodes them on the
worker (:mod:`dfits.kernels.codecs`, GIL-free), dequantises quantised floats in one Numba
pass (:mod:`dfits.kernels.dequantize`) and returns a
:class:`~dfits.array.stored.StoredChunk` of the *native* stored values (spec byte order
``"="``), so BSCALE/BZERO/BLANK and every reduction run in the same kernels as for plain
images. It implements :class:`dfits.array.reader.Reader`.

A corrupt or truncated tile raises :class:`~dfits.errors.DataError` naming the file, HDU,
tile (its table row) and algorithm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.array.quantised import QuantisedTiles
from dfits.array.stored import StoredChunk
from dfits.errors import DataError
from dfits.io.ranges import bounding

__all__ = ["TileReader", "TileSection", "align_chunks", "tile_reader"]

# Compressed tiles closer than this in the heap are fetched in one read.
_GAP = 1 << 16


@dataclass(frozen=True, eq=False)
class TileReader:
    """A tile-compressed image, addressable by slices of its numpy shape."""

    source: Any
    heap_offset: int
    tiles: Any
    descriptors: Any
    spec: Any
    where: str
    raw: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tiles.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.spec.stored if self.raw else self.spec.physical

    def rows(self, region: tuple[slice, ...]) -> np.ndarray:
        """The table rows (tile numbers, C order of the grid) of the tiles ``region`` meets."""
        ranges = []
        for sl, t in zip(region, self.tiles.tile, strict=True):
            if sl.stop <= sl.start:
                return np.empty(0, np.int64)
            ranges.append(np.arange(sl.start // t, (sl.stop - 1) // t + 1, dtype=np.int64))
        index = np.meshgrid(*ranges, indexing="ij")
        return np.ravel_multi_index(index, self.tiles.grid).reshape(-1).astype(np.int64)

    def read(self, index: tuple[slice, ...]) -> Any:
        """The native stored values of the step-1 region ``index``, as a stored chunk."""
        region = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.shape, strict=True))
        counts = tuple(max(sl.stop - sl.start, 0) for sl in region)
        rows = self.rows(region)
        group = self._group(rows, region)
        if group is not None and group[3] is not None and self._fusable():
            # quantised floats stay integers until a reduction reads them (fused) or
            # anything else asks for the floats: see dfits.array.quantised
            pending = QuantisedTiles(*group, counts, self.spec)
            return StoredChunk(None, self.spec, pending)
        out = np.empty(counts, self.spec.stored)
        if group is not None:
            from dfits.kernels import tilegroup

            packed, shapes, firsts, quant = group
            tilegroup.place_group(packed, out, shapes, firsts, quant)
        else:
            rows = rows.tolist()
            blobs = self._fetch(rows)
            for row in rows:
                self._decode_into(row, blobs[row], region, out)
        if self.raw:
            return out
        return StoredChunk(out.view(f"u{out.itemsize}"), self.spec)

    def _group(self, rows: np.ndarray, region: tuple[slice, ...]):
        """Fetch and decode every tile with array arithmetic and one Numba call (RICE_1
        tiles wholly inside the region, all in COMPRESSED_DATA: what default chunks hold):
        per-tile Python would cost more than the decoding. Returns ``(packed, shapes,
        firsts, quant)`` for :func:`~dfits.kernels.tilegroup.place_group` (``quant`` None
        unless quantised), or None when not possible."""
        from dfits.kernels import tilegroup

        tiles = self.tiles
        if tiles.algorithm != "RICE_1" or tiles.bytepix not in (1, 2, 4) or len(rows) < 2:
            return None
        spans = self.descriptors.spans["COMPRESSED_DATA"][rows]
        if not (spans[:, 0] > 0).all():
            return None  # fallback columns: tile by tile
        tile, shape = np.array(tiles.tile), np.array(tiles.shape)
        lo = np.stack(np.unravel_index(rows, tiles.grid), axis=1) * tile
        hi = np.minimum(lo + tile, shape)
        start = np.array([sl.start for sl in region])
        if not ((lo >= start).all() and (hi <= [sl.stop for sl in region]).all()):
            return None
        blob, starts = self._fetch_spans(spans)
        packed, bad, status = tilegroup.rice_group(
            blob, starts, spans[:, 0], (hi - lo).prod(axis=1), tiles.blocksize, tiles.bytepix
        )
        if packed is None:
            reason = "ends before its last pixel" if status == -1 else "has unused bytes"
            raise self._error(int(rows[bad]), int(spans[bad, 0]), f"the Rice stream {reason}")
        quant = self._quantisation(rows) if tiles.dither is not None else None
        return packed, hi - lo, lo - start, quant

    def _fusable(self) -> bool:
        """True when reductions may run on the quantised integers: physical values are the
        dequantised floats themselves (no BSCALE/BZERO of the image on top)."""
        return not self.raw and self.spec.mode == "raw" and self.spec.error is None

    def _fetch_spans(self, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The heap bytes of ``spans`` (bytes, offset) in one buffer, and where each starts
        in it: spans closer than the gap are read together, so consecutive tiles are one
        read and, in the common case, one buffer without a copy."""
        counts, offsets = spans[:, 0], spans[:, 1]
        order = np.argsort(offsets, kind="stable")
        first, stop = offsets[order], offsets[order] + counts[order]
        ends = np.maximum.accumulate(stop)
        cut = np.flatnonzero(first[1:] > ends[:-1] + _GAP) + 1
        bounds = np.split(np.arange(len(order)), cut)
        ranges = [
            (self.heap_offset + int(first[g[0]]), self.heap_offset + int(ends[g[-1]]))
            for g in bounds
        ]
        blobs = [np.frombuffer(b, np.uint8) for b in _read_ranges(self.source, ranges)]
        starts = np.empty(len(offsets), np.int64)
        base = 0
        for g, (a, _), buf in zip(bounds, ranges, blobs, strict=True):
            starts[order[g]] = base + (self.heap_offset + first[g] - a)
            base += len(buf)
        blob = blobs[0] if len(blobs) == 1 else np.concatenate(blobs)
        return blob, starts

    def _quantisation(self, rows: np.ndarray):
        """Per-tile (scale, zero, blank, method, first dither index) of quantised tiles."""
        tiles = self.tiles
        vals = self.descriptors.values
        n = len(rows)

        def per_tile(name: str, const: object, default: object):
            if name in vals:
                return vals[name][rows]
            return np.full(n, default if const is None else const)

        scale = per_tile("ZSCALE", tiles.zscale, 1.0).astype(np.float64)
        zero = per_tile("ZZERO", tiles.zzero, 0.0).astype(np.float64)
        blank = None
        if "ZBLANK" in vals or tiles.zblank is not None:
            blank = per_tile("ZBLANK", tiles.zblank, 0).astype(np.int64)
        seeds = (rows + tiles.dither0 - 1) % 10000
        return scale, zero, blank, tiles.dither, seeds.astype(np.int64)

    def _span(self, row: int) -> tuple[str, int, int]:
        """(column, heap offset, bytes) holding tile ``row``: its compressed bytes, or a
        fallback column's when COMPRESSED_DATA is empty."""
        spans = self.descriptors.spans
        count, offset = spans["COMPRESSED_DATA"][row]
        if count == 0:
            for name in ("GZIP_COMPRESSED_DATA", "UNCOMPRESSED_DATA"):
                if name in spans and spans[name][row][0] > 0:
                    count, offset = spans[name][row]
                    return name, int(offset), int(count)
        return "COMPRESSED_DATA", int(offset), int(count)

    def _fetch(self, rows: list[int]) -> dict[int, tuple[str, np.ndarray]]:
        """Each tile's column and bytes, read in as few ranges as the heap allows."""
        spans = sorted((self._span(r)[1], self._span(r)[2], r) for r in rows)
        groups: list[list[tuple[int, int, int]]] = []
        for span in spans:
            if groups and span[0] <= groups[-1][-1][0] + groups[-1][-1][1] + _GAP:
                groups[-1].append(span)
            else:
                groups.append([span])
        ranges = []
        for g in groups:
            start = self.heap_offset + g[0][0]
            stop = self.heap_offset + max(o + n for o, n, _ in g)
            ranges.append((start, stop))
        blobs = _read_ranges(self.source, ranges)
        out = {}
        for g, (start, _), blob in zip(groups, ranges, blobs, strict=True):
            buf = np.frombuffer(blob, np.uint8)
            for offset, count, row in g:
                rel = self.heap_offset + offset - start
                out[row] = (self._span(row)[0], buf[rel : rel + count])
        return out

    def _decode_into(self, row: int, blob: tuple[str, np.ndarray], region, out) -> None:
        tiles = self.tiles
        place = tiles.tile_region(row)
        shape = tuple(sl.stop - sl.start for sl in place)
        npix = math.prod(shape)
        from dfits.kernels import codecs

        column, data = blob
        codec = codecs.Codec(
            tiles.algorithm,
            tiles.zbitpix,
            tiles.blocksize,
            tiles.bytepix,
            tiles.dither is not None,
            tiles.smooth,
        )
        try:
            if column != "COMPRESSED_DATA":
                values = codecs.raw_tile(codec, data, npix, column.startswith("GZIP"))
            else:
                values = codecs.decode_tile(codec, data, npix, shape)
        except codecs.TileError as err:
            raise self._error(row, len(data), str(err)) from err
        values = values[:npix]
        if tiles.dither is not None and column == "COMPRESSED_DATA":
            values = self._dequantize(row, values, shape)
        else:
            values = self._blanked(row, values)
        src, dst = _overlap(place, region)
        out[dst] = values.reshape(shape)[src]

    def _error(self, row: int, nbytes: int, reason: str) -> DataError:
        return DataError(
            f"{self.where}: tile {row} (table row {row + 1}, {self.tiles.algorithm}, "
            f"{nbytes} bytes at heap offset {self._span(row)[1]}) cannot be decoded: {reason}"
        )

    def _dequantize(self, row: int, values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        from dfits.kernels.dequantize import dequantize

        tiles = self.tiles
        vals = self.descriptors.values
        scale = vals["ZSCALE"][row] if "ZSCALE" in vals else tiles.zscale
        zero = vals["ZZERO"][row] if "ZZERO" in vals else tiles.zzero
        blank = int(vals["ZBLANK"][row]) if "ZBLANK" in vals else tiles.zblank
        # decoders hand back native integers already: this is a no-op but for a stored
        # (NOCOMPRESS / fallback) tile, whose one swap is this pass
        q = np.ascontiguousarray(values, values.dtype.newbyteorder("="))
        tile = np.empty(shape, self.spec.stored)
        dequantize(
            q,
            tile.reshape(-1, shape[-1] if shape else 1),
            scale,
            0.0 if zero is None else zero,
            tiles.dither,
            row,
            tiles.dither0,
            blank,
        )
        return tile

    def _blanked(self, row: int, values: np.ndarray) -> np.ndarray:
        """Integer tiles whose ZBLANK column differs from the image's BLANK: astropy writes
        the image's BLANK in their place (floats keep their own NaNs)."""
        vals = self.descriptors.values
        blank = self.spec.blank
        if "ZBLANK" not in vals or self.tiles.zbitpix < 0 or blank is None:
            return values
        zblank = int(vals["ZBLANK"][row])
        if zblank == blank:
            return values
        # rare (a per-tile ZBLANK that is not the image's BLANK): a native copy to rewrite
        values = values.astype(values.dtype.newbyteorder("="), copy=True)
        values[values == zblank] = blank
        return values


def tile_reader(source: Any, layout: Any, where: str) -> TileReader:
    """The reader of a compressed image HDU: reads its table's rows (the per-tile
    descriptors: a few bytes per tile) once, here, and checks them against the heap."""
    from dfits.format.descriptors import read_descriptors

    tiles = layout.tiles
    rows = source.read_exact(layout.data_offset, tiles.row_bytes * tiles.nrows)
    descriptors = read_descriptors(rows, tiles, where)
    heap = layout.data_offset + tiles.heap_start
    return TileReader(source, heap, tiles, descriptors, layout.decode, where)


def _overlap(place: tuple[slice, ...], region: tuple[slice, ...]):
    """Slices of a tile at ``place`` and of a chunk at ``region`` where they meet."""
    src, dst = [], []
    for p, r in zip(place, region, strict=True):
        lo, hi = max(p.start, r.start), min(p.stop, r.stop)
        src.append(slice(lo - p.start, hi - p.start))
        dst.append(slice(lo - r.start, hi - r.start))
    return tuple(src), tuple(dst)


def _read_ranges(source: Any, ranges: list[tuple[int, int]]) -> list[Any]:
    if not ranges:
        return []
    if source.mappable:
        # compressed bytes are copied by pread: they are a fraction of the tile they decode to
        return [source.read_exact(a, b - a) for a, b in ranges]
    source.verify()
    return source.read_ranges(ranges)


def align_chunks(
    chunks: tuple[tuple[int, ...], ...], tile: tuple[int, ...], shape: tuple[int, ...]
) -> tuple[tuple[int, ...], ...]:
    """Regular chunks of whole tiles: each axis's first chunk rounded up to tile multiples.

    Examples
    --------
    >>> align_chunks(((40, 40, 20), (300,)), (16, 300), (100, 300))
    ((48, 48, 4), (300,))
    """
    out = []
    for c, t, n in zip(chunks, tile, shape, strict=True):
        size = min(n, -(-max(c[0] if c else 1, 1) // t) * t) or 1
        full, rest = divmod(n, size)
        out.append((size,) * full + ((rest,) if rest else ()) or (0,))
    return tuple(out)


class TileSection:
    """``hdu.section[...]`` of a compressed image: reads and decodes only the tiles needed."""

    __slots__ = ("block",)

    def __init__(self, block: TileReader) -> None:
        self.block = block

    @property
    def shape(self) -> tuple[int, ...]:
        return self.block.shape

    @property
    def dtype(self) -> np.dtype:
        return self.block.spec.physical

    def __getitem__(self, index: Any) -> Any:
        bound, rel = bounding(index, self.block.shape)
        shape = self.block.shape
        bound = tuple(bound) + (slice(None),) * (len(shape) - len(bound))
        from dfits.kernels import decode

        chunk = self.block.read(bound)
        values = decode(chunk.u, self.block.spec)
        return values[rel]
