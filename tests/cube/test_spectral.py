"""Spectral axis detection, unit conversion and slabs against astropy.wcs / astropy.units."""

from __future__ import annotations

import astropy.units as u
import numpy as np
import pytest
import xarray as xr
from astropy.wcs import WCS

from dfits.cube.errors import SpectralError
from dfits.cube.spectral import spectral_dim, spectral_slab, with_spectral_unit

from .conftest import celestial_wcs, write

FREQ = ("FREQ", 1.0e11, -2.0e6, "Hz")


@pytest.mark.parametrize(
    ("extra", "shape", "dims"),
    [
        ((FREQ,), (5, 4, 6), ("freq", "y", "x")),
        ((FREQ, ("STOKES", 1.0, 1.0, "")), (2, 5, 4, 6), ("stokes", "freq", "y", "x")),
        ((("STOKES", 1.0, 1.0, ""), FREQ), (5, 1, 4, 6), ("freq", "stokes", "y", "x")),
        ((FREQ, ("STOKES", 1.0, 1.0, "")), (1, 1, 4, 6), ("stokes", "freq", "y", "x")),
    ],
)
def test_spectral_axis_found_from_the_wcs(tmp_path, extra, shape, dims):
    w = celestial_wcs("SIN", "PC", extra)
    path = write(tmp_path / "c.fits", np.ones(shape, ">f4"), w, RESTFRQ=1.0e11)
    da = xr.open_dataarray(path, engine="dfits")
    assert da.dims == dims
    assert spectral_dim(da) == da.fits.spectral_dim == "freq"
    assert spectral_dim(da.load().drop_attrs(deep=False)) == "freq"  # from the ctype attrs


def test_no_spectral_axis_is_an_error_naming_the_file(tmp_path):
    path = write(tmp_path / "i.fits", np.ones((4, 6), ">f4"), celestial_wcs())
    da = xr.open_dataarray(path, engine="dfits")
    with pytest.raises(SpectralError, match=r"i\.fits', HDU 0.*no spectral axis"):
        spectral_dim(da)
    with pytest.raises(SpectralError, match="no spectral axis"):
        da.fits.moment(0)
    cube = xr.open_dataarray(
        write(tmp_path / "c.fits", np.ones((3, 4, 6), ">f4"), celestial_wcs("SIN", "PC", (FREQ,))),
        engine="dfits",
    )
    with pytest.raises(SpectralError, match="selected or reduced away"):
        spectral_dim(cube.isel(freq=1))


@pytest.fixture
def cube(tmp_path):
    w = celestial_wcs("SIN", "PC", (FREQ,))
    return xr.open_dataarray(
        write(tmp_path / "c.fits", np.ones((7, 4, 6), ">f4"), w, RESTFRQ=1.0e11), engine="dfits"
    )


@pytest.mark.parametrize(
    ("unit", "convention", "equivalency"),
    [
        ("km/s", "radio", u.doppler_radio),
        ("km/s", "optical", u.doppler_optical),
        ("m/s", "relativistic", u.doppler_relativistic),
        ("mm", None, None),
        ("GHz", None, None),
        ("meV", None, None),
        ("1/cm", None, None),
    ],
)
def test_with_spectral_unit_matches_astropy_units(cube, unit, convention, equivalency):
    got = with_spectral_unit(cube, unit, convention)
    dim = spectral_dim(got)
    freq = cube["freq"].values * u.Hz
    eq = u.spectral() + (equivalency(1.0e11 * u.Hz) if equivalency else [])
    # wcslib's Planck constant is older than astropy's CODATA one: energies differ by 8e-7
    rtol = 1e-6 if unit == "meV" else 1e-10
    np.testing.assert_allclose(got[dim].values, freq.to_value(unit, eq), rtol=rtol)
    assert u.Unit(got[dim].attrs["units"]) == u.Unit(unit)
    # the header describes the new axis: its WCS gives the coordinate back
    w = WCS(got.fits.header.to_astropy())
    world = w.sub([3]).pixel_to_world_values(np.arange(7))
    np.testing.assert_allclose((world * u.Unit(w.wcs.cunit[2])).to_value(unit), got[dim].values)
    assert got.fits.moment(1).attrs["units"] == u.Unit(unit).to_string()


