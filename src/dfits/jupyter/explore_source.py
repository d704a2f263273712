"""What the cube explorer looks at: one image HDU (or HDU-like view), its axes and its labels.

The contract: :func:`as_source` turns a path, an HDU, a DataArray or a dask array into a
:class:`Source`: an object with ``section[...]`` (eager reads: a file's
:class:`~dfits.section.Section`, or :class:`~dfits.xarray.views.DaskSection` over a dask
array), the shown axes (:func:`~dfits.jupyter.axes.view_axes`: spectral axis and image plane
from the WCS, never by position), the one selectable extra axis (Stokes; degenerate axes are
hidden) and :class:`Labels`: channel values in world units (frequency, or velocity when the
header has a rest frequency) and the sky position under a pixel (RA/Dec sexagesimal through
astropy). Bad input (a table, a 1-D or 0-D HDU, a header whose WCS astropy cannot read)
raises a :class:`~dfits.DfitsError` naming file and HDU; a cube with no celestial WCS is
shown on pixel axes and says so. :meth:`Source.check` raises
:class:`~dfits.FileChangedError` / :class:`~dfits.MissingFileError` when a local file
changed or vanished since it was opened (one ``stat`` per read: a truncated mapping would
otherwise kill the kernel with SIGBUS).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dfits.errors import (
    DataError,
    FileChangedError,
    HeaderError,
    MissingFileError,
    UnsupportedError,
)
from dfits.jupyter.axes import Axes, view_axes
from dfits.jupyter.figures import _where

__all__ = ["Labels", "Source", "as_source"]

#: sky frames whose positions read best in sexagesimal
_EQUATORIAL = ("icrs", "fk5", "fk4", "fk4noeterms")


@dataclass
class Labels:
    """Channel values and sky positions of a source, from its header's WCS."""

    values: np.ndarray  # one world value per channel (pixel numbers without a spectral WCS)
    name: str  # "VRAD", "FREQ", "channel", ...
    unit: str  # "km/s", "GHz", "" (pixel)
    celestial: Any = None  # the 2-D celestial WCS of the plane, or None (pixel axes)
    note: str = ""

    def channel(self, k: int) -> str:
        """``"VRAD = 12.345 km/s"``: the label of channel ``k``."""
        if not len(self.values):
            return ""
        value = float(self.values[k])
        return f"{self.name} = {value:.6g} {self.unit}".rstrip()

    def world(self, y: float, x: float) -> dict[str, Any]:
        """The sky position of pixel (y, x) (0-based, file pixels): its text and degrees."""
        if self.celestial is None:
            return {"text": f"pixel x={x:.0f} y={y:.0f} (pixel axes: no celestial WCS)"}
        sky = self.celestial.pixel_to_world(x, y)
        frame = sky.frame.name
        style = "hmsdms" if frame in _EQUATORIAL else "decimal"
        text = sky.to_string(style, sep=":", precision=2) if style == "hmsdms" else (
            sky.to_string("decimal", precision=5)
        )  # fmt: skip
        lon, lat = float(sky.spherical.lon.deg), float(sky.spherical.lat.deg)
        return {"text": f"{text} ({frame})", "lon": lon, "lat": lat, "frame": frame}


