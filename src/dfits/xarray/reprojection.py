"""Reprojection of a 2-D (y, x) map — a moment map, a channel — onto another celestial WCS.

The contract: :func:`reproject_map` hands the map and its celestial WCS to the ``reproject``
package (``reproject_interp``, or ``reproject_exact`` for flux-conserving ``order="exact"``)
and returns a DataArray on the target grid with the same coordinates and header a dfits
image has: ``pixel_y``/``pixel_x``, 2-D longitude/latitude coordinates named as the engine
names them, ``attrs["fits_header"]`` holding the target's celestial WCS (so ``.fits.wcs``
and ``.fits.to_fits`` work) and the map's units. With ``reproject_interp`` the result is a
lazy dask array computed in ``block_size`` blocks (reproject's dask mode); pixels the map
does not cover are NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits.xarray.coords import celestial_block, plan_axes
from dfits.xarray.errors import RegionError
from dfits.xarray.headertext import readable_header

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = ["reproject_map", "target_grid"]

_ORDERS = ("nearest-neighbor", "bilinear", "biquadratic", "bicubic", "exact")


def target_grid(target: Any, shape_out: tuple[int, int] | None) -> tuple[WCS, tuple[int, int]]:
    """(celestial WCS, (ny, nx)) of a target: an astropy or dfits Header, a WCS or a dfits
    DataArray."""
    from astropy.wcs import WCS

    if hasattr(target, "to_astropy"):  # a dfits.Header
        target = target.to_astropy()
    if isinstance(target, xr.DataArray):
        wcs, shape = target.fits.wcs.celestial, (target.sizes["y"], target.sizes["x"])
    elif hasattr(target, "cards") and hasattr(target, "tostring"):  # an astropy Header
        wcs = WCS(target).celestial
        shape = (int(target.get("NAXIS2", 0)), int(target.get("NAXIS1", 0)))
    elif isinstance(target, WCS):
        wcs = target.celestial
        shape = tuple(wcs.array_shape) if wcs.pixel_shape is not None else (0, 0)
    else:
        raise RegionError(f"reproject target must be a Header, WCS or DataArray, not {target!r}")
    shape = tuple(shape_out) if shape_out is not None else shape
    if wcs.naxis != 2 or len(shape) != 2 or min(shape) <= 0:
        raise RegionError(
            f"reproject target needs a 2-D celestial WCS and a shape (shape_out=): {shape}"
        )
    return wcs, (int(shape[0]), int(shape[1]))


def reproject_map(
    obj: xr.DataArray,
    source: WCS,
    target: Any,
    shape_out: tuple[int, int] | None = None,
    order: str = "bilinear",
    block_size: tuple[int, int] = (512, 512),
) -> xr.DataArray:
    """``obj`` (dims y, x; celestial WCS ``source``) resampled onto ``target``'s grid."""
    import reproject

    if set(obj.dims) != {"y", "x"}:
        raise RegionError(f"reproject takes a 2-D (y, x) map, not dims {obj.dims}; reduce first")
    if order not in _ORDERS:
        raise ValueError(f"order must be one of {_ORDERS}, not {order!r}")
    wcs, shape = target_grid(target, shape_out)
    data = obj.transpose("y", "x").data
    if order == "exact":  # reproject_exact has no dask mode: the map is small, compute it
        values = reproject.reproject_exact(
            (np.asarray(data), source), wcs, shape_out=shape, return_footprint=False
        )
    else:
        blocks = (min(block_size[0], shape[0]), min(block_size[1], shape[1]))
        values = reproject.reproject_interp(
            (data, source), wcs, shape_out=shape, order=order, return_footprint=False,
            return_type="dask", block_size=blocks,
        )  # fmt: skip
    return _on_grid(values, wcs, shape, obj)


def _on_grid(values: Any, wcs: WCS, shape: tuple[int, int], obj: xr.DataArray) -> xr.DataArray:
    """A dfits-style (y, x) DataArray of ``values`` on the grid of ``wcs``."""
    plan = plan_axes(wcs, 2)
    ys, xs = np.arange(shape[0]), np.arange(shape[1])
    coords: dict[str, Any] = {
        "pixel_y": xr.Variable("y", ys, {"fits_axis": 2}),
        "pixel_x": xr.Variable("x", xs, {"fits_axis": 1}),
    }
    for name, world in ((plan.lon, plan.lon_world), (plan.lat, plan.lat_world)):
        if name is not None and world is not None:
            block = celestial_block(wcs, 1, 2, world, ys, xs)
            coords[name] = xr.Variable(("y", "x"), block, {"units": "deg"})
    header = wcs.to_header()
    header.insert(0, ("NAXIS2", shape[0]))
    header.insert(0, ("NAXIS1", shape[1]))
    if obj.attrs.get("units"):
        header["BUNIT"] = str(obj.attrs["units"])
    attrs = {k: v for k, v in obj.attrs.items() if k in ("units", "fits_hdu", "object")}
    attrs["fits_header"] = readable_header(header.tostring(padding=False))
    return xr.DataArray(values, dims=("y", "x"), coords=coords, name=obj.name, attrs=attrs)