def test_rest_value_air_and_sliced_cubes(cube):
    rest = 115.27 * u.GHz
    got = with_spectral_unit(cube.isel(freq=slice(5, 1, -2)), "km/s", "radio", rest_value=rest)
    want = (cube["freq"].values[5:1:-2] * u.Hz).to_value(u.km / u.s, u.doppler_radio(rest))
    np.testing.assert_allclose(got["vrad"].values, want, rtol=1e-10)
    air = with_spectral_unit(cube, "mm", air=True)
    assert air.dims[0] == "awav"
    vacuum = with_spectral_unit(cube, "mm")["wave"].values
    assert (air["awav"].values < vacuum).all()  # air wavelengths are shorter
    back = with_spectral_unit(with_spectral_unit(cube, "km/s", "optical"), "Hz")
    np.testing.assert_allclose(back["freq"].values, cube["freq"].values, rtol=1e-12)


def test_with_spectral_unit_errors(tmp_path, cube):
    with pytest.raises(SpectralError, match="velocity_convention"):
        with_spectral_unit(cube, "km/s")
    with pytest.raises(SpectralError, match="must be one of"):
        with_spectral_unit(cube, "km/s", "sideways")
    with pytest.raises(SpectralError, match="not a spectral unit"):
        with_spectral_unit(cube, "kg")
    w = celestial_wcs("SIN", "PC", (FREQ,))
    path = write(tmp_path / "n.fits", np.ones((3, 4, 6), ">f4"), w)
    norest = xr.open_dataarray(path, engine="dfits")
    with pytest.raises(SpectralError, match=r"n\.fits.*RESTFRQ"):
        with_spectral_unit(norest, "km/s", "radio")


def test_spectral_slab_any_unit_any_direction(cube):
    freq = cube["freq"].values  # descending
    # the engine's index (cube/index.py): lo < hi on a descending axis finds the 4 channels
    assert cube.sel(freq=slice(freq[4], freq[1])).sizes["freq"] == 4
    for lo, hi in ((freq[1], freq[4]), (freq[4], freq[1])):
        got = spectral_slab(cube, lo * u.Hz, hi * u.Hz)
        np.testing.assert_array_equal(got["freq"].values, freq[1:5])
    velo = with_spectral_unit(cube, "km/s", "radio")
    got = spectral_slab(velo, freq[1] * u.Hz, (freq[4] + 1e5) * u.Hz)  # Hz on a km/s axis
    np.testing.assert_array_equal(got["pixel_vrad"].values, np.arange(1, 5))
    np.testing.assert_array_equal(spectral_slab(velo, 0, 12)["pixel_vrad"].values, [0, 1, 2])
    with pytest.raises(SpectralError, match="outside the spectral axis"):
        spectral_slab(cube, 1 * u.THz, 2 * u.THz)
    with pytest.raises(SpectralError, match="slab bound"):
        spectral_slab(cube, 1 * u.kg, 2 * u.kg)


def test_restwav_from_the_header_converts_a_wavelength_axis(tmp_path):
    # an optical (vacuum) wavelength cube around Hα, rest wavelength from RESTWAV only
    rest = 6562.8e-10
    w = celestial_wcs("SIN", "PC", (("WAVE", 6560.0e-10, 0.5e-10, "m"),))
    path = write(tmp_path / "w.fits", np.ones((9, 4, 6), ">f4"), w, RESTWAV=rest)
    cube = xr.open_dataarray(path, engine="dfits")
    assert spectral_dim(cube) == "wave"
    got = with_spectral_unit(cube, "km/s", "optical")
    wave = cube["wave"].values * u.m
    want = wave.to_value(u.km / u.s, u.doppler_optical(rest * u.m))
    np.testing.assert_allclose(got["vopt"].values, want, rtol=1e-9)
    freq = with_spectral_unit(cube, "GHz")["freq"].values
    np.testing.assert_allclose(freq, wave.to_value(u.GHz, u.spectral()), rtol=1e-12)
    spectral_cube = pytest.importorskip("spectral_cube")
    sc = spectral_cube.SpectralCube.read(path).with_spectral_unit(u.km / u.s, "optical")
    np.testing.assert_allclose(got["vopt"].values, sc.spectral_axis.to_value(u.km / u.s))
