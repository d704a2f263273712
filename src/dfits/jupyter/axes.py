"""Which axes a quick look shows: the spectral axis and the image plane, found from the WCS.

The contract: :func:`view_axes` picks, from the header's WCS and never by position, the
numpy axis of the spectrum (``wcs.wcs.spec``) and the two axes of the image plane (the
celestial ones, else the last two that are not spectral); every other axis (Stokes, a
degenerate axis, HST's chip groups) is fixed at its first plane. :class:`Axes` turns strides
given in *display order* — (spectrum, y, x), or (y, x) — into an index of the file's numpy
array, and arranges what that index returns back into display order. So a FREQ-first cube
(numpy ``(dec, ra, freq)``) or a ``(freq, stokes, dec, ra)`` cube looks like any other.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Axes", "view_axes"]


@dataclass(frozen=True)
class Axes:
    """The file's numpy ``shape``, its ``spectral`` axis (or None) and its image ``plane``."""

    shape: tuple[int, ...]
    spectral: int | None
    plane: tuple[int, ...]

    @property
    def display(self) -> tuple[int, ...]:
        """The shown axes in display order: (spectral, y, x), or the plane alone."""
        return self.plane if self.spectral is None else (self.spectral, *self.plane)

    @property
    def kept(self) -> tuple[int, ...]:
        """The shown axes in file order (what indexing with :meth:`index` leaves)."""
        return tuple(sorted(self.display))

    @property
    def fixed(self) -> tuple[int, ...]:
        """Axes held at their first plane."""
        return tuple(a for a in range(len(self.shape)) if a not in self.display)

    @property
    def tail(self) -> tuple[int, ...]:
        """The shown shape in display order."""
        return tuple(self.shape[a] for a in self.display)

    def file_steps(self, steps: tuple[int, ...]) -> tuple[int, ...]:
        """Display-order strides as file-order strides (a fixed axis: one sample)."""
        by_axis = dict(zip(self.display, steps, strict=True))
        return tuple(by_axis.get(a, max(n, 1)) for a, n in enumerate(self.shape))

    def index(self, steps: tuple[int, ...] | None = None) -> tuple[Any, ...]:
        """The file-order index: fixed axes at 0, shown axes strided by ``steps``."""
        by_axis = dict(zip(self.display, steps or (1,) * len(self.display), strict=True))
        return tuple(
            slice(None, None, by_axis[a]) if a in by_axis else 0 for a in range(len(self.shape))
        )

    def position(self, axis: int) -> int:
        """Where a shown axis lands in an array indexed by :meth:`index`."""
        return self.kept.index(axis)

    def arrange(self, array: np.ndarray) -> np.ndarray:
        """An array indexed by :meth:`index` (shown axes in file order) in display order."""
        return np.moveaxis(array, [self.position(a) for a in self.display], range(array.ndim))

    def fits_axis(self, axis: int) -> int:
        """The FITS axis number (1-based, fastest first) of numpy ``axis``."""
        return len(self.shape) - axis


def _wcs(header: Any) -> Any:
    from astropy.wcs import WCS, FITSFixedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FITSFixedWarning)
        return WCS(header.to_astropy())


def view_axes(header: Any, shape: tuple[int, ...]) -> Axes:
    """The axes a quick look of an image of ``shape`` shows (see the module docstring)."""
    nd = len(shape)
    spec = lng = lat = -1
    try:
        wcs = _wcs(header).wcs
        spec, lng, lat = int(wcs.spec), int(wcs.lng), int(wcs.lat)
    except Exception:  # a WCS astropy cannot build: no spectral axis, the last two axes
        pass
    numpy_axis = {k: nd - 1 - v for k, v in (("spec", spec), ("lng", lng), ("lat", lat))}
    valid = {k: a for k, a in numpy_axis.items() if 0 <= a < nd}
    spectral = valid.get("spec")
    if "lng" in valid and "lat" in valid:
        plane = tuple(sorted((valid["lng"], valid["lat"])))
    else:
        plane = tuple(a for a in range(nd) if a != spectral)[-2:]
    if spectral is None or nd < 3 or spectral in plane or len(plane) < 2:
        return Axes(tuple(shape), None, tuple(range(nd))[-2:] if len(plane) < 2 else plane)
    return Axes(tuple(shape), spectral, plane)
