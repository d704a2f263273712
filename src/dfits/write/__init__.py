"""Every way out of dfits: FITS files written in parallel, atomically, with their checksums.

The map, from the public functions down to the bytes:

- :mod:`~dfits.write.api` — ``to_fits`` and ``append``: arrays, dfits HDUs and lists of them
  become image HDUs (:class:`~dfits.write.images.ImageItem`). DataArrays and Datasets are the
  xarray adapter's (:mod:`dfits.xarray.tofits`); ``dfits.to_fits`` routes them there, so this
  package never imports xarray.
- :mod:`~dfits.write.blocks` — an HDU's values cut into write tasks: a dask array's chunks, a
  numpy array's slabs (never through ``dask.array``, whose import loads xarray).
- :mod:`~dfits.write.images` — the dask graph of a plain (or BITPIX-quantised) write or append:
  one block task per chunk.
- :mod:`~dfits.write.compressed` — the dask graph of a tile-compressed write: chunks aligned on
  tiles, one compression task per chunk.
- :mod:`~dfits.write.fitswriter` — the pre-sized temporary file, block encoding (swap, scale,
  BLANK) with ones'-complement partial sums, DATASUM/CHECKSUM, the atomic rename.
- :mod:`~dfits.write.appender` — an append in place: lock, journal, roll-back.
- :mod:`~dfits.write.tilewriter` — compressed tiles to scratch heaps, then one assembly.
- :mod:`~dfits.write.convert` — FITS ↔ zarr and FITS → tile-compressed FITS (``dfits convert``).

Cards and BITPIX come from :mod:`dfits.format` (one formatter for reading and writing); the
loops that swap, quantise, checksum and compress are :mod:`dfits.kernels`.
"""

from __future__ import annotations

from dfits.write.api import append, to_fits

__all__ = ["append", "to_fits"]
