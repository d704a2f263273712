"""Dimensions and coordinates from the WCS, checked against astropy.wcs."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from astropy.io import fits
from astropy.wcs import WCS

from dfits.cube.coords import pixel_picks, plan_axes, sliced_wcs
from dfits.cube.errors import WCSError
from tests.cube.conftest import celestial_wcs, reread, write


@pytest.mark.parametrize("matrix", ["PC", "CD"])
@pytest.mark.parametrize("proj", ["SIN", "TAN", "CAR"])
def test_celestial_coordinates_equal_astropy(tmp_path, proj, matrix):
    w = celestial_wcs(proj, matrix)
    path = write(tmp_path / "img.fits", np.zeros((6, 9), ">f4"), w)
    w = reread(path)
    da = xr.open_dataarray(path, sky_coords=True)
    assert da.dims == ("y", "x")
    assert da["ra"].variable._in_memory is False  # computed on demand, not up front
    yy, xx = np.mgrid[0:6, 0:9]
    ra, dec = w.pixel_to_world_values(xx, yy)
    np.testing.assert_array_equal(da["ra"].values, ra)
    np.testing.assert_array_equal(da["dec"].values, dec)
    # a lazily indexed block is exact too
    np.testing.assert_array_equal(da["dec"].isel(y=slice(2, 5), x=3).values, dec[2:5, 3])
    assert da["ra"].attrs["units"] == "deg"


@pytest.mark.parametrize(("ctype", "name"), [("GLON", "glon"), ("ELON", "elon")])
def test_celestial_names_follow_ctype(tmp_path, ctype, name):
    w = celestial_wcs("TAN")
    w.wcs.ctype = [f"{ctype}-TAN", f"{ctype[0]}LAT-TAN"]
    da = xr.open_dataarray(write(tmp_path / "g.fits", np.zeros((3, 4), ">f4"), w), sky_coords=True)
    assert name in da.coords
    assert name.replace("lon", "lat") in da.coords


def test_cube_with_stokes_and_freq(cube):
    path, w = cube
    da = xr.open_dataarray(path, sky_coords=True)
    assert da.dims == ("stokes", "freq", "y", "x")
    freq = w.pixel_to_world_values(0, 0, np.arange(7), 0)[2]
    np.testing.assert_array_equal(da["freq"].values, freq)
    assert da["freq"].attrs["units"] == "Hz"
    assert list(da["stokes"].values) == ["I", "Q"]
    yy, xx = np.mgrid[0:12, 0:10]
    ra, dec, _, _ = w.pixel_to_world_values(xx, yy, 0, 0)
    np.testing.assert_array_equal(da["ra"].values, ra)
    np.testing.assert_array_equal(da["dec"].values, dec)
    assert da.attrs["units"] == "Jy/beam"
    assert da.sel(freq=freq[3]).dims == ("stokes", "y", "x")
    assert da.sel(freq=freq[3] + 1.0, method="nearest")["pixel_freq"].item() == 3
    assert da.sel(stokes="Q")["pixel_stokes"].item() == 1


def test_vrad_axis(tmp_path):
    w = WCS(naxis=3)
    w.wcs.ctype = ["RA---TAN", "DEC--TAN", "VRAD"]
    w.wcs.crval, w.wcs.cdelt = [10, -30, 1500.0], [-1e-3, 1e-3, -250.0]
    w.wcs.crpix, w.wcs.cunit = [2, 2, 3], ["deg", "deg", "m/s"]
    da = xr.open_dataarray(write(tmp_path / "v.fits", np.ones((5, 3, 4), ">f4"), w))
    assert da.dims == ("vrad", "y", "x")
    np.testing.assert_array_equal(da["vrad"].values, w.pixel_to_world_values(0, 0, np.arange(5))[2])
    assert da["vrad"].attrs["units"] == fits.getheader(tmp_path / "v.fits")["CUNIT3"]


def test_axes_without_wcs_meaning(tmp_path):
    da = xr.open_dataarray(write(tmp_path / "p.fits", np.zeros((2, 2, 3, 4), ">i2")))
    assert da.dims == ("axis4", "z", "y", "x")
    assert "ra" not in da.coords


def test_plan_pixel_only():
    assert plan_axes(None, 2).dims == ("y", "x")


def test_sliced_wcs_matches_offsets():
    w = celestial_wcs("TAN", "CD", (("FREQ", 1e9, 1e6, "Hz"),))
    sub, keep = sliced_wcs(w, {1: (2, 3), 2: (1, 1), 3: 4})
    assert keep == [1, 2]
    got = sub.pixel_to_world_values([0, 1, 2], [0, 0, 3])
    want = w.pixel_to_world_values([2, 5, 8], [1, 1, 4], [4, 4, 4])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_pixel_picks_reject_uneven():
    with pytest.raises(WCSError, match="evenly spaced"):
        pixel_picks({1: np.array([0, 1, 3])})
