"""What a quick look reads from the header: the spectral axis, the channel width, the beam.

The spectral axis is the one astropy's WCS calls spectral (``wcs.wcs.spec``), never "the
slowest axis": HST_WFPC_II stacks 4 camera chips on a ``GROUP_NUMBER`` axis that is no
spectrum. Images are drawn masked so NaN (and BLANK, which reads as NaN) stay blank.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

__all__ = ["channel_width", "draw_beam", "masked", "spectral_axis"]


def _wcs(header: Any) -> Any:
    from astropy.wcs import WCS, FITSFixedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FITSFixedWarning)
        return WCS(header.to_astropy())


def spectral_axis(header: Any, ndim: int) -> int | None:
    """The numpy axis (of ``ndim``) that the header's WCS calls spectral, or None."""
    try:
        spec = int(_wcs(header).wcs.spec)
    except Exception:  # a WCS astropy cannot build has no spectral axis to plot
        return None
    if spec < 0 or spec >= ndim:
        return None
    return ndim - 1 - spec


def channel_width(header: Any, fits_axis: int) -> tuple[float, str]:
    """|CDELT| of the spectral axis and its unit (``.fits.moment(0)``'s Δv), else (1, "")."""
    cdelt = header.get(f"CDELT{fits_axis}", header.get(f"CD{fits_axis}_{fits_axis}"))
    if not isinstance(cdelt, int | float) or not math.isfinite(cdelt) or cdelt == 0:
        return 1.0, ""
    unit = str(header.get(f"CUNIT{fits_axis}", "") or "").strip()
    if not unit:
        ctype = str(header.get(f"CTYPE{fits_axis}", "") or "")[:4]
        # FITS defaults: Hz for frequency, m/s for velocities, m for wavelengths
        unit = {"FREQ": "Hz", "VRAD": "m/s", "VOPT": "m/s", "VELO": "m/s", "WAVE": "m"}.get(
            ctype, ""
        )
    return abs(float(cdelt)), unit


def masked(image: np.ndarray) -> np.ma.MaskedArray:
    """The image with its non-finite pixels masked: drawn blank, not at the colormap's end."""
    return np.ma.masked_invalid(np.asarray(image, dtype=np.float64))


def draw_beam(ax: Any, header: Any, wcs: Any) -> Any:
    """Draw the BMAJ/BMIN/BPA beam in the lower-left corner; None if unknown or no WCS."""
    values = [header.get(k) for k in ("BMAJ", "BMIN", "BPA")]
    if wcs is None or not all(isinstance(v, int | float) for v in values[:2]):
        return None
    bmaj, bmin = float(values[0]), float(values[1])
    bpa = float(values[2]) if isinstance(values[2], int | float) else 0.0
    from astropy.wcs.utils import proj_plane_pixel_scales
    from matplotlib.patches import Ellipse

    scale = proj_plane_pixel_scales(wcs)  # degrees per (decimated) pixel, like BMAJ
    if not (bmaj > 0 and bmin > 0 and np.all(scale > 0)):
        return None
    width, height = bmin / scale[0], bmaj / scale[1]
    corner = 0.6 * max(width, height) + 1.0
    # BPA counts from north towards east; with north up and east left that is
    # matplotlib's counter-clockwise angle of the major (height) axis
    ellipse = Ellipse(
        (corner - 0.5, corner - 0.5), width, height, angle=bpa,
        facecolor="none", edgecolor="white", hatch="///", lw=1.2, label="beam",
    )  # fmt: skip
    ax.add_patch(ellipse)
    return ellipse
