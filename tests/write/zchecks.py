"""Checks shared by the tile-compressed output tests: funpack's and fitsverify's view of a
file, the table header, test values, and astropy and dfits reading a file back alike."""

from __future__ import annotations

import io
import shutil
import subprocess

import numpy as np
import pytest
from astropy.io import fits

import dfits


def funpack(path):
    """The image funpack decodes (cfitsio), or a skip where it is not installed."""
    tool = shutil.which("funpack")
    if tool is None:
        pytest.skip("funpack not installed (apt-get install libcfitsio-bin)")
    out = subprocess.run([tool, "-S", str(path)], capture_output=True, check=True).stdout
    with fits.open(io.BytesIO(out)) as hl:
        return [h.data.copy() for h in hl if h.data is not None]


def fitsverify(path):
    tool = shutil.which("fitsverify")
    if tool is None:
        pytest.skip("fitsverify not installed (apt-get install fitsverify)")
    out = subprocess.run([tool, "-q", str(path)], capture_output=True, text=True, check=False)
    assert "verification OK" in out.stdout, out.stdout + out.stderr


def table_header(path):
    with fits.open(path, disable_image_compression=True) as hl:
        return hl[1].header.copy()


def values_of(dtype, shape=(37, 53), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(100, 20, shape).astype(dtype)
    if x.dtype.kind == "f" and x.shape[0] > 8:
        x[3, 4] = np.nan  # → ZBLANK
        x[5, :] = 7.0  # a constant row tile: no noise, stored exactly (GZIP_COMPRESSED_DATA)
        x[7, 1] = 0.0  # exact under SUBTRACTIVE_DITHER_2
        x[8, 2:] = np.inf  # a tile with infinities: exactly, too
    elif x.dtype.kind == "i":
        x.reshape(-1)[:3] = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max, 0
    return x


def as_cfitsio(values):
    """What cfitsio (funpack) reads for floats: infinities are nulls to it, so NaN."""
    return np.where(np.isinf(values), np.nan, values)


def read_back(path, hdu=1):
    with fits.open(path, checksum=True) as hl:
        ours = hl[hdu].data
        assert isinstance(hl[hdu], fits.CompImageHDU)
        theirs = ours.copy()
    return theirs, dfits.open(path)[hdu].data.compute()


def check_file(path, values, lossless):
    astropy_values, dfits_values = read_back(path)
    np.testing.assert_array_equal(dfits_values, astropy_values)
    assert dfits_values.dtype == values.dtype
    if lossless:
        np.testing.assert_array_equal(dfits_values, values)
    fitsverify(path)
    assert all(h.ok and h.checksum.status == "ok" for h in dfits.verify_checksum(path))
    with fits.open(path, disable_image_compression=True) as hl:  # astropy agrees
        assert all((h.verify_checksum(), h.verify_datasum()) == (1, 1) for h in hl)
    return dfits_values
