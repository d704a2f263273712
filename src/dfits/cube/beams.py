"""The beam of a radio cube and its brightness units: BMAJ/BMIN/BPA, CASA beam tables, Jy/beam ↔ K.

The contract:

* :func:`cube_beams` returns the cube's resolution as ``radio_beam`` objects: one
  :class:`radio_beam.Beam` from the header's BMAJ/BMIN/BPA (degrees), or, for a CASA
  multi-beam cube (a ``BEAMS`` binary table beside the image, CASAMBM), a
  :class:`radio_beam.Beams` with one beam per channel of the DataArray — the table's rows
  picked by the ``CHAN`` of each remaining channel (and the ``POL`` of the Stokes plane),
  so a slab keeps its channels' beams. BMAJ/BMIN units come from the table's TUNITn
  (arcsec when absent, as CASA ≤ 4.7 wrote them), BPA in degrees. No beam: ``None``.
* :func:`to_unit` converts the brightness unit lazily with one factor per channel from
  astropy's equivalencies (``Beam.jtok_equiv`` at each channel's frequency, the beam area),
  so Jy/beam → K equals spectral-cube's ``cube.to(u.K)``, per channel where beams vary.
* :func:`jy_per_pixel` gives the per-channel factors that turn a brightness into Jy per
  pixel, for aperture sums in Jy: Jy/beam divided by the beam area in pixels (the beam's
  solid angle over the pixel's, ``proj_plane_pixel_area`` of the celestial WCS, as
  spectral-cube and radio-beam take them); K through Jy/sr at each channel's frequency
  (astropy's ``brightness_temperature``: the beam cancels, so none is needed) times the
  pixel's solid angle; Jy/sr times it; Jy/pixel (and Jy) as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from dfits.cube import spectral
from dfits.cube.errors import BeamError

__all__ = [
    "beam_cards",
    "beam_source",
    "cube_beams",
    "frequencies",
    "jy_per_pixel",
    "keep_beams",
    "to_unit",
]


def _header(obj: xr.DataArray) -> Any:
    from dfits.format.header import Header
    from dfits.format.headertext import card_text

    text = obj.attrs.get("fits_header")
    if not isinstance(text, str):
        return None
    return Header(card_text(text).encode("latin-1"))


def _header_beam(obj: xr.DataArray, header: Any) -> Any:
    import astropy.units as u
    from radio_beam import Beam

    try:
        bmaj = float(header["BMAJ"])
        bmin = float(header.get("BMIN", bmaj))
        bpa = float(header.get("BPA", 0.0))
    except (TypeError, ValueError) as err:
        raise BeamError(f"{spectral.describe(obj)}: BMAJ/BMIN/BPA not numbers: {err}") from err
    if not (np.isfinite([bmaj, bmin, bpa]).all() and bmaj > 0 and bmin > 0):
        raise BeamError(
            f"{spectral.describe(obj)}: beam BMAJ={bmaj!r} BMIN={bmin!r} BPA={bpa!r} is unusable"
        )
    return Beam(major=bmaj * u.deg, minor=bmin * u.deg, pa=bpa * u.deg)


def _beam_table(obj: xr.DataArray) -> Any:
    """The HDU of the file's ``BEAMS`` table, or None."""
    # dfits.file, not the package root: the root gathers every layer, cube's upper ones too
    from dfits.file import open as open_fits

    source = beam_source(obj)
    if source is None:
        return None
    # Opened afresh (headers only): the xarray layer's cache of open files is above this one.
    f = open_fits(source[0], storage_options=source[1])
    for hdu in f:
        if hdu.is_table and str(hdu.header.get("EXTNAME", "")).strip().upper() == "BEAMS":
            return hdu
    return None


def beam_source(obj: xr.DataArray) -> tuple[str, Any] | None:
    """(path, storage options) of the file whose beam table describes ``obj``, or None."""
    enc = obj.variable.encoding
    if "dfits_beam_source" in enc:
        return enc["dfits_beam_source"]
    if "dfits_source" not in enc:
        return None
    return (enc["dfits_source"], enc.get("dfits_storage_options"))


def keep_beams(obj: xr.DataArray, out: xr.DataArray) -> xr.DataArray:
    """``out`` (new data on ``obj``'s grid) still finding ``obj``'s beam table.

    Only the table's location is kept: the file's own encoding would make the accessor read
    the file's values instead of ``out``'s.
    """
    source = beam_source(obj)
    out.encoding = {} if source is None else {"dfits_beam_source": source}
    return out


