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


#: Spectral cubes for the spectral-cube comparisons: (CTYPE, CRVAL, CDELT, CUNIT, 4-D, int16).
SPECTRAL_CUBES = {
    "freq-descending-4d": ("FREQ", 1.0e11 + 1.2e6, -2.0e5, "Hz", True, False),
    "freq-ascending-3d": ("FREQ", 1.0e11 - 1.2e6, 2.0e5, "Hz", False, False),
    "vrad-3d": ("VRAD", -3.0e3, 500.0, "m/s", False, False),
    "vopt-3d-blank": ("VOPT", 2.0e3, -600.0, "m/s", False, True),
}


def spectral_cube_file(directory, kind: str, beam: bool = True) -> str:
    """A small cube of ``SPECTRAL_CUBES[kind]``: NaN (or BLANK) pixels, a line, a beam."""
    ctype, crval, cdelt, cunit, four, blank = SPECTRAL_CUBES[kind]
    extra = ((ctype, crval, cdelt, cunit),) + ((("STOKES", 1.0, 1.0, ""),) if four else ())
    w = celestial_wcs("SIN", "PC", extra)
    nz, ny, nx = 13, 8, 9
    rng = np.random.default_rng(7)
    z = np.arange(nz)[:, None, None]
    centre = 6 + 2 * rng.random((1, ny, nx))
    data = 2 * np.exp(-0.5 * ((z - centre) / 1.8) ** 2) + 0.05 * rng.standard_normal((nz, ny, nx))
    data[:, 2, 3] = np.nan  # a pixel with no valid channel
    data[4, 5, 6] = np.nan
    cards = {"BUNIT": "Jy/beam", "RESTFRQ": 1.0e11, "SPECSYS": "LSRK"}
    if beam:
        cards.update(BMAJ=3.0e-3, BMIN=2.0e-3, BPA=25.0)
    if blank:
        scaled = np.where(np.isnan(data), -32768, np.round(data / 1e-4)).astype(">i2")
        cards.update(BSCALE=1e-4, BZERO=0.0, BLANK=-32768)
        data = scaled
    else:
        data = data.astype(">f4")
    if four:
        data = data[None]
    header = w.to_header()
    for k, v in cards.items():
        header[k] = v
    hdu = fits.PrimaryHDU(data, header=header)
    if blank:
        hdu.header["BSCALE"], hdu.header["BZERO"], hdu.header["BLANK"] = 1e-4, 0.0, -32768
    path = str(directory / f"{kind}.fits")
    hdu.writeto(path, overwrite=True)
    return path
