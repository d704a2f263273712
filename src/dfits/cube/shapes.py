"""Sub-cubes and spectra from ``regions`` shapes and ``SkyCoord`` positions, lazily.

The contract, matching spectral-cube 0.7's ``subcube_from_regions``:

* a ``regions`` sky shape (circle, rectangle, ellipse, polygon, ...) is turned into pixels
  on the cube's own celestial WCS (``SkyRegion.to_pixel``); a pixel shape is used as it is;
  a list of shapes is their union. A pixel belongs to the region when its centre does
  (``to_mask(mode="center")``).
* :func:`subcube` keeps the smallest (y, x) box holding every pixel of the region and
  blanks (NaN) the box's pixels outside it. The box is an ``isel`` and the blanking a dask
  ``where`` with a small (y, x) mask, so nothing is read until computed and only the
  chunks the box touches ever are.
* :func:`sky_lonlat` expresses a ``SkyCoord`` in the image's own celestial frame (ICRS,
  FK5, Galactic, ...) as the (lon, lat) degrees the rest of :mod:`dfits.cube.regions`
  takes; :func:`nearest_pixel` is the pixel whose centre is nearest a position.

When every shape carries a spectral range (``meta["range"]``, two Quantities, as
spectral-cube and DS9/CRTF files give them), the sub-cube is also a spectral slab from the
lowest to the highest bound (:func:`~dfits.cube.spectral.spectral_slab`: any spectral unit,
converted with the cube's own velocity convention and rest value). Shapes whose
``meta`` names another ``veltype`` or ``restfreq`` are refused rather than converted.

Difference from spectral-cube, by choice: the box is cropped to the region alone, where
spectral-cube also crops rows and columns whose data are all NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits.cube.beams import keep_beams
from dfits.cube.errors import RegionError
from dfits.cube.lazy import as_dask

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = ["is_shape", "is_skycoord", "nearest_pixel", "shape_mask", "sky_lonlat", "subcube"]


def is_skycoord(value: Any) -> bool:
    """Whether ``value`` is an astropy ``SkyCoord`` (without importing astropy for others)."""
    return type(value).__name__ == "SkyCoord" and hasattr(value, "transform_to")


def is_shape(value: Any) -> bool:
    """Whether ``value`` is a ``regions`` shape, or a non-empty list of them."""
    if isinstance(value, list | tuple):
        return len(value) > 0 and all(is_shape(v) for v in value)
    return (type(value).__module__ or "").split(".")[0] == "regions"


def sky_lonlat(coord: Any, w2: WCS) -> tuple[float, float]:
    """(lon, lat) in degrees of the scalar ``SkyCoord`` ``coord`` in ``w2``'s frame."""
    from astropy.wcs.utils import wcs_to_celestial_frame

    if not coord.isscalar:
        raise RegionError(f"expected one sky position, got {coord.shape} of them")
    try:
        frame = wcs_to_celestial_frame(w2)
    except ValueError as err:
        raise RegionError(f"the image's celestial frame is unknown: {err}") from err
    sph = coord.transform_to(frame).spherical
    return float(sph.lon.deg), float(sph.lat.deg)


def nearest_pixel(w2: WCS, lon: float, lat: float, ny: int, nx: int) -> tuple[int, int]:
    """The (y, x) index of the pixel whose centre is nearest (lon, lat); outside raises."""
    from dfits.cube.regions import to_pixel

    px, py = to_pixel(w2, lon, lat)
    # half-way pixels go up, as astropy's world_to_array_index (round() would go to even)
    ix, iy = int(np.floor(px + 0.5)), int(np.floor(py + 0.5))
    if not (0 <= ix < nx and 0 <= iy < ny):
        raise RegionError(
            f"({lon:.6f}, {lat:.6f}) deg is pixel ({px:.1f}, {py:.1f}), outside the image "
            f"({nx} × {ny} pixels)"
        )
    return iy, ix


def shape_mask(region: Any, w2: WCS, ny: int, nx: int) -> np.ndarray:
    """Boolean (y, x) mask of the pixels whose centre lies in ``region`` (or their union)."""
    import regions

    shapes: Sequence[Any] = region if isinstance(region, list | tuple) else [region]
    mask = np.zeros((ny, nx), dtype=bool)
    for shape in shapes:
        if isinstance(shape, regions.SkyRegion):
            shape = shape.to_pixel(w2)
        elif not isinstance(shape, regions.PixelRegion):
            raise RegionError(f"{shape!r} is not a regions shape")
        image = shape.to_mask(mode="center").to_image((ny, nx))
        if image is not None:  # None: the shape does not overlap the image
            mask |= image.astype(bool)
    return mask


def subcube(obj: xr.DataArray, region: Any, celestial: Callable[[], WCS]) -> xr.DataArray:
    """The region's bounding box of ``obj``, NaN outside the region (see module docstring)."""
    import dask.array as da

    ny, nx = obj.sizes["y"], obj.sizes["x"]
    mask = shape_mask(region, celestial(), ny, nx)
    obj = _slab(obj, region if isinstance(region, list | tuple) else [region])
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        raise RegionError(f"{region!r} contains no pixel centre of the image ({nx} × {ny})")
    box = {"y": slice(rows[0], rows[-1] + 1), "x": slice(cols[0], cols[-1] + 1)}
    sub = obj.isel(box)
    inside = xr.DataArray(mask[box["y"], box["x"]], dims=("y", "x"))
    shape = [sub.sizes[d] if d in ("y", "x") else 1 for d in sub.dims]
    keep = inside.transpose(*[d for d in sub.dims if d in ("y", "x")]).values.reshape(shape)
    # a small (y, x) mask broadcast by dask: tasks stay (path, offsets) plus this box mask
    data = da.where(keep, as_dask(sub), np.nan)
    # new values: the file's encoding would make the accessor read the file again, unmasked
    return keep_beams(sub, sub.copy(deep=False, data=data))


def _slab(obj: xr.DataArray, shapes: Sequence[Any]) -> xr.DataArray:
    """``obj`` cut to the shapes' spectral ranges when every shape has one."""
    import astropy.units as u

    from dfits.cube.spectral import spectral_slab

    metas = [getattr(s, "meta", None) or {} for s in shapes]
    other = [k for m in metas for k in ("veltype", "restfreq") if m.get(k) is not None]
    if other:
        raise RegionError(f"region meta {sorted(set(other))} is not supported: give the range "
                          "in the cube's own convention and rest value")  # fmt: skip
    ranges = [m.get("range") for m in metas]
    if any(r is None for r in ranges):
        return obj
    try:
        lo = u.Quantity([r[0] for r in ranges]).min()
        hi = u.Quantity([r[1] for r in ranges]).max()
    except (u.UnitsError, TypeError, IndexError) as err:
        raise RegionError(f"region spectral ranges {ranges}: {err}") from err
    return spectral_slab(obj, lo, hi)
