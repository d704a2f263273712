"""A chunk of quantised float tiles kept as decoded integers until a reduction reads them.

The tile reader decodes a chunk's RICE_1 tiles into one packed integer array. For a quantised
float image it hands dask a :class:`~dfits.array.stored.StoredChunk` whose values are *not
read yet*: a :class:`QuantisedTiles` (the packed integers, each tile's shape, place and
quantisation). The sums, means, counts and extremes that dask's reductions ask of the chunk
(:mod:`dfits.array.passes`) then run :func:`dfits.kernels.tilereduce.reduce_tiles`, one pass
over the integers with ZSCALE/ZZERO, the dither and ZBLANK folded in, and no float chunk is
ever written. Anything else (a variance, an index, a slice, ``np.asarray``) calls
:meth:`QuantisedTiles.fetch`, which dequantises the chunk once into the float array the
chunk then stands on, exactly as if it had been read so: same values either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["QuantisedTiles", "fusable", "fused_extrema", "fused_sum_count"]


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
        view a :class:`~dfits.array.stored.StoredChunk` holds."""
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


def _source(x: Any) -> QuantisedTiles | None:
    """The chunk's quantised tiles when a fused pass can answer for it: not read into floats
    yet, and decoded with the reader's spec (no scaling or cast applied since)."""
    src = x.unread
    if isinstance(src, QuantisedTiles) and x.spec == src.spec:
        return src
    return None


def fusable(x: Any) -> bool:
    """True when the chunk's sums and extremes come from its quantised integers."""
    return _source(x) is not None


def fused_sum_count(x: Any, axes: tuple[int, ...], skipna: bool):
    """``(n, total)`` of a quantised chunk over ``axes`` from its integers, or None when
    the chunk is not one."""
    src = _source(x)
    if src is None:
        return None
    from dfits.kernels.tilereduce import reduce_tiles

    total, n = reduce_tiles(
        src.packed, src.shapes, src.firsts, src.quant, src.shape, axes, "sum", skipna,
        src.spec.physical,
    )  # fmt: skip
    return n, total


def fused_extrema(x: Any, axes: tuple[int, ...], want_max: bool):
    """``(value, valid count, NaN count)`` of a quantised chunk's extremes over ``axes`` from
    its integers, or None when the chunk is not one."""
    src = _source(x)
    if src is None:
        return None
    from dfits.kernels.tilereduce import reduce_tiles

    op = "max" if want_max else "min"
    return reduce_tiles(
        src.packed, src.shapes, src.firsts, src.quant, src.shape, axes, op, False,
        src.spec.physical,
    )  # fmt: skip
