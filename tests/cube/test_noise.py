"""Masks, MAD noise (exact medians in bounded memory) and clipped moments against astropy and
spectral-cube 0.7."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.stats import mad_std as astropy_mad_std

from .conftest import spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Stokes chatter, "PossiblySlowWarning"
        return spectral_cube.SpectralCube.read(path)


def _open(path):
    da_ = xr.open_dataarray(path, engine="dfits")
    return da_.isel(stokes=0) if "stokes" in da_.dims else da_


@pytest.mark.parametrize("kind", ["freq-descending-4d", "vopt-3d-blank"])
def test_mad_std_matches(tmp_path, kind):
    path = spectral_cube_file(tmp_path, kind)
    cube, sc = _open(path), _read(path)
    values = cube.values
    glob = cube.fits.mad_std()
    assert isinstance(glob.data, da.Array)
    assert glob.dims == ()
    assert glob.attrs["units"] == "Jy / beam"
    glob = float(glob)
    assert glob == pytest.approx(astropy_mad_std(values, ignore_nan=True), rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_global = sc.mad_std().value
        per_spectrum, per_channel = sc.mad_std(axis=0).value, sc.mad_std(axis=(1, 2)).value
    assert glob == pytest.approx(want_global, rel=1e-6)
    got = cube.fits.mad_std(cube.fits.spectral_dim)
    assert got.dims == ("y", "x")
    assert got.attrs["units"] == "Jy / beam"
    np.testing.assert_allclose(got.values, per_spectrum, rtol=1e-6, equal_nan=True)
    assert np.isnan(got.values[2, 3])  # the pixel with no valid channel
    got = cube.fits.mad_std(("y", "x"))
    np.testing.assert_allclose(got.values, per_channel, rtol=1e-6)
    with pytest.raises(ValueError, match="not a dimension"):
        cube.fits.mad_std("z")


def test_masks_and_clipped_moments_match(tmp_path):
    path = spectral_cube_file(tmp_path, "vrad-3d")
    cube, sc = _open(path), _read(path)
    masked = cube.fits.with_mask(lambda c: c > 0.5)
    assert isinstance(masked.data, da.Array)
    want = sc.with_mask(sc > 0.5 * sc.unit)
    np.testing.assert_allclose(masked.values, want.filled_data[:].value, equal_nan=True)
    np.testing.assert_allclose(
        masked.fits.moment(1).values, want.moment1().value, rtol=1e-6, equal_nan=True
    )
    sky = np.ones((cube.sizes["y"], cube.sizes["x"]), bool)
    sky[0] = False
    assert np.isnan(cube.fits.with_mask(sky).values[:, 0]).all()
    with pytest.raises(TypeError, match="boolean"):
        cube.fits.with_mask(np.ones(cube.shape))
    sigma = float(cube.fits.mad_std())
    clipped = cube.fits.sigma_clipped_moment(0, nsigma=1.5)
    want0 = sc.with_mask(sc > 1.5 * sigma * sc.unit).moment0().value
    valid = np.isfinite(want0)
    np.testing.assert_allclose(clipped.values[valid], want0[valid], rtol=1e-6)
    noise_map = cube.fits.mad_std("vrad")
    clipped = cube.fits.sigma_clipped_moment(1, nsigma=2.0, noise=noise_map)
    want1 = sc.with_mask(sc > 2.0 * noise_map.values * sc.unit).moment1().value
    np.testing.assert_allclose(clipped.values, want1, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_threshold_masks_stay_fused(tmp_path, monkeypatch, order):
    """Threshold and sigma-clipped moments run on the stored bytes: no chunk is decoded."""
    from dfits.stored import stored

    cube = _open(spectral_cube_file(tmp_path, "vrad-3d"))
    want = cube.fits.with_mask(lambda c: c > 0.5).fits.moment(order).values
    clipped_want = cube.fits.with_mask(lambda c: c > 1.5 * 0.2).fits.moment(order).values
    values = cube.values.astype(np.float64)

    def refuse(self):
        raise AssertionError("a stored chunk was decoded on a fused path")

    monkeypatch.setattr(stored.StoredChunk, "decode", refuse)
    got = cube.fits.moment(order, threshold=0.5).values
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    clipped = cube.fits.sigma_clipped_moment(order, nsigma=1.5, noise=0.2).values
    np.testing.assert_allclose(clipped, clipped_want, rtol=1e-6, equal_nan=True)
    masked_sum = cube.fits.with_mask(lambda c: c > 0.5).sum().values
    want_sum = np.nansum(np.where(values > 0.5, values, np.nan))
    np.testing.assert_allclose(masked_sum, want_sum, rtol=1e-6)


def test_mad_std_is_lazy_and_counts_in_four_passes(tmp_path, monkeypatch):
    """Two counting passes per median over a float32 cube, each reading every chunk once;
    no kernel reads stored bytes for counting yet, so each pass decodes its chunk."""
    import dask

    import dfits.kernels.histogram as histogram
    from dfits.stored.stored import StoredChunk
    from dfits.xarray.fused import fused_dask

    cube = _open(spectral_cube_file(tmp_path, "vrad-3d"))
    calls = {"key_counts": 0, "decode": 0}

    def spy(name, real):
        def run(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return run

    monkeypatch.setattr(histogram, "key_counts", spy("key_counts", histogram.key_counts))
    monkeypatch.setattr(StoredChunk, "decode", spy("decode", StoredChunk.decode))
    with dask.config.set({"array.chunk-size": "600B"}):
        lazy = cube.fits.mad_std()
        nchunks = fused_dask(cube).npartitions
    assert nchunks > 2
    assert calls == {"key_counts": 0, "decode": 0}
    got = float(lazy)
    assert calls == {"key_counts": 4 * nchunks, "decode": 4 * nchunks}
    assert got == pytest.approx(astropy_mad_std(cube.values, ignore_nan=True), rel=1e-6)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_a_callable_threshold_mask_then_a_moment_stays_fused(tmp_path, counted, order):
    """``with_mask(lambda c: c > t)`` then ``moment``: the kernel's threshold is the cut's
    exact lower bound, and σ's count is the band kernel's; nothing decodes. A mask the kernel
    cannot express (a band, a per-pixel map) decodes and gives the same values as numpy."""
    import dask

    path = spectral_cube_file(tmp_path, "vrad-3d")
    cube = _open(path)
    values = _open(path).values  # another DataArray: cube stays on disk
    with dask.config.set({"array.chunk-size": "600B"}):
        masked = cube.fits.with_mask(lambda c: c > 0.5)
        band = cube.fits.with_mask(lambda c: (c > 0.5) & (c < 1.5))
        counted.clear()
        got = masked.fits.moment(order).values
        nchunks = counted["weighted_sums"]
        assert nchunks > 2
        want = {"weighted_sums": nchunks} | ({"band_sum_count": nchunks} if order == 2 else {})
        assert counted == want
        banded = band.fits.moment(order).values
    oracle = xr.DataArray(np.where(values > 0.5, values, np.nan), dims=cube.dims,
                          coords=cube.coords, attrs=cube.attrs)  # fmt: skip
    # float32 maps of float64 sums: equal to float32 rounding
    np.testing.assert_allclose(got, oracle.fits.moment(order).values, rtol=1e-6, equal_nan=True)
    inside = np.where((values > 0.5) & (values < 1.5), values, np.nan)
    np.testing.assert_allclose(
        banded, oracle.copy(data=inside).fits.moment(order).values, rtol=1e-6, equal_nan=True
    )
