"""Tile-compressed images: a compressed image HDU read as regions of its numpy shape.

A compressed image is a binary table whose rows are tiles of the image. This package is a
reader on :mod:`dfits.array`'s seam (:class:`dfits.array.reader.Reader`), so a compressed
image behaves like any other image: ``hdu.data``, ``hdu.section`` and every reduction.

* :mod:`dfits.tiles.reader` -- :class:`~dfits.tiles.reader.TileReader`: a region's tiles
  found, fetched, decoded on the worker and handed back as a stored chunk of native values
  (default chunks are whole tiles: :func:`~dfits.array.chunks.align_chunks`);
* :mod:`dfits.tiles.places` -- where a region's tiles are: their table rows (from the grid,
  reading nothing), their descriptors (those rows alone), their heap bytes (coalesced);
* :mod:`dfits.tiles.quantised` -- quantised float tiles kept as integers until read: they
  answer sums and extremes from the integers
  (:class:`dfits.stored.passes.FusedSource`) and dequantise once for anything else.

The codecs and the dequantisation loops are kernels (:mod:`dfits.kernels.codecs`,
:mod:`dfits.kernels.tilegroup`, :mod:`dfits.kernels.dequantize`); the table's metadata
(ZCMPTYPE, ZTILEn, ZQUANTIZ, ...) is parsed by :mod:`dfits.format.tiles`.
"""
