"""The header and WCS of a DataArray opened by dfits, however it was sliced or reduced.

The contract: :func:`header_text` gives the cards of ``attrs["fits_header"]`` (a
:class:`~dfits.cube.errors.WCSError` names the DataArray without one); :func:`pixel_coords`
reads the ``pixel_<dim>`` coordinates the ``dfits`` engine sets (the FITS pixel indices each
dimension still covers); :func:`dataarray_wcs` rebuilds the WCS of exactly those pixels:
axes dropped by integer selection or reduced away are removed when separable (a lone
celestial axis is kept, 1 pixel), strided slices scale the axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import xarray as xr

from dfits.cube.coords import parse_wcs, pixel_picks, sliced_wcs
from dfits.cube.errors import WCSError
from dfits.format.headertext import card_text

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = ["dataarray_wcs", "header_text", "pixel_coords"]


def header_text(obj: xr.DataArray) -> str:
    """The 80-column cards of ``obj``'s ``fits_header`` attribute."""
    text = obj.attrs.get("fits_header")
    if not isinstance(text, str):
        raise WCSError(
            f"DataArray {obj.name!r} has no 'fits_header' attribute; "
            "open it with engine='dfits' (or keep_attrs=True)"
        )
    return card_text(text)


def pixel_coords(obj: xr.DataArray) -> dict[int, Any]:
    """``{FITS axis: pixel indices}`` from the ``pixel_<dim>`` coordinates still present."""
    out = {}
    for name, coord in obj.coords.items():
        axis = coord.attrs.get("fits_axis")
        if str(name).startswith("pixel_") and axis is not None:
            out[int(axis)] = coord.values
    return out


def dataarray_wcs(obj: xr.DataArray) -> tuple[WCS, list[int]]:
    """The WCS of ``obj``'s pixels and the FITS axis numbers of its pixel axes, in order."""
    try:
        wcs = parse_wcs(header_text(obj))
    except WCSError as err:
        raise WCSError(f"{obj.name!r} has no usable WCS: {err}") from err
    pixels = pixel_coords(obj)
    missing = {a: 0 for a in range(1, wcs.pixel_n_dim + 1) if a not in pixels}
    picks = {**pixel_picks(pixels), **missing}  # reduced axes count as dropped
    out, keep = sliced_wcs(wcs, picks)
    sizes = {
        int(c.attrs["fits_axis"]): c.size
        for k, c in obj.coords.items()
        if str(k).startswith("pixel_") and "fits_axis" in c.attrs
    }
    out.pixel_shape = [sizes.get(a, 1) for a in keep]
    return out, keep
