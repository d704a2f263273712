"""A chunk of quantised float tiles kept as decoded integers until a reduction reads them.

The tile reader decodes a chunk's RICE_1 tiles into one packed integer array. For a quantised
float image it hands dask a :class:`~dfits.stored.stored.StoredChunk` whose values are *not
read yet*: a :class:`QuantisedTiles` (the packed integers, each tile's shape, place and
quantisation). The sums, means, counts and extremes that dask's reductions ask of the chunk
(:mod:`dfits.stored.passes`) are answered by :meth:`QuantisedTiles.sum_count` and
:meth:`QuantisedTiles.extrema`, the chunk's unread source implementing
:class:`dfits.stored.passes.FusedSource` (the passes know the protocol, not this class): each
runs :func:`dfits.kernels.tilereduce.reduce_tiles`, one pass over the integers with
ZSCALE/ZZERO, the dither and ZBLANK folded in, and no float chunk is ever written. Anything
else (a variance, an index, a slice, ``np.asarray``) calls
:meth:`QuantisedTiles.fetch`, which dequantises the chunk once into the float array the
chunk then stands on, exactly as if it had been read so: same values either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["QuantisedTiles"]


@dataclass(eq=False)
class QuantisedTiles:
    """The decoded integers of a chunk's quantised tiles, and how to make floats of them."""

    packed: np.ndarray
    shapes: np.ndarray
    firsts: np.ndarray
    quant: tuple
    shape: tuple[int, ...]
    spec: Any
    _floats: np.ndarray | None = field(default=None, repr=False)

    def fetch(self) -> np.ndarray:
        """The chunk's float values (dequantised once, then kept), as the native unsigned
        view a :class:`~dfits.stored.stored.StoredChunk` holds."""
        if self._floats is None:
            from dfits.kernels import tilegroup

            # the one place a quantised chunk becomes floats: a request no fused pass answers
            out = np.empty(self.shape, self.spec.stored)
            tilegroup.place_group(self.packed, out, self.shapes, self.firsts, self.quant)
            self._floats = out.view(f"u{out.itemsize}")
        return self._floats

    def narrow(self, index: Any) -> None:
        """Never narrowed: a slice of the chunk is a slice of its floats."""
        return None

    # -- the fused passes (dfits.stored.passes.FusedSource) ------------------------------------
    def sum_count(self, spec: Any, axes: tuple[int, ...], skipna: bool) -> tuple | None:
        """``(n, total)`` over ``axes`` from the integers; None for a chunk whose ``spec`` is
        not the reader's (scaled or cast since: its values are no longer the floats)."""
        if spec != self.spec:
            return None
        total, n = self._reduce(axes, "sum", skipna)
        return n, total

    def extrema(self, spec: Any, axes: tuple[int, ...], want_max: bool) -> tuple | None:
        """``(value, valid count, NaN count)`` of the extremes over ``axes`` from the
        integers; None for a chunk whose ``spec`` is not the reader's."""
        if spec != self.spec:
            return None
        return self._reduce(axes, "max" if want_max else "min", False)

    def _reduce(self, axes: tuple[int, ...], op: str, skipna: bool) -> tuple:
        from dfits.kernels.tilereduce import reduce_tiles

        return reduce_tiles(
            self.packed, self.shapes, self.firsts, self.quant, self.shape, axes, op, skipna,
            self.spec.physical,
        )  # fmt: skip
