"""The tile reader: a compressed image read by regions, each decoding only its own tiles.

A :class:`TileReader` is a frozen record of (source, table offset, tile layout, decode spec): a
path and integers, so tasks stay small and hold no data. Its :meth:`TileReader.read` finds
the tiles a region overlaps, reads only those tiles' rows of the table (their heap
descriptors and ZSCALE/ZZERO/ZBLANK: a tile's row follows from its place in the grid, so a
stamp of a 65,536-tile image reads a few hundred bytes of the table, not all of it), fetches
their compressed bytes in a few coalesced reads (``pread`` locally, ranged requests
remotely), decodes them on the worker (:mod:`dfits.kernels.codecs`, GIL-free), dequantises
quantised floats in one Numba pass (:mod:`dfits.kernels.dequantize`) and returns a
:class:`~dfits.stored.stored.StoredChunk` of the *native* stored values (spec byte order
``"="``), so BSCALE/BZERO/BLANK and every reduction run in the same kernels as for plain
images. It implements :class:`dfits.array.reader.Reader`, and ``hdu.section`` reads through
its :meth:`TileReader.read` as for any image (:class:`dfits.section.Section`): a stamp's
partial tiles decode as one group into a small cover of whole tiles (:func:`covering`),
placed by a reshape when no tile is cut by the image's edge (:func:`side_by_side`).

A corrupt or truncated tile raises :class:`~dfits.errors.DataError` naming the file, HDU,
tile (its table row) and algorithm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dfits.errors import DataError
from dfits.format.descriptors import Descriptors
from dfits.stored.stored import StoredChunk
from dfits.tiles.places import (
    GAP,
    batches,
    compact,
    covering,
    extent,
    in_order,
    lookup_rows,
    read_ranges,
    rice_batches,
    side_by_side,
    tile_rows,
)
from dfits.tiles.quantised import QuantisedTiles

__all__ = ["TileReader", "tile_reader"]


@dataclass(frozen=True, eq=False)
class TileReader:
    """A tile-compressed image, addressable by slices of its numpy shape."""

    source: Any
    table_offset: int
    tiles: Any
    spec: Any
    where: str
    raw: bool = False

    @property
    def heap_offset(self) -> int:
        """Where the heap starts in the file."""
        return self.table_offset + self.tiles.heap_start

    @property
    def descriptors(self) -> Descriptors:
        """Every tile's descriptors (the whole table read: for tools and tests; reads use
        :meth:`lookup` on their own tiles)."""
        return self.lookup(np.arange(self.tiles.nrows, dtype=np.int64))

    def lookup(self, rows: np.ndarray) -> Descriptors:
        """The descriptors of the ascending table ``rows``, in their order, read from those
        rows alone and checked against the heap."""
        return lookup_rows(self.source, self.table_offset, self.tiles, self.where, rows)

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
        return tile_rows(self.tiles, region)

    def read(self, index: tuple[slice, ...]) -> Any:
        """The native stored values of the step-1 region ``index``, as a stored chunk."""
        region = tuple(slice(*sl.indices(n)[:2]) for sl, n in zip(index, self.shape, strict=True))
        counts = tuple(max(sl.stop - sl.start, 0) for sl in region)
        rows = self.rows(region)
        index = self.lookup(rows)
        stored = self.spec.stored
        cover = covering(self.tiles, region, counts, stored.itemsize)
        size = extent(cover)
        group = self._group(rows, index, cover)
        if group is not None and group[3] is not None and self._fusable():
            # quantised floats stay integers until a reduction reads them (fused) or
            # anything else asks for the floats: see dfits.tiles.quantised; a chunk not on
            # tile boundaries is a window of the tiles that cover it
            origin = tuple(r.start - c.start for r, c in zip(region, cover, strict=True))
            pending = QuantisedTiles(*group, counts, self.spec, origin)
            return StoredChunk(None, self.spec, pending)
        cut = tuple(
            slice(r.start - c.start, r.stop - c.start) for r, c in zip(region, cover, strict=True)
        )
        if group is not None and in_order(group, size, stored):
            # the decoded tiles already lie one after another in the C order of the chunk
            # (or of a stamp's cover: row tiles, whole planes): no placing pass, and for a
            # chunk no copy at all
            out = group[0].reshape(size)
            out = out if cover == region else out[cut].copy()
        elif (
            group is not None
            and cover != region
            and group[0].dtype == stored
            and (whole := side_by_side(group, self.tiles.tile, size)) is not None
        ):
            out = whole[cut].copy()  # a stamp's cover of whole tiles: no placing pass
        elif group is not None:
            from dfits.kernels import tilegroup

            packed, shapes, firsts, quant = group
            out = np.empty(counts, stored)
            whole = out if cover == region else np.empty(size, stored)
            tilegroup.place_group(packed, whole, shapes, firsts, quant)
            if whole is not out:
                out[...] = whole[cut]
        else:
            out = np.empty(counts, stored)
            blobs = self._fetch(index)
            for k, row in enumerate(rows.tolist()):
                values, place = self._tile(row, index, k, blobs[k])
                src, dst = _overlap(place, region)
                out[dst] = values[src]
        if self.raw:
            return out
        return StoredChunk(out.view(f"u{out.itemsize}"), self.spec)

    def _group(self, rows: np.ndarray, index: Descriptors, region: tuple[slice, ...]):
        """Fetch and decode every tile into one packed array (tiles wholly inside the region,
        all in COMPRESSED_DATA: what default chunks and stamps' covers hold), placed (and
        dequantised) later by one Numba call: per-tile Python would cost more than the
        decoding. RICE_1 decodes in one Numba call per batch, the other algorithms tile by
        tile into the packed array. Returns ``(packed, shapes, firsts, quant)`` for
        :func:`~dfits.kernels.tilegroup.place_group` (``quant`` None unless quantised), or
        None when not possible."""
        tiles = self.tiles
        if not len(rows) or (tiles.algorithm == "RICE_1" and tiles.bytepix not in (1, 2, 4)):
            return None
        spans = index.spans["COMPRESSED_DATA"]
        if not spans[:, 0].all():  # counts are never negative (checked when read)
            return None  # fallback columns: tile by tile
        if "ZBLANK" in index.values and tiles.zbitpix > 0 and self.spec.blank is not None:
            return None  # integer tiles whose blanks may need rewriting: tile by tile
        # ``rows`` are the tiles ``region`` meets: all lie inside it when its edges are
        # tile edges (or the image's)
        edges = zip(region, tiles.tile, tiles.shape, strict=True)
        if any(sl.start % t or (sl.stop % t and sl.stop != n) for sl, t, n in edges):
            return None
        grid = tiles.grid
        steps = [math.prod(grid[d + 1 :]) for d in range(len(grid))]  # the grid's C strides
        lo = rows[:, None] // steps % grid * tiles.tile
        hi = np.minimum(lo + tiles.tile, tiles.shape)
        start = [sl.start for sl in region]
        npix = (hi - lo).prod(axis=1)
        if tiles.algorithm != "RICE_1":
            packed = self._decode_group(rows, spans, npix, hi - lo)
        else:
            packed, bad, status = rice_batches(self.source, self.heap_offset, spans, npix, tiles)
            if packed is None:
                reason = "ends before its last pixel" if status == -1 else "has unused bytes"
                raise self._error(int(rows[bad]), int(spans[bad, 0]), int(spans[bad, 1]),
                                  f"the Rice stream {reason}")  # fmt: skip
        quant = self._quantisation(rows, index) if tiles.dither is not None else None
        return packed, hi - lo, lo - start, quant

    def _decode_group(self, rows, spans, npix, sizes) -> np.ndarray:
        """Tiles of any algorithm but RICE_1 decoded one after another into one packed array
        of native values (quantised: 32-bit integers)."""
        from dfits.kernels import codecs

        tiles = self.tiles
        codec = codecs.Codec(tiles.algorithm, tiles.zbitpix, tiles.blocksize, tiles.bytepix,
                             tiles.dither is not None, tiles.smooth)  # fmt: skip
        stored = np.dtype(np.int32) if tiles.dither is not None else self.spec.stored
        packed = np.empty(int(npix.sum()), stored)

        def decode(blob, starts, counts, n, out, first) -> bool:
            pos = 0
            for t in range(len(starts)):
                data = blob[starts[t] : starts[t] + counts[t]]
                try:
                    values = codecs.decode_tile(codec, data, int(n[t]), tuple(sizes[first + t]))
                except codecs.TileError as err:
                    row, offset = int(rows[first + t]), int(spans[first + t, 1])
                    raise self._error(row, int(counts[t]), offset, str(err)) from err
                out[pos : pos + n[t]] = values[: n[t]]
                pos += n[t]
            return True

        batches(self.source, self.heap_offset, spans, npix, packed, decode)
        return packed

    def _fusable(self) -> bool:
        """True when reductions may run on the quantised integers: physical values are the
        dequantised floats themselves (no BSCALE/BZERO of the image on top). Integer images
        with a ZSCALE column are dequantised and then truncated to their integers (astropy's
        rule), which the fused float kernels do not do."""
        fine = not self.raw and self.spec.mode == "raw" and self.spec.error is None
        return fine and self.tiles.zbitpix < 0

    def _quantisation(self, rows: np.ndarray, index: Descriptors):
        """Per-tile (scale, zero, blank, method, first dither index) of quantised tiles."""
        tiles = self.tiles
        vals = index.values
        n = len(rows)

        def per_tile(name: str, const: object, default: object):
            if name in vals:
                return vals[name]
            return np.full(n, default if const is None else const)

        scale = per_tile("ZSCALE", tiles.zscale, 1.0).astype(np.float64)
        zero = per_tile("ZZERO", tiles.zzero, 0.0).astype(np.float64)
        blank = None
        if "ZBLANK" in vals or tiles.zblank is not None:
            blank = per_tile("ZBLANK", tiles.zblank, 0).astype(np.int64)
        seeds = (rows + tiles.dither0 - 1) % 10000
        return scale, zero, blank, tiles.dither, seeds.astype(np.int64)

    @staticmethod
    def _span(index: Descriptors, k: int) -> tuple[str, int, int]:
        """(column, heap offset, bytes) holding the ``k``-th tile of ``index``: its
        compressed bytes, or a fallback column's when COMPRESSED_DATA is empty."""
        spans = index.spans
        count, offset = spans["COMPRESSED_DATA"][k]
        if count == 0:
            for name in ("GZIP_COMPRESSED_DATA", "UNCOMPRESSED_DATA"):
                if name in spans and spans[name][k][0] > 0:
                    count, offset = spans[name][k]
                    return name, int(offset), int(count)
        return "COMPRESSED_DATA", int(offset), int(count)

    def _fetch(self, index: Descriptors) -> list[tuple[str, int, np.ndarray]]:
        """Each tile's (column, heap offset, bytes), in ``index``'s order, read in as few
        ranges as the heap allows."""
        placed = [self._span(index, k) for k in range(len(index.spans["COMPRESSED_DATA"]))]
        spans = sorted((offset, count, k) for k, (_, offset, count) in enumerate(placed))
        groups: list[list[tuple[int, int, int]]] = []
        for span in spans:
            if groups and span[0] <= groups[-1][-1][0] + groups[-1][-1][1] + GAP:
                groups[-1].append(span)
            else:
                groups.append([span])
        ranges = []
        for g in groups:
            start = self.heap_offset + g[0][0]
            stop = self.heap_offset + max(o + n for o, n, _ in g)
            ranges.append((start, stop))
        blobs = read_ranges(self.source, ranges)
        out: list[Any] = [None] * len(placed)
        for g, (start, _), blob in zip(groups, ranges, blobs, strict=True):
            buf = np.frombuffer(blob, np.uint8)
            for offset, count, k in g:
                rel = self.heap_offset + offset - start
                out[k] = (placed[k][0], offset, buf[rel : rel + count])
        return out

    def _tile(self, row: int, index: Descriptors, k: int, blob) -> tuple[np.ndarray, tuple]:
        """Tile ``row`` (the ``k``-th of ``index``; ``blob`` from :meth:`_fetch`) decoded,
        dequantised or blanked, in its shape; and its place in the image."""
        tiles = self.tiles
        place = tiles.tile_region(row)
        shape = tuple(sl.stop - sl.start for sl in place)
        npix = math.prod(shape)
        from dfits.kernels import codecs

        column, offset, data = blob
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
            raise self._error(row, len(data), offset, str(err)) from err
        values = values[:npix]
        if tiles.dither is not None and column == "COMPRESSED_DATA":
            values = self._dequantize(row, index.values, k, values, shape)
        else:
            values = self._blanked(index.values, k, values)
        return values.reshape(shape), place

    def gather(self, picks: tuple[np.ndarray, ...]) -> Any:
        """The stored values ``image[np.ix_(*picks)]`` (picks: per axis, indices in any
        order), decoding only the tiles that hold a picked pixel, each once: a decimated
        read (``section[::8, ::8]`` of row tiles) decodes an eighth of the tiles."""
        met, starts, where, shape = compact(self.tiles, picks)
        tile = np.array(self.tiles.tile)
        grids = np.meshgrid(*met, indexing="ij")
        rows = np.ravel_multi_index(grids, self.tiles.grid).reshape(-1).astype(np.int64)
        index = self.lookup(rows)
        whole = np.empty(shape, self.spec.stored)  # the met tiles, side by side
        group = self._group(rows, index, tuple(slice(0, n) for n in self.shape))
        if group is not None:
            from dfits.kernels import tilegroup

            packed, sizes, firsts, quant = group
            at = np.stack(
                [s[f // t] for s, f, t in zip(starts, firsts.T, tile, strict=True)], axis=1
            )
            tilegroup.place_group(packed, whole, sizes, at, quant)
        else:
            for k, (row, blob) in enumerate(zip(rows.tolist(), self._fetch(index), strict=True)):
                values, place = self._tile(row, index, k, blob)
                whole[
                    tuple(
                        slice(s[p.start // t], s[p.start // t] + p.stop - p.start)
                        for s, p, t in zip(starts, place, tile.tolist(), strict=True)
                    )
                ] = values
        out = whole[np.ix_(*where)]
        return out if self.raw else StoredChunk(out.view(f"u{out.itemsize}"), self.spec)

    def _error(self, row: int, nbytes: int, offset: int, reason: str) -> DataError:
        return DataError(
            f"{self.where}: tile {row} (table row {row + 1}, {self.tiles.algorithm}, "
            f"{nbytes} bytes at heap offset {offset}) cannot be decoded: {reason}"
        )

    def _dequantize(
        self, row: int, vals: dict, k: int, values: np.ndarray, shape: tuple[int, ...]
    ) -> np.ndarray:
        from dfits.kernels.dequantize import dequantize

        tiles = self.tiles
        scale = vals["ZSCALE"][k] if "ZSCALE" in vals else tiles.zscale
        zero = vals["ZZERO"][k] if "ZZERO" in vals else tiles.zzero
        blank = int(vals["ZBLANK"][k]) if "ZBLANK" in vals else tiles.zblank
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

    def _blanked(self, vals: dict, k: int, values: np.ndarray) -> np.ndarray:
        """Integer tiles whose ZBLANK column differs from the image's BLANK: astropy writes
        the image's BLANK in their place (floats keep their own NaNs)."""
        blank = self.spec.blank
        if "ZBLANK" not in vals or self.tiles.zbitpix < 0 or blank is None:
            return values
        zblank = int(vals["ZBLANK"][k])
        if zblank == blank:
            return values
        # rare (a per-tile ZBLANK that is not the image's BLANK): a native copy to rewrite
        values = values.astype(values.dtype.newbyteorder("="), copy=True)
        values[values == zblank] = blank
        return values


def tile_reader(source: Any, layout: Any, where: str, raw: bool = False) -> TileReader:
    """The reader of a compressed image HDU. Nothing is read here: each read looks up only
    its own tiles' rows of the table (:meth:`TileReader.lookup`)."""
    return TileReader(source, layout.data_offset, layout.tiles, layout.decode, where, raw)


def _overlap(place: tuple[slice, ...], region: tuple[slice, ...]):
    """Slices of a tile at ``place`` and of a chunk at ``region`` where they meet."""
    src, dst = [], []
    for p, r in zip(place, region, strict=True):
        lo, hi = max(p.start, r.start), min(p.stop, r.stop)
        src.append(slice(lo - p.start, hi - p.start))
        dst.append(slice(lo - r.start, hi - r.start))
    return tuple(src), tuple(dst)
