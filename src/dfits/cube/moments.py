"""Moment maps, peaks and line widths of a cube along its spectral axis, one pass per chunk.

The contract: :func:`moment`, :func:`peak` and :func:`peak_velocity` take a DataArray (over
dfits' fused chunks when the accessor calls them) and return lazy DataArrays of the celestial
dimensions, in astropy unit strings (:func:`moment_units`).

Underneath, :func:`moment_map` gives order 0 ``Σ I·|Δν|`` (Δν the channel width,
``|gradient(ν)|``), order 1 the intensity-weighted mean ``Σ I·ν / Σ I`` and order 2 the
intensity-weighted dispersion ``√(Σ I·(ν − m1)² / Σ I)``, with NaN, BLANK and values below
``threshold`` left out. One pass of :func:`dfits.array.weighted_sums` accumulates ``Σ I``,
``Σ I·(ν − ν̄)`` and ``Σ I·(ν − ν̄)²`` in float64 whatever the order.

Where a moment is undefined it is NaN (spectral-cube's ``linewidth_sigma`` convention), not
a number that looks measured: order 1 where no positive weight is left (``Σ I ≤ 0``: all
NaN, masked, cut by the threshold, or net negative), order 2 (and the line widths) there
and where fewer than two channels are valid, or where the variance is negative beyond
rounding (weights of both signs). Counting the valid channels is a second fused pass per
chunk (the table's ``count``), for order 2 only. ``clip=True`` keeps the clipping of
dfits ≤ 0.x instead (no count pass): σ² below 0 becomes 0 (so one valid channel gives 0),
and only ``Σ I = 0`` is NaN. Order 0 of a pixel with nothing left is 0, like ``nansum``
(spectral-cube gives NaN there).

Maps (:func:`moment`, :func:`peak`, :func:`peak_velocity`) drop the cube's other length-1
axes (a Stokes axis of one plane), so a written map is 2-D with its celestial WCS, and a
moment map keeps the cube's float type (:func:`map_dtype`). :func:`peak_position` is the
table's ``nanargmax`` looked up in the spectral coordinate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.errors import SpectralError
from dfits.cube.lazy import as_dask
from dfits.cube.results import product_unit, reduced, unit_string

__all__ = [
    "FWHM_PER_SIGMA",
    "linewidth_fwhm",
    "map_dtype",
    "map_result",
    "moment",
    "moment_map",
    "moment_units",
    "peak",
    "peak_position",
    "peak_velocity",
    "spectral_values",
]

#: FWHM of a Gaussian in units of its σ, √(8 ln 2).
FWHM_PER_SIGMA = float(np.sqrt(8 * np.log(2)))


def _default_dim(obj: xr.DataArray) -> str | None:
    try:
        return spectral.spectral_dim(obj)
    except SpectralError:
        return None


def spectral_values(obj: xr.DataArray, dim: str) -> np.ndarray:
    """The coordinate values along ``dim`` (pixel numbers without one), refusing a Stokes or
    non-numeric axis with a :class:`SpectralError` that names the spectral dimension."""
    if dim not in obj.coords:
        return np.arange(obj.sizes[dim], dtype=float)
    coord = obj[dim]
    if coord.dtype.kind not in "fiu" or str(coord.attrs.get("ctype", "")).startswith("STOKES"):
        raise SpectralError(
            f"{spectral.describe(obj)}: moments along {dim!r} make no sense: its values "
            f"are {coord.values[:4].tolist()} (not a spectral axis); use dim="
            f"{_default_dim(obj)!r}"
        )
    return np.asarray(coord.values, dtype=float)


def moment(
    obj: xr.DataArray,
    order: int,
    dim: str | None = None,
    *,
    threshold: float | None = None,
    mask: Any = None,
    clip: bool = False,
) -> xr.DataArray:
    """Moment map ``order`` of ``obj`` along ``dim`` (default: the WCS's spectral dimension).

    Order 0: Σ I·Δv (Δv the channel width, ``|gradient(coord)|``); 1: Σ I·v / Σ I;
    2: the intensity-weighted dispersion √(Σ I·(v − m1)² / Σ I), spectral-cube's
    ``linewidth_sigma``. Values below ``threshold`` and channels where the 1-D boolean
    ``mask`` is False are left out; NaN pixels are ignored. Orders 1 and 2 are NaN where
    undefined (see the module docstring); ``clip=True`` keeps the old clipping at 0.
    The map drops other length-1 axes and keeps the cube's float type (:func:`map_dtype`).
    Lazy: one kernel pass per chunk (two for order 2 without ``clip``: the count).
    """
    if order not in (0, 1, 2):
        raise ValueError(f"moment order must be 0, 1 or 2, not {order!r}")
    dim = spectral.spectral_dim(obj) if dim is None else dim
    if dim not in obj.dims:
        raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")
    if mask is not None:
        keep = np.asarray(mask, dtype=bool)
        if keep.shape != (obj.sizes[dim],):
            raise ValueError(f"mask must have shape ({obj.sizes[dim]},), not {keep.shape}")
        obj = obj.isel({dim: np.flatnonzero(keep)})
    v = spectral_values(obj, dim)
    out = moment_map(as_dask(obj), obj.get_axis_num(dim), v, order, threshold, clip=clip)
    out = out.astype(map_dtype(obj.dtype), copy=False)
    return map_result(obj, out, dim, f"moment{order}", moment_units(obj, dim, order))


def map_dtype(dtype: Any) -> np.dtype:
    """The float type of a moment map of a cube of ``dtype``: the cube's own float type,
    numpy's promotion with float32 for integers (int8/16 and uint8/16 → float32, as
    astropy scales them; wider integers → float64).

    Examples
    --------
    >>> map_dtype(np.float32), map_dtype(np.int16), map_dtype(np.int32)
    (dtype('float32'), dtype('float32'), dtype('float64'))
    """
    return np.result_type(np.dtype(dtype), np.float32)


def map_result(obj: xr.DataArray, data: Any, dim: str, name: str, units: str) -> xr.DataArray:
    """``data`` reduced over ``dim`` as a map: :func:`~dfits.cube.results.reduced`, less the
    other length-1 axes of a sky cube (a Stokes axis of one plane: a scalar coordinate then),
    so the map's WCS is its celestial one."""
    out = reduced(obj, data, (dim,), name, units)
    if {"y", "x"} <= set(out.dims):
        out = out.squeeze([d for d in out.dims if d not in ("y", "x") and out.sizes[d] == 1])
    return out


