"""The ``.fits`` accessor on DataArray and Dataset: header, WCS, moments, spectra, cut-outs.

The contract: every method stays lazy and works on any DataArray that carries a FITS header
(``attrs["fits_header"]``, as the ``dfits`` engine sets it) and ``pixel_<dim>`` coordinates.
This module is a thin adapter: the science lives in :mod:`dfits.cube` (spectral axis,
moments, noise, beams, smoothing, regions, reprojection; never importing this package), and
each method hands it this DataArray over dfits' fused chunks (:func:`dfits.xarray.fused.fused`:
an unmodified selection of a dfits HDU reads through ``hdu.data``, so reductions run the
fused kernels; anything else keeps its own data). The mixins of :mod:`dfits.xarray.cube` and
:mod:`dfits.xarray.resolution` map the spectral, noise and beam methods, :mod:`~dfits.xarray.sky`
the 2-D sky coordinates, :mod:`~dfits.xarray.views`
draws quick-look figures. Importing it registers ``.fits`` on ``xr.DataArray`` and
``xr.Dataset``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import xarray as xr

from dfits._display import figure
from dfits.cube.errors import RegionError, WCSError
from dfits.cube.regions import (
    aperture_mask,
    aperture_spectrum,
    cutout_slices,
    region_mask,
    to_degrees,
)
from dfits.cube.results import product_unit, reduced
from dfits.cube.shapes import is_shape, is_skycoord, nearest_pixel, shape_mask, sky_lonlat
from dfits.cube.shapes import subcube as shape_subcube
from dfits.cube.wcs import dataarray_wcs, header_text
from dfits.xarray.cube import NoiseMethods, SpectralMethods
from dfits.xarray.fourier import fourier, power_spectrum, spacing
from dfits.xarray.fused import fused, fused_dask
from dfits.xarray.resolution import BeamMethods
from dfits.xarray.sky import SkyMethods
from dfits.xarray.views import ArrayHDU

if TYPE_CHECKING:
    from astropy.wcs import WCS

    from dfits.format.header import Header

__all__ = ["FitsDataArrayAccessor", "FitsDatasetAccessor"]


class FitsDataArrayAccessor(SpectralMethods, BeamMethods, NoiseMethods, SkyMethods):
    """``da.fits``: FITS header, WCS and cube science on a DataArray opened by dfits."""

    def __init__(self, obj: xr.DataArray) -> None:
        self._obj = obj

    # -- description ----------------------------------------------------------------------
    def _text(self) -> str:
        return header_text(self._obj)

    @property
    def header(self) -> Header:
        """The HDU's header as a :class:`dfits.Header` (``.to_astropy()`` for astropy's)."""
        from dfits.format.header import Header

        return Header(self._text().encode("latin-1"))

    def _wcs_axes(self) -> tuple[WCS, list[int]]:
        return dataarray_wcs(self._obj)

    @property
    def wcs(self) -> WCS:
        """An ``astropy.wcs.WCS`` for this (possibly sliced) DataArray.

        Pixel axes follow the original FITS axis order; axes dropped by integer selection or
        reduced away are removed when separable (a lone celestial axis is kept, 1 pixel).
        """
        return self._wcs_axes()[0]

    def _check_dim(self, dim: Hashable) -> None:
        obj = self._obj
        if dim not in obj.dims:
            raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")

    def chunk(self, along: Hashable | None = None) -> xr.DataArray:
        """This DataArray over dfits' own dask chunks: plain xarray reductions run fused.

        ``xr.open_dataset`` hands xarray lazily indexed arrays (``.load()`` gives numpy; with
        ``chunks=`` xarray's dask tasks decode whole chunks). The result here reads the
        stored bytes instead, so ``.mean("freq")``, ``.std()`` or ``.where(x > t).sum()``
        run the fused kernels, and ``.compute()`` still gives numpy. An unmodified selection
        of a dfits HDU gets chunks planned for reducing along ``along`` when given; anything
        else (in memory, arithmetic results) is chunked as :meth:`xarray.DataArray.chunk` would.

        Examples
        --------
        >>> cube = xr.open_dataarray("cube.fits", engine="dfits")     # doctest: +SKIP
        >>> cube.fits.chunk(along="freq").mean("freq").compute()       # doctest: +SKIP
        """
        if along is not None:
            self._check_dim(along)
        return self._obj.copy(deep=False, data=fused_dask(self._obj, along))

    def reduce(self, how: str, dim: Hashable | tuple[Hashable, ...] | None = None,
               **options: Any) -> xr.DataArray:  # fmt: skip
        """``how`` over ``dim`` (all dims by default) with one fused kernel pass per chunk.

        ``how`` is an entry of :data:`dfits.array.AGGREGATIONS` (``sum``, ``mean``,
        ``var``, ``std``, ``min``, ``max``, their ``nan`` forms, ``count``) or a position
        (``argmax``, ``argmin``, ``nanargmax``, ``nanargmin``: one ``dim`` or all, numpy's
        flat index). Where ``.std(dim)`` through xarray costs a sum pass and a moments pass
        per chunk (dask asks for the sum first), ``reduce("std", dim)`` asks for one.
        ``options``: ``ddof`` for ``var``/``std``, ``band=(lo, hi)`` for threshold cuts.

        Examples
        --------
        >>> noise = cube.fits.reduce("nanstd", "freq")            # doctest: +SKIP
        >>> peak_channel = cube.fits.reduce("nanargmax", "freq")  # doctest: +SKIP
        """
        from dfits.array import reduce

        obj = self._obj
        dims = obj.dims if dim is None else (dim,) if isinstance(dim, str) else tuple(dim)
        for d in dims:
            self._check_dim(d)
        axes = tuple(obj.get_axis_num(d) for d in dims)
        along = dims[0] if len(dims) == 1 else None
        axis = axes[0] if "arg" in how and len(axes) == 1 else axes
        out = reduce(fused_dask(obj, along), how, axis=None if dim is None else axis, **options)
        units = str(obj.attrs.get("units", ""))
        if "arg" in how or how == "count":
            units = ""
        else:
            units = product_unit(units, power=2 if "var" in how else 1)
        return reduced(obj, out, tuple(str(d) for d in dims), how, units)

    # -- Fourier --------------------------------------------------------------------------
    def _step(self, dim: Hashable) -> tuple[float, str]:
        """Sample spacing of ``dim``: its coordinate's, the WCS pixel scale of a celestial
        axis, or one pixel."""
        fallback = (1.0, "")
        if dim in ("x", "y"):
            with contextlib.suppress(WCSError):
                wcs = self.wcs
                if wcs.has_celestial:
                    from astropy.wcs.utils import proj_plane_pixel_scales

                    scales = proj_plane_pixel_scales(wcs.celestial)
                    fallback = (float(scales[0 if dim == "x" else 1]), "deg")
        return spacing(self._obj, dim, fallback)

    def fft(self, dim: Hashable, **kw: Any) -> xr.DataArray:
        """The FFT along ``dim`` as a DataArray over ``freq_<dim>`` (xrft's naming), lazily,
        with any chunking (:mod:`dfits.fft`). Frequencies come from ``dim``'s uniform
        coordinate (Hz from seconds) or the WCS pixel scale (1/deg); ``real=`` (default: for
        real data) gives ``rfft``'s half spectrum, ``shift=`` (default True) centres zero in a
        complex one; ``norm``, ``block_size``, ``memory_limit``, ``scratch`` go to
        :func:`dfits.fft.fft`."""
        self._check_dim(dim)
        return fourier(self._obj, dim, self._step(dim), **kw)

    def power_spectrum(self, dim: Hashable, **kw: Any) -> xr.DataArray:
        """``|X|² · d / n`` along ``dim`` (periodogram density), on :meth:`fft`'s
        frequencies; takes :meth:`fft`'s keywords."""
        self._check_dim(dim)
        return power_spectrum(self._obj, dim, self._step(dim), **kw)

    # -- sky regions ----------------------------------------------------------------------
    def _celestial(self) -> WCS:
        obj = self._obj
        if "x" not in obj.dims or "y" not in obj.dims:
            raise RegionError(f"{obj.name!r} has no celestial dimensions y, x: {obj.dims}")
        wcs, keep = self._wcs_axes()
        pos = [keep.index(int(obj[f"pixel_{d}"].attrs["fits_axis"])) + 1 for d in ("x", "y")]
        w2 = wcs.sub(pos)
        if w2.wcs.lng < 0 or w2.wcs.lat < 0:
            raise RegionError(f"{obj.name!r}: dimensions y, x carry no celestial WCS")
        return w2

    def cutout(self, ra: Any, dec: Any, width: Any, height: Any = None) -> xr.DataArray:
        """Lazily sliced cut-out of ``width`` × ``height`` (degrees or Quantities) centred on
        ``(ra, dec)`` (the image's own celestial frame). Pixels whose centre lies within half
        the size along each pixel axis are kept; the box is clipped to the image, and a box
        wholly outside it raises :class:`RegionError`. ``.fits.wcs`` of the result is exact.
        """
        obj = self._obj
        height = width if height is None else height
        box = cutout_slices(
            self._celestial(), ra, dec, width, height, obj.sizes["y"], obj.sizes["x"]
        )
        return obj.isel(box)

    def aperture(self, ra: Any, dec: Any, radius: Any) -> xr.DataArray:
        """Boolean (y, x) mask of the pixels whose centre is within ``radius`` of (ra, dec)."""
        obj = self._obj
        mask = aperture_mask(self._celestial(), ra, dec, radius, obj.sizes["y"], obj.sizes["x"])
        return xr.DataArray(mask, dims=("y", "x"), name="aperture")

    def spectrum(
        self,
        ra: Any = None,
        dec: Any = None,
        radius: Any = None,
        *,
        region: Any = None,
        how: str = "sum",
    ) -> xr.DataArray:
        """Sum (``how="sum"``) or mean (``"mean"``) over a sky aperture, per channel.

        The aperture is a circle (``ra``, ``dec``, ``radius``; or a ``SkyCoord`` as ``ra``
        and ``radius=``), a ``regions`` shape (or list) or a boolean (y, x) mask as
        ``region``; only the chunks intersecting its bounding box are read. NaNs are ignored.
        """
        obj = self._obj
        if how not in ("sum", "mean"):
            raise ValueError(f"how must be 'sum' or 'mean', not {how!r}")
        if is_skycoord(ra) and dec is None:
            ra, dec = sky_lonlat(ra, self._celestial())
        if region is not None and is_shape(region):
            mask = shape_mask(region, self._celestial(), obj.sizes["y"], obj.sizes["x"])
        elif region is not None:
            mask = region_mask(region, obj.sizes["y"], obj.sizes["x"])
        elif ra is None or dec is None or radius is None:
            raise RegionError("spectrum needs ra=, dec= and radius=, or region=")
        else:
            mask = self.aperture(ra, dec, radius).values
        return aperture_spectrum(fused(obj), mask, how)

    def spectrum_at(self, coord: Any) -> xr.DataArray:
        """The spectrum (lazy) of the pixel whose centre is nearest ``coord``: a ``SkyCoord``
        in any celestial frame, or ``(ra, dec)`` in degrees or Quantities in the image's."""
        obj = self._obj
        w2 = self._celestial()
        lon, lat = sky_lonlat(coord, w2) if is_skycoord(coord) else coord
        lon, lat = to_degrees(lon), to_degrees(lat)
        iy, ix = nearest_pixel(w2, lon, lat, obj.sizes["y"], obj.sizes["x"])
        return obj.isel(y=iy, x=ix)

    def subcube_from_region(self, region: Any) -> xr.DataArray:
        """The bounding box of a ``regions`` shape (sky or pixel; a list is their union),
        NaN outside it, lazily: spectral-cube's ``subcube_from_regions``
        (:mod:`dfits.cube.shapes`); a spectral ``meta["range"]`` on every shape also cuts
        a slab. The result keeps the header, so ``.fits`` works on it.
        """
        return shape_subcube(fused(self._obj), region, self._celestial)

    def reproject(
        self, target: Any, shape_out: tuple[int, int] | None = None, *, order: str = "bilinear"
    ) -> xr.DataArray:
        """This 2-D (y, x) map, or every plane of this (spectral, y, x) cube, on the grid of
        ``target`` (an astropy Header, a WCS with ``shape_out``, or a dfits DataArray) through
        the ``reproject`` package: lazy, ``order="exact"`` for flux-conserving
        (:mod:`dfits.cube.reprojection`)."""
        from dfits.cube.reprojection import reproject_map

        return reproject_map(fused(self._obj), self._celestial(), target, shape_out, order)

    # -- quick look (drawn by the figures dfits.jupyter registers) -------------------------
    def _as_hdu(self) -> ArrayHDU:
        """An HDU-like view of this DataArray for the registered quick-look figures."""
        from dfits.format.cards import format_card
        from dfits.format.header import Header

        obj = self._obj
        try:
            text = self.wcs.to_header().tostring(endcard=False, padding=False)
        except (WCSError, ValueError):
            text = self._text() if isinstance(obj.attrs.get("fits_header"), str) else ""
        else:
            bunit = obj.attrs.get("units")
            # a unit no card can hold (non-ASCII, too long) leaves the figure unlabelled
            if isinstance(bunit, str) and bunit:
                with contextlib.suppress(ValueError):
                    text += format_card("BUNIT", bunit).decode("ascii")
            # the WCS header has no beam: carry it over so quicklook can draw it
            source = self.header if isinstance(obj.attrs.get("fits_header"), str) else {}
            for key in ("BMAJ", "BMIN", "BPA"):
                if isinstance(source.get(key), int | float):
                    text += format_card(key, source.get(key)).decode("ascii")
        return ArrayHDU(fused_dask(obj), Header(text.encode("latin-1")), str(obj.name or ""))

    def quicklook(
        self, full: bool = False, max_bytes: int = 256 * 2**20, *, unit: Any = None,
        velocity_convention: str | None = None, rest_value: Any = None,
    ) -> Any:  # fmt: skip
        """Moment-0 image (Σ I·Δv as :meth:`moment`, in ``unit`` when given, with
        ``velocity_convention`` and ``rest_value`` as in :meth:`with_spectral_unit`) and
        integrated spectrum of this (possibly sliced) cube. Reads a decimated view (at most
        ``max_bytes``) unless ``full``; world axes when a celestial WCS survives slicing."""
        from dfits.xarray.views import spectral_labels

        if unit is None:  # the header's own unit (Hz for FREQ), as moment(0) without unit
            return figure("quicklook", self._as_hdu(), full, max_bytes)
        obj = self._obj.fits.with_spectral_unit(unit, velocity_convention, rest_value)
        return figure("quicklook", obj.fits._as_hdu(), full, max_bytes, spectral_labels(obj))

    def plot_channel_maps(
        self, n: int = 9, *, full: bool = False, unit: Any = None,
        velocity_convention: str | None = None, rest_value: Any = None, **kw: Any,
    ) -> Any:  # fmt: skip
        """A grid of ``n`` channel maps (means of equal channel groups), one colour scale,
        titled with the spectral coordinate: in ``unit`` (with ``velocity_convention`` and
        ``rest_value`` as in :meth:`with_spectral_unit`) when given, else in its own unit."""
        from dfits.xarray.views import spectral_labels

        obj = self._obj
        if unit is not None:
            obj = obj.fits.with_spectral_unit(unit, velocity_convention, rest_value)
        hdu = obj.fits._as_hdu()
        return figure("channel_maps", hdu, n, full=full, spectral=spectral_labels(obj), **kw)

    def explore(self, **kw: Any) -> Any:
        """An interactive explorer of this cube in the notebook, one plane read per move
        (:func:`dfits.explore`; keywords as there)."""
        import dfits

        return dfits.explore(self._obj, **kw)

    def to_fits(self, path: Any, **kw: Any) -> Any:
        """Write this DataArray as a FITS file, header and WCS kept (:func:`dfits.to_fits`)."""
        from dfits.xarray.tofits import to_fits

        return to_fits(self._obj, path, **kw)


class FitsDatasetAccessor:
    """``ds.fits``: the accessor of the Dataset's one FITS data variable."""

    def __init__(self, obj: xr.Dataset) -> None:
        self._obj = obj

    def _name(self) -> Hashable:
        names = [k for k, v in self._obj.data_vars.items() if "fits_header" in v.attrs]
        if len(names) != 1:
            raise ValueError(f"expected one FITS data variable, found {names}; use ds[name].fits")
        return names[0]

    def _main(self) -> FitsDataArrayAccessor:
        return self._obj[self._name()].fits

    @property
    def header(self) -> Header:
        return self._main().header

    @property
    def wcs(self) -> WCS:
        return self._main().wcs

    @property
    def sky_coords(self) -> xr.Coordinates:
        return self._main().sky_coords

    def chunk(self, along: Hashable | None = None) -> xr.Dataset:
        return self._obj.assign({self._name(): self._main().chunk(along)})

    def moment(self, order: int, dim: str | None = None, **kw: Any) -> xr.DataArray:
        return self._main().moment(order, dim, **kw)

    def reduce(self, how: str, dim: Any = None, **options: Any) -> xr.DataArray:
        return self._main().reduce(how, dim, **options)

    def spectrum(self, *args: Any, **kw: Any) -> xr.DataArray:
        return self._main().spectrum(*args, **kw)

    def quicklook(self, *args: Any, **kw: Any) -> Any:
        return self._main().quicklook(*args, **kw)

    def plot_channel_maps(self, n: int = 9, **kw: Any) -> Any:
        return self._main().plot_channel_maps(n, **kw)

    def cutout(self, ra: Any, dec: Any, width: Any, height: Any = None) -> xr.Dataset:
        sub = self._main().cutout(ra, dec, width, height)
        return self._obj.isel({d: sub[f"pixel_{d}"].values for d in ("y", "x")})


xr.register_dataarray_accessor("fits")(FitsDataArrayAccessor)
xr.register_dataset_accessor("fits")(FitsDatasetAccessor)
