"""The spectral axis of a cube: found from the WCS, converted between units, sliced by value.

The contract:

* :func:`spectral_dim` names the dimension that carries the WCS's spectral axis
  (``wcs.wcs.spec``), whatever its position (3-D, 4-D with Stokes first or last, degenerate
  axes); a DataArray without a header falls back to its coordinates' ``ctype`` attributes.
  No spectral dimension raises :class:`SpectralError` naming the file and HDU.
* :func:`with_spectral_unit` re-expresses the spectral axis in another unit (frequency,
  vacuum or air wavelength, wavenumber, energy, or a radio / optical / relativistic
  velocity) through wcslib's own spectral translation (``Wcsprm.sptr``) and
  :mod:`astropy.units`: no hand-written physics. The rest frequency or wavelength comes from
  the header (RESTFRQ / RESTFREQ / RESTWAV) unless ``rest_value`` is given. The result has
  the dimension renamed after the new quantity (``freq`` → ``vrad``, ...), its coordinate
  in the requested unit, and a header whose spectral cards describe the new axis.
* :func:`spectral_slab` keeps the channels between two spectral values given in any unit,
  whatever the axis direction: like spectral-cube, each bound selects its closest channel.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from dfits.cube.coords import parse_wcs
from dfits.cube.errors import ConventionError, SpectralError, WCSError
from dfits.cube.index import with_world_index
from dfits.errors import where
from dfits.format.headertext import card_text, readable_header

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = [
    "CONVENTIONS",
    "SPECTRAL_CTYPES",
    "describe",
    "rest_equivalencies",
    "spectral_dim",
    "spectral_slab",
    "spectral_wcs",
    "with_spectral_unit",
]

#: The FITS spectral types (WCS Paper III) whose axes dfits treats as spectral.
SPECTRAL_CTYPES = ("FREQ", "ENER", "WAVN", "VRAD", "WAVE", "VOPT", "ZOPT", "AWAV", "VELO",
                   "BETA", "FELO")  # fmt: skip
#: Velocity convention → the FITS velocity type.
CONVENTIONS = {"radio": "VRAD", "optical": "VOPT", "relativistic": "VELO"}
_DOPPLER = {"VRAD": "doppler_radio", "VOPT": "doppler_optical", "FELO": "doppler_optical",
            "VELO": "doppler_relativistic", "ZOPT": "doppler_optical"}  # fmt: skip
_PHYSICAL = {"frequency": "FREQ", "length": "WAVE", "wavenumber": "WAVN", "energy": "ENER"}


def describe(obj: xr.DataArray) -> str:
    """``"file 'x.fits', HDU 0"`` (or the DataArray's name) for error messages."""
    source = obj.variable.encoding.get("dfits_source")
    hdu = obj.attrs.get("fits_hdu")
    if source is None:
        return f"DataArray {obj.name!r}"
    return where(str(source), hdu if isinstance(hdu, int) else None, obj.attrs.get("fits_extname"))


def _prefix(ctype: str) -> str:
    return ctype.split("-")[0].strip().upper()


def _dim_of_axis(obj: xr.DataArray, fits_axis: int) -> str | None:
    for d in obj.dims:
        coord = obj.coords.get(f"pixel_{d}")
        if coord is not None and coord.attrs.get("fits_axis") == fits_axis:
            return str(d)
    return None


def spectral_wcs(obj: xr.DataArray) -> tuple[WCS, int]:
    """The DataArray's full (file) WCS and the FITS number of its spectral pixel axis."""
    text = obj.attrs.get("fits_header")
    if not isinstance(text, str):
        raise SpectralError(f"{describe(obj)} has no FITS header (attrs['fits_header'])")
    try:
        wcs = parse_wcs(card_text(text))
    except WCSError as err:
        raise SpectralError(f"{describe(obj)}: WCS unusable: {err}") from err
    spec = wcs.wcs.spec
    if spec < 0:
        raise SpectralError(f"{describe(obj)} has no spectral axis in its WCS: {wcs.wcs.ctype}")
    pixels = np.flatnonzero(np.asarray(wcs.axis_correlation_matrix)[spec])
    if pixels.size != 1:
        raise SpectralError(f"{describe(obj)}: the spectral axis is not separable")
    return wcs, int(pixels[0]) + 1


def spectral_dim(obj: xr.DataArray) -> str:
    """The dimension of ``obj`` that carries the spectral axis, found from the WCS."""
    if isinstance(obj.attrs.get("fits_header"), str):
        _, fits_axis = spectral_wcs(obj)
        dim = _dim_of_axis(obj, fits_axis)
        if dim is None:
            raise SpectralError(
                f"{describe(obj)}: the spectral axis (FITS axis {fits_axis}) was selected "
                f"or reduced away; dimensions left: {obj.dims}"
            )
        return dim
    dims = [
        str(d) for d in obj.dims
        if d in obj.coords and _prefix(str(obj[d].attrs.get("ctype", ""))) in SPECTRAL_CTYPES
    ]  # fmt: skip
    if len(dims) != 1:
        raise SpectralError(f"{describe(obj)}: cannot tell the spectral dimension among {dims}")
    return dims[0]


def _target_ctype(current: str, unit: Any, convention: str | None, air: bool, name: str) -> str:
    """The FITS spectral type (with ``-???`` for wcslib to choose the algorithm); ``name``
    (the file and HDU) starts the errors."""
    physical = unit.physical_type
    if physical == "speed":
        if convention is None:
            if _prefix(current) in _DOPPLER:
                return _prefix(current) + "-???"
            raise ConventionError(
                f"{name}: converting the {_prefix(current)} axis to {unit} (a velocity) needs "
                f"velocity_convention= {'/'.join(map(repr, CONVENTIONS))}"
            )
        if convention not in CONVENTIONS:
            raise ConventionError(
                f"{name}: velocity_convention must be one of {list(CONVENTIONS)}, "
                f"not {convention!r}"
            )
        return CONVENTIONS[convention] + "-???"
    ctype = next((c for name, c in _PHYSICAL.items() if physical == name), None)
    if ctype is None:
        raise SpectralError(f"{unit} ({physical}) is not a spectral unit")
    return ("AWAV" if air and ctype == "WAVE" else ctype) + "-???"


def _set_rest(wcs: WCS, rest_value: Any) -> None:
    import astropy.units as u

    rest = u.Quantity(rest_value)
    if rest.unit.physical_type == "length":
        wcs.wcs.restwav, wcs.wcs.restfrq = rest.to_value(u.m), 0.0
    else:
        wcs.wcs.restfrq, wcs.wcs.restwav = rest.to_value(u.Hz, u.spectral()), 0.0


def _header_text(text: str, new: WCS, fits_axis: int) -> str:
    """``text`` with its spectral cards (axis ``fits_axis``) and rest value from ``new``."""
    from dfits.format.header import Header

    header = Header(card_text(text).encode("latin-1")).to_astropy()
    k = fits_axis
    own = re.compile(rf"^(CTYPE{k}|CUNIT{k}|CRVAL{k}|CDELT{k}|(PC|CD)0*{k}_\d+|RESTFRQ|RESTWAV)$")
    for key in [key for key in header if own.match(key)] + ["RESTFREQ"]:
        header.remove(key, ignore_missing=True, remove_all=True)
    cards = new.to_header()
    for key in cards:
        if own.match(key):
            header[key] = (cards[key], cards.comments[key])
    return readable_header(header.tostring(padding=False))


def with_spectral_unit(
    obj: xr.DataArray,
    unit: Any,
    velocity_convention: str | None = None,
    rest_value: Any = None,
    air: bool = False,
) -> xr.DataArray:
    """``obj`` with its spectral axis in ``unit`` (see the module docstring)."""
    import astropy.units as u

    dim = spectral_dim(obj)
    wcs, fits_axis = spectral_wcs(obj)
    unit = u.Unit(unit)
    spec = wcs.wcs.spec
    new = wcs.deepcopy()
    if rest_value is not None:
        _set_rest(new, rest_value)
    ctype = _target_ctype(new.wcs.ctype[spec], unit, velocity_convention, air, describe(obj))
    try:
        new.wcs.sptr(ctype, spec)
        new.wcs.set()
    except Exception as err:  # wcslib's errors are a zoo of types
        hint = (
            "" if new.wcs.restfrq or new.wcs.restwav else " (no RESTFRQ/RESTWAV: pass rest_value=)"
        )
        raise SpectralError(
            f"{describe(obj)}: cannot express {wcs.wcs.ctype[spec]} as {ctype[:4]}{hint}: "
            f"{' '.join(str(err).split())}"
        ) from err
    pixels = np.asarray(obj[f"pixel_{dim}"].values, dtype=float)
    grid = [np.zeros(pixels.size) for _ in range(new.pixel_n_dim)]
    grid[fits_axis - 1] = pixels
    world = np.asarray(new.pixel_to_world_values(*grid)[spec], dtype=float)
    si = u.Unit(new.wcs.cunit[spec])
    try:
        values = (world * si).to_value(unit)
    except u.UnitConversionError as err:
        raise SpectralError(f"{describe(obj)}: {err}") from err
    name = _prefix(new.wcs.ctype[spec]).lower()
    attrs = {"units": unit.to_string(), "ctype": new.wcs.ctype[spec]}
    if _prefix(new.wcs.ctype[spec]) in _DOPPLER:
        attrs["velocity_convention"] = _convention_of(new.wcs.ctype[spec])
    out = obj if name == dim else obj.rename({dim: name, f"pixel_{dim}": f"pixel_{name}"})
    out = out.assign_coords({name: xr.Variable(name, values, attrs)})
    out.attrs = {**obj.attrs, "fits_header": _header_text(obj.attrs["fits_header"], new, fits_axis)}
    return with_world_index(out)  # label slices in either order, as the engine's


def _convention_of(ctype: str) -> str:
    velocity = _prefix(ctype)
    return next((k for k, v in CONVENTIONS.items() if v == velocity), "optical")


def rest_equivalencies(obj: xr.DataArray) -> list[Any]:
    """``u.spectral()`` plus the Doppler equivalency of ``obj``'s velocity axis, if any."""
    import astropy.units as u

    eq = u.spectral()
    wcs, _ = spectral_wcs(obj)
    ctype = _prefix(str(obj[spectral_dim(obj)].attrs.get("ctype", wcs.wcs.ctype[wcs.wcs.spec])))
    rest = wcs.wcs.restfrq * u.Hz if wcs.wcs.restfrq else wcs.wcs.restwav * u.m
    if ctype in _DOPPLER and rest.value:
        eq = eq + getattr(u, _DOPPLER[ctype])(rest)
    return eq


def spectral_slab(obj: xr.DataArray, lo: Any, hi: Any) -> xr.DataArray:
    """The channels from the one closest to ``lo`` to the one closest to ``hi`` (inclusive).

    ``lo`` and ``hi`` are Quantities in any spectral unit (numbers: the axis's own unit) and
    may come in either order; the axis may ascend or descend. Bounds both beyond the same
    end of the axis raise :class:`SpectralError` (spectral-cube would return one edge
    channel).
    """
    import astropy.units as u

    dim = spectral_dim(obj)
    axis_unit = u.Unit(str(obj[dim].attrs.get("units", "")) or u.dimensionless_unscaled)
    values = np.asarray(obj[dim].values, dtype=float)
    bounds = []
    for b in (lo, hi):
        try:
            q = b if isinstance(b, u.Quantity) else u.Quantity(b, axis_unit)
            bounds.append(q.to_value(axis_unit, rest_equivalencies(obj)))
        except u.UnitConversionError as err:
            raise SpectralError(f"{describe(obj)}: slab bound {b}: {err}") from err
    first, last = np.nanmin(values), np.nanmax(values)
    if max(bounds) < first or min(bounds) > last:
        raise SpectralError(
            f"{describe(obj)}: slab {lo} .. {hi} lies outside the spectral axis "
            f"{first:g} .. {last:g} {axis_unit}"
        )
    i, j = sorted(int(np.nanargmin(np.abs(values - b))) for b in bounds)
    return obj.isel({dim: slice(i, j + 1)})
