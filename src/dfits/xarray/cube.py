"""The spectral-cube methods of the ``.fits`` accessor: spectral axis, moments, line widths.

The contract: :class:`SpectralMethods` is mixed into the DataArray accessor; each method is
a thin map onto :mod:`dfits.xarray.spectral` (axis detection, unit conversion, slabs) and
:mod:`dfits.xarray.moments` (one fused pass per moment map). Moments are taken along the
spectral dimension found from the WCS, in the unit its coordinate carries (use
:meth:`~SpectralMethods.with_spectral_unit` first for km/s), with astropy unit strings as
``attrs["units"]`` and :meth:`~SpectralMethods.quantity` for Quantities. Results keep the
celestial coordinates and header, so ``result.fits.wcs`` is the celestial WCS.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from dfits.xarray import spectral
from dfits.xarray.errors import SpectralError
from dfits.xarray.fused import fused_dask
from dfits.xarray.moments import moment_map, moment_units, peak_position
from dfits.xarray.results import quantity, reduced, unit_string

__all__ = ["FWHM_PER_SIGMA", "SpectralMethods"]

#: FWHM of a Gaussian in units of its σ, √(8 ln 2).
FWHM_PER_SIGMA = float(np.sqrt(8 * np.log(2)))


class SpectralMethods:
    """Spectral-axis and moment methods of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray

    # -- the spectral axis ----------------------------------------------------------------
    @property
    def spectral_dim(self) -> str:
        """The dimension carrying the WCS's spectral axis (any position, 3-D or 4-D)."""
        return spectral.spectral_dim(self._obj)

    def with_spectral_unit(
        self,
        unit: Any,
        velocity_convention: str | None = None,
        rest_value: Any = None,
        *,
        air: bool = False,
    ) -> xr.DataArray:
        """This cube with its spectral axis in ``unit`` (Hz, GHz, km/s, mm, eV, 1/cm, ...).

        ``velocity_convention`` (``"radio"``, ``"optical"``, ``"relativistic"``) is needed
        to go to a velocity from anything but a velocity; the rest frequency or wavelength is
        the header's RESTFRQ/RESTWAV unless ``rest_value`` (a Quantity) is given; ``air``
        asks for air rather than vacuum wavelengths. The dimension is renamed after the new
        quantity (``freq`` → ``vrad``/``vopt``/``velo``/``wave``/``awav``...); the data stay
        lazy and fused. Conversions are wcslib's (``Wcsprm.sptr``).

        Examples
        --------
        >>> v = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")  # doctest: +SKIP
        >>> v.fits.moment(1)          # km / s                                     # doctest: +SKIP
        """
        return spectral.with_spectral_unit(self._obj, unit, velocity_convention, rest_value, air)

    def spectral_slab(self, lo: Any, hi: Any) -> xr.DataArray:
        """The channels from the closest to ``lo`` to the closest to ``hi``, inclusive.

        Bounds are Quantities in any spectral unit (Hz on a velocity axis converts through
        the axis's convention and rest value) or numbers in the axis's unit, in any order,
        on ascending or descending axes (where ``.sel(freq=slice(lo, hi))`` finds nothing).
        """
        return spectral.spectral_slab(self._obj, lo, hi)

    # -- moments --------------------------------------------------------------------------
    def _spectral_values(self, obj: xr.DataArray, dim: str) -> np.ndarray:
        if dim not in obj.coords:
            return np.arange(obj.sizes[dim], dtype=float)
        coord = obj[dim]
        if coord.dtype.kind not in "fiu" or str(coord.attrs.get("ctype", "")).startswith("STOKES"):
            raise SpectralError(
                f"{spectral.describe(obj)}: moments along {dim!r} make no sense: its values "
                f"are {coord.values[:4].tolist()} (not a spectral axis); use dim="
                f"{self._default_dim()!r}"
            )
        return np.asarray(coord.values, dtype=float)

    def _default_dim(self) -> str | None:
        try:
            return spectral.spectral_dim(self._obj)
        except SpectralError:
            return None

    def moment(
        self,
        order: int,
        dim: str | None = None,
        *,
        threshold: float | None = None,
        mask: Any = None,
    ) -> xr.DataArray:
        """Moment map along ``dim`` (default: the spectral dimension from the WCS), lazily.

        Order 0: Σ I·Δv (Δv the channel width, ``|gradient(coord)|``); 1: Σ I·v / Σ I;
        2: the intensity-weighted dispersion √(Σ I·(v − m1)² / Σ I), which is
        spectral-cube's ``linewidth_sigma`` (its ``moment2`` is the square). Values below
        ``threshold`` and channels where the 1-D boolean ``mask`` is False are left out;
        NaN pixels are ignored. Units: ``attrs["units"]`` in astropy's format
        (Jy/beam → ``"Jy km / (beam s)"`` for order 0 in km/s); ``.fits.quantity()``.
        """
        if order not in (0, 1, 2):
            raise ValueError(f"moment order must be 0, 1 or 2, not {order!r}")
        obj = self._obj
        dim = spectral.spectral_dim(obj) if dim is None else dim
        if dim not in obj.dims:
            raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")
        if mask is not None:
            keep = np.asarray(mask, dtype=bool)
            if keep.shape != (obj.sizes[dim],):
                raise ValueError(f"mask must have shape ({obj.sizes[dim]},), not {keep.shape}")
            obj = obj.isel({dim: np.flatnonzero(keep)})
        v = self._spectral_values(obj, dim)
        out = moment_map(fused_dask(obj, along=dim), obj.get_axis_num(dim), v, order, threshold)
        return reduced(obj, out, (dim,), f"moment{order}", moment_units(obj, dim, order))

    def linewidth_sigma(self, dim: str | None = None, **kw: Any) -> xr.DataArray:
        """The intensity-weighted line width σ (moment 2 as a dispersion), lazily."""
        return self.moment(2, dim, **kw).rename("linewidth_sigma")

    def linewidth_fwhm(self, dim: str | None = None, **kw: Any) -> xr.DataArray:
        """σ × √(8 ln 2): the FWHM of a Gaussian line of that width, lazily."""
        sigma = self.moment(2, dim, **kw)
        return (sigma * FWHM_PER_SIGMA).rename("linewidth_fwhm").assign_attrs(sigma.attrs)

    def peak(self, dim: str | None = None) -> xr.DataArray:
        """The peak value along the spectral axis (NaNs ignored), one fused pass."""
        from dfits.array import reduce

        obj = self._obj
        dim = spectral.spectral_dim(obj) if dim is None else dim
        out = reduce(fused_dask(obj, dim), "nanmax", axis=(obj.get_axis_num(dim),))
        return reduced(obj, out, (dim,), "peak", unit_string(str(obj.attrs.get("units", ""))))

    def peak_velocity(self, dim: str | None = None) -> xr.DataArray:
        """The spectral coordinate (velocity, frequency... as the axis is) of the peak.

        The first channel holding the maximum wins ties; pixels with no valid value are NaN.
        """
        obj = self._obj
        dim = spectral.spectral_dim(obj) if dim is None else dim
        values = self._spectral_values(obj, dim)
        out = peak_position(fused_dask(obj, dim), obj.get_axis_num(dim), values)
        units = str(obj[dim].attrs.get("units", "")) if dim in obj.coords else ""
        return reduced(obj, out, (dim,), "peak_velocity", unit_string(units))

    def quantity(self) -> Any:
        """This DataArray's values, computed, as an ``astropy.units.Quantity``."""
        return quantity(self._obj)
