from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits
from astropy.wcs import WCS


def celestial_wcs(proj: str = "SIN", matrix: str = "PC", extra: tuple = ()) -> WCS:
    """A 2-D (plus ``extra`` (ctype, crval, cdelt, cunit) axes) WCS, rotated by 20°."""
    n = 2 + len(extra)
    w = WCS(naxis=n)
    w.wcs.ctype = [f"RA---{proj}", f"DEC--{proj}", *[e[0] for e in extra]]
    w.wcs.crval = [150.0, 2.0, *[e[1] for e in extra]]
    w.wcs.crpix = [4.5, 3.0, *[1.0] * len(extra)]
    w.wcs.cunit = ["deg", "deg", *[e[3] for e in extra]]
    c, s = np.cos(np.radians(20)), np.sin(np.radians(20))
    rot = np.eye(n)
    rot[:2, :2] = [[c, -s], [s, c]]
    scale = np.array([-1e-3, 1e-3, *[e[2] for e in extra]])
    if matrix == "CD":
        w.wcs.cd = rot * scale[:, None]
    else:
        w.wcs.pc = rot
        w.wcs.cdelt = scale
    return w


CUBE_EXTRA = (("FREQ", 1.0e11, 2.0e6, "Hz"), ("STOKES", 1.0, 1.0, ""))


def write(path, data, wcs: WCS | None = None, **cards) -> str:
    header = wcs.to_header() if wcs is not None else fits.Header()
    for k, v in cards.items():
        header[k] = v
    fits.PrimaryHDU(data, header=header).writeto(path, overwrite=True)
    return str(path)


@pytest.fixture(scope="session")
def cube_data() -> np.ndarray:
    rng = np.random.default_rng(42)
    data = rng.random((2, 7, 12, 10)).astype(">f4") + 0.1
    data[0, 3, 5, 4] = np.nan
    return data


@pytest.fixture(scope="session")
def cube(tmp_path_factory, cube_data) -> tuple[str, WCS]:
    """4-D (stokes, freq, y, x) cube, SIN, rotated PC, BUNIT Jy/beam."""
    w = celestial_wcs("SIN", "PC", CUBE_EXTRA)
    path = tmp_path_factory.mktemp("cube") / "cube.fits"
    path = write(path, cube_data, w, BUNIT="Jy/beam")
    return path, reread(path)


def reread(path) -> WCS:
    """The WCS as stored (exact comparisons need the file's 14-digit keyword values)."""
    return WCS(fits.getheader(path))
