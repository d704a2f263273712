"""The spectral-cube methods of the ``.fits`` accessor: spectral axis, moments, peaks, noise.

The contract: :class:`SpectralMethods` and :class:`NoiseMethods` are mixed into the DataArray
accessor; each method hands :mod:`dfits.cube` (:mod:`~dfits.cube.spectral`,
:mod:`~dfits.cube.moments`, :mod:`~dfits.cube.noise`) this DataArray over dfits' fused chunks
(:func:`dfits.xarray.fused.fused`), so reductions run one kernel pass per chunk on the stored
bytes. Moments are taken along the spectral dimension found from the WCS, in the unit its
coordinate carries (use :meth:`~SpectralMethods.with_spectral_unit` first for km/s), with
astropy unit strings as ``attrs["units"]`` and :meth:`~SpectralMethods.quantity` for
Quantities. Results keep the celestial coordinates and header, so ``result.fits.wcs`` is the
celestial WCS.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import xarray as xr

from dfits.cube import moments, noise, spectral
from dfits.cube.results import quantity
from dfits.xarray.fused import fused

__all__ = ["NoiseMethods", "SpectralMethods"]


class SpectralMethods:
    """Spectral-axis and moment methods of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray

    def _along(self, dim: str | None) -> tuple[xr.DataArray, str]:
        """This DataArray fused with chunks planned for reducing along ``dim`` (default:
        the spectral dimension), and that dimension."""
        obj = self._obj
        dim = spectral.spectral_dim(obj) if dim is None else dim
        if dim not in obj.dims:
            raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")
        return fused(obj, dim), dim

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
    def moment(
        self,
        order: int,
        dim: str | None = None,
        *,
        threshold: float | None = None,
        mask: Any = None,
        clip: bool = False,
    ) -> xr.DataArray:
        """Moment map along ``dim`` (default: the spectral dimension from the WCS), lazily.

        Order 0: Σ I·Δv (Δv the channel width, ``|gradient(coord)|``); 1: Σ I·v / Σ I;
        2: the intensity-weighted dispersion √(Σ I·(v − m1)² / Σ I), which is
        spectral-cube's ``linewidth_sigma`` (its ``moment2`` is the square). Values below
        ``threshold`` and channels where the 1-D boolean ``mask`` is False are left out;
        NaN pixels are ignored. Orders 1 and 2 are NaN where undefined (no positive
        weight; for order 2 also fewer than two valid channels, or σ² < 0); ``clip=True``
        keeps the old clipping of σ² at 0. The map drops length-1 axes (Stokes) and keeps
        the cube's float type. Units: ``attrs["units"]`` in astropy's format
        (Jy/beam → ``"Jy km / (beam s)"`` for order 0 in km/s); ``.fits.quantity()``.
        One kernel pass per chunk, two for order 2 (:func:`dfits.cube.moments.moment`).
        """
        if order not in (0, 1, 2):
            raise ValueError(f"moment order must be 0, 1 or 2, not {order!r}")
        obj, dim = self._along(dim)
        return moments.moment(obj, order, dim, threshold=threshold, mask=mask, clip=clip)

    def linewidth_sigma(self, dim: str | None = None, **kw: Any) -> xr.DataArray:
        """The intensity-weighted line width σ (moment 2 as a dispersion), lazily."""
        return self.moment(2, dim, **kw).rename("linewidth_sigma")

    def linewidth_fwhm(self, dim: str | None = None, **kw: Any) -> xr.DataArray:
        """σ × √(8 ln 2): the FWHM of a Gaussian line of that width, lazily."""
        obj, dim = self._along(dim)
        return moments.linewidth_fwhm(obj, dim, **kw)

    def peak(self, dim: str | None = None) -> xr.DataArray:
        """The peak value along the spectral axis (NaNs ignored), one fused pass."""
        return moments.peak(*self._along(dim))

    def peak_velocity(self, dim: str | None = None) -> xr.DataArray:
        """The spectral coordinate (velocity, frequency... as the axis is) of the peak.

        The first channel holding the maximum wins ties; pixels with no valid value are NaN
        (spectral-cube's ``argmax_world``). One indexed kernel pass per chunk.
        """
        return moments.peak_velocity(*self._along(dim))

    def quantity(self) -> Any:
        """This DataArray's values, computed, as an ``astropy.units.Quantity``."""
        return quantity(self._obj)


class NoiseMethods:
    """Mask and noise methods of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray

    def with_mask(self, cond: Any) -> xr.DataArray:
        """This cube where ``cond`` holds, NaN elsewhere, lazily (spectral-cube's
        ``with_mask``). ``cond``: a callable given the cube over dfits' fused chunks
        (``lambda c: c > 0.1``: nothing is loaded), or a boolean array or DataArray that
        broadcasts (a 2-D sky mask, a 1-D channel mask along the spectral dimension)."""
        return noise.with_mask(fused(self._obj), cond)

    def mad_std(self, dim: Hashable | tuple[Hashable, ...] | None = None) -> Any:
        """Robust σ: 1.4826 × median absolute deviation of the valid values, astropy's
        ``mad_std(ignore_nan=True)`` and spectral-cube's ``mad_std``.

        ``dim=None``: over the whole cube, a 0-d DataArray (``float()`` computes it), exact,
        in 4 passes of bounded memory over a float32 cube (8 for float64). A dimension (the
        spectral one: a noise map per spectrum) or a tuple (``("y", "x")``: per channel): a
        DataArray over the others. All lazy.
        """
        return noise.mad_std(fused(self._obj), dim)

    def sigma_clipped_moment(
        self, order: int, nsigma: float = 3.0, noise: Any = None, dim: str | None = None
    ) -> xr.DataArray:
        """Moment ``order`` of the values above ``nsigma`` × ``noise``.

        ``noise``: a number (the threshold then runs inside the fused moment kernel), a
        DataArray that broadcasts (e.g. ``mad_std(spectral_dim)``: per-pixel clipping
        through :meth:`with_mask`), or None for the global :meth:`mad_std` (computed now:
        the threshold of the fused kernel is a number).
        """
        from dfits.cube.noise import clipped_moment

        obj = self._obj
        along = spectral.spectral_dim(obj) if dim is None else dim
        return clipped_moment(fused(obj, along), order, nsigma, noise, dim)
