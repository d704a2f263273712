"""Masks and robust noise of a cube: ``with_mask``, MAD-based σ, exact medians in bounded memory.

The contract:

* :func:`with_mask` keeps the values where a condition holds and NaN elsewhere, lazily. The
  condition may be a callable, given this cube as a lazy DataArray over dfits' fused chunks
  (so ``lambda c: c > 0.1`` never loads it), or a boolean array / DataArray that broadcasts.
* :func:`mad_std` is astropy's ``mad_std(..., ignore_nan=True)`` — 1.4826 × the median of
  ``|x − median(x)|`` over valid values — along dimensions (``dask.array.nanmedian``, whose
  chunks hold the reduced dimensions whole: a per-spectrum noise map holds whole spectra)
  or over the whole cube. Every result is lazy. The global one is exact and never holds the
  cube: :mod:`dfits.cube.medians` finds each median in 2 counting passes over the chunks
  (float32; 4 for float64), one kernel pass of 65536 bins each.
* :func:`clipped_moment` is a moment of the values above ``nsigma`` × a noise (a number, run
  inside the fused moment kernel, or a map, through :func:`with_mask`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import xarray as xr

from dfits.cube.beams import keep_beams
from dfits.cube.lazy import as_dask
from dfits.cube.results import reduced, unit_string

__all__ = ["MAD_TO_STD", "clipped_moment", "mad_std", "with_mask"]

#: σ of a normal distribution per median absolute deviation, 1 / Φ⁻¹(3/4) (astropy's).
MAD_TO_STD = 1.482602218505602


def with_mask(obj: xr.DataArray, cond: Any) -> xr.DataArray:
    """``obj`` where ``cond`` holds, NaN elsewhere (see the module docstring), lazily."""
    import dask.array as da

    view = obj.copy(deep=False, data=as_dask(obj))
    keep = cond(view) if callable(cond) else cond
    if isinstance(keep, xr.DataArray):
        keep = keep.broadcast_like(view).transpose(*view.dims).data
    keep = da.asarray(keep)
    if keep.dtype != bool:
        raise TypeError(f"a mask must be boolean, not {keep.dtype}")
    dtype = np.result_type(obj.dtype, np.float32)  # NaN needs a float
    data = da.where(keep, view.data, np.nan).astype(dtype, copy=False)
    return keep_beams(obj, obj.copy(deep=False, data=data))


def mad_std(obj: xr.DataArray, dim: Hashable | tuple[Hashable, ...] | None = None) -> Any:
    """astropy's ``mad_std(ignore_nan=True)`` of ``obj`` over ``dim`` (all dims by default),
    lazily: a DataArray (0-d for all dims) in ``obj``'s units."""
    from dfits.cube.medians import median_deviation

    units = unit_string(str(obj.attrs.get("units", "")))
    if dim is None:  # exact, bounded memory: a fixed number of counting passes
        mad = median_deviation(as_dask(obj)).astype(np.float64) * MAD_TO_STD
        return reduced(obj, mad, tuple(str(d) for d in obj.dims), "mad_std", units)
    dims = (dim,) if isinstance(dim, str) else tuple(dim)
    for d in dims:
        if d not in obj.dims:
            raise ValueError(f"{d!r} is not a dimension of {obj.name!r}: {obj.dims}")
    axes = tuple(obj.get_axis_num(d) for d in dims)
    # each chunk holds the reduced axes whole (a per-spectrum map: whole spectra)
    x = as_dask(obj).rechunk(dict.fromkeys(axes, -1))
    mad = x.map_blocks(_mad_block, axes=axes, drop_axis=axes, dtype=float)
    return reduced(obj, mad, tuple(str(d) for d in dims), "mad_std", units)


def _mad_block(block: Any, axes: tuple[int, ...]) -> np.ndarray:
    import warnings

    v = np.asarray(block, dtype=float)
    with warnings.catch_warnings():
        # a pixel with no valid value is NaN, as astropy gives it, without the warning
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmedian(v, axis=axes, keepdims=True)
        return MAD_TO_STD * np.nanmedian(np.abs(v - centre), axis=axes)


def clipped_moment(
    obj: xr.DataArray, order: int, nsigma: float = 3.0, noise: Any = None, dim: str | None = None
) -> xr.DataArray:
    """Moment ``order`` of the values of ``obj`` above ``nsigma`` × ``noise``.

    ``noise``: a number (the threshold then runs inside the fused moment kernel), a
    DataArray that broadcasts (e.g. ``mad_std(obj, spectral_dim)``: per-pixel clipping
    through :func:`with_mask`), or None for the global :func:`mad_std` (computed now: the
    threshold of the fused kernel is a number).
    """
    from dfits.cube.moments import moment

    noise = mad_std(obj) if noise is None else noise
    if isinstance(noise, xr.DataArray) and noise.ndim == 0:
        noise = float(noise)
    if isinstance(noise, xr.DataArray):
        return moment(with_mask(obj, lambda c: c > nsigma * noise), order, dim)
    return moment(obj, order, dim, threshold=nsigma * float(noise))
