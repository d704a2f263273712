"""A chunk of quantised float tiles kept as decoded integers until a reduction reads them.

The tile reader decodes a chunk's tiles into one packed integer array. For a quantised float
image it hands dask a :class:`~dfits.stored.stored.StoredChunk` whose values are *not read
yet*: a :class:`QuantisedTiles` (the packed integers, each tile's shape, place and
quantisation; for a chunk not on tile boundaries, the window of the covering tiles it is).
The passes of :mod:`dfits.stored.passes` ask it first, through the methods of
:class:`dfits.stored.passes.FusedSource` (the passes know the protocol, not this class):

* sums, counts and extremes of a chunk of whole tiles: :mod:`dfits.kernels.tilereduce`, one
  pass over the integers with ZSCALE/ZZERO, the dither and ZBLANK folded in;
* the same of a window of tiles, the moments (``var``, ``std``, their ``nan`` forms), the
  extremes with their indices (``argmax``) and a moment map's weighted sums: the float
  kernels' own steps on small blocks dequantised just before they are read
  (:mod:`dfits.kernels.tilesums`, :mod:`dfits.kernels.tilemoments`), so their values are
  those of the float chunk bit for bit;
* the sums, counts, moments and extremes of the values inside a band (``(x > t).sum()``,
  ``nansum(where(x > t, x, nan))``): the band kernels' steps on such blocks
  (:mod:`dfits.kernels.tilebands`), the floats' values bit for bit.

No float chunk is written for them. Anything else (a slice, ``np.asarray``, ``x * 2``)
calls :meth:`QuantisedTiles.fetch`, which dequantises the chunk once into the float array the
chunk then stands on, exactly as if it had been read so: same values either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["QuantisedTiles"]


@dataclass(eq=False)
class QuantisedTiles:
    """The decoded integers of a chunk's quantised tiles, and how to make floats of them.

    ``shape`` is the chunk's; ``origin`` its first index in the tiles (``firsts`` are
    relative to the tiles' first index): a chunk not on tile boundaries is a window of the
    whole tiles that cover it.
    """

    packed: np.ndarray
    shapes: np.ndarray
    firsts: np.ndarray
    quant: tuple
    shape: tuple[int, ...]
    spec: Any
    origin: tuple[int, ...] | None = None
    _floats: np.ndarray | None = field(default=None, repr=False)
    _map: Any = field(default=False, repr=False)

    def fetch(self) -> np.ndarray:
        """The chunk's float values (dequantised once, then kept), as the native unsigned
        view a :class:`~dfits.stored.stored.StoredChunk` holds."""
        if self._floats is None:
            from dfits.kernels import tilegroup

            # the one place a quantised chunk becomes floats: a request no fused pass answers
            if self._windowed:
                # a window of its tiles: they are placed whole, then the window copied out
                ext = tuple((self.firsts + self.shapes).max(axis=0).tolist())
                whole = np.empty(ext, self.spec.stored)
                tilegroup.place_group(self.packed, whole, self.shapes, self.firsts, self.quant)
                cut = tuple(slice(o, o + n) for o, n in zip(self.origin, self.shape, strict=True))
                out = np.ascontiguousarray(whole[cut])
            else:
                out = np.empty(self.shape, self.spec.stored)
                tilegroup.place_group(self.packed, out, self.shapes, self.firsts, self.quant)
            self._floats = out.view(f"u{out.itemsize}")
        return self._floats

    def narrow(self, index: Any) -> None:
        """Never narrowed: a slice of the chunk is a slice of its floats."""
        return None

    @property
    def _windowed(self) -> bool:
        return self.origin is not None and (
            any(self.origin) or self.shape != tuple((self.firsts + self.shapes).max(axis=0))
        )

    # -- the fused passes (dfits.stored.passes.FusedSource) ------------------------------------
    def sum_count(self, spec: Any, axes: tuple[int, ...], skipna: bool) -> tuple | None:
        """``(n, total)`` over ``axes`` from the integers; None for a chunk whose ``spec`` is
        not the reader's (scaled or cast since: its values are no longer the floats). A
        window of its tiles is summed as its floats were (:mod:`dfits.kernels.tilesums`)."""
        if spec != self.spec:
            return None
        if self._windowed:
            from dfits.kernels.tilesums import window_sum_count

            tm = self._tile_map(spec)
            done = None if tm is None else window_sum_count(tm, spec, self.shape, axes, skipna)
            return None if done is None else (done[1], done[0])
        total, n = self._reduce(axes, "sum", skipna)
        return n, total

    def extrema(self, spec: Any, axes: tuple[int, ...], want_max: bool) -> tuple | None:
        """``(value, valid count, NaN count)`` of the extremes over ``axes`` from the
        integers; None for a chunk whose ``spec`` is not the reader's."""
        if spec != self.spec:
            return None
        if self._windowed:
            from dfits.kernels.tilesums import window_extrema

            tm = self._tile_map(spec)
            return None if tm is None else window_extrema(tm, spec, self.shape, axes, want_max)
        return self._reduce(axes, "max" if want_max else "min", False)

    def indexed(self, spec: Any, axes: tuple[int, ...], want_max: bool) -> tuple | None:
        """``(value, index, first NaN index)`` of the extremes over ``axes`` (``argmax``),
        one pass over blocks dequantised in the kernel; None as :meth:`moments`."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilesums import tile_indexed

        return tile_indexed(tm, spec, self.shape, axes, want_max)

    def moments(self, spec: Any, axes: tuple[int, ...], skipna: bool) -> tuple | None:
        """``(n, mean, M2)`` over ``axes``, dequantised block by block in the moments kernel
        (:mod:`dfits.kernels.tilemoments`): the float chunk's values, bit for bit; None when
        the spec is not the reader's or the axes need a split view."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilemoments import tile_moments

        return tile_moments(tm, spec, self.shape, axes, skipna)

    def weighted_sums(
        self, spec: Any, axis: int, weights: np.ndarray, threshold: float | None
    ) -> np.ndarray | None:
        """``Σ I``, ``Σ I·w``, ``Σ I·w²`` over ``axis`` (a moment map's one pass), as
        :func:`dfits.kernels.weighted_sums` gives them on the floats; None as
        :meth:`moments`."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilemoments import tile_weighted_sums

        return tile_weighted_sums(tm, spec, self.shape, axis, weights, threshold)

    def band_sum_count(
        self, spec: Any, axes: tuple[int, ...], band: tuple, dtype: Any, counts: bool, sums: bool
    ) -> tuple | None:
        """``(sums, counts)`` of the values inside ``band`` over ``axes``, as
        :func:`dfits.kernels.band_sum_count` gives them on the floats
        (:mod:`dfits.kernels.tilebands`); None as :meth:`moments`."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilebands import tile_band_sum_count

        return tile_band_sum_count(tm, spec, self.shape, axes, band, dtype, counts, sums)

    def band_moments(self, spec: Any, axes: tuple[int, ...], band: tuple) -> tuple | None:
        """``(n, mean, M2)`` of the values inside ``band`` over ``axes``, as
        :func:`dfits.kernels.band_moments` gives them on the floats; None as :meth:`moments`."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilemoments import tile_moments

        return tile_moments(tm, spec, self.shape, axes, True, band)

    def band_extrema(
        self, spec: Any, axes: tuple[int, ...], want_max: bool, band: tuple
    ) -> tuple | None:
        """``(value, count inside, count outside)`` of the extremes of the values inside
        ``band``, as :func:`dfits.kernels.extrema` with ``band``; None as :meth:`moments`."""
        tm = self._tile_map(spec)
        if tm is None:
            return None
        from dfits.kernels.tilesums import window_extrema

        return window_extrema(tm, spec, self.shape, axes, want_max, band)

    def _tile_map(self, spec: Any) -> tuple | None:
        """The tiles as the block-filling kernels read them (built once), or None."""
        if spec != self.spec or not self.packed.size:
            return None
        if self._map is False:
            from dfits.kernels.tilefill import tile_map

            origin = self.origin or (0,) * len(self.shape)
            self._map = tile_map(self.packed, self.shapes, self.firsts, self.quant, self.shape,
                                 origin)  # fmt: skip
        return self._map

    def _reduce(self, axes: tuple[int, ...], op: str, skipna: bool) -> tuple:
        from dfits.kernels.tilereduce import reduce_tiles

        return reduce_tiles(
            self.packed, self.shapes, self.firsts, self.quant, self.shape, axes, op, skipna,
            self.spec.physical,
        )  # fmt: skip
