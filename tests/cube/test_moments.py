"""Moment maps from one weighted-sum pass match numpy; units follow BUNIT and the axis."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from dfits.cube.moments import moment_map, moment_units


@pytest.fixture
def cube():
    rng = np.random.default_rng(3)
    data = rng.random((6, 4, 5)).astype(np.float32) + 0.1
    data[:, 0, 0] = np.nan  # a pixel with no emission
    return data


@pytest.mark.parametrize("order", [0, 1, 2])
def test_moment_map_matches_numpy(cube, order):
    nu = np.linspace(1e9, 1.5e9, cube.shape[0])
    got = moment_map(da.from_array(cube, chunks=(2, 4, 5)), 0, nu, order).compute()
    i = cube.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        s0 = np.nansum(i, 0)
        m1 = np.nansum(i * nu[:, None, None], 0) / np.where(s0 == 0, np.nan, s0)
        want = [
            np.nansum(i * np.abs(np.gradient(nu))[:, None, None], 0),
            m1,
            np.sqrt(np.nansum(i * (nu[:, None, None] - m1) ** 2, 0) / np.where(s0, s0, np.nan)),
        ][order]
    np.testing.assert_allclose(got, want, rtol=1e-9, equal_nan=True)
    assert (got[0, 0] == 0) if order == 0 else np.isnan(got[0, 0])


def test_threshold_leaves_values_out(cube):
    nu = np.arange(cube.shape[0], dtype=float)
    got = moment_map(da.from_array(cube), 0, nu, 0, threshold=0.5).compute()
    np.testing.assert_allclose(got, np.nansum(np.where(cube >= 0.5, cube, 0), 0), rtol=1e-6)


def test_moment_units():
    obj = xr.DataArray(
        np.zeros((2, 3)),
        dims=("freq", "x"),
        coords={"freq": ("freq", [1.0, 2.0], {"units": "Hz"})},
        attrs={"units": "Jy/beam"},
    )
    assert moment_units(obj, "freq", 0) == "Hz Jy / beam"
    assert moment_units(obj, "freq", 1) == "Hz"
    assert moment_units(obj, "x", 0) == "Jy / beam"


# -- undefined moments, map shape and type, against spectral-cube ---------------------------


def edge_cube(directory, dtype=">f8", stokes=False) -> str:
    """A (10, 3, 4) FREQ cube whose pixels hold the awkward cases of moments 1 and 2."""
    from astropy.io import fits

    from tests.xarray.conftest import celestial_wcs

    extra = (("FREQ", 1.0e11, 2.0e5, "Hz"),) + ((("STOKES", 1.0, 1.0, ""),) if stokes else ())
    rng = np.random.default_rng(11)
    z = np.arange(10.0)[:, None, None]
    data = 2 * np.exp(-0.5 * ((z - 4 - 2 * rng.random((1, 3, 4))) / 1.5) ** 2) + 0.1
    data[:, 0, 0] = np.nan  # no valid channel
    data[:, 0, 1] = np.nan
    data[6, 0, 1] = 1.5  # one valid channel
    data[2:5, 0, 2] = np.nan  # blanked channels
    data[:, 0, 3] = -data[:, 0, 3]  # negative weights only: Σ I < 0
    data[:, 1, 0] = np.nan
    data[[0, 4, 8], 1, 0] = [-1.0, 3.0, -1.0]  # Σ I > 0, Σ I·(v − m1)² < 0
    data[:, 1, 1] = np.nan
    data[[2, 3], 1, 1] = [1.0, -1.0]  # Σ I = 0 with valid channels
    data[5, 1, 2] = -0.5  # one negative channel in a positive line
    header = celestial_wcs("SIN", "PC", extra).to_header()
    header.update(BUNIT="Jy/beam", RESTFRQ=1.0e11, SPECSYS="LSRK")
    data = data[None] if stokes else data
    path = str(directory / f"edge-{np.dtype(dtype).name}{'-4d' if stokes else ''}.fits")
    fits.PrimaryHDU(data.astype(dtype), header=header).writeto(path, overwrite=True)
    return path


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    import warnings

    import astropy.units as u

    spectral_cube = pytest.importorskip("spectral_cube")
    path = edge_cube(tmp_path_factory.mktemp("edge"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(path)
        ours = xr.open_dataarray(path, engine="dfits")
        want = {
            "moment1": sc.moment1().to_value(u.Hz),
            "sigma": sc.linewidth_sigma().to_value(u.Hz),
            "fwhm": sc.linewidth_fwhm().to_value(u.Hz),
            "moment2": sc.moment2().to_value(u.Hz**2),
        }
    return ours, want


#: pixels where dfits says NaN and spectral-cube a number, and why
UNDEFINED_HERE = {(0, 1): "one valid channel (spectral-cube: σ = 0)",
                  (0, 3): "Σ I < 0 (spectral-cube divides anyway)"}  # fmt: skip


def test_moments_are_nan_where_undefined_and_spectral_cube_elsewhere(edge):
    ours, want = edge
    got = {
        "moment1": ours.fits.moment(1).values,
        "sigma": ours.fits.linewidth_sigma().values,
        "fwhm": ours.fits.linewidth_fwhm().values,
    }
    got["moment2"] = got["sigma"] ** 2
    for name, value in got.items():
        # spectral-cube's moment2 is negative where σ² < 0; its linewidth_sigma is NaN there
        defined = np.isfinite(want[name]) & (want[name] >= 0 if name == "moment2" else True)
        for pixel in UNDEFINED_HERE:
            if name != "moment1" or pixel == (0, 3):
                defined[pixel] = False
                assert np.isnan(value[pixel]), (name, pixel, UNDEFINED_HERE[pixel])
        np.testing.assert_allclose(value[defined], want[name][defined], rtol=1e-9)
        assert np.isnan(value[~defined]).all(), name
    assert np.isfinite(want["moment1"][0, 3])
    assert want["sigma"][0, 1] < 1e-3
    assert np.isnan(got["sigma"][[0, 1, 1], [0, 0, 1]]).all()  # no data, σ² < 0, Σ I = 0


def test_clip_keeps_the_old_clipping(edge):
    ours, want = edge
    sigma = ours.fits.linewidth_sigma(clip=True).values
    assert sigma[0, 1] == 0  # one valid channel
    assert sigma[1, 0] == 0  # σ² < 0 clipped
    m1 = ours.fits.moment(1, clip=True).values
    np.testing.assert_allclose(m1[0, 3], want["moment1"][0, 3], rtol=1e-9)  # Σ I < 0
    assert np.isnan(m1[0, 0])
    assert np.isnan(m1[1, 1])


def test_threshold_counts_only_kept_channels(tmp_path):
    ours = xr.open_dataarray(edge_cube(tmp_path), engine="dfits")
    s = ours.fits.moment(2, threshold=1.0).values
    v = ours.values
    kept = (v >= 1.0).sum(axis=0)
    assert np.isnan(s[kept < 2]).all()
    assert np.isfinite(s[(kept >= 2) & (np.nansum(np.where(v >= 1.0, v, 0), 0) > 0)]).all()


@pytest.mark.parametrize(
    ("dtype", "bitpix"), [(">f4", -32), (">f8", -64), (">i2", -32), (">i4", -64)]
)
def test_maps_drop_stokes_keep_the_float_type_and_write_a_celestial_wcs(tmp_path, dtype, bitpix):
    from astropy.io import fits
    from astropy.wcs import WCS

    path = edge_cube(tmp_path, ">f8", stokes=True)
    if dtype != ">f8":
        with fits.open(path) as hdul:
            data = np.nan_to_num(hdul[0].data * 100).astype(dtype)
            fits.PrimaryHDU(data, hdul[0].header).writeto(path, overwrite=True)
    cube = xr.open_dataarray(path, engine="dfits")
    assert cube.dims == ("stokes", "freq", "y", "x")
    for order in (0, 1, 2):
        m = cube.fits.moment(order)
        assert m.dims == ("y", "x")
        assert m.dtype == np.dtype(np.result_type(np.dtype(dtype), np.float32))
        out = tmp_path / f"m{order}-{np.dtype(dtype).name}.fits"
        m.fits.to_fits(out)
        header = fits.getheader(out)
        assert (header["NAXIS"], header["BITPIX"]) == (2, bitpix)
        w = WCS(header)
        assert w.naxis == 2
        assert w.has_celestial
    assert cube.fits.peak().dims == ("y", "x")


def test_moment2_counts_valid_channels_in_one_extra_fused_pass(tmp_path, counted, no_decode):
    import dask

    path = edge_cube(tmp_path, ">f4")
    cube = xr.open_dataarray(path, engine="dfits")
    with dask.config.set({"array.chunk-size": "200B"}):
        sigma = cube.fits.linewidth_sigma()
        clipped = cube.fits.moment(2, clip=True)
        m1 = cube.fits.moment(1)
    n = sigma.data.numblocks
    counted.clear()
    sigma.compute()
    nchunks = counted["weighted_sums"]
    assert nchunks > 2, n
    assert counted == {"weighted_sums": nchunks, "sum_count": nchunks}
    counted.clear()
    clipped.compute()
    m1.compute()
    assert counted == {"weighted_sums": 2 * nchunks}