@dataclass
class Source:
    """One image to explore (see the module docstring)."""

    hdu: Any
    where: str
    axes: Axes
    extra: int | None  # numpy axis of the selectable extra axis (Stokes), if any
    extra_names: list[str]
    labels: Labels
    path: str | None = None
    stamp: tuple[int, int] | None = None
    owned: list[Any] = field(default_factory=list)

    @property
    def section(self) -> Any:
        return self.hdu.section

    @property
    def nchan(self) -> int:
        return 1 if self.axes.spectral is None else self.axes.shape[self.axes.spectral]

    @property
    def plane_shape(self) -> tuple[int, int]:
        y, x = self.axes.plane
        return self.axes.shape[y], self.axes.shape[x]

    def check(self) -> None:
        """Raise if the local file changed (size or mtime) or vanished since it was opened."""
        if self.path is None or self.stamp is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError as err:
            raise MissingFileError(f"{self.where}: the file vanished while open") from err
        if (st.st_size, st.st_mtime_ns) != self.stamp:
            raise FileChangedError(
                f"{self.where}: the file changed while open (size {self.stamp[0]} -> "
                f"{st.st_size} bytes, or its mtime); open it again"
            )

    def index(self, channel: int, extra: int, y: Any, x: Any) -> tuple[Any, ...]:
        """The file-order index of (channel, extra, y, x); other hidden axes at 0."""
        ax = self.axes
        pick = {ax.plane[0]: y, ax.plane[1]: x}
        if ax.spectral is not None:
            pick[ax.spectral] = channel
        if self.extra is not None:
            pick[self.extra] = extra
        return tuple(pick.get(a, 0) for a in range(len(ax.shape)))


def _full_wcs(header: Any, where: str) -> Any:
    from astropy.wcs import WCS, FITSFixedWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FITSFixedWarning)
            return WCS(header.to_astropy())
    except Exception as err:  # astropy raises many types for a bad WCS
        raise HeaderError(f"{where}: the header's WCS cannot be read by astropy: {err}") from err


def _spectral(wcs: Any, axes: Axes, unit: Any, convention: str) -> tuple[np.ndarray, str, str]:
    """Channel values, name and unit: velocity when a FREQ axis has a rest frequency."""
    import astropy.units as u

    n = axes.shape[axes.spectral]
    k = axes.fits_axis(axes.spectral)
    sub = wcs.sub([k])
    values = sub.wcs_pix2world(np.arange(n, dtype=np.float64), 0)[0]
    ctype = str(sub.wcs.ctype[0]).split("-")[0] or "world"
    native = u.Unit(str(sub.wcs.cunit[0]) or "")
    rest = float(wcs.wcs.restfrq or 0.0)
    if unit is None and native.physical_type == "frequency":
        unit = u.km / u.s if rest > 0 else u.GHz
    if unit is None:
        return values, ctype, _unit_text(native)
    unit = u.Unit(unit)
    doppler = {"radio": u.doppler_radio, "optical": u.doppler_optical,
               "relativistic": u.doppler_relativistic}[convention]  # fmt: skip
    equiv = u.spectral() + (doppler(rest * u.Hz) if rest > 0 else [])
    out = (values * native).to(unit, equivalencies=equiv).value
    name = ctype
    if unit.physical_type == "speed" and native.physical_type != "speed":
        name = {"radio": "VRAD", "optical": "VOPT", "relativistic": "VELO"}[convention]
    return np.asarray(out, dtype=np.float64), name, _unit_text(unit)


def _unit_text(unit: Any) -> str:
    return unit.to_string().replace(" / ", "/")


def _labels(hdu: Any, axes: Axes, where: str, unit: Any, convention: str) -> Labels:
    header = hdu.header
    has_wcs = any(f"CTYPE{i}" in header for i in range(1, len(axes.shape) + 1))
    wcs = _full_wcs(header, where) if has_wcs else None
    note = ""
    if axes.spectral is None:
        values, name, vunit = np.zeros(0), "", ""
    elif wcs is None or len(axes.shape) - 1 - int(wcs.wcs.spec) != axes.spectral:
        values, name, vunit = np.arange(axes.shape[axes.spectral], dtype=float), "channel", ""
    else:
        values, name, vunit = _spectral(wcs, axes, unit, convention)
    celestial = None
    lnglat = {len(axes.shape) - 1 - int(wcs.wcs.lng), len(axes.shape) - 1 - int(wcs.wcs.lat)} \
        if wcs is not None and wcs.has_celestial else set()  # fmt: skip
    if lnglat == set(axes.plane):
        celestial = wcs.celestial
    else:
        note = "pixel axes (no celestial WCS)"
    return Labels(values, name, vunit, celestial, note)


