"""Masks and robust noise of a cube: ``with_mask``, MAD-based σ, exact medians in bounded memory.

The contract:

* :func:`with_mask` keeps the values where a condition holds and NaN elsewhere, lazily. The
  condition may be a callable, given this cube as a lazy DataArray over dfits' fused chunks
  (so ``lambda c: c > 0.1`` never loads it), or a boolean array / DataArray that broadcasts.
* :func:`mad_std` is astropy's ``mad_std(..., ignore_nan=True)`` — 1.4826 × the median of
  ``|x − median(x)|`` over valid values — along dimensions (``dask.array.nanmedian``, whose
  chunks hold the reduced dimensions whole: a per-spectrum noise map holds whole spectra)
  or over the whole cube. The global one is exact and never holds the cube: each median is
  found by counting values into 4096 bins per pass over the chunks, narrowing to the bins
  that hold the middle ranks, until at most :data:`GATHER` values are left to sort.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import xarray as xr

from dfits.xarray.beams import keep_beams
from dfits.xarray.fused import fused_dask
from dfits.xarray.results import reduced, unit_string

__all__ = ["GATHER", "MAD_TO_STD", "NoiseMethods", "mad_std", "nanmedian", "with_mask"]

#: σ of a normal distribution per median absolute deviation, 1 / Φ⁻¹(3/4) (astropy's).
MAD_TO_STD = 1.482602218505602
#: Values gathered into memory to finish an exact median (8 MiB of float64).
GATHER = 2**20
_BINS = 4096


def _fused_view(obj: xr.DataArray) -> xr.DataArray:
    return obj.copy(deep=False, data=fused_dask(obj))


def with_mask(obj: xr.DataArray, cond: Any) -> xr.DataArray:
    """``obj`` where ``cond`` holds, NaN elsewhere (see the module docstring), lazily."""
    import dask.array as da

    view = _fused_view(obj)
    keep = cond(view) if callable(cond) else cond
    if isinstance(keep, xr.DataArray):
        keep = keep.broadcast_like(view).transpose(*view.dims).data
    keep = da.asarray(keep)
    if keep.dtype != bool:
        raise TypeError(f"a mask must be boolean, not {keep.dtype}")
    dtype = np.result_type(obj.dtype, np.float32)  # NaN needs a float
    data = da.where(keep, view.data, np.nan).astype(dtype, copy=False)
    return keep_beams(obj, obj.copy(deep=False, data=data))


def _keys(block: Any) -> np.ndarray:
    """The valid values of a block as uint64 keys in the order of the floats (NaN left out)."""
    v = np.asarray(block, dtype=np.float64).ravel()
    bits = v[~np.isnan(v)].view(np.uint64)
    # negative floats: all bits flipped; positive: the sign bit set (the IEEE order trick)
    return np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))


def _count_block(block: Any, lo: int, shift: int) -> np.ndarray:
    """Counts per bin of the keys in ``[lo, lo + _BINS << shift)``."""
    k = _keys(block)
    k = k[k >= np.uint64(lo)] - np.uint64(lo)
    bins = k >> np.uint64(shift)
    return np.bincount(bins[bins < _BINS].astype(np.int64), minlength=_BINS)


def _gather_block(block: Any, lo: int, hi: int) -> np.ndarray:
    k = _keys(block)
    return k[(k >= np.uint64(lo)) & (k <= np.uint64(hi))]


def _blocks(x: Any, func: Any, **kw: Any) -> list[Any]:
    """``func(block, **kw)`` of every block of ``x``, as delayed values (no graph surgery)."""
    import dask

    return [dask.delayed(func)(b, **kw) for b in x.to_delayed().ravel()]


def _value(key: int) -> float:
    k = np.array([key], dtype=np.uint64)
    bits = np.where(k >> np.uint64(63), k & ~np.uint64(1 << 63), ~k)
    return float(bits.view(np.float64)[0])


def _select(x: Any, ranks: tuple[int, int], gather: int) -> float:
    """The mean of the values of ranks ``ranks`` (0-based) among the valid values of ``x``.

    Bins split the 64-bit key range 4096 ways per pass, so at most 6 passes whatever the
    values (denormals, many equal ones); the integer keys make every bin edge exact.
    """
    import dask

    lo, hi, below = 0, 2**64 - 1, 0  # keys in [lo, hi]; ``below`` valid values under lo
    while True:
        shift = max(int(hi - lo + 1).bit_length() - 12, 0)
        (parts,) = dask.compute(_blocks(x, _count_block, lo=lo, shift=shift))
        cum = np.cumsum(np.sum(parts, axis=0))
        bins = [int(np.searchsorted(cum, r - below, side="right")) for r in ranks]
        if shift == 0:  # one key per bin: the ranks' values are known, however many equal
            return float(np.mean([_value(lo + b) for b in bins]))
        first, last = bins
        before = int(cum[first - 1]) if first else 0
        inside = int(cum[last]) - before
        below += before
        lo, hi = lo + (first << shift), min(lo + ((last + 1) << shift) - 1, hi)
        if first != last:  # far apart: narrow to each rank on its own
            return float(np.mean([_select(x, (r, r), gather) for r in ranks]))
        if inside <= gather:
            break
    (parts,) = dask.compute(_blocks(x, _gather_block, lo=lo, hi=hi))
    keys = np.sort(np.concatenate(parts))
    return float(np.mean([_value(int(keys[r - below])) for r in ranks]))


def nanmedian(x: Any, gather: int = GATHER) -> float:
    """The exact median of the valid (non-NaN) values of dask array ``x``, like
    ``numpy.nanmedian``, in bounded memory (see the module docstring); NaN if none.
    ``gather``: how many values may be sorted in memory to finish."""
    import dask

    from dfits.array import reduce

    (n,) = dask.compute(reduce(x, "count"))
    n = int(n)
    if n == 0:
        return float("nan")
    ranks = ((n - 1) // 2, n // 2)
    return _select(x, ranks, gather)


def mad_std(obj: xr.DataArray, dim: Hashable | tuple[Hashable, ...] | None = None) -> Any:
    """astropy's ``mad_std(ignore_nan=True)`` of ``obj`` over ``dim`` (all: a float)."""
    import dask.array as da

    if dim is None:  # exact, bounded memory: a few counting passes per median
        x = fused_dask(obj)
        centre = nanmedian(x)
        return MAD_TO_STD * nanmedian(da.abs(x.astype(float) - centre))
    dims = (dim,) if isinstance(dim, str) else tuple(dim)
    for d in dims:
        if d not in obj.dims:
            raise ValueError(f"{d!r} is not a dimension of {obj.name!r}: {obj.dims}")
    axes = tuple(obj.get_axis_num(d) for d in dims)
    # each chunk holds the reduced axes whole (a per-spectrum map: whole spectra)
    x = fused_dask(obj).rechunk(dict.fromkeys(axes, -1))
    mad = x.map_blocks(_mad_block, axes=axes, drop_axis=axes, dtype=float)
    units = unit_string(str(obj.attrs.get("units", "")))
    return reduced(obj, mad, tuple(str(d) for d in dims), "mad_std", units)


