"""dfits.to_fits of DataArrays and Datasets (the xarray adapter): headers, WCS, names."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import xarray as xr
from astropy.io import fits
from astropy.wcs import WCS

import dfits


def _fitsverify(path):
    tool = shutil.which("fitsverify")
    if tool is None:
        pytest.skip("fitsverify not installed (apt-get install fitsverify)")
    out = subprocess.run([tool, "-q", str(path)], capture_output=True, text=True, check=False)
    assert "verification OK" in out.stdout, out.stdout + out.stderr


def test_sequence_is_a_multi_extension_file(tmp_path):
    a, b = np.arange(12.0).reshape(3, 4), np.arange(5, dtype="i4")
    named = xr.DataArray(b, dims="x", name="sci")
    path = tmp_path / "mef.fits"
    dfits.to_fits([a, named], path)
    with fits.open(path, checksum=True) as hl:
        assert len(hl) == 3
        assert hl[0].data is None
        np.testing.assert_array_equal(hl[1].data, a)
        np.testing.assert_array_equal(hl["SCI"].data, b)
    _fitsverify(path)


def test_dataset_one_hdu_per_variable(tmp_path):
    x = xr.DataArray(np.ones((3, 4)), dims=("y", "x"), coords={"x": np.arange(4) * 2.0 + 10})
    ds = xr.Dataset({"flux": x.assign_attrs(units="Jy"), "err": x * 0.1})
    path = tmp_path / "ds.fits"
    dfits.to_fits(ds, path)
    with fits.open(path, checksum=True) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "FLUX", "ERR"]
        assert hl["FLUX"].header["BUNIT"] == "Jy"
        w = WCS(hl["FLUX"].header)
        np.testing.assert_allclose(w.pixel_to_world_values(np.arange(4), 0)[0], x["x"])
    _fitsverify(path)


@pytest.fixture
def cube(tmp_path):
    rng = np.random.default_rng(3)
    values = rng.standard_normal((6, 20, 30)).astype("f4")
    header = fits.Header()
    for k, v in {
        "CTYPE1": "RA---SIN", "CTYPE2": "DEC--SIN", "CTYPE3": "FREQ",
        "CRVAL1": 150.0, "CRVAL2": 2.0, "CRVAL3": 1e11, "CDELT1": -1e-3, "CDELT2": 1e-3,
        "CDELT3": 1e6, "CRPIX1": 15.0, "CRPIX2": 10.0, "CRPIX3": 1.0, "CUNIT3": "Hz",
        "BUNIT": "Jy/beam", "OBJECT": "NGC 1", "BMAJ": 1e-3, "HISTORY": "made by a test",
    }.items():  # fmt: skip
        header[k] = v
    path = tmp_path / "cube.fits"
    fits.PrimaryHDU(values, header).writeto(path)
    return path, values


def test_dataarray_from_dfits_keeps_header_and_sliced_wcs(tmp_path, cube):
    path, values = cube
    arr = xr.open_dataarray(path, engine="dfits", chunks={})
    cut = arr.isel(y=slice(5, 15), x=slice(3, 23), freq=slice(2, 5))
    out = tmp_path / "cut.fits"
    cut.fits.to_fits(out)
    with fits.open(out, checksum=True) as hl:
        h = hl[0].header
        np.testing.assert_array_equal(hl[0].data, values[2:5, 5:15, 3:23])
        assert (h["OBJECT"], h["BUNIT"], h["BMAJ"]) == ("NGC 1", "Jy/beam", 1e-3)
        assert "made by a test" in str(h["HISTORY"])
        got = WCS(h).pixel_to_world_values(0, 0, 0)
        want = WCS(fits.getheader(path)).pixel_to_world_values(3, 5, 2)
        np.testing.assert_allclose(got, want)
    back = xr.open_dataarray(out, engine="dfits")
    np.testing.assert_allclose(back["freq"], cut["freq"])
    _fitsverify(out)


def test_transposed_dataarray_goes_back_to_fits_order(tmp_path, cube):
    path, values = cube
    arr = xr.open_dataarray(path, engine="dfits", chunks={}).transpose("x", "y", "freq")
    out = tmp_path / "t.fits"
    dfits.to_fits(arr, out)
    np.testing.assert_array_equal(fits.getdata(out), values)


def test_a_moment_map_is_written_with_its_own_unit_and_celestial_wcs(tmp_path):
    from .conftest import spectral_cube_file

    cube = xr.open_dataarray(spectral_cube_file(tmp_path, "freq-descending-4d"), engine="dfits")
    velocity = cube.isel(stokes=0).fits.with_spectral_unit("km/s", velocity_convention="radio")
    mom0 = velocity.fits.moment(0)
    mom0.fits.to_fits(tmp_path / "mom0.fits")
    header = fits.getheader(tmp_path / "mom0.fits")
    assert header["BUNIT"] == mom0.attrs["units"] == "Jy km / (beam s)"  # not the cube's
    assert header["BMAJ"] == 3.0e-3  # the rest of the header is kept
    assert WCS(header).naxis == 2
    assert WCS(header).has_celestial
    np.testing.assert_allclose(fits.getdata(tmp_path / "mom0.fits"), mom0.values, rtol=1e-6)


def _spectral_results(cube):
    """The accessor's cube results, each with what its header must say."""
    import astropy.units as u
    from radio_beam import Beam

    velocity = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
    values = velocity["vrad"].values
    slab = velocity.fits.spectral_slab(values[3] * u.km / u.s, values[9] * u.km / u.s)
    b = cube.fits.beam
    wider = Beam(major=1.5 * b.major, minor=1.5 * b.minor, pa=b.pa)
    return {
        "velocity": velocity,
        "slab": slab,
        "kelvin": cube.fits.to_unit("K"),
        "convolved": velocity.fits.convolve_to(wider),
        "masked": velocity.fits.with_mask(velocity > 1.0),
    }


