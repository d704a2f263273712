"""Moment maps of a cube along one axis, from one fused pass over the stored values.

The contract: :func:`moment_map` gives, lazily, order 0 ``Σ I·|Δν|`` (Δν the channel width,
``|gradient(ν)|``), order 1 the intensity-weighted mean ``Σ I·ν / Σ I`` and order 2 the
intensity-weighted dispersion ``√(Σ I·(ν − m1)² / Σ I)``, with NaN, BLANK and values below
``threshold`` left out. One pass of :func:`dfits.array.weighted.weighted_sums` accumulates
``Σ I``, ``Σ I·(ν − ν̄)`` and ``Σ I·(ν − ν̄)²`` in float64 whatever the order; a pixel with
nothing left (``Σ I = 0``) is NaN for orders 1 and 2 (without numpy's divide warning) and 0
for order 0, like ``nansum``. :func:`moment_units` names the result's unit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = ["moment_map", "moment_units", "peak_position"]


def moment_map(
    x: Any, axis: int, values: np.ndarray, order: int, threshold: float | None = None
) -> Any:
    """The moment ``order`` (0, 1 or 2) of dask array ``x`` along ``axis`` at ``values``."""
    import dask.array as da

    from dfits.array.weighted import weighted_sums

    v = np.asarray(values, dtype=float)
    # One pass over the stored values: Σ I, Σ I·w (and Σ I·w²) per pixel, with NaN, BLANK
    # and values below the threshold left out, accumulated in float64 by the fused kernel.
    if order == 0:
        width = np.abs(np.gradient(v)) if v.size > 1 else np.ones(v.size)
        return weighted_sums(x, axis, width, threshold=threshold)[1]
    v0 = v.mean() if v.size else 0.0
    sums = weighted_sums(x, axis, v - v0, threshold=threshold)
    # Pixels with no emission (all NaN, masked or cut by the threshold) have Σ I = 0:
    # NaN there, without numpy's divide warning in every notebook cell.
    s0 = da.where(sums[0] == 0, np.nan, sums[0])
    m1 = sums[1] / s0
    if order == 1:
        return m1 + v0
    # Order 2 is the spread about the centroid; rounding can take s2/s0 − m1² below 0.
    return da.sqrt(da.maximum(sums[2] / s0 - m1**2, 0))


def peak_position(x: Any, axis: int, values: np.ndarray) -> Any:
    """``values`` at the ``nanargmax`` of dask array ``x`` along ``axis``, lazily; NaN where
    a spectrum has no valid value (spectral-cube's ``argmax_world``). Ties go to the first
    channel. One indexed kernel pass per stored chunk answers it (the table's ``nanargmax``).
    """
    import dask.array as da

    from dfits.array import reduce

    table = np.append(np.asarray(values, dtype=float), np.nan)
    if x.dtype.kind == "f":
        # numpy's nanargmax refuses an all-NaN spectrum: a -inf channel past the end gives
        # it the index of the NaN appended to ``table``, and never wins anywhere else (ties
        # go to the first channel). The extra blocks are small numpy arrays; the stored
        # chunks are untouched, so they still answer from their kernel pass.
        shape, chunks = list(x.shape), list(x.chunks)
        shape[axis], chunks[axis] = 1, (1,)
        pad = da.full(shape, -np.inf, dtype=x.dtype, chunks=tuple(chunks))
        x = da.concatenate([x, pad], axis=axis)
    where = reduce(x, "nanargmax", axis=axis)
    return where.map_blocks(table.__getitem__, dtype=float)


def moment_units(obj: xr.DataArray, dim: str, order: int) -> str:
    """Unit of a moment map: BUNIT × the axis unit (order 0), the axis unit (orders 1, 2),
    in astropy's string format (unparsable units are joined as written)."""
    from dfits.xarray.results import product_unit

    unit = str(obj[dim].attrs.get("units", "")) if dim in obj.coords else ""
    if order:
        return product_unit(unit)
    return product_unit(str(obj.attrs.get("units", "")), unit)
