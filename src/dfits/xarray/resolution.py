"""The beam methods of the ``.fits`` accessor: beams, brightness units, convolution.

The contract: :class:`BeamMethods` is mixed into the DataArray accessor; each method maps
onto :mod:`dfits.cube.beams` (reading BMAJ/BMIN/BPA or a CASA ``BEAMS`` table into
``radio_beam`` objects, Jy/beam ↔ K per channel), :mod:`dfits.cube.smooth` (planes
convolved chunk by chunk), :mod:`dfits.cube.axis_smooth` (spectra convolved, whole spectra
per chunk) or :mod:`dfits.cube.downsample` (block means). Results stay lazy, keep the
header (with the new beam after :meth:`~BeamMethods.convolve_to`) and compare equal to
spectral-cube 0.7's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import xarray as xr

from dfits.cube import axis_smooth as _axis_smooth
from dfits.cube import beams as _beams
from dfits.cube import downsample as _downsample
from dfits.cube import smooth as _smooth
from dfits.cube.errors import BeamError
from dfits.cube.spectral import spectral_dim
from dfits.xarray.fused import fused

__all__ = ["BeamMethods"]


class BeamMethods:
    """Beam and brightness-unit methods of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray
    _celestial: Callable[[], Any]  # the accessor's: the celestial WCS of the (y, x) plane

    def _planes(self) -> xr.DataArray:
        """This cube over dfits' fused chunks, in the caller's chunks where it has some.

        The file's chunks are planned at half dask's ``array.chunk-size``, rows whole
        (:func:`dfits.cube.axis_smooth.along_chunks` along ``x``): a smoothing task holds its
        native output beside its stored input, whose mapped pages stay resident until the
        task ends, so the two together stay near one chunk. Planned by the reader, not split
        after reading: halves of one stored chunk would share its map (pages of both resident
        until both are done)."""
        obj = self._obj
        out = fused(obj, "x", whole=True) if "x" in obj.dims else fused(obj)
        if obj.chunks is not None and out.chunks != obj.chunks:
            out = out.chunk(dict(zip(obj.dims, obj.chunks, strict=True)))
        return out

    @property
    def beam(self) -> Any:
        """The cube's :class:`radio_beam.Beam` (BMAJ/BMIN/BPA), or None.

        A multi-beam cube (CASA ``BEAMS`` table) has no single beam: this raises
        :class:`~dfits.cube.errors.BeamError`; use :attr:`beams` (or
        ``beams.common_beam()``).
        """
        from radio_beam import Beams

        found = _beams.cube_beams(self._obj)
        if isinstance(found, Beams):
            raise BeamError(
                f"{_beams.spectral.describe(self._obj)} has one beam per channel "
                f"({len(found)}): use .fits.beams"
            )
        return found

    @property
    def beams(self) -> Any:
        """One beam per channel as :class:`radio_beam.Beams` (the header's beam repeated where
        the cube has one), or None without a beam."""
        import astropy.units as u
        from radio_beam import Beams

        found = _beams.cube_beams(self._obj)
        if found is None or isinstance(found, Beams):
            return found
        n = self._obj.sizes[_beams.spectral.spectral_dim(self._obj)]
        return Beams(
            major=[found.major.to_value(u.deg)] * n * u.deg,
            minor=[found.minor.to_value(u.deg)] * n * u.deg,
            pa=[found.pa.to_value(u.deg)] * n * u.deg,
        )

    def to_unit(self, unit: Any) -> xr.DataArray:
        """This cube in brightness ``unit``, lazily: Jy/beam ↔ K (Rayleigh–Jeans, per
        channel's frequency and beam), Jy/beam ↔ Jy/sr, or any plain unit change.

        Equal to spectral-cube's ``cube.to(unit)``; conversions are astropy's
        (``brightness_temperature``, ``beam_angular_area``) through ``radio_beam``.

        Examples
        --------
        >>> kelvin = cube.fits.to_unit("K")            # doctest: +SKIP
        """
        return _beams.to_unit(fused(self._obj), unit)

    def convolve_to(
        self,
        beam: Any,
        *,
        convolve: Callable[..., Any] | None = None,
        allow_smaller: bool = False,
    ) -> xr.DataArray:
        """This cube convolved to ``beam`` (a :class:`radio_beam.Beam`), plane by plane.

        Lazy, chunk by chunk (a halo of the kernel's half-size where chunks split the
        planes), so memory stays at chunk × threads. Each channel's kernel is ``beam``
        deconvolved by the channel's beam; Jy/beam is rescaled by the beam-area ratio; NaN
        pixels stay NaN. By default each plane is convolved by real FFTs in float64, as
        astropy's ``convolve``/``convolve_fft`` would; ``convolve`` (one of those) calls
        that function per plane instead, for its exact rounding. A beam smaller than a
        channel's raises :class:`BeamError` unless ``allow_smaller`` (that channel is then
        left as it was).
        The result's header carries the new beam.
        """
        return _smooth.convolve_to(self._planes(), beam, self._celestial(), convolve, allow_smaller)

    def spatial_smooth(
        self,
        kernel: Any,
        *,
        convolve: Callable[..., Any] | None = None,
        raise_error_jybm: bool = True,
    ) -> xr.DataArray:
        """Every (y, x) plane convolved with an astropy kernel (e.g. ``Gaussian2DKernel(2)``),
        or a Gaussian σ in pixels, lazily and chunk-wise: spectral-cube's ``spatial_smooth``
        values (astropy's ``convolve``, by FFT; ``convolve`` calls that function per plane).
        Jy/beam cubes are refused unless ``raise_error_jybm=False`` (the beam would be
        wrong): use :meth:`convolve_to`."""
        return _smooth.spatial_smooth(self._planes(), kernel, convolve, raise_error_jybm)

    def spectral_smooth(self, kernel: Any, *, keep_nan: bool = True) -> xr.DataArray:
        """Every spectrum convolved with a 1-D ``kernel`` (a Gaussian σ in channels, an
        astropy ``Kernel1D``, or an array such as ``np.hanning(5)``), lazily: spectral-cube's
        ``spectral_smooth`` values, one fused pass per chunk (:mod:`dfits.cube.axis_smooth`)."""
        obj = fused(self._obj, spectral_dim(self._obj), whole=True)
        return _axis_smooth.spectral_smooth(obj, kernel, keep_nan=keep_nan)

    def downsample_axis(
        self, factor: int, dim: Any = None, *, truncate: bool = False
    ) -> xr.DataArray:
        """Means of ``factor`` consecutive pixels along ``dim`` (a name or axis number; default
        the spectral axis), NaN ignored, lazily: spectral-cube's ``downsample_axis``
        (:mod:`dfits.cube.downsample`)."""
        dim = _downsample.dim_name(self._obj, dim)
        obj = fused(self._obj, dim, whole=True)
        return _downsample.downsample_axis(obj, factor, dim, truncate=truncate)
