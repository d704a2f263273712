"""Reprojection of a 2-D (y, x) map — a moment map, a channel — or of a cube's every channel
onto another celestial WCS.

The contract: :func:`reproject_map` hands the map and its celestial WCS to the ``reproject``
package (``reproject_interp``, or ``reproject_exact`` for flux-conserving ``order="exact"``)
and returns a DataArray on the target grid with the same coordinates and header a dfits
image has: ``pixel_y``/``pixel_x``, 2-D longitude/latitude coordinates named as the engine
names them, ``attrs["fits_header"]`` holding the target's celestial WCS (so ``.fits.wcs``
and ``.fits.to_fits`` work) and the map's units. With ``reproject_interp`` the result is a
lazy dask array computed in ``block_size`` blocks (reproject's dask mode); pixels the map
does not cover are NaN. A 3-D (spectral, y, x) cube is resampled plane by plane (the
spectral axis kept as it is, as spectral-cube's ``reproject`` onto a header with the same
spectral axis does), lazily: a ``map_blocks`` over channel chunks of whole planes, its header
the target's celestial WCS plus the cube's spectral axis as FITS axis 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits.cube.coords import celestial_block, plan_axes
from dfits.cube.errors import RegionError
from dfits.cube.wcs import dataarray_wcs
from dfits.format.headertext import readable_header

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
        wcs, shape = dataarray_wcs(target)[0].celestial, (target.sizes["y"], target.sizes["x"])
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

    if order not in _ORDERS:
        raise ValueError(f"order must be one of {_ORDERS}, not {order!r}")
    if obj.ndim == 3 and {"y", "x"} < set(obj.dims):
        return reproject_cube(obj, source, target, shape_out, order)
    if set(obj.dims) != {"y", "x"}:
        raise RegionError(
            f"reproject takes a 2-D (y, x) map or a 3-D (spectral, y, x) cube, not dims "
            f"{obj.dims}; select or reduce the other axes first"
        )
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


def _reproject_planes(
    block: np.ndarray, source: WCS, wcs: WCS, shape: tuple[int, int], order: str
) -> np.ndarray:
    """Each (y, x) plane of a (channel, y, x) block on the target grid, NaN where uncovered."""
    import reproject

    out = np.empty((block.shape[0], *shape), dtype=np.float64)
    for k, plane in enumerate(np.asarray(block, dtype=np.float64)):
        if order == "exact":
            out[k] = reproject.reproject_exact((plane, source), wcs, shape, return_footprint=False)
        else:
            out[k] = reproject.reproject_interp(
                (plane, source), wcs, shape, order=order, return_footprint=False
            )
    return out


def reproject_cube(
    obj: xr.DataArray,
    source: WCS,
    target: Any,
    shape_out: tuple[int, int] | None = None,
    order: str = "bilinear",
) -> xr.DataArray:
    """``obj`` (dims spectral, y, x) with every channel resampled onto ``target``'s grid."""
    from dfits.cube.lazy import as_dask
    from dfits.cube.spectral import spectral_dim

    dim = spectral_dim(obj)
    wcs, shape = target_grid(target, shape_out)
    spec = _spectral_wcs(obj)
    cube = obj.transpose(dim, "y", "x")
    # whole planes per task: reproject needs the plane around each output pixel
    data = as_dask(cube).rechunk({1: -1, 2: -1})
    values = data.map_blocks(
        _reproject_planes, source, wcs, shape, order,
        chunks=(data.chunks[0], (shape[0],), (shape[1],)), dtype=np.float64,
    )  # fmt: skip
    grid = _on_grid(values[0], wcs, shape, obj)
    header = _with_spectral_axis(grid.attrs["fits_header"], spec, cube.sizes[dim])
    coords = dict(grid.coords.items())
    coords[dim] = xr.Variable(dim, cube[dim].values, cube[dim].attrs)
    coords[f"pixel_{dim}"] = xr.Variable(dim, np.arange(cube.sizes[dim]), {"fits_axis": 3})
    attrs = {**grid.attrs, "fits_header": header}
    return xr.DataArray(values, dims=(dim, "y", "x"), coords=coords, name=obj.name, attrs=attrs)


def _spectral_wcs(obj: xr.DataArray) -> WCS:
    """The 1-D spectral WCS of ``obj``, refused when it mixes with the celestial axes."""
    wcs = dataarray_wcs(obj)[0]
    spec = wcs.wcs.spec
    if spec < 0:
        raise RegionError(f"reproject: {obj.name!r} has no spectral axis in its WCS")
    if wcs.axis_correlation_matrix[spec].sum() != 1:
        raise RegionError(
            f"reproject: the spectral axis of {obj.name!r} is rotated into the celestial ones; "
            "only separable cubes are reprojected plane by plane"
        )
    return wcs.sub([spec + 1])


def _with_spectral_axis(celestial: str, spec: WCS, n: int) -> str:
    """A header text: the 2-D ``celestial`` one with ``spec`` as FITS axis 3 of length n."""
    import re

    from dfits.format.header import Header
    from dfits.format.headertext import card_text

    header = Header(card_text(celestial).encode("latin-1")).to_astropy()
    header["WCSAXES"] = 3
    header.insert("NAXIS2", ("NAXIS3", n), after=True)
    for card in spec.to_header().cards:
        key = re.sub(r"^(CTYPE|CRVAL|CDELT|CRPIX|CUNIT|CNAME)1$", r"\g<1>3", card.keyword)
        key = "PC3_3" if key == "PC1_1" else key
        if key not in header and key != "WCSAXES":
            header[key] = (card.value, card.comment)
    return readable_header(header.tostring(padding=False))
