"""da.fits.fft / da.fits.power_spectrum: values, frequency coordinates and units."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr
from astropy.wcs.utils import proj_plane_pixel_scales

import dfits.xarray  # noqa: F401  (registers the accessor)
from dfits.xarray.fourier import inverse_unit


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture
def series():
    rng = np.random.default_rng(0)
    n, dt = 1000, 0.01
    values = rng.standard_normal((3, n)) + np.sin(2 * np.pi * 7.0 * np.arange(n) * dt)
    time = xr.Variable("time", np.arange(n) * dt + 100.0, {"units": "s"})
    obj = xr.DataArray(values, dims=("beam", "time"), coords={"time": time, "beam": [1, 2, 3]})
    return obj.chunk({"time": 128}), values, dt


def test_fft_of_a_chunked_series_with_hz_coordinates(series):
    obj, values, dt = series
    spec = obj.fits.fft("time", real=False, block_size=4096)
    assert spec.dims == ("beam", "freq_time")
    assert spec["freq_time"].attrs["units"] == "Hz"
    np.testing.assert_allclose(spec["freq_time"], np.fft.fftshift(np.fft.fftfreq(1000, dt)))
    want = np.fft.fftshift(np.fft.fft(values, axis=1), axes=1)
    np.testing.assert_allclose(spec.values, want, rtol=0, atol=1e-10 * np.abs(want).max())
    np.testing.assert_array_equal(spec["beam"], [1, 2, 3])


def test_real_data_get_the_half_spectrum_and_its_peak(series):
    obj, values, dt = series
    power = obj.fits.power_spectrum("time", block_size=4096)
    np.testing.assert_allclose(power["freq_time"], np.fft.rfftfreq(1000, dt))
    want = np.abs(np.fft.rfft(values, axis=1)) ** 2 * dt / 1000
    np.testing.assert_allclose(power.values, want, rtol=1e-10)
    assert float(power.mean("beam").idxmax("freq_time")) == pytest.approx(7.0)


def test_two_sided_power_obeys_parseval(series):
    obj, values, _ = series
    power = obj.fits.power_spectrum("time", real=False, block_size=4096)
    df = power["freq_time"].attrs["spacing"]
    np.testing.assert_allclose(
        (power * df).sum("freq_time").values, (values**2).mean(axis=1), rtol=1e-12
    )


def test_nonuniform_coordinates_are_refused(series):
    obj, _, _ = series
    bent = obj.assign_coords(time=obj["time"] ** 1.5)
    with pytest.raises(ValueError, match="not uniformly spaced"):
        bent.fits.fft("time")
    with pytest.raises(ValueError, match="is not a dimension"):
        obj.fits.fft("freq")


def test_fits_cube_freq_and_celestial_axes(cube):
    path, w = cube
    da = xr.open_dataarray(path).isel(stokes=0).fillna(0.0)
    along_freq = da.fits.fft("freq")
    assert along_freq["freq_freq"].attrs["units"] == "s"
    step = float(np.diff(da["freq"].values)[0])
    np.testing.assert_allclose(along_freq["freq_freq"], np.fft.rfftfreq(da.sizes["freq"], step))
    np.testing.assert_allclose(
        along_freq.values, np.fft.rfft(da.values, axis=0), rtol=1e-5, atol=1e-5
    )
    along_x = da.fits.fft("x")
    scale = proj_plane_pixel_scales(w.celestial)[0]
    assert along_x["freq_x"].attrs["units"] == "1/deg"
    np.testing.assert_allclose(along_x["freq_x"], np.fft.rfftfreq(da.sizes["x"], scale))


def test_inverse_units():
    assert inverse_unit("Hz") == "s"
    assert inverse_unit("m") == "1/m"
