"""downsample_axis (fused, lazy) against spectral-cube 0.7's."""

from __future__ import annotations

import warnings

import dask
import numpy as np
import pytest
import xarray as xr

from dfits.errors import DfitsError

from .conftest import spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")


def _open(path):
    da = xr.open_dataarray(path, engine="dfits")
    return da.isel(stokes=0) if "stokes" in da.dims else da


@pytest.mark.parametrize("kind", ["freq-descending-4d", "vopt-3d-blank"])
@pytest.mark.parametrize("factor", [2, 3, 4, 13])
@pytest.mark.parametrize("truncate", [False, True])
def test_downsample_axis_equals_spectral_cube(tmp_path, kind, factor, truncate):
    path = spectral_cube_file(tmp_path, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its progress bar, Stokes and beam chatter
        sc = spectral_cube.SpectralCube.read(path)
        small = sc.downsample_axis(factor, 0, truncate=truncate, progressbar=False)
        want = small.filled_data[:].value
    da = _open(path)
    got = da.fits.downsample_axis(factor, truncate=truncate)
    assert isinstance(got.data, dask.array.Array)
    assert got.shape == want.shape
    assert got.dtype == np.float32
    assert np.array_equal(np.isnan(got.values), np.isnan(want))
    np.testing.assert_allclose(got.values, want, rtol=3e-7, atol=1e-7, equal_nan=True)
    dim = got.fits.spectral_dim
    world = small.spectral_axis.to_value()
    np.testing.assert_allclose(got[dim].values, world, rtol=1e-12)
    pixels = np.arange(got.sizes[dim])
    np.testing.assert_allclose(got.fits.wcs.spectral.pixel_to_world_values(pixels), world,
                               rtol=1e-12)  # fmt: skip
    # chunks that split runs are rechunked first: same values
    again = da.chunk({dim: 5}).fits.downsample_axis(factor, dim, truncate=truncate)
    np.testing.assert_array_equal(again.values, got.values)


def test_downsample_a_sky_axis_by_number(tmp_path):
    path = spectral_cube_file(tmp_path, "vrad-3d")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(path)
        want = sc.downsample_axis(2, 2, progressbar=False).filled_data[:].value
    got = _open(path).fits.downsample_axis(2, 2)
    assert got.dims[2] == "x"
    assert "ra" not in got.coords
    np.testing.assert_allclose(got.values, want, rtol=3e-7, atol=1e-7, equal_nan=True)
    # the rotated sky grid: each new pixel's world position is its run's centre
    before, after = _open(path).fits.wcs.celestial, got.fits.wcs.celestial
    j = np.arange(got.sizes["x"])
    y = np.full(j.shape, 3.0)
    np.testing.assert_allclose(
        after.pixel_to_world_values(j, y), before.pixel_to_world_values(2 * j + 0.5, y)
    )


@pytest.mark.parametrize(("factor", "match"), [(0, "from 1"), (-2, "from 1"), (14, "from 1"),
                                               (1.5, "integer"), (True, "integer")])  # fmt: skip
def test_downsample_refuses_bad_factors(tmp_path, factor, match):
    da = _open(spectral_cube_file(tmp_path, "vrad-3d"))
    with pytest.raises(DfitsError, match=match) as err:
        da.fits.downsample_axis(factor)
    assert "vrad-3d.fits" in str(err.value)
    with pytest.raises(DfitsError, match="not one of"):
        da.fits.downsample_axis(2, "nope")
