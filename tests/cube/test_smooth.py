"""convolve_to and spatial_smooth (lazy, chunk-wise with halos) against spectral-cube 0.7."""

from __future__ import annotations

import warnings

import astropy.units as u
import dask
import numpy as np
import pytest
import xarray as xr
from astropy.convolution import Gaussian2DKernel, convolve, convolve_fft

from dfits.cube.errors import BeamError
from dfits.errors import DfitsError

from .beamfiles import multibeam_file
from .conftest import spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")
radio_beam = pytest.importorskip("radio_beam", reason="beams are radio_beam objects")


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Stokes, beam and "identical beam" chatter
        return spectral_cube.SpectralCube.read(path)


def _open(path):
    da = xr.open_dataarray(path, engine="dfits")
    return da.isel(stokes=0) if "stokes" in da.dims else da


def _check(got, want):
    assert np.array_equal(np.isnan(got), np.isnan(want))  # NaN pixels stay NaN, no more
    np.testing.assert_allclose(got, want, atol=2e-6 * np.nanmax(np.abs(want)), equal_nan=True)


@pytest.mark.parametrize("kind", ["freq-descending-4d", "vopt-3d-blank"])
def test_convolve_to_matches_across_chunk_edges(tmp_path, kind):
    path = spectral_cube_file(tmp_path, kind)
    da, sc = _open(path), _read(path)
    target = radio_beam.Beam(1.5 * sc.beam.major)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.convolve_to(target).filled_data[:].value
    # chunks smaller than the kernel: dask widens them to the halo's depth
    chunked = da.chunk({"y": 2, "x": 3, da.fits.spectral_dim: 5})
    got = chunked.fits.convolve_to(target)
    assert isinstance(got.data, dask.array.Array)
    assert got.data.chunks[:-2] == chunked.data.chunks[:-2]
    _check(got.values, want)
    _check(da.fits.convolve_to(target).values, want)  # one chunk, straight from the file
    assert got.fits.beam == target
    assert got.dims == da.dims
    assert got.dtype == np.float32
    # theirs, exactly: astropy's convolve_fft per plane with spectral-cube's float32 options
    theirs = da.fits.convolve_to(target, convolve=convolve_fft).values
    np.testing.assert_array_equal(theirs, want)
    direct = da.fits.convolve_to(target, convolve=convolve).values
    np.testing.assert_allclose(direct, want, atol=1e-5 * np.nanmax(np.abs(want)), equal_nan=True)


def test_convolve_to_the_same_beam_and_smaller_beams(tmp_path):
    path = spectral_cube_file(tmp_path, "freq-ascending-3d")
    da = _open(path)
    same = da.fits.convolve_to(da.fits.beam)
    np.testing.assert_array_equal(same.values, da.values)
    small = radio_beam.Beam(0.5 * da.fits.beam.major)
    with pytest.raises(BeamError, match="cannot convolve"):
        da.fits.convolve_to(small)
    np.testing.assert_array_equal(da.fits.convolve_to(small, allow_smaller=True).values, da.values)
    nobeam = _open(spectral_cube_file(tmp_path / "..", "vrad-3d", beam=False))
    with pytest.raises(BeamError, match="has no beam"):
        nobeam.fits.convolve_to(small)


def test_convolve_multibeam_to_the_common_beam(tmp_path):
    path = multibeam_file(tmp_path)
    da, sc = _open(path), _read(path)
    common = sc.beams.common_beam()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its warning about the rotated PC matrix
        convolved = sc.convolve_to(common, update_function=lambda: None)
    want = convolved.filled_data[:].value
    got = da.chunk({"freq": 4, "y": 3}).fits.convolve_to(common)
    _check(got.values, want)
    assert got.fits.beam == common  # one beam now: the table no longer applies
    assert "CASAMBM" not in got.fits.header
    np.testing.assert_allclose(
        got.fits.to_unit("K").values,
        convolved.to(u.K).filled_data[:].value,
        rtol=1e-5, atol=1e-6,
    )  # fmt: skip


def test_spatial_smooth_matches(tmp_path):
    path = spectral_cube_file(tmp_path, "vrad-3d", beam=False)
    da, sc = _open(path), _read(path)
    kernel = Gaussian2DKernel(1.2)
    with pytest.raises(BeamError, match="Jy/beam"):
        da.fits.spatial_smooth(kernel)
    want = sc.spatial_smooth(kernel, raise_error_jybm=False).filled_data[:].value
    got = da.chunk({"y": 3, "x": 4}).fits.spatial_smooth(kernel, raise_error_jybm=False)
    _check(got.values, want)
    with pytest.raises(ValueError, match="must be 2-d"):
        da.fits.spatial_smooth(np.ones(3), raise_error_jybm=False)