def linewidth_fwhm(obj: xr.DataArray, dim: str | None = None, **kw: Any) -> xr.DataArray:
    """σ (moment 2) × √(8 ln 2): the FWHM of a Gaussian line of that width, lazily."""
    sigma = moment(obj, 2, dim, **kw)
    return (sigma * FWHM_PER_SIGMA).rename("linewidth_fwhm").assign_attrs(sigma.attrs)


def peak(obj: xr.DataArray, dim: str | None = None) -> xr.DataArray:
    """The peak value along ``dim`` (the spectral one by default), NaNs ignored, one pass."""
    from dfits.array import reduce

    dim = spectral.spectral_dim(obj) if dim is None else dim
    out = reduce(as_dask(obj), "nanmax", axis=(obj.get_axis_num(dim),))
    return map_result(obj, out, dim, "peak", unit_string(str(obj.attrs.get("units", ""))))


def peak_velocity(obj: xr.DataArray, dim: str | None = None) -> xr.DataArray:
    """The spectral coordinate of the peak along ``dim`` (first channel on ties; NaN where
    a spectrum has no valid value), one indexed pass per chunk."""
    dim = spectral.spectral_dim(obj) if dim is None else dim
    out = peak_position(as_dask(obj), obj.get_axis_num(dim), spectral_values(obj, dim))
    units = str(obj[dim].attrs.get("units", "")) if dim in obj.coords else ""
    return map_result(obj, out, dim, "peak_velocity", unit_string(units))


def moment_map(
    x: Any,
    axis: int,
    values: np.ndarray,
    order: int,
    threshold: float | None = None,
    *,
    clip: bool = False,
) -> Any:
    """The moment ``order`` (0, 1 or 2) of dask array ``x`` along ``axis`` at ``values``,
    float64, NaN where undefined (``clip``: see the module docstring)."""
    import dask.array as da

    from dfits.array import reduce, weighted_sums

    v = np.asarray(values, dtype=float)
    # One pass over the stored values: Σ I, Σ I·w (and Σ I·w²) per pixel, with NaN, BLANK
    # and values below the threshold left out, accumulated in float64 by the fused kernel.
    if order == 0:
        width = np.abs(np.gradient(v)) if v.size > 1 else np.ones(v.size)
        return weighted_sums(x, axis, width, threshold=threshold)[1]
    v0 = v.mean() if v.size else 0.0
    sums = weighted_sums(x, axis, v - v0, threshold=threshold)
    # No positive weight left (all NaN, masked, cut, or net negative): NaN, without numpy's
    # divide warning in every notebook cell. Clipping (the old rule) only refuses Σ I = 0.
    s0 = da.where(sums[0] == 0 if clip else sums[0] <= 0, np.nan, sums[0])
    m1 = sums[1] / s0
    if order == 1:
        return m1 + v0
    mean2 = sums[2] / s0
    var = mean2 - m1**2
    if clip:
        return da.sqrt(da.maximum(var, 0))
    # Rounding of the one-pass form leaves |σ²| within a few ulps of Σ I·w²/Σ I: that much
    # below 0 is 0; more is a real negative variance (weights of both signs): NaN.
    tol = 64 * np.finfo(float).eps * mean2
    band = None if threshold is None else (float(threshold), np.inf)
    count = reduce(x, "count", axis=axis, band=band)
    var = da.where((var < -tol) | (count < 2), np.nan, da.maximum(var, 0))
    return da.sqrt(var)


def peak_position(x: Any, axis: int, values: np.ndarray) -> Any:
    """``values`` at the ``nanargmax`` of dask array ``x`` along ``axis``, lazily; NaN where
    a spectrum has no valid value (spectral-cube's ``argmax_world``). Ties go to the first
    channel. One indexed kernel pass per stored chunk answers it (the table's ``nanargmax``).
    """
    from dfits.array import reduce

    # an all-NaN spectrum's index is -1 (numpy's nanargmax would raise): the NaN appended
    # to the table, so the lookup gives NaN there without a pass of its own
    table = np.append(np.asarray(values, dtype=float), np.nan)
    where = reduce(x, "nanargmax", axis=axis, allnan=-1)
    return where.map_blocks(table.__getitem__, dtype=float)


def moment_units(obj: xr.DataArray, dim: str, order: int) -> str:
    """Unit of a moment map: BUNIT × the axis unit (order 0), the axis unit (orders 1, 2),
    in astropy's string format (unparsable units are joined as written)."""
    unit = str(obj[dim].attrs.get("units", "")) if dim in obj.coords else ""
    if order:
        return product_unit(unit)
    return product_unit(str(obj.attrs.get("units", "")), unit)
