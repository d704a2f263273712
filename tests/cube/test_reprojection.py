"""Moment maps reprojected through ``reproject`` against spectral-cube's Projection.reproject."""

from __future__ import annotations

import warnings

import astropy.units as u
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.coordinates import SkyCoord
from astropy.io import fits
from astropy.wcs import WCS

from dfits.cube.errors import RegionError

from .conftest import spectral_cube_file

reproject = pytest.importorskip("reproject")
spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")


def target_header() -> fits.Header:
    """A Galactic TAN grid, finer than the cube's and overlapping part of it."""
    centre = SkyCoord(150.0 * u.deg, 2.0 * u.deg).galactic  # the cube's reference point
    w = WCS(naxis=2)
    w.wcs.ctype = ["GLON-TAN", "GLAT-TAN"]
    w.wcs.crval = [centre.l.deg, centre.b.deg]
    w.wcs.crpix = [6.0, 5.0]
    w.wcs.cdelt = [-7e-4, 7e-4]
    header = w.to_header()
    header["NAXIS"], header["NAXIS1"], header["NAXIS2"] = 2, 11, 9
    return header


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    path = spectral_cube_file(tmp_path_factory.mktemp("reproject"), "freq-ascending-3d")
    cube = xr.open_dataarray(path, engine="dfits")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(path)
        sc = sc.with_spectral_unit(u.km / u.s, velocity_convention="radio")
    return cube.fits.with_spectral_unit("km/s", velocity_convention="radio"), sc


def test_moment_map_reprojected_like_spectral_cube(pair, tmp_path):
    cube, sc = pair
    header = target_header()
    mom0 = cube.fits.moment(0)
    got = mom0.fits.reproject(header)
    assert isinstance(got.data, da.Array)  # reproject's dask mode: lazy in blocks
    assert got.dims == ("y", "x")
    assert got.shape == (9, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.moment0().reproject(header)
    values = got.values
    both = np.isfinite(values) & np.isfinite(want.value)
    # spectral-cube's moment 0 is NaN on the all-NaN pixel (ours 0), which spreads NaN
    # through bilinear interpolation around it: compare where both are defined
    assert both.sum() > 20
    np.testing.assert_allclose(values[both], want.value[both], rtol=1e-5)
    direct = reproject.reproject_interp(
        (mom0.values, mom0.fits.wcs.celestial), header, return_footprint=False
    )
    # the map keeps the float32 cube's type (issue 45), which reproject's blocks keep:
    # equal to float32 rounding of the float64 interpolation
    np.testing.assert_allclose(values, direct, rtol=1e-7, equal_nan=True)
    # the result is a dfits image: its WCS is the target's, its coordinates galactic
    assert got.fits.wcs.wcs.ctype[0] == "GLON-TAN"
    assert {"glon", "glat"} <= set(got.coords) or {"l", "b"} <= set(got.coords)
    assert u.Unit(got.attrs["units"]) == u.Unit(mom0.attrs["units"])
    out = got.fits.to_fits(tmp_path / "m.fits")
    del out
    written = fits.getheader(tmp_path / "m.fits")
    np.testing.assert_allclose(WCS(written).wcs.crval, WCS(header).wcs.crval)
    np.testing.assert_allclose(fits.getdata(tmp_path / "m.fits"), values, equal_nan=True)


def test_onto_another_dataarray_and_exact(pair):
    cube, _ = pair
    mom0 = cube.fits.moment(0)
    onto_self = mom0.fits.reproject(mom0)
    np.testing.assert_allclose(onto_self.values, mom0.values, rtol=1e-6, atol=1e-9)
    exact = mom0.fits.reproject(target_header(), order="exact")
    want = reproject.reproject_exact(
        (mom0.values, mom0.fits.wcs.celestial), target_header(), return_footprint=False
    )
    np.testing.assert_allclose(exact.values, want, equal_nan=True)


def _cube_header(sc, n):
    """The target grid with the spectral-cube cube's own spectral axis as axis 3."""
    header = target_header()
    spec = sc.wcs.sub([3]).to_header()
    header["NAXIS"], header["WCSAXES"], header["NAXIS3"] = 3, 3, n
    for key in ("CTYPE", "CRVAL", "CDELT", "CRPIX", "CUNIT"):
        header[f"{key}3"] = spec[f"{key}1"]
    for key in ("RESTFRQ", "SPECSYS"):
        header[key] = spec[key]
    return header


def test_cube_reprojected_plane_by_plane_like_spectral_cube(pair, tmp_path):
    cube, sc = pair
    got = cube.fits.reproject(target_header())
    assert isinstance(got.data, da.Array)
    assert got.dims == ("vrad", "y", "x")
    assert got.shape == (cube.sizes["vrad"], 9, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.reproject(_cube_header(sc, cube.sizes["vrad"])).filled_data[:].value
    values = got.values
    both = np.isfinite(values) & np.isfinite(want)
    np.testing.assert_allclose(values[both], want[both], rtol=1e-6, atol=1e-9)
    # spectral-cube interpolates in 3-D, its channels on whole pixels up to round-off: the
    # flagged pixel of channel 4 leaks NaN into a neighbouring channel, not so plane by plane
    assert not (np.isnan(values) & ~np.isnan(want)).any()
    extra = np.argwhere(np.isnan(want) & ~np.isnan(values))
    assert set(extra[:, 0]) <= {3, 5}
    assert len(extra) < 10
    np.testing.assert_array_equal(got["vrad"].values, cube["vrad"].values)
    w = got.fits.wcs
    assert w.naxis == 3
    assert w.wcs.ctype[0] == "GLON-TAN"
    assert w.wcs.ctype[2] == "VRAD"
    world = w.sub([3]).pixel_to_world_values(np.arange(got.sizes["vrad"]))
    np.testing.assert_allclose(world / 1e3, cube["vrad"].values, atol=1e-9)  # m/s in WCS
    mom1 = got.fits.moment(1)  # a dfits cube: the accessor works on it
    assert u.Unit(mom1.attrs["units"]) == u.km / u.s
    out = got.fits.to_fits(tmp_path / "c.fits")
    np.testing.assert_allclose(fits.getdata(out), values, equal_nan=True)
    assert WCS(fits.getheader(out)).has_spectral


def test_reproject_refuses_4d_cubes_and_bad_targets(pair):
    cube, _ = pair
    with pytest.raises(RegionError, match=r"2-D .* or a 3-D"):
        cube.expand_dims(stokes=1).fits.reproject(target_header())
    mom0 = cube.fits.moment(0)
    with pytest.raises(RegionError, match="Header, WCS or DataArray"):
        mom0.fits.reproject("galactic")
    bare = WCS(target_header())
    bare.pixel_shape = None
    with pytest.raises(RegionError, match="shape_out"):
        mom0.fits.reproject(bare)
    assert mom0.fits.reproject(bare, (4, 5)).shape == (4, 5)
    with pytest.raises(ValueError, match="order must be one of"):
        mom0.fits.reproject(target_header(), order="cubic")