def _unit(hdu: Any, name: str, default: str) -> Any:
    import astropy.units as u

    text = next((c.unit for c in hdu.columns if c.name.upper() == name), None) or default
    # AIPS writes DEGREES, which is no FITS unit
    text = {"DEGREES": "deg", "ARCSEC": "arcsec"}.get(str(text).strip().upper(), text)
    return u.Unit(text)


def _table_beams(obj: xr.DataArray, hdu: Any) -> Any:
    """One beam per channel of ``obj`` from the CASA table ``hdu``."""
    from radio_beam import Beams

    from dfits.array.scheduler import compute

    where = f"{spectral.describe(obj)}, BEAMS table"
    try:
        cols = compute(*(hdu.column(c) for c in ("BMAJ", "BMIN", "BPA", "CHAN", "POL")))
    except KeyError as err:
        raise BeamError(f"{where}: {err.args[0]}") from err
    bmaj, bmin, bpa = (np.asarray(c, dtype=float) for c in cols[:3])
    chan, pol = (np.asarray(c, dtype=np.int64) for c in cols[3:])
    dim = spectral.spectral_dim(obj)
    channels = np.atleast_1d(obj[f"pixel_{dim}"].values).astype(np.int64)
    plane = 0
    if "pixel_stokes" in obj.coords:
        picked = np.atleast_1d(obj["pixel_stokes"].values)
        if picked.size != 1:
            raise BeamError(f"{where}: select one Stokes plane first (beams differ per POL)")
        plane = int(picked[0])
    rows = {(int(c), int(p)): i for i, (c, p) in enumerate(zip(chan, pol, strict=True))}
    missing = [int(c) for c in channels if (int(c), plane) not in rows]
    if missing:
        raise BeamError(f"{where}: no row for channel(s) {missing[:5]} of POL {plane}")
    index = np.array([rows[(int(c), plane)] for c in channels])
    return Beams(
        major=bmaj[index] * _unit(hdu, "BMAJ", "arcsec"),
        minor=bmin[index] * _unit(hdu, "BMIN", "arcsec"),
        pa=bpa[index] * _unit(hdu, "BPA", "deg"),
    )


def cube_beams(obj: xr.DataArray) -> Any:
    """``obj``'s :class:`radio_beam.Beam`, its per-channel :class:`radio_beam.Beams`, or None."""
    header = _header(obj)
    multi = header is not None and header.get("CASAMBM") is not False
    table = _beam_table(obj) if multi else None
    if table is not None:
        return _table_beams(obj, table)
    if header is None or "BMAJ" not in header:
        return None
    return _header_beam(obj, header)


def frequencies(obj: xr.DataArray) -> Any:
    """The frequency of each channel of ``obj`` (a Quantity), from its spectral axis."""
    import astropy.units as u

    dim = spectral.spectral_dim(obj)
    freq = obj if spectral._prefix(str(obj[dim].attrs.get("ctype", ""))) == "FREQ" else None
    if freq is None:
        freq = spectral.with_spectral_unit(obj, "Hz")
    fdim = spectral.spectral_dim(freq)
    unit = u.Unit(str(freq[fdim].attrs.get("units", "Hz")))
    return (np.atleast_1d(np.asarray(freq[fdim].values, dtype=float)) * unit).to(u.Hz)


def _factors(obj: xr.DataArray, old: Any, new: Any) -> np.ndarray:
    """Per-channel factors (or one) taking ``old`` to ``new``, as spectral-cube finds them."""
    import astropy.units as u
    from radio_beam import Beams

    if old.is_equivalent(new):
        return np.array([old.to(new)])
    beams = cube_beams(obj)
    if beams is None:
        raise BeamError(f"{spectral.describe(obj)}: converting {old} to {new} needs a beam")
    freq = frequencies(obj)
    one = 1.0 * old
    try:
        if not isinstance(beams, Beams):
            return np.atleast_1d(
                one.to_value(new, beams.jtok_equiv(freq) + beams.beamarea_equiv)
            ).astype(float)
        # astropy's beam-area equivalency takes one area: one conversion per channel
        pairs = zip(beams, freq, strict=True)
        return np.array([one.to_value(new, b.jtok_equiv(f) + b.beamarea_equiv) for b, f in pairs])
    except u.UnitConversionError as err:
        raise BeamError(f"{spectral.describe(obj)}: {err}") from err