def _extra_axis(hdu: Any, axes: Axes) -> tuple[int | None, list[str]]:
    """The one hidden axis longer than 1 (Stokes, else the first such), and its names."""
    from dfits.cube.coords import stokes_names

    longer = [a for a in axes.fixed if axes.shape[a] > 1]
    if not longer:
        return None, []
    header = hdu.header
    for a in longer:
        k = axes.fits_axis(a)
        if str(header.get(f"CTYPE{k}", "")).strip().upper() == "STOKES":
            crval, cdelt = header.get(f"CRVAL{k}", 1.0), header.get(f"CDELT{k}", 1.0)
            crpix = header.get(f"CRPIX{k}", 1.0)
            codes = crval + (np.arange(axes.shape[a]) + 1 - crpix) * cdelt
            return a, [str(s) for s in stokes_names(codes)]
    a = longer[0]
    return a, [f"{i}" for i in range(axes.shape[a])]


def _hdu_of(obj: Any, hdu: Any) -> tuple[Any, list[Any]]:
    """The HDU-like view of ``obj`` and what the explorer opened (to close with it)."""
    import sys

    if isinstance(obj, str | os.PathLike):
        import dfits

        f = dfits.open(obj)
        if hdu is not None:
            return f[hdu], [f]
        images = [h for h in f if h.is_image and len(h.shape or ()) >= 2]
        if not images:
            raise UnsupportedError(f"file {str(obj)!r}: no image HDU of 2 or more axes")
        return max(images, key=lambda h: len(h.shape)), [f]
    if hasattr(obj, "section") and hasattr(obj, "header"):
        return obj, []
    xr = sys.modules.get("xarray")
    if xr is not None and isinstance(obj, xr.DataArray):
        if isinstance(obj.attrs.get("fits_header"), str):
            import dfits.xarray

            return obj.fits._as_hdu(), []
        return _array_hdu(obj.data, str(obj.name or "")), []
    if hasattr(obj, "dask") or isinstance(obj, np.ndarray):
        return _array_hdu(obj, ""), []
    raise UnsupportedError(
        f"explore takes a path, an HDU, a DataArray or a dask array, not {type(obj).__name__}"
    )


def _array_hdu(data: Any, name: str) -> Any:
    import dask.array as da

    from dfits.format.header import Header
    from dfits.xarray.views import ArrayHDU

    return ArrayHDU(da.asarray(data), Header(b""), name)


def as_source(obj: Any, hdu: Any = None, *, unit: Any = None, convention: str = "radio") -> Source:
    """The :class:`Source` of ``obj`` (path, HDU, DataArray, dask array); ``hdu`` picks the
    HDU of a path (default: the image with the most axes), ``unit``/``convention`` the
    channel labels' unit (default: km/s radio velocity when the header has a rest
    frequency, GHz for other frequency axes, else the axis' own unit)."""
    view, owned = _hdu_of(obj, hdu)
    where = _where(view)
    if not getattr(view, "is_image", False) or not view.shape:
        raise UnsupportedError(f"{where}: a {view.kind} HDU has no image to explore")
    if len(view.shape) < 2:
        raise DataError(f"{where}: explore needs an image of 2 or more axes, not shape "
                        f"{tuple(view.shape)}")  # fmt: skip
    if convention not in ("radio", "optical", "relativistic"):
        raise DataError(f"{where}: unknown velocity convention {convention!r}")
    axes = view_axes(view.header, tuple(view.shape))
    longer = [a for a in range(len(axes.shape)) if a not in axes.plane and axes.shape[a] > 1]
    if axes.spectral is None and longer:
        # no spectral axis in the WCS: the nearest longer axis above the plane is the
        # channel axis, labelled by channel number
        axes = Axes(axes.shape, longer[-1], axes.plane)
    labels = _labels(view, axes, where, unit, convention)
    extra, names = _extra_axis(view, axes)
    path = stamp = None
    filename = getattr(getattr(view, "_file", None), "filename", None)
    if isinstance(filename, str) and os.path.isfile(filename):
        st = os.stat(filename)
        path, stamp = filename, (st.st_size, st.st_mtime_ns)
    return Source(view, where, axes, extra, names, labels, path, stamp, owned)
