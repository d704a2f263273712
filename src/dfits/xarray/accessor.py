"""The ``.fits`` accessor on DataArray and Dataset: header, WCS, moments, spectra, cut-outs.

Everything stays lazy. When the DataArray is an unmodified selection of a dfits HDU (its
encoding names the file and HDU, and every dimension still carries its ``pixel_<dim>``
coordinate) the accessor reads through ``hdu.data`` so reductions run the fused kernels;
otherwise it works on the DataArray's own (dask or numpy) data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits._display import figure
from dfits.xarray.coords import parse_wcs, pixel_picks, sliced_wcs
from dfits.xarray.errors import RegionError, WCSError
from dfits.xarray.files import open_file

if TYPE_CHECKING:
    from astropy.wcs import WCS

    from dfits.format.header import Header

__all__ = ["FitsDataArrayAccessor", "FitsDatasetAccessor"]


def _deg(value: Any) -> float:
    """Degrees from a number (taken as degrees) or an astropy Quantity / Angle."""
    if hasattr(value, "to_value"):
        return float(value.to_value("deg"))
    return float(value)


def _pixel_coords(obj: xr.DataArray) -> dict[int, Any]:
    """``{FITS axis: pixel indices}`` from the ``pixel_<dim>`` coordinates still present."""
    out = {}
    for name, coord in obj.coords.items():
        axis = coord.attrs.get("fits_axis")
        if str(name).startswith("pixel_") and axis is not None:
            out[int(axis)] = coord.values
    return out


def _fused(obj: xr.DataArray, along: Hashable | None = None) -> Any:
    """``obj``'s values as a dask array, read through dfits' fused chunks when possible.

    ``along``: a dimension the caller will reduce over; file-backed data then get chunks
    planned for that reduction (:func:`dfits.array.chunks.reduction_chunks`).
    """
    import dask.array as da

    var = obj.variable
    if not var._in_memory and "dfits_source" in var.encoding:
        rebuilt = _rebuild(obj, along)
        if rebuilt is not None:
            return rebuilt
    if obj.chunks is not None:
        return obj.data
    if var._in_memory:
        return da.from_array(np.asarray(obj.data), chunks=-1)
    # A lazily indexed (backend) array: ``obj.data`` would read all of it; chunk it instead,
    # like the file where a selection left a dimension whole, "auto" elsewhere.
    preferred = var.encoding.get("preferred_chunks", {})
    chunks = {
        d: c
        for d, c in preferred.items()
        if d in obj.dims and (isinstance(c, int) or sum(c) == obj.sizes[d])
    }
    return obj.chunk({d: chunks.get(d, "auto") for d in obj.dims}).data


def _rebuild(obj: xr.DataArray, along: Hashable | None = None) -> Any:
    enc = obj.variable.encoding
    hdu = open_file(enc["dfits_source"], enc.get("dfits_storage_options"))[enc["dfits_hdu"]]
    pixels = _pixel_coords(obj)
    naxis = len(hdu.shape)
    if set(pixels) != set(range(1, naxis + 1)) or hdu.dtype != obj.dtype:
        return None
    try:
        picks = pixel_picks(pixels)
    except WCSError:
        return None
    index, dims = [], []
    for axis in range(naxis, 0, -1):  # numpy order
        pick = picks[axis]
        if isinstance(pick, int):
            index.append(pick)
            continue
        start, step = pick
        dim = next(d for d in obj.dims if obj[f"pixel_{d}"].attrs.get("fits_axis") == axis)
        stop = start + step * obj.sizes[dim]
        index.append(slice(start, None if stop < 0 else stop, step))
        dims.append(dim)
    if set(dims) != set(obj.dims):
        return None
    if along is None:
        x = hdu.data
    else:
        # the FITS axis of ``along`` (FITS axis n is numpy axis naxis - n)
        fits_axis = obj[f"pixel_{along}"].attrs["fits_axis"]
        x = hdu.to_dask(reduce_axis=naxis - fits_axis)
    x = x[tuple(index)]
    order = [dims.index(d) for d in obj.dims]
    if order != sorted(order):
        x = x.transpose(order)
    return x if x.shape == obj.shape else None


class FitsDataArrayAccessor:
    """``da.fits``: FITS header, WCS and cube science on a DataArray opened by dfits."""

    def __init__(self, obj: xr.DataArray) -> None:
        self._obj = obj

    # -- description ----------------------------------------------------------------------
    def _text(self) -> str:
        text = self._obj.attrs.get("fits_header")
        if not isinstance(text, str):
            raise WCSError(
                f"DataArray {self._obj.name!r} has no 'fits_header' attribute; "
                "open it with engine='dfits' (or keep_attrs=True)"
            )
        return text

    @property
    def header(self) -> Header:
        """The HDU's header as a :class:`dfits.Header` (``.to_astropy()`` for astropy's)."""
        from dfits.format.header import Header

        return Header(self._text().encode("latin-1"))

    def _wcs_axes(self) -> tuple[WCS, list[int]]:
        try:
            wcs = parse_wcs(self._text())
        except WCSError as err:
            raise WCSError(f"{self._obj.name!r} has no usable WCS: {err}") from err
        pixels = _pixel_coords(self._obj)
        missing = {a: 0 for a in range(1, wcs.pixel_n_dim + 1) if a not in pixels}
        picks = {**pixel_picks(pixels), **missing}  # reduced axes count as dropped
        out, keep = sliced_wcs(wcs, picks)
        sizes = {int(c.attrs["fits_axis"]): c.size for c in self._coords_by_axis()}
        out.pixel_shape = [sizes.get(a, 1) for a in keep]
        return out, keep

    def _coords_by_axis(self) -> list[xr.DataArray]:
        return [
            c for k, c in self._obj.coords.items()
            if str(k).startswith("pixel_") and "fits_axis" in c.attrs
        ]  # fmt: skip

    @property
    def wcs(self) -> WCS:
        """An ``astropy.wcs.WCS`` for this (possibly sliced) DataArray.

        Pixel axes follow the original FITS axis order; axes dropped by integer selection or
        reduced away are removed when separable (a lone celestial axis is kept, 1 pixel).
        """
        return self._wcs_axes()[0]

    def _spectral_dim(self) -> str:
        dims = [
            d for d in self._obj.dims
            if d in self._obj.coords and "ctype" in self._obj[d].attrs
            and not str(self._obj[d].attrs["ctype"]).upper().startswith("STOKES")
        ]  # fmt: skip
        if len(dims) != 1:
            raise ValueError(f"pass dim=: cannot choose the spectral dimension among {dims}")
        return str(dims[0])

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
        obj = self._obj
        if along is not None and along not in obj.dims:
            raise ValueError(f"{along!r} is not a dimension of {obj.name!r}: {obj.dims}")
        return obj.copy(deep=False, data=_fused(obj, along))

    # -- moments --------------------------------------------------------------------------
    def moment(
        self,
        order: int,
        dim: str | None = None,
        *,
        threshold: float | None = None,
        mask: Any = None,
    ) -> xr.DataArray:
        """Moment map along ``dim`` (default: the one spectral dimension), lazily.

        Order 0: Σ I·Δν (Δν the channel width, ``|gradient(coord)|``); 1: Σ I·ν / Σ I;
        2: the intensity-weighted dispersion √(Σ I·(ν − m1)² / Σ I). Values below
        ``threshold`` and channels where the 1-D boolean ``mask`` is False are left out;
        NaN pixels are ignored.
        """
        import dask.array as da

        from dfits.array.weighted import weighted_sums

        if order not in (0, 1, 2):
            raise ValueError(f"moment order must be 0, 1 or 2, not {order!r}")
        obj = self._obj
        dim = self._spectral_dim() if dim is None else dim
        if dim not in obj.dims:
            raise ValueError(f"{dim!r} is not a dimension of {obj.name!r}: {obj.dims}")
        if mask is not None:
            keep = np.asarray(mask, dtype=bool)
            if keep.shape != (obj.sizes[dim],):
                raise ValueError(f"mask must have shape ({obj.sizes[dim]},), not {keep.shape}")
            obj = obj.isel({dim: np.flatnonzero(keep)})
        axis = obj.get_axis_num(dim)
        v = obj[dim].values.astype(float) if dim in obj.coords else np.arange(obj.sizes[dim])
        x = _fused(obj, along=dim)
        # One pass over the stored values: Σ I, Σ I·w (and Σ I·w²) per pixel, with NaN, BLANK
        # and values below the threshold left out, accumulated in float64 by the fused kernel.
        if order == 0:
            width = np.abs(np.gradient(v)) if v.size > 1 else np.ones(v.size)
            out = weighted_sums(x, axis, width, threshold=threshold)[1]
        else:
            v0 = v.mean() if v.size else 0.0
            sums = weighted_sums(x, axis, v - v0, threshold=threshold)
            # Pixels with no emission (all NaN, masked or cut by the threshold) have Σ I = 0:
            # NaN there, without numpy's divide warning in every notebook cell.
            s0 = da.where(sums[0] == 0, np.nan, sums[0])
            m1 = sums[1] / s0
            # Order 2 is the spread about the centroid; rounding can take s2/s0 − m1² below 0.
            out = m1 + v0 if order == 1 else da.sqrt(da.maximum(sums[2] / s0 - m1**2, 0))
        return self._reduced(
            obj, out, (dim,), f"moment{order}", self._moment_units(obj, dim, order)
        )

    @staticmethod
    def _moment_units(obj: xr.DataArray, dim: str, order: int) -> str:
        unit = obj[dim].attrs.get("units", "") if dim in obj.coords else ""
        if order:
            return unit
        bunit = obj.attrs.get("units", "")
        return f"{bunit} {unit}".strip()

    @staticmethod
    def _reduced(obj: xr.DataArray, data: Any, gone: tuple[str, ...], name: str,
                 units: str) -> xr.DataArray:  # fmt: skip
        dims = [d for d in obj.dims if d not in gone]
        coords = {k: c for k, c in obj.coords.items() if not set(c.dims) & set(gone)}
        attrs = {
            k: v
            for k, v in obj.attrs.items()
            if k in ("fits_header", "fits_hdu", "fits_extname", "object")
        }
        if units:
            attrs["units"] = units
        return xr.DataArray(data, dims=dims, coords=coords, name=name, attrs=attrs)

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

    def _to_pixel(self, w2: WCS, ra: Any, dec: Any) -> tuple[float, float]:
        world = [0.0, 0.0]
        world[w2.wcs.lng], world[w2.wcs.lat] = _deg(ra), _deg(dec)
        px, py = (float(p) for p in w2.world_to_pixel_values(*world))
        if not (np.isfinite(px) and np.isfinite(py)):
            raise RegionError(f"({ra}, {dec}) has no pixel position in this projection")
        return px, py

    def cutout(self, ra: Any, dec: Any, width: Any, height: Any = None) -> xr.DataArray:
        """Lazily sliced cut-out of ``width`` × ``height`` (degrees or Quantities) centred on
        ``(ra, dec)`` (the image's own celestial frame). Pixels whose centre lies within half
        the size along each pixel axis are kept; the box is clipped to the image, and a box
        wholly outside it raises :class:`RegionError`. ``.fits.wcs`` of the result is exact.
        """
        from astropy.wcs.utils import proj_plane_pixel_scales

        obj = self._obj
        w2 = self._celestial()
        px, py = self._to_pixel(w2, ra, dec)
        sx, sy = proj_plane_pixel_scales(w2)
        height = width if height is None else height
        hw, hh = _deg(width) / 2 / sx, _deg(height) / 2 / sy
        box = {}
        for d, p, h in (("x", px, hw), ("y", py, hh)):
            lo, hi = max(int(np.ceil(p - h)), 0), min(int(np.floor(p + h)), obj.sizes[d] - 1)
            if lo > hi:
                raise RegionError(
                    f"cut-out centred on ({ra}, {dec}) = pixel ({px:.1f}, {py:.1f}) misses the "
                    f"image ({obj.sizes['x']} × {obj.sizes['y']} pixels)"
                )
            box[d] = slice(lo, hi + 1)
        return obj.isel(box)

    def aperture(self, ra: Any, dec: Any, radius: Any) -> xr.DataArray:
        """Boolean (y, x) mask of the pixels whose centre is within ``radius`` of (ra, dec)."""
        from astropy.wcs.utils import proj_plane_pixel_scales

        obj = self._obj
        w2 = self._celestial()
        r = _deg(radius)
        px, py = self._to_pixel(w2, ra, dec)
        rp = r / float(np.min(proj_plane_pixel_scales(w2))) + 1
        ny, nx = obj.sizes["y"], obj.sizes["x"]
        x0, x1 = max(int(np.floor(px - rp)), 0), min(int(np.ceil(px + rp)) + 1, nx)
        y0, y1 = max(int(np.floor(py - rp)), 0), min(int(np.ceil(py + rp)) + 1, ny)
        mask = np.zeros((ny, nx), dtype=bool)
        if x0 < x1 and y0 < y1:  # only the bounding box is evaluated
            xx, yy = np.meshgrid(np.arange(x0, x1), np.arange(y0, y1))
            world = w2.pixel_to_world_values(xx, yy)
            lon, lat = np.radians(world[w2.wcs.lng]), np.radians(world[w2.wcs.lat])
            lon0, lat0 = np.radians(_deg(ra)), np.radians(_deg(dec))
            hav = (
                np.sin((lat - lat0) / 2) ** 2
                + np.cos(lat) * np.cos(lat0) * np.sin((lon - lon0) / 2) ** 2
            )
            mask[y0:y1, x0:x1] = np.degrees(2 * np.arcsin(np.sqrt(np.clip(hav, 0, 1)))) <= r
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

        The aperture is a circle (``ra``, ``dec``, ``radius``) or a boolean (y, x) ``region``
        mask; only the chunks intersecting its bounding box are read. NaNs are ignored.
        """
        import dask.array as da

        obj = self._obj
        if how not in ("sum", "mean"):
            raise ValueError(f"how must be 'sum' or 'mean', not {how!r}")
        if region is None:
            if ra is None or dec is None or radius is None:
                raise RegionError("spectrum needs ra=, dec= and radius=, or region=")
            mask = self.aperture(ra, dec, radius).values
        else:
            mask = (
                region.transpose("y", "x").values
                if isinstance(region, xr.DataArray)
                else (np.asarray(region))
            )
            mask = mask.astype(bool)
            if mask.shape != (obj.sizes["y"], obj.sizes["x"]):
                raise RegionError(f"region shape {mask.shape} is not (y, x) = "
                                  f"{(obj.sizes['y'], obj.sizes['x'])}")  # fmt: skip
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        if rows.size == 0:
            raise RegionError("the aperture contains no pixel centre of the image")
        ys, xs = slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)
        sub = obj.isel(y=ys, x=xs)
        weight = np.where(mask[ys, xs], 1.0, np.nan)
        sky = [d for d in sub.dims if d in ("y", "x")]
        if sky == ["x", "y"]:
            weight = weight.T
        shape = [sub.sizes[d] if d in sky else 1 for d in sub.dims]
        x = _fused(sub) * weight.reshape(shape)
        axes = tuple(sub.get_axis_num(d) for d in sky)
        out = da.nansum(x, axis=axes) if how == "sum" else da.nanmean(x, axis=axes)
        result = self._reduced(sub, out, ("y", "x"), "spectrum", obj.attrs.get("units", ""))
        result.attrs["npix"] = int(mask.sum())
        return result

    # -- quick look (drawn by the figures dfits.jupyter registers) -------------------------
    def _as_hdu(self) -> Any:
        """An HDU-like view of this DataArray for the registered quick-look figures."""
        from dfits.format.cards import format_card
        from dfits.format.header import Header

        obj = self._obj
        try:
            text = self.wcs.to_header().tostring()
        except (WCSError, ValueError):
            text = self._text() if isinstance(obj.attrs.get("fits_header"), str) else ""
        else:
            bunit = obj.attrs.get("units")
            # a unit no card can hold (non-ASCII, too long) leaves the figure unlabelled
            if isinstance(bunit, str) and bunit:
                with contextlib.suppress(ValueError):
                    text += format_card("BUNIT", bunit).decode("ascii")

        view = _ArrayHDU(_fused(obj), Header(text.encode("latin-1")))
        view.name = str(obj.name or "")
        return view

    def quicklook(self, full: bool = False, max_bytes: int = 256 * 2**20) -> Any:
        """Moment-0 image and integrated spectrum of this (possibly sliced) cube.

        Reads a decimated view (at most ``max_bytes`` of values) unless ``full``; axes in
        world coordinates when a celestial WCS survives the slicing.
        """
        return figure("quicklook", self._as_hdu(), full, max_bytes)

    def plot_channel_maps(self, n: int = 9, *, full: bool = False, **kw: Any) -> Any:
        """A grid of ``n`` channel maps (means of equal channel groups), one colour scale."""
        return figure("channel_maps", self._as_hdu(), n, full=full, **kw)