def to_unit(obj: xr.DataArray, unit: Any) -> xr.DataArray:
    """``obj`` in brightness ``unit`` (K, Jy/beam, Jy/sr, mJy/beam...), lazily, per channel."""
    import astropy.units as u

    from dfits.cube.lazy import as_dask
    from dfits.cube.results import unit_string

    text = str(obj.attrs.get("units", ""))
    try:
        old, new = u.Unit(text, parse_strict="raise"), u.Unit(unit)
    except ValueError as err:
        raise BeamError(f"{spectral.describe(obj)}: units {text!r} -> {unit!r}: {err}") from err
    factors = _factors(obj, old, new)
    x = as_dask(obj)
    if factors.size > 1:
        shape = [obj.sizes[d] if d == spectral.spectral_dim(obj) else 1 for d in obj.dims]
        factors = factors.reshape(shape)
    dtype = np.result_type(obj.dtype, np.float32)
    data = (x * factors.astype(dtype)).astype(dtype, copy=False)
    out = keep_beams(obj, obj.copy(data=data))
    out.attrs["units"] = unit_string(new.to_string())
    return out


def pixel_solid_angle(obj: xr.DataArray) -> Any:
    """The solid angle of one pixel of ``obj``'s celestial WCS (a Quantity in sr)."""
    import astropy.units as u
    from astropy.wcs.utils import proj_plane_pixel_area

    from dfits.cube.errors import WCSError
    from dfits.cube.wcs import dataarray_wcs

    wcs = dataarray_wcs(obj)[0].celestial
    if wcs.naxis != 2:
        raise WCSError(f"{spectral.describe(obj)}: no celestial WCS, so no pixel solid angle")
    return (proj_plane_pixel_area(wcs) * u.deg**2).to(u.sr)


def jy_per_pixel(obj: xr.DataArray) -> np.ndarray | None:
    """Factors (one, or one per channel of ``obj``) turning its brightness unit into Jy per
    pixel; None when its unit is no brightness (a sum then keeps it).

    Jy/beam needs the beam: without BMAJ/BMIN cards or a ``BEAMS`` table a
    :class:`BeamError` names the file and what is missing.
    """
    import astropy.units as u

    text = str(obj.attrs.get("units", ""))
    try:
        old = u.Unit(text, parse_strict="raise")
    except ValueError:
        return None
    per_pixel = u.Jy / u.pix
    if old.is_equivalent(per_pixel) or old.is_equivalent(u.Jy):
        return np.array([(1.0 * old).to_value(per_pixel if old.is_equivalent(per_pixel) else u.Jy)])
    if old.is_equivalent(u.Jy / u.sr):
        return np.array([(1.0 * old * pixel_solid_angle(obj)).to_value(u.Jy)])
    if old.is_equivalent(u.K):
        per_sr = (1.0 * old).to(u.Jy / u.sr, u.brightness_temperature(frequencies(obj)))
        return np.atleast_1d((per_sr * pixel_solid_angle(obj)).to_value(u.Jy))
    if not old.is_equivalent(u.Jy / u.beam):
        return None
    beams = cube_beams(obj)
    if beams is None:
        raise BeamError(
            f"{spectral.describe(obj)}: a flux in Jy from BUNIT {text!r} needs the beam, and "
            "there is none: no BMAJ/BMIN cards in the header and no BEAMS table"
        )
    # the beam area in pixels: its solid angle over the pixel's (per channel for Beams)
    pixels_per_beam = (beams.sr / pixel_solid_angle(obj)).to_value(u.dimensionless_unscaled)
    return np.atleast_1d((1.0 * old).to_value(u.Jy / u.beam) / pixels_per_beam)


def beam_cards(beam: Any) -> dict[str, float]:
    """BMAJ, BMIN, BPA (degrees) of a :class:`radio_beam.Beam`."""
    import astropy.units as u

    return {
        "BMAJ": float(beam.major.to_value(u.deg)),
        "BMIN": float(beam.minor.to_value(u.deg)),
        "BPA": float(beam.pa.to_value(u.deg)),
    }
