"""DataArrays of reduced results: the dimensions, coordinates, attributes and units they keep.

The contract: :func:`reduced` wraps a (dask) array computed from a DataArray with some
dimensions reduced away, keeping the coordinates of the dimensions left (so a moment map
keeps its 2-D ``ra``/``dec`` and the ``pixel_`` coordinates that rebuild its celestial WCS)
and the FITS attributes. Units are astropy unit strings (:func:`unit_string`);
:func:`quantity` turns a result into an ``astropy.units.Quantity``.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

__all__ = ["KEPT_ATTRS", "product_unit", "quantity", "reduced", "unit_string"]

#: Attributes a reduced DataArray keeps (units are set per result).
KEPT_ATTRS = ("fits_header", "fits_hdu", "fits_extname", "object")


def reduced(
    obj: xr.DataArray, data: Any, gone: tuple[str, ...], name: str, units: str
) -> xr.DataArray:
    """``data`` as the DataArray left when dimensions ``gone`` are reduced out of ``obj``."""
    dims = [d for d in obj.dims if d not in gone]
    coords = {k: c for k, c in obj.coords.items() if not set(c.dims) & set(gone)}
    attrs = {k: v for k, v in obj.attrs.items() if k in KEPT_ATTRS}
    if units:
        attrs["units"] = units
    return xr.DataArray(data, dims=dims, coords=coords, name=name, attrs=attrs)


def unit_string(text: str) -> str:
    """``text`` in astropy's unit string format where astropy parses it, else unchanged.

    Examples
    --------
    >>> unit_string("km/s")
    'km / s'
    >>> unit_string("not a unit")
    'not a unit'
    """
    import astropy.units as u

    if not text.strip():
        return ""
    try:
        return u.Unit(text, parse_strict="raise").to_string()
    except ValueError:
        return text


def product_unit(*units: str, power: int = 1) -> str:
    """The product of ``units`` (astropy strings; unparsable ones joined by spaces)."""
    import astropy.units as u

    parts = [p for p in units if p.strip()]
    try:
        out = u.dimensionless_unscaled
        for p in parts:
            out = out * u.Unit(p, parse_strict="raise")
        return (out**power).to_string() if parts else ""
    except ValueError:
        text = " ".join(parts)
        return f"({text}){power}" if power != 1 else text


def quantity(obj: xr.DataArray) -> Any:
    """``obj``'s values (computed) as an ``astropy.units.Quantity`` in its ``units``."""
    import astropy.units as u

    text = str(obj.attrs.get("units", ""))
    try:
        unit = u.Unit(text, parse_strict="raise") if text else u.dimensionless_unscaled
    except ValueError as err:
        from dfits.cube.errors import SpectralError

        raise SpectralError(f"{obj.name!r}: units {text!r} are not an astropy unit") from err
    return u.Quantity(obj.values, unit, copy=False)