class _ArrayHDU:
    """The few HDU attributes quick-look needs, over a dask array and a header."""

    is_image = True
    index = 0
    kind = "image"

    def __init__(self, data: Any, header: Any) -> None:
        self.data = data
        self.header = header
        self.shape = tuple(data.shape)
        self.dtype = data.dtype
        self.section = _DaskSection(data)


class _DaskSection:
    """``section[...]`` over a dask array: only the chunks the index touches are computed."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __getitem__(self, index: Any) -> np.ndarray:
        return np.asarray(self.data[index].compute())


class FitsDatasetAccessor:
    """``ds.fits``: the accessor of the Dataset's one FITS data variable."""

    def __init__(self, obj: xr.Dataset) -> None:
        self._obj = obj

    def _main(self) -> FitsDataArrayAccessor:
        names = [k for k, v in self._obj.data_vars.items() if "fits_header" in v.attrs]
        if len(names) != 1:
            raise ValueError(f"expected one FITS data variable, found {names}; use ds[name].fits")
        return self._obj[names[0]].fits

    @property
    def header(self) -> Header:
        return self._main().header

    @property
    def wcs(self) -> WCS:
        return self._main().wcs

    def chunk(self, along: Hashable | None = None) -> xr.Dataset:
        name = self._main()._obj.name
        return self._obj.assign({name: self._main().chunk(along)})

    def moment(self, order: int, dim: str | None = None, **kw: Any) -> xr.DataArray:
        return self._main().moment(order, dim, **kw)

    def spectrum(self, *args: Any, **kw: Any) -> xr.DataArray:
        return self._main().spectrum(*args, **kw)

    def quicklook(self, full: bool = False, max_bytes: int = 256 * 2**20) -> Any:
        return self._main().quicklook(full, max_bytes)

    def plot_channel_maps(self, n: int = 9, **kw: Any) -> Any:
        return self._main().plot_channel_maps(n, **kw)

    def cutout(self, ra: Any, dec: Any, width: Any, height: Any = None) -> xr.Dataset:
        main = self._main()
        sub = main.cutout(ra, dec, width, height)
        return self._obj.isel({d: sub[f"pixel_{d}"].values for d in ("y", "x")})


xr.register_dataarray_accessor("fits")(FitsDataArrayAccessor)
xr.register_dataset_accessor("fits")(FitsDatasetAccessor)
