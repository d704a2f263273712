"""2-D sky coordinates (``ra``/``dec``, ``glon``/``glat``, ``elon``/``elat``), lazily, from the WCS.

The contract: these coordinates are *derived* from two things every Dataset the ``dfits``
engine opens already carries, and that ``to_zarr``/``to_netcdf`` keep: the header
(``attrs["fits_header"]``, a string) and the ``pixel_y``/``pixel_x`` coordinates (the FITS
pixel indices, with ``attrs["fits_axis"]``). So they are not in the opened Dataset by default
(a writer would compute and store them: two float64 arrays, 3× the bytes of a float32
image) and :attr:`SkyMethods.sky_coords` rebuilds them, exact, on any DataArray that kept the
header and the pixel coordinates, including one reopened from a zarr or netCDF store.
``xr.open_dataset(..., sky_coords=True)`` puts them in the Dataset at open, as before.

Each is a lazily indexed :class:`CelestialArray`: values are computed from the WCS
(``WCS.pixel_to_world_values`` at the original pixel indices, other pixel axes at 0) only for
the pixels indexed, so ``da.fits.sky_coords["ra"][10, 20]`` costs one pixel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from dfits.cube.coords import celestial_block, parse_wcs, plan_axes
from dfits.cube.errors import RegionError, WCSError
from dfits.cube.wcs import header_text

if TYPE_CHECKING:
    from astropy.coordinates import SkyCoord

__all__ = ["CelestialArray", "SkyMethods", "sky_variables"]


class CelestialArray(BackendArray):
    """One celestial world coordinate at the pixels ``ys × xs`` (FITS pixel indices, 0-based),
    computed per indexed block from the header's WCS."""

    def __init__(self, header: str, x_axis: int, y_axis: int, world: int, ys: Any, xs: Any) -> None:
        self.header = header
        self.x_axis, self.y_axis, self.world = x_axis, y_axis, world
        self.ys, self.xs = np.asarray(ys), np.asarray(xs)
        self.shape = (self.ys.size, self.xs.size)
        self.dtype = np.dtype(float)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_getitem
        )

    def _raw_getitem(self, key: tuple) -> np.ndarray:
        ys, xs = self.ys[key[0]], self.xs[key[1]]
        block = celestial_block(
            parse_wcs(self.header), self.x_axis, self.y_axis, self.world,
            np.atleast_1d(ys), np.atleast_1d(xs),
        )  # fmt: skip
        drop = tuple(0 if np.ndim(k) == 0 else slice(None) for k in (ys, xs))
        return block[drop]


def sky_variables(
    text: str, x_axis: int, y_axis: int, ys: Any, xs: Any, chunks: dict | None = None
) -> dict[str, xr.Variable]:
    """The lazy ``(y, x)`` sky coordinates of the pixels ``ys × xs`` of the header ``text``,
    keyed by name (``ra``, ``dec``, ...); empty when FITS axes ``x_axis``/``y_axis`` carry no
    separable celestial WCS. ``chunks``: the ``preferred_chunks`` of ``y`` and ``x``."""
    try:
        wcs = parse_wcs(text)
    except WCSError:
        return {}
    plan = plan_axes(wcs, wcs.pixel_n_dim)
    axes = {a.dim: a.fits_axis for a in plan.axes if a.kind == "celestial"}
    if plan.lon is None or axes != {"x": x_axis, "y": y_axis}:
        return {}
    out = {}
    for name, world in ((plan.lon, plan.lon_world), (plan.lat, plan.lat_world)):
        lazy = indexing.LazilyIndexedArray(CelestialArray(text, x_axis, y_axis, world, ys, xs))
        var = xr.Variable(("y", "x"), lazy, {"units": str(wcs.wcs.cunit[world])})
        if chunks is not None:
            var.encoding["preferred_chunks"] = {d: chunks[d] for d in ("y", "x")}
        out[str(name)] = var
    return out


class SkyMethods:
    """Sky coordinates of ``da.fits`` (mixed into the accessor)."""

    _obj: xr.DataArray

    @property
    def sky_coords(self) -> xr.Coordinates:
        """The exact 2-D sky coordinates (``ra``/``dec``, or ``glon``/``glat``, ...) of this
        DataArray's pixels, lazy: values are computed from the header's WCS only for what is
        indexed. ``da.assign_coords(da.fits.sky_coords)`` attaches them.

        Works on any DataArray that kept ``attrs["fits_header"]`` and the ``pixel_y`` and
        ``pixel_x`` coordinates (sliced, reduced along other dimensions, or reopened from
        zarr/netCDF). Raises :class:`~dfits.cube.errors.RegionError` when ``y``/``x`` carry
        no celestial WCS.

        Examples
        --------
        >>> ra = da.fits.sky_coords["ra"]              # doctest: +SKIP
        >>> da = da.assign_coords(da.fits.sky_coords)  # doctest: +SKIP
        """
        obj = self._obj
        pixel = {d: obj.coords.get(f"pixel_{d}") for d in ("y", "x")}
        if any(p is None or "fits_axis" not in p.attrs for p in pixel.values()):
            raise RegionError(
                f"{obj.name!r} has no pixel_y/pixel_x coordinates (celestial dimensions y, x): "
                f"{obj.dims}"
            )
        py, px = pixel["y"], pixel["x"]
        found = sky_variables(
            header_text(obj), int(px.attrs["fits_axis"]), int(py.attrs["fits_axis"]),
            np.atleast_1d(py.values), np.atleast_1d(px.values),
        )  # fmt: skip
        if not found:
            raise RegionError(f"{obj.name!r}: dimensions y, x carry no celestial WCS")
        # a y or x selected away by an integer is a scalar pixel coordinate: drop that dim
        scalar = {d: 0 for d, p in pixel.items() if p.ndim == 0}
        return xr.Coordinates({k: v.isel(scalar) for k, v in found.items()})

    def skycoord(self) -> SkyCoord:
        """An ``astropy.coordinates.SkyCoord`` of every pixel (shape ``(y, x)``), in the
        image's celestial frame: the values of :attr:`sky_coords`, computed now (eager: 16
        bytes a pixel), equal to ``WCS.pixel_to_world`` at the same pixels."""
        from astropy.coordinates import SkyCoord
        from astropy.wcs.utils import wcs_to_celestial_frame

        coords = list(self.sky_coords.values())
        frame = wcs_to_celestial_frame(parse_wcs(header_text(self._obj)))
        lon, lat = (c.values for c in coords)
        return SkyCoord(lon, lat, unit=(coords[0].attrs["units"], coords[1].attrs["units"]),
                        frame=frame)  # fmt: skip
