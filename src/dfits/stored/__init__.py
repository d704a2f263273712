"""The stored chunk: a duck array over a chunk's stored (big-endian, unscaled) values, and the
one table of the numpy calls it answers from fused kernel passes.

Readers (:mod:`dfits.array.image`, :mod:`dfits.tiles`, :mod:`dfits.tables`) hand dask a
:class:`StoredChunk` for each chunk. When dask or xarray reduce it with numpy calls, the
calls listed in :mod:`dfits.stored.recognised` run a kernel over the stored bytes (swap,
scale and BLANK in registers); anything else decodes the chunk once into a read-only native
ndarray, so values never depend on being recognised. This layer knows nothing of files,
readers or graphs: :mod:`dfits.array` builds on it.

One module per job:

* :mod:`~dfits.stored.stored`: :class:`StoredChunk` itself (NEP-18/NEP-13 protocols, decode);
* :mod:`~dfits.stored.recognised`: the table of recognised call patterns, handler rows and
  the tricks that stay (each with the test that fails without it); :func:`install` fills
  the handler tables from it, here, once;
* :mod:`~dfits.stored.passes`: the kernel passes a chunk memoises (sum/count, moments,
  extrema, bands), and the ``FusedSource`` protocol a pending region may answer them with;
* :mod:`~dfits.stored.handlers`, :mod:`~dfits.stored.results`: numpy reductions answered
  from those passes, shaped as numpy shapes them;
* :mod:`~dfits.stored.lazy`, :mod:`~dfits.stored.affine`, :mod:`~dfits.stored.cuts`,
  :mod:`~dfits.stored.cut_handlers`, :mod:`~dfits.stored.thresholds`,
  :mod:`~dfits.stored.nanmask`: lazy elementwise values that stay fused (deviations, exact
  rescaling, cut-outs, threshold masks, NaN masks);
* :mod:`~dfits.stored.partials`: per-chunk partial results that dask concatenates and
  combines without decoding.
"""

from __future__ import annotations

from dfits.stored.recognised import install
from dfits.stored.stored import StoredChunk

# the handler tables of the stored chunk and its lazy values, filled from the one table
install()

__all__ = ["StoredChunk", "install"]