def test_halos_make_chunked_planes_equal_whole_ones():
    rng = np.random.default_rng(3)
    values = rng.standard_normal((3, 40, 50)).astype(np.float32)
    values[1, 10, 10:14] = np.nan  # on a chunk edge
    freq = xr.Variable("freq", [1.0, 2.0, 3.0], {"ctype": "FREQ", "units": "Hz"})
    cube = xr.DataArray(values, dims=("freq", "y", "x"), coords={"freq": freq})
    kernel = Gaussian2DKernel(2.0)  # 17 x 17: a halo of 8 around 10 x 10 chunks
    got = cube.chunk({"freq": 1, "y": 10, "x": 10}).fits.spatial_smooth(kernel)
    assert got.data.npartitions == 60
    want = np.stack([convolve(p, kernel, normalize_kernel=True) for p in values])
    want[np.isnan(values)] = np.nan
    _check(got.values, want)


@pytest.mark.parametrize("kind", ["vopt-3d-blank", "freq-descending-4d"])
def test_spatial_smooth_equals_spectral_cube_in_any_chunks(tmp_path, kind):
    path = spectral_cube_file(tmp_path, kind)  # scaled int16 with BLANK; float32 4-D
    da, sc = _open(path), _read(path)
    kernel = Gaussian2DKernel(1.5, 0.8, theta=0.4)  # rotated: not separable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.spatial_smooth(kernel, raise_error_jybm=False).filled_data[:].value
    whole = da.fits.spatial_smooth(kernel, raise_error_jybm=False)
    assert whole.dtype == np.float32
    np.testing.assert_array_equal(whole.values, want)  # float64 FFTs, rounded to float32
    # halos of the kernel's reach across chunk edges (y: 2 rows, x: 4 columns)
    chunked = da.chunk({"y": 2, "x": 4}).fits.spatial_smooth(kernel, raise_error_jybm=False)
    _check(chunked.values, want)
    sigma = da.fits.spatial_smooth(1.5, raise_error_jybm=False).values
    np.testing.assert_array_equal(
        sigma, da.fits.spatial_smooth(Gaussian2DKernel(1.5), raise_error_jybm=False).values
    )


def test_fft_planes_equal_astropy_direct_in_float64():
    from dfits.cube.smooth import fft_convolve

    rng = np.random.default_rng(11)
    plane = rng.standard_normal((23, 30))
    plane[0:5, 0:6] = np.nan  # a corner blank wider than the kernel: weight 0 there
    plane[12, 14] = np.nan
    for kernel in (Gaussian2DKernel(1.0).array, rng.random((5, 3)) + 0.1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = convolve(plane, kernel)
        got = fft_convolve(plane, kernel, {})
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)
        clean = np.nan_to_num(plane)
        np.testing.assert_allclose(
            fft_convolve(clean, kernel, {}), convolve(clean, kernel), rtol=0, atol=1e-12
        )


@pytest.mark.parametrize(
    ("kernel", "match"),
    [
        (np.ones((4, 3)), "odd size"),
        (np.zeros((3, 3)), "close to 0"),
        (0.0, "must be > 0"),
        (np.ones((3, 19)), "beyond both edges"),
    ],
)
def test_spatial_smooth_refuses_bad_kernels(tmp_path, kernel, match):
    da = _open(spectral_cube_file(tmp_path, "vrad-3d", beam=False))
    with pytest.raises(DfitsError, match=match) as err:
        da.fits.spatial_smooth(kernel, raise_error_jybm=False)
    assert "vrad-3d.fits" in str(err.value)


def test_the_reader_plans_half_the_chunk_size_for_planes(tmp_path):
    """A task holds its native output beside its stored input (mapped pages resident until
    it ends): the file's chunks are planned at half dask's chunk-size of output, each read
    by one task (no rechunk: halves of one stored chunk would share its map); same values."""
    da = _open(spectral_cube_file(tmp_path, "vopt-3d-blank"))  # scaled int16: float32 out
    whole = da.fits.spatial_smooth(1.0, raise_error_jybm=False)
    plane = da.sizes["y"] * da.sizes["x"] * 4
    with dask.config.set({"array.chunk-size": f"{4 * plane}B"}):
        split = da.fits.spatial_smooth(1.0, raise_error_jybm=False)
    axis = da.get_axis_num(da.fits.spectral_dim)
    assert max(split.data.chunks[axis]) == 2 < max(whole.data.chunks[axis])
    assert not [name for name in split.data.dask.layers if name.startswith("rechunk")]
    np.testing.assert_array_equal(split.values, whole.values)
