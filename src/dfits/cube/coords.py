"""WCS → xarray dimensions and coordinates, and back. Pure: headers and numbers in, no files.

The contract:

* :func:`plan_axes` names every pixel axis. Separable world axes are named after their
  quantity (``freq``, ``vrad``, ``stokes``, ...) and get exact 1-D values
  (:func:`axis_values`, equal to ``wcs.pixel_to_world_values``); the two celestial pixel axes
  are ``y`` and ``x`` with 2-D world values computed on demand for any block
  (:func:`celestial_block`); anything else is ``x``, ``y``, ``z``, ``axis4``, ... by FITS axis.
* :func:`sliced_wcs` rebuilds the WCS of a sub-array from the original WCS and the pixel
  indices (start, step, or a single dropped index) that the sub-array still covers.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfits.cube.errors import WCSError

if TYPE_CHECKING:
    from astropy.wcs import WCS

__all__ = [
    "STOKES_NAMES",
    "AxisPlan",
    "WCSPlan",
    "axis_values",
    "celestial_block",
    "parse_wcs",
    "plan_axes",
    "sliced_wcs",
    "stokes_names",
]

STOKES_NAMES = {1: "I", 2: "Q", 3: "U", 4: "V", -1: "RR", -2: "LL", -3: "RL", -4: "LR",
                -5: "XX", -6: "YY", -7: "XY", -8: "YX"}  # fmt: skip
_CELESTIAL = {"RA": "ra", "DEC": "dec", "GLON": "glon", "GLAT": "glat", "ELON": "elon",
              "ELAT": "elat"}  # fmt: skip
_KEYWORD = re.compile(r"\b(?:CTYPE|CUNIT|CRVAL|CDELT|CRPIX|CROTA|PC|CD|PV|PS)[0-9A-Za-z_]*")


@dataclass(frozen=True)
class AxisPlan:
    """One pixel axis: its FITS number (1-based), dimension name and world role."""

    fits_axis: int
    dim: str
    kind: str  # "world" (separable, 1-D values), "celestial" or "pixel"
    world: int | None = None  # world axis index for "world"
    units: str = ""
    ctype: str = ""


@dataclass(frozen=True)
class WCSPlan:
    """Dimensions in numpy order plus the celestial coordinate names, if any."""

    axes: tuple[AxisPlan, ...]  # numpy order (last FITS axis first)
    lon: str | None = None
    lat: str | None = None
    lon_world: int | None = None
    lat_world: int | None = None

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(a.dim for a in self.axes)


def _keyword_of(err: Exception) -> str:
    found = _KEYWORD.findall(str(err))
    return found[0] if found else "the WCS keywords"


@functools.lru_cache(maxsize=64)
def _wcs_from_text(text: str) -> WCS:
    from astropy.wcs import WCS

    from dfits.format.header import Header

    header = Header(text.encode("latin-1")).to_astropy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FITSFixedWarning chatter; real failures raise
        wcs = WCS(header)
        wcs.wcs.set()
    return wcs


def parse_wcs(text: str) -> WCS:
    """Return the WCS of a header text (cards as a string), or raise :class:`WCSError`.

    The result is cached and shared: callers copy it before changing it.
    """
    try:
        return _wcs_from_text(text)
    except Exception as err:  # astropy raises a zoo of types (ValueError, WcsError, ...)
        raise WCSError(f"{_keyword_of(err)}: {' '.join(str(err).split())}") from err


def _prefix(ctype: str) -> str:
    return ctype.split("-")[0].strip().upper()


def plan_axes(wcs: WCS | None, ndim: int) -> WCSPlan:
    """Name the ``ndim`` pixel axes of ``wcs`` (``None``: pixel axes only).

    Examples
    --------
    >>> plan_axes(None, 3).dims
    ('z', 'y', 'x')
    """
    names: dict[int, str] = {}
    kinds: dict[int, tuple[str, int | None]] = {}
    plan_lon = plan_lat = None
    lon_world = lat_world = None
    units: dict[int, str] = {}
    ctypes: dict[int, str] = {}
    if wcs is not None and wcs.pixel_n_dim == ndim:
        corr = np.asarray(wcs.axis_correlation_matrix)  # world × pixel
        ctype = list(wcs.wcs.ctype)
        cunit = [str(u) for u in wcs.wcs.cunit]
        lng, lat = wcs.wcs.lng, wcs.wcs.lat
        if lng >= 0 and lat >= 0:
            pix = sorted(set(np.flatnonzero(corr[lng] | corr[lat]).tolist()))
            worlds = set(np.flatnonzero(corr[:, pix].any(axis=1)).tolist())
            if len(pix) == 2 and worlds == {lng, lat}:
                names[pix[0]], names[pix[1]] = "x", "y"
                for p in pix:
                    kinds[p] = ("celestial", None)
                plan_lon = _CELESTIAL.get(_prefix(ctype[lng]), _prefix(ctype[lng]).lower())
                plan_lat = _CELESTIAL.get(_prefix(ctype[lat]), _prefix(ctype[lat]).lower())
                lon_world, lat_world = lng, lat
        for p in range(ndim):
            if p in kinds:
                continue
            worlds = np.flatnonzero(corr[:, p])
            if len(worlds) == 1 and corr[worlds[0]].sum() == 1 and _prefix(ctype[worlds[0]]):
                w = int(worlds[0])
                kinds[p] = ("world", w)
                units[p], ctypes[p] = cunit[w], ctype[w]
                base = _prefix(ctype[w]).lower()
                name, k = base, 2
                while name in names.values() or name in (plan_lon, plan_lat):
                    name, k = f"{base}{k}", k + 1
                names[p] = name
    fallback = ["x", "y", "z"]
    for p in range(ndim):
        if p in names:
            continue
        name = fallback[p] if p < 3 else f"axis{p + 1}"
        if name in names.values():
            name = f"axis{p + 1}"
        names[p] = name
        kinds[p] = ("pixel", None)
    axes = tuple(
        AxisPlan(p + 1, names[p], kinds[p][0], kinds[p][1], units.get(p, ""), ctypes.get(p, ""))
        for p in reversed(range(ndim))
    )
    return WCSPlan(axes, plan_lon, plan_lat, lon_world, lat_world)


def axis_values(wcs: WCS, fits_axis: int, world: int, n: int) -> np.ndarray:
    """World values of a separable axis at pixels ``0..n-1`` (other pixel axes at 0)."""
    pixels = [np.zeros(n) for _ in range(wcs.pixel_n_dim)]
    pixels[fits_axis - 1] = np.arange(n, dtype=float)
    out = wcs.pixel_to_world_values(*pixels)
    return np.asarray(out if wcs.world_n_dim == 1 else out[world], dtype=float)


def stokes_names(values: np.ndarray) -> np.ndarray:
    """Stokes codes (1, 2, ..., -1, ...) as names (``I``, ``Q``, ..., ``RR``, ...)."""
    return np.array([STOKES_NAMES.get(round(v), str(v)) for v in values])


def celestial_block(
    wcs: WCS, x_axis: int, y_axis: int, world: int, ys: np.ndarray, xs: np.ndarray
) -> np.ndarray:
    """World values of celestial axis ``world`` at pixels ``ys × xs`` (outer product)."""
    yy, xx = np.meshgrid(np.asarray(ys, float), np.asarray(xs, float), indexing="ij")
    pixels = [np.zeros(yy.shape) for _ in range(wcs.pixel_n_dim)]
    pixels[x_axis - 1], pixels[y_axis - 1] = xx, yy
    return np.asarray(wcs.pixel_to_world_values(*pixels)[world], dtype=float)


def sliced_wcs(wcs: WCS, picks: dict[int, tuple[int, int] | int]) -> tuple[WCS, list[int]]:
    """The WCS of a sub-array: ``picks`` maps a FITS axis to ``(start, step)`` or a dropped
    index. Dropped axes that are separable are removed; a dropped celestial axis is kept
    (degenerate, 1 pixel) because celestial axes cannot be separated. Also returns the
    original FITS axis numbers of the pixel axes kept, in order.
    """
    out = wcs.deepcopy()
    ww = out.wcs
    if ww.has_crota() and any(isinstance(v, tuple) and v[1] != 1 for v in picks.values()):
        ww.pc = ww.get_pc()  # steps scale PC columns; CROTA has none
    crpix = np.array(ww.crpix, dtype=float)
    for axis, pick in picks.items():
        start, step = (pick, 1) if isinstance(pick, int) else pick
        if step == 0:
            raise WCSError(f"pixel step 0 on FITS axis {axis}")
        crpix[axis - 1] = (crpix[axis - 1] - 1 - start) / step + 1
        if step != 1:
            if out.sip is not None or out.cpdis1 is not None or out.det2im1 is not None:
                raise WCSError("strided slices of a WCS with distortions are not supported")
            if ww.has_cd():
                cd = np.array(ww.cd)
                cd[:, axis - 1] *= step
                ww.cd = cd
            else:
                pc = np.array(ww.get_pc())
                pc[:, axis - 1] *= step
                ww.pc = pc
    ww.crpix = crpix
    corr = np.asarray(wcs.axis_correlation_matrix)
    keep = []
    for axis in range(1, wcs.pixel_n_dim + 1):
        dropped = isinstance(picks.get(axis), int)
        separable = corr[:, axis - 1].sum() == 1 and corr[corr[:, axis - 1]].sum() == 1
        if not (dropped and separable):
            keep.append(axis)
    if len(keep) < wcs.pixel_n_dim:
        out = out.sub(keep)
    out.wcs.set()
    return out, keep


def pixel_picks(pixels: dict[int, Any]) -> dict[int, tuple[int, int] | int]:
    """``{fits_axis: pixel indices}`` → ``{fits_axis: (start, step) | dropped index}``.

    Raises :class:`WCSError` when indices are not evenly spaced (e.g. after ``concat``).
    """
    picks: dict[int, tuple[int, int] | int] = {}
    for axis, values in pixels.items():
        v = np.asarray(values)
        if v.ndim == 0:
            picks[axis] = int(v)
            continue
        if v.size == 0:
            raise WCSError(f"FITS axis {axis} has no pixels left")
        step = int(v[1] - v[0]) if v.size > 1 else 1
        if step == 0 or np.any(v != v[0] + step * np.arange(v.size)):
            raise WCSError(
                f"pixel indices of FITS axis {axis} are not evenly spaced "
                "(combined or re-ordered data): no single WCS describes them"
            )
        picks[axis] = (int(v[0]), step)
    return picks
