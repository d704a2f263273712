"""Sky regions on a 2-D celestial WCS: pixel positions, cut-out boxes, apertures, masks.

The contract: positions and sizes are degrees (numbers) or astropy Quantities/Angles, in the
image's own celestial frame; pixels are 0-based (x, y). A cut-out keeps the pixels whose
centre lies within half the size along each pixel axis, clipped to the image; an aperture is
the pixels whose centre is within the radius (great-circle distance), evaluated over its
bounding box only. What has no pixel in the image raises :class:`RegionError`.
:func:`aperture_spectrum` sums or averages a cube over a (y, x) mask, reading only the
chunks its bounding box touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits.cube.errors import RegionError

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = [
    "aperture_mask",
    "aperture_spectrum",
    "cutout_slices",
    "region_mask",
    "to_degrees",
    "to_pixel",
]


def to_degrees(value: Any) -> float:
    """Degrees from a number (taken as degrees) or an astropy Quantity / Angle."""
    if hasattr(value, "to_value"):
        return float(value.to_value("deg"))
    return float(value)


def to_pixel(w2: WCS, ra: Any, dec: Any) -> tuple[float, float]:
    """Pixel (x, y) of a sky position on the celestial WCS ``w2``."""
    world = [0.0, 0.0]
    world[w2.wcs.lng], world[w2.wcs.lat] = to_degrees(ra), to_degrees(dec)
    px, py = (float(p) for p in w2.world_to_pixel_values(*world))
    if not (np.isfinite(px) and np.isfinite(py)):
        raise RegionError(f"({ra}, {dec}) has no pixel position in this projection")
    return px, py


def cutout_slices(
    w2: WCS, ra: Any, dec: Any, width: Any, height: Any, ny: int, nx: int
) -> dict[str, slice]:
    """``{"x": slice, "y": slice}`` of a ``width`` × ``height`` box centred on (ra, dec)."""
    from astropy.wcs.utils import proj_plane_pixel_scales

    px, py = to_pixel(w2, ra, dec)
    sx, sy = proj_plane_pixel_scales(w2)
    hw, hh = to_degrees(width) / 2 / sx, to_degrees(height) / 2 / sy
    box = {}
    for d, p, h, n in (("x", px, hw, nx), ("y", py, hh, ny)):
        lo, hi = max(int(np.ceil(p - h)), 0), min(int(np.floor(p + h)), n - 1)
        if lo > hi:
            raise RegionError(
                f"cut-out centred on ({ra}, {dec}) = pixel ({px:.1f}, {py:.1f}) misses the "
                f"image ({nx} × {ny} pixels)"
            )
        box[d] = slice(lo, hi + 1)
    return box


def aperture_mask(w2: WCS, ra: Any, dec: Any, radius: Any, ny: int, nx: int) -> np.ndarray:
    """Boolean (y, x) mask of the pixels whose centre is within ``radius`` of (ra, dec)."""
    from astropy.wcs.utils import proj_plane_pixel_scales

    r = to_degrees(radius)
    px, py = to_pixel(w2, ra, dec)
    rp = r / float(np.min(proj_plane_pixel_scales(w2))) + 1
    x0, x1 = max(int(np.floor(px - rp)), 0), min(int(np.ceil(px + rp)) + 1, nx)
    y0, y1 = max(int(np.floor(py - rp)), 0), min(int(np.ceil(py + rp)) + 1, ny)
    mask = np.zeros((ny, nx), dtype=bool)
    if x0 < x1 and y0 < y1:  # only the bounding box is evaluated
        xx, yy = np.meshgrid(np.arange(x0, x1), np.arange(y0, y1))
        world = w2.pixel_to_world_values(xx, yy)
        lon, lat = np.radians(world[w2.wcs.lng]), np.radians(world[w2.wcs.lat])
        lon0, lat0 = np.radians(to_degrees(ra)), np.radians(to_degrees(dec))
        hav = (
            np.sin((lat - lat0) / 2) ** 2
            + np.cos(lat) * np.cos(lat0) * np.sin((lon - lon0) / 2) ** 2
        )
        mask[y0:y1, x0:x1] = np.degrees(2 * np.arcsin(np.sqrt(np.clip(hav, 0, 1)))) <= r
    return mask


def region_mask(region: Any, ny: int, nx: int) -> np.ndarray:
    """A boolean (y, x) mask from a DataArray (any dim order) or an array of that shape."""
    if isinstance(region, xr.DataArray):
        mask = region.transpose("y", "x").values
    else:
        mask = np.asarray(region)
    mask = mask.astype(bool)
    if mask.shape != (ny, nx):
        raise RegionError(f"region shape {mask.shape} is not (y, x) = {(ny, nx)}")
    return mask


def aperture_spectrum(obj: xr.DataArray, mask: np.ndarray, how: str = "sum") -> xr.DataArray:
    """The sum (``how="sum"``) or mean (``"mean"``) of ``obj`` over the (y, x) boolean
    ``mask``, per channel, NaNs ignored, lazily; ``attrs["npix"]`` counts the mask's pixels.

    The sum of a brightness is a flux in Jy (:func:`dfits.cube.beams.jy_per_pixel`: Jy/beam
    over the beam area in pixels, K and Jy/sr through the pixel's solid angle, Jy/pixel as
    it is); a Jy/beam cube without a beam raises :class:`~dfits.cube.errors.BeamError`.
    The mean stays in the cube's unit; other units are summed as they are.
    """
    import dask.array as da

    from dfits.cube import spectral
    from dfits.cube.beams import jy_per_pixel
    from dfits.cube.lazy import as_dask
    from dfits.cube.results import product_unit, reduced

    if how not in ("sum", "mean"):
        raise ValueError(f"how must be 'sum' or 'mean', not {how!r}")
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
    x = as_dask(sub) * weight.reshape(shape)
    axes = tuple(sub.get_axis_num(d) for d in sky)
    out = da.nansum(x, axis=axes) if how == "sum" else da.nanmean(x, axis=axes)
    units = product_unit(str(obj.attrs.get("units", "")))
    factors = jy_per_pixel(sub) if how == "sum" else None
    if factors is not None:
        kept = [d for d in sub.dims if d not in sky]
        if factors.size > 1:  # one per channel
            along = spectral.spectral_dim(sub)
            factors = factors.reshape([sub.sizes[d] if d == along else 1 for d in kept])
        out, units = out * factors[0] if factors.size == 1 else out * factors, "Jy"
    result = reduced(sub, out, ("y", "x"), "spectrum", units)
    result.attrs["npix"] = int(mask.sum())
    return result
