"""spectral_smooth (fused, lazy) against spectral-cube 0.7 and astropy's convolve."""

from __future__ import annotations

import warnings

import dask
import numpy as np
import pytest
import xarray as xr
from astropy.convolution import Box1DKernel, CustomKernel, Gaussian1DKernel, convolve

from dfits.cube.axis_smooth import along_chunks
from dfits.errors import DfitsError

from .conftest import spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")

KERNELS = {
    "gauss": Gaussian1DKernel(1.5),
    "box": Box1DKernel(3),
    "hanning": CustomKernel(np.hanning(5)[1:-1]),
}


def _open(path):
    da = xr.open_dataarray(path, engine="dfits")
    return da.isel(stokes=0) if "stokes" in da.dims else da


@pytest.mark.parametrize("kind", ["freq-descending-4d", "vopt-3d-blank", "vrad-3d"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_spectral_smooth_equals_spectral_cube(tmp_path, kind, name):
    path = spectral_cube_file(tmp_path, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Stokes, beam and "identical beam" chatter
        want = spectral_cube.SpectralCube.read(path).spectral_smooth(KERNELS[name])
        want = want.filled_data[:].value
    da = _open(path)
    got = da.fits.spectral_smooth(KERNELS[name])
    assert isinstance(got.data, dask.array.Array)
    assert got.dtype == np.float32
    assert got.dims == da.dims
    np.testing.assert_array_equal(got.values, want)  # NaN where the input was NaN, no more
    # chunks splitting the spectral axis inside the kernel's reach: map_overlap, same values
    chunked = da.chunk({da.fits.spectral_dim: 2}).fits.spectral_smooth(KERNELS[name])
    np.testing.assert_array_equal(chunked.values, want)


def test_spectral_smooth_reads_whole_spectra_from_stored_chunks(tmp_path):
    path = spectral_cube_file(tmp_path, "vopt-3d-blank")
    da = _open(path)
    with dask.config.set({"array.chunk-size": "1KiB"}):
        got = da.fits.spectral_smooth(2.0)
    (spectral_chunks, *rest) = got.data.chunks
    assert spectral_chunks == (13,)
    assert len(rest[0]) > 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = spectral_cube.SpectralCube.read(path).spectral_smooth(Gaussian1DKernel(2.0))
    np.testing.assert_array_equal(got.values, want.filled_data[:].value)
    # the moment of the smoothed cube reads the smoothed values, not the file's
    m0 = got.fits.moment(0).values
    assert not np.allclose(m0, da.fits.moment(0).values, equal_nan=True)


def test_spectral_smooth_of_numpy_keeps_or_fills_nan():
    rng = np.random.default_rng(5)
    values = rng.standard_normal((17, 3, 4))
    values[3:5, 1, 2] = np.nan
    freq = xr.Variable("freq", np.arange(17.0), {"ctype": "FREQ", "units": "Hz"})
    cube = xr.DataArray(values, dims=("freq", "y", "x"), coords={"freq": freq})
    k = np.hanning(7)
    filled = np.apply_along_axis(lambda s: convolve(s, k), 0, values)
    got = cube.chunk({"freq": 3}).fits.spectral_smooth(k, keep_nan=False)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.values, filled, rtol=1e-13)
    kept = cube.fits.spectral_smooth(k).values
    assert np.isnan(kept[3, 1, 2])
    assert np.isfinite(filled[3, 1, 2])


@pytest.mark.parametrize(
    ("kernel", "match"),
    [
        (np.ones(4), "odd size"),
        (np.ones(27), "beyond both ends"),
        (np.ones((3, 3)), "1-d"),
        (np.array([1.0, -2.0, 1.0]), "close to 0"),
        (-1.0, "must be > 0"),
    ],
)
def test_spectral_smooth_refuses_bad_kernels(tmp_path, kernel, match):
    da = _open(spectral_cube_file(tmp_path, "vrad-3d"))
    with pytest.raises(DfitsError, match=match) as err:
        da.fits.spectral_smooth(kernel)
    assert "vrad-3d.fits" in str(err.value)


def test_along_chunks_keeps_a_whole_axis_plan():
    assert along_chunks((5, 4, 3), np.dtype("f4"), 4, 0) == ((5,), (4,), (3,))
    with dask.config.set({"array.chunk-size": "1KiB"}):
        chunks = along_chunks((2, 64, 16, 16), np.dtype("f4"), 4, 1)
    assert chunks[:2] == ((1, 1), (64,))
    assert sum(chunks[2]) == 16


def test_along_chunks_leave_room_for_the_output():
    """A smoothing task holds its output beside its stored input: chunks of at most half
    the chunk size of values (physical ones: scaled int16 decodes to float32)."""
    import math

    with dask.config.set({"array.chunk-size": "1MiB"}):
        for dtype, itemsize in (("f4", 4), ("f4", 2), ("f8", 8)):
            chunks = along_chunks((64, 96, 128), np.dtype(dtype), itemsize, 0)
            biggest = math.prod(max(c) for c in chunks) * np.dtype(dtype).itemsize
            assert chunks[0] == (64,)
            assert 2**18 < biggest <= 2**19


def test_smoothed_chunks_stay_fusable(tmp_path):
    from dfits.stored.stored import StoredChunk

    da = _open(spectral_cube_file(tmp_path, "vopt-3d-blank"))
    got = da.fits.spectral_smooth(Box1DKernel(3))
    x = got.data
    block = dask.get(dict(x.__dask_graph__()), (x.name, 0, 0, 0))
    # native float values in a stored chunk: the moment below runs the fused kernel on them
    assert isinstance(block, StoredChunk)
    assert block.spec.byteorder == "="
    assert type(got.data.compute()) is np.ndarray
    m0 = got.fits.moment(0).values
    plain = got.copy(data=got.values).fits.moment(0).values
    np.testing.assert_allclose(m0, plain, rtol=1e-6, equal_nan=True)
    again = got.fits.downsample_axis(2)  # a chain stays fused too
    np.testing.assert_allclose(again.values, got.copy(data=got.values).fits.downsample_axis(2))


def test_smoothing_then_a_moment_decodes_no_chunk(tmp_path, monkeypatch):
    from dfits.stored.stored import StoredChunk

    da = _open(spectral_cube_file(tmp_path, "vopt-3d-blank"))
    want = da.fits.spectral_smooth(2.0).values
    decodes = []
    for name in ("decode", "_fresh"):
        real = getattr(StoredChunk, name)

        def counted(self, _real=real, _name=name):
            decodes.append(_name)
            return _real(self)

        monkeypatch.setattr(StoredChunk, name, counted)
    with dask.config.set({"array.chunk-size": "1KiB"}):  # several chunks of whole spectra
        m0 = da.fits.spectral_smooth(2.0).fits.moment(0).values
        binned = da.fits.spectral_smooth(2.0).fits.downsample_axis(2).fits.moment(0).values
    assert decodes == []  # stored bytes in, smoothed values out, the moment fused on those
    plain = xr.DataArray(want, dims=da.dims, coords=da.coords, attrs=da.attrs).fits.moment(0)
    np.testing.assert_allclose(m0, plain.values, rtol=1e-6, equal_nan=True)
    assert np.isfinite(binned).any()