def _mad_block(block: Any, axes: tuple[int, ...]) -> np.ndarray:
    import warnings

    v = np.asarray(block, dtype=float)
    with warnings.catch_warnings():
        # a pixel with no valid value is NaN, as astropy gives it, without the warning
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmedian(v, axis=axes, keepdims=True)
        return MAD_TO_STD * np.nanmedian(np.abs(v - centre), axis=axes)


class NoiseMethods:
    """Mask and noise methods of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray

    def with_mask(self, cond: Any) -> xr.DataArray:
        """This cube where ``cond`` holds, NaN elsewhere, lazily (spectral-cube's
        ``with_mask``). ``cond``: a callable given the cube over dfits' fused chunks
        (``lambda c: c > 0.1``: nothing is loaded), or a boolean array or DataArray that
        broadcasts (a 2-D sky mask, a 1-D channel mask along the spectral dimension)."""
        return with_mask(self._obj, cond)

    def mad_std(self, dim: Hashable | tuple[Hashable, ...] | None = None) -> Any:
        """Robust σ: 1.4826 × median absolute deviation of the valid values, astropy's
        ``mad_std(ignore_nan=True)`` and spectral-cube's ``mad_std``.

        ``dim=None``: one float over the whole cube, exact, computed now in a few passes of
        bounded memory. A dimension (the spectral one: a noise map per spectrum) or a tuple
        (``("y", "x")``: per channel): a lazy DataArray.
        """
        return mad_std(self._obj, dim)

    def sigma_clipped_moment(
        self, order: int, nsigma: float = 3.0, noise: Any = None, dim: str | None = None
    ) -> xr.DataArray:
        """Moment ``order`` of the values above ``nsigma`` × ``noise``.

        ``noise``: a number (the threshold then runs inside the fused moment kernel), a
        DataArray that broadcasts (e.g. ``mad_std(spectral_dim)``: per-pixel clipping
        through :meth:`with_mask`), or None for the global :meth:`mad_std` (computed now).
        """
        obj = self._obj
        noise = mad_std(obj) if noise is None else noise
        if isinstance(noise, xr.DataArray):
            clipped = with_mask(obj, lambda c: c > nsigma * noise)
            return clipped.fits.moment(order, dim)
        return obj.fits.moment(order, dim, threshold=nsigma * float(noise))