@pytest.mark.parametrize("name", ["velocity", "slab", "kelvin", "convolved", "masked"])
def test_spectral_results_are_written_with_a_header_that_describes_them(tmp_path, name):
    import astropy.units as u

    from .conftest import spectral_cube_file

    path = spectral_cube_file(tmp_path, "freq-descending-4d")
    cube = xr.open_dataarray(path, engine="dfits").isel(stokes=0)
    got = _spectral_results(cube)[name]
    out = got.fits.to_fits(tmp_path / f"{name}.fits")
    header = fits.getheader(out)
    data = fits.getdata(out)
    np.testing.assert_allclose(data.squeeze(), got.values, rtol=1e-6, equal_nan=True)
    assert u.Unit(header["BUNIT"]) == u.Unit(got.attrs["units"])
    w = WCS(header)
    assert w.has_celestial
    assert w.has_spectral
    dim = got.fits.spectral_dim
    spec = w.sub([w.wcs.spec + 1])
    world = spec.pixel_to_world_values(np.arange(got.sizes[dim])) * u.Unit(spec.wcs.cunit[0])
    want = got[dim].values
    np.testing.assert_allclose(world.to_value(got[dim].attrs["units"]), want, atol=1e-9)
    beam = got.fits.beam
    assert header["BMAJ"] == pytest.approx(beam.major.to_value(u.deg))
    assert header["BMIN"] == pytest.approx(beam.minor.to_value(u.deg))


def test_a_list_mixing_dataarrays_arrays_and_dfits_hdus(tmp_path):
    source = tmp_path / "in.fits"
    image = np.arange(6, dtype="i2").reshape(2, 3)
    fits.HDUList([fits.PrimaryHDU(), fits.ImageHDU(image, name="OLD")]).writeto(source)
    named = xr.DataArray(np.ones(4, "f4"), dims="x", name="sci")
    out = tmp_path / "mixed.fits"
    dfits.to_fits([named, np.zeros(2), *dfits.open(source)], out)  # its data-less primary: skipped
    with fits.open(out, checksum=True) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "SCI", "", "OLD"]
        np.testing.assert_array_equal(hl["SCI"].data, named.values)
        np.testing.assert_array_equal(hl[2].data, np.zeros(2))
        np.testing.assert_array_equal(hl["OLD"].data, image)
