"""The accessor's spectral-cube methods against spectral-cube 0.7 on the same generated cubes.

Differences that are ours by choice, and asserted as such: moment 0 of a pixel with no
valid channel is 0 here (``nansum``) and NaN in spectral-cube; ``moment(2)`` is the
dispersion σ (spectral-cube's ``linewidth_sigma``), where spectral-cube's ``moment2`` is σ².
On non-linear axes (VOPT from a FREQ grid) moment 0 uses each channel's own width, where
spectral-cube uses the reference channel's for all. Where spectral-cube is wrong: it converts
a velocity axis to another velocity unit through frequency, so a VOPT axis linear in the file
(m/s) comes back non-linear in km/s (1e-5 relative off); the VOPT cube is therefore compared
in its own m/s, converted by astropy.units.
"""

from __future__ import annotations

import warnings

import astropy.units as u
import numpy as np
import pytest
import xarray as xr
from astropy.wcs import WCS

from dfits.cube.errors import SpectralError

from .conftest import SPECTRAL_CUBES, spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")

#: The velocity convention of each cube's velocity conversion.
CONVENTION = {"vopt-3d-blank": "optical"}


@pytest.fixture(scope="module", params=sorted(SPECTRAL_CUBES))
def pair(request, tmp_path_factory):
    """(DataArray in km/s, spectral-cube in km/s, 4-D?) of one cube."""
    kind = request.param
    path = spectral_cube_file(tmp_path_factory.mktemp("spectral"), kind)
    conv = CONVENTION.get(kind, "radio")
    da = xr.open_dataarray(path, engine="dfits")
    if da.ndim == 4:
        da = da.isel(stokes=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-cube's Stokes and beam chatter
        sc = spectral_cube.SpectralCube.read(path)
        if not kind.startswith("vopt"):
            sc = sc.with_spectral_unit(u.km / u.s, velocity_convention=conv)
    return da.fits.with_spectral_unit("km/s", velocity_convention=conv), sc, kind


def test_spectral_axis_in_km_s_matches(pair):
    da, sc, _ = pair
    dim = da.fits.spectral_dim
    assert u.Unit(da[dim].attrs["units"]) == u.km / u.s
    np.testing.assert_allclose(da[dim].values, sc.spectral_axis.to_value(u.km / u.s), atol=1e-9)
    assert da[dim].attrs["velocity_convention"] == CONVENTION.get(pair[2], "radio")


@pytest.mark.parametrize("order", [0, 1])
def test_moments_in_km_s_match(pair, order):
    da, sc, kind = pair
    got = da.fits.moment(order)
    want = sc.moment(order=order, axis=0)
    q = got.fits.quantity()
    assert q.unit.is_equivalent(want.unit)
    assert q.unit == u.Unit(got.attrs["units"])
    valid = np.isfinite(want.value)
    assert not valid.all()  # the all-NaN pixel
    rtol = 2e-3 if (order == 0 and kind.startswith("vopt")) else 1e-6  # channel widths
    want = want.to_value(q.unit)
    np.testing.assert_allclose(q.value[valid], want[valid], rtol=rtol, atol=1e-9)
    if order == 0:
        assert (q.value[~valid] == 0).all()


def test_linewidths_and_moment2_match(pair):
    da, sc, _ = pair
    sigma = da.fits.linewidth_sigma().fits.quantity()
    want = sc.linewidth_sigma()
    valid = np.isfinite(want.value)
    np.testing.assert_allclose(sigma.value[valid], want.to_value(sigma.unit)[valid], rtol=1e-5)
    variance = da.fits.moment(2).fits.quantity() ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-cube's "a variance map" note
        want2 = sc.moment2().to_value(variance.unit)
    np.testing.assert_allclose(variance.value[valid], want2[valid], rtol=1e-5)
    fwhm = da.fits.linewidth_fwhm().fits.quantity()
    want = sc.linewidth_fwhm().to_value(fwhm.unit)
    np.testing.assert_allclose(fwhm.value[valid], want[valid], rtol=1e-5)


def test_peak_and_peak_velocity_match(pair):
    da, sc, _ = pair
    peak, where = da.fits.peak(), da.fits.peak_velocity()
    want = sc.max(axis=0)
    valid = np.isfinite(want.value)
    np.testing.assert_allclose(peak.values[valid], want.value[valid], rtol=1e-6)
    assert np.isnan(peak.values[~valid]).all()
    assert np.isnan(where.values[~valid]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_v = sc.argmax_world(axis=0)
    want_v = want_v.to_value(u.km / u.s)
    np.testing.assert_allclose(where.values[valid], want_v[valid], rtol=1e-12, atol=1e-9)
    assert u.Unit(where.attrs["units"]) == u.km / u.s


def test_slab_matches_both_directions(pair):
    da, sc, _ = pair
    dim = da.fits.spectral_dim
    v = da[dim].values
    lo, hi = (v[3] + 0.3 * (v[4] - v[3])) * u.km / u.s, v[9] * u.km / u.s
    want = sc.spectral_slab(lo, hi)
    m1 = want.moment1().to_value(u.km / u.s)
    for a, b in ((lo, hi), (hi, lo)):
        got = da.fits.spectral_slab(a, b)
        np.testing.assert_allclose(
            got[dim].values, want.spectral_axis.to_value(u.km / u.s), atol=1e-9
        )
        np.testing.assert_allclose(got.fits.moment(1).values, m1, rtol=1e-6, equal_nan=True)


def test_moment_maps_keep_the_celestial_wcs(pair):
    da, sc, _ = pair
    m0 = da.fits.moment(0)
    sky = m0.fits.sky_coords
    assert set(sky) == {"ra", "dec"}
    assert sky["ra"].dims == ("y", "x")
    w = WCS(m0.fits.wcs.to_header())
    assert w.has_celestial
    assert w.naxis == 2
    want = sc.moment0().wcs
    yy, xx = np.mgrid[0:3, 0:4]
    np.testing.assert_allclose(w.pixel_to_world_values(xx, yy), want.pixel_to_world_values(xx, yy))
    np.testing.assert_allclose(sky["ra"].values[:3, :4], want.pixel_to_world_values(xx, yy)[0])


def test_moment_along_stokes_fails_clearly(tmp_path):
    da = xr.open_dataarray(spectral_cube_file(tmp_path, "freq-descending-4d"), engine="dfits")
    assert da.dims[:2] == ("stokes", "freq")
    assert da.fits.spectral_dim == "freq"
    with pytest.raises(SpectralError, match=r"HDU 0.*'stokes'.*not a spectral axis.*'freq'"):
        da.fits.moment(1, dim="stokes")
    assert da.fits.moment(1).dims == ("y", "x")  # the one Stokes plane is a scalar now


# -- one kernel pass per chunk, no decode ---------------------------------------------------

# (the ``counted`` fixture: tests/conftest.py)


@pytest.fixture(scope="module")
def chunked(tmp_path_factory):
    """A float cube with an all-NaN pixel in km/s, and spectral-cube's; read it in several
    chunks under :data:`SMALL`."""
    path = spectral_cube_file(tmp_path_factory.mktemp("passes"), "freq-ascending-3d")
    cube = xr.open_dataarray(path, engine="dfits")
    cube = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
    sc = spectral_cube.SpectralCube.read(path)
    return cube, sc.with_spectral_unit(u.km / u.s, velocity_convention="radio")


#: A chunk size that cuts the 13 × 8 × 9 float32 cube into several chunks.
SMALL = {"array.chunk-size": "600B"}


STATISTICS = {
    "peak": (lambda c: c.fits.peak(), "extrema"),
    "peak_velocity": (lambda c: c.fits.peak_velocity(), "extrema"),
    "moment0": (lambda c: c.fits.moment(0), "weighted_sums"),
    "moment1": (lambda c: c.fits.moment(1), "weighted_sums"),
    # σ counts the valid channels (NaN below two): the table's count, one more fused pass
    "moment2": (lambda c: c.fits.moment(2), "weighted_sums sum_count"),
    "moment2 clipped": (lambda c: c.fits.moment(2, clip=True), "weighted_sums"),
    "linewidth_sigma": (lambda c: c.fits.linewidth_sigma(), "weighted_sums sum_count"),
    "linewidth_fwhm": (lambda c: c.fits.linewidth_fwhm(), "weighted_sums sum_count"),
    "clipped moment0": (lambda c: c.fits.moment(0, threshold=0.5), "weighted_sums"),
}


@pytest.mark.parametrize("name", sorted(STATISTICS))
def test_one_kernel_pass_per_chunk_and_no_decode(chunked, counted, name):
    import dask

    from dfits.xarray.fused import fused_dask

    cube, _ = chunked
    method, kernel = STATISTICS[name]
    with dask.config.set(SMALL):
        out = method(cube)
        nchunks = int(np.prod(fused_dask(cube, cube.fits.spectral_dim).numblocks))
    assert nchunks > 2
    counted.clear()
    out.compute()
    assert counted == dict.fromkeys(kernel.split(), nchunks)


def test_peak_velocity_matches_spectral_cube_and_numpy_in_chunks(chunked):
    import dask

    cube, sc = chunked
    with dask.config.set(SMALL):
        got = cube.fits.peak_velocity().values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sc.argmax_world(axis=0).to_value(u.km / u.s)
    none = ~np.isfinite(sc.max(axis=0).value)
    assert none.any()
    assert np.isnan(got[none]).all()
    np.testing.assert_allclose(got[~none], want[~none], rtol=1e-12, atol=1e-9)
    values = cube.values
    dim = cube.get_axis_num(cube.fits.spectral_dim)
    index = np.nanargmax(np.where(np.isnan(values), -np.inf, values), axis=dim)
    axis = cube[cube.fits.spectral_dim].values
    np.testing.assert_array_equal(got[~none], axis[index][~none])
