"""The .fits accessor: WCS after slicing, moments, spectra and cut-outs vs direct numpy."""

from __future__ import annotations

import warnings

import astropy.units as u
import numpy as np
import pytest
import xarray as xr
from astropy.wcs.utils import proj_plane_pixel_scales

from dfits.cube.errors import BeamError, RegionError


@pytest.fixture
def da(cube):
    return xr.open_dataarray(cube[0])


def _world(w, *pix):
    return np.array(w.pixel_to_world_values(*pix))


def test_wcs_after_isel_and_sel(da, cube):
    _, w = cube
    sub = da.isel(x=slice(2, 9, 3), y=slice(1, 7), freq=slice(5, 1, -2))
    ws = sub.fits.wcs
    assert ws.pixel_shape == (3, 6, 2, 2)
    np.testing.assert_allclose(_world(ws, 1, 2, 1, 0), _world(w, 5, 3, 3, 0), rtol=1e-12)
    one = da.sel(stokes="I").isel(freq=4)  # both separable axes dropped
    w1 = one.fits.wcs
    assert w1.pixel_n_dim == 2
    np.testing.assert_allclose(_world(w1, 3, 4), _world(w, 3, 4, 4, 0)[:2], rtol=1e-12)
    assert da.fits.wcs.wcs.compare(w.wcs)
    assert xr.Dataset({"p": da}).fits.wcs.pixel_n_dim == 4


def test_accessor_reads_fused_dfits_chunks(da):
    m0 = da.fits.moment(0, "freq")
    assert any(k.startswith("dfits-data") for k in m0.data.dask.layers)
    assert m0.attrs["units"] == "Hz Jy / beam"


def test_chunk_puts_the_dataarray_over_dfits_chunks(da, cube_data):
    sub = da.isel(stokes=0, x=slice(2, 8))
    fused = sub.fits.chunk()
    assert any(k.startswith("dfits-data") for k in fused.data.dask.layers)
    assert fused.coords.keys() == sub.coords.keys()
    assert not sub.variable._in_memory  # the original stays lazy
    np.testing.assert_array_equal(fused.values, cube_data[0, :, :, 2:8])
    # not file-backed (an arithmetic result): chunked the ordinary way, same values
    other = (sub * 2).fits.chunk()
    np.testing.assert_array_equal(other.values, 2 * cube_data[0, :, :, 2:8])
    ds = xr.Dataset({"p": da}).fits.chunk(along="freq")
    assert ds["p"].chunks[da.get_axis_num("freq")] == (da.sizes["freq"],)
    with pytest.raises(ValueError, match="not a dimension"):
        da.fits.chunk(along="velocity")


@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("selection", [{}, {"x": slice(1, 8), "stokes": 0}])
def test_moments_match_numpy(da, cube_data, order, selection):
    sub = da.isel(selection)
    got = sub.fits.moment(order).values
    i = np.moveaxis(
        cube_data[(*[selection.get(d, slice(None)) for d in da.dims],)].astype(float),
        sub.get_axis_num("freq"),
        -1,
    )
    nu = sub["freq"].values
    m0 = np.nansum(i * np.abs(np.gradient(nu)), axis=-1)
    s0 = np.nansum(i, axis=-1)
    m1 = np.nansum(i * nu, axis=-1) / s0
    m2 = np.sqrt(np.nansum(i * (nu - m1[..., None]) ** 2, axis=-1) / s0)
    np.testing.assert_allclose(got, [m0, m1, m2][order], rtol=1e-6)


def test_moment_threshold_and_mask(da, cube_data):
    keep = np.array([1, 1, 0, 1, 1, 0, 1], bool)
    with warnings.catch_warnings():
        # pixels left empty by the threshold are NaN, quietly (no divide warning)
        warnings.simplefilter("error", RuntimeWarning)
        got = da.fits.moment(1, threshold=0.5, mask=keep).values
    i = cube_data[:, keep].astype(float)
    i = np.where(i >= 0.5, i, np.nan)
    nu = da["freq"].values[keep][:, None, None]
    with np.errstate(invalid="ignore"):
        want = np.nansum(i * nu, 1) / np.nansum(i, 1)
    assert np.isnan(want).any()
    assert got.dtype == np.float32  # the cube's float type: equal to float32 rounding
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_moment_errors(da):
    with pytest.raises(ValueError, match="0, 1 or 2"):
        da.fits.moment(3)
    with pytest.raises(ValueError, match="not a dimension"):
        da.fits.moment(0, "velocity")


def test_moment_on_in_memory_and_chunked(da):
    ref = da.fits.moment(2).values
    np.testing.assert_allclose(da.load().fits.moment(2).values, ref, rtol=1e-12)
    np.testing.assert_allclose((da * 1).chunk({"freq": 3}).fits.moment(2).values, ref, rtol=1e-9)


def _pixels_within(w, ra, dec, radius, ny, nx):
    yy, xx = np.mgrid[0:ny, 0:nx]
    lon, lat = np.radians(w.celestial.pixel_to_world_values(xx, yy))
    lon0, lat0 = np.radians([ra, dec])
    cos = np.sin(lat) * np.sin(lat0) + np.cos(lat) * np.cos(lat0) * np.cos(lon - lon0)
    return np.degrees(np.arccos(np.clip(cos, -1, 1))) <= radius


def test_spectrum_matches_pixel_arithmetic(da, cube, cube_data):
    _, w = cube
    ra, dec = w.celestial.pixel_to_world_values(4.2, 5.1)
    inside = _pixels_within(w, ra, dec, 0.0025, 12, 10)
    assert 5 < inside.sum() < 60
    with pytest.raises(BeamError, match="BMAJ/BMIN"):  # Jy/beam without a beam: no flux
        da.fits.spectrum(ra, dec, 0.0025)
    mean = da.fits.spectrum(ra, dec, 0.0025, how="mean").values
    np.testing.assert_allclose(mean, np.nanmean(cube_data[..., inside], -1), rtol=1e-6)
    da = da.assign_attrs(units="Jy/pixel")  # a sum of Jy/pixel is Jy
    spec = da.fits.spectrum(ra, dec, 0.0025)
    assert spec.attrs["units"] == "Jy"
    assert spec.dims == ("stokes", "freq")
    data = cube_data.astype(float)
    np.testing.assert_allclose(spec.values, np.nansum(data[..., inside], -1), rtol=1e-6)
    region = np.zeros((12, 10), bool)
    region[2:4, 7] = True
    got = da.fits.spectrum(region=region).values
    np.testing.assert_allclose(got, data[:, :, 2:4, 7].sum(-1), rtol=1e-6)


def test_spectrum_far_away_is_an_error(da):
    with pytest.raises(RegionError, match="no pixel"):
        da.fits.spectrum(170.0, 2.0, 0.001)


def test_cutout_matches_pixel_arithmetic(da, cube):
    _, w = cube
    ra, dec = w.celestial.pixel_to_world_values(6.3, 4.6)
    cut = da.fits.cutout(ra, dec, width=0.004, height=0.003)
    sx, sy = proj_plane_pixel_scales(w.celestial)
    xs = np.arange(10)[np.abs(np.arange(10) - 6.3) <= 0.002 / sx]
    ys = np.arange(12)[np.abs(np.arange(12) - 4.6) <= 0.0015 / sy]
    np.testing.assert_array_equal(cut["pixel_x"].values, xs)
    np.testing.assert_array_equal(cut["pixel_y"].values, ys)
    assert not cut.variable._in_memory
    np.testing.assert_array_equal(
        cut.values, da.values[..., ys[0] : ys[-1] + 1, xs[0] : xs[-1] + 1]
    )
    np.testing.assert_allclose(
        _world(cut.fits.wcs, 0, 0, 2, 1), _world(w, xs[0], ys[0], 2, 1), rtol=1e-12
    )
    np.testing.assert_allclose(
        cut.fits.sky_coords["ra"].values,
        da.fits.sky_coords["ra"].values[ys[0] : ys[-1] + 1, xs[0] : xs[-1] + 1],
    )
    # a second cut-out works in the first one's frame
    again = cut.fits.cutout(ra, dec, width=0.0015)
    assert set(again["pixel_x"].values) <= set(xs)


def test_cutout_outside_is_an_error(da):
    with pytest.raises(RegionError, match="misses the image"):
        da.fits.cutout(150.5, 2.0, width=0.002)


def test_dataset_accessor_cutout(cube):
    ds = xr.open_dataset(cube[0], sky_coords=True)
    ra, dec = ds["ra"].values[5, 5], ds["dec"].values[5, 5]
    for name, coord in ds.fits.sky_coords.items():  # the same lazy values as sky_coords=True
        xr.testing.assert_identical(coord.variable, ds[name].variable)
    cut = ds.fits.cutout(ra, dec, 0.002)
    assert cut.sizes["x"] < 10
    assert ds.fits.moment(0).dims == ("stokes", "y", "x")


def test_quicklook_and_channel_maps_through_the_accessor(tmp_path):
    import matplotlib.image as mpimg
    import xarray as xr

    from dfits.demo import make_cube

    path = tmp_path / "ql.fits"
    make_cube(str(path), (16, 64, 64))
    arr = xr.open_dataarray(path, engine="dfits")
    sub = arr.isel(x=slice(8, 56), y=slice(4, 60))
    fig = sub.fits.quicklook()
    fig.savefig(tmp_path / "ql.png")
    assert mpimg.imread(tmp_path / "ql.png").std() > 0
    grid = arr.fits.plot_channel_maps(4, full=True)
    grid.savefig(tmp_path / "maps.png")
    assert mpimg.imread(tmp_path / "maps.png").std() > 0


def test_moments_plan_chunks_along_the_spectral_axis(da):
    import dask

    want = [da.fits.moment(order).values for order in (0, 1, 2)]
    with dask.config.set({"array.chunk-size": "2KiB"}):
        thin = xr.open_dataarray(da.encoding["dfits_source"])
        graph = thin.fits.moment(1).data.dask
        (name,) = [k for k in graph.layers if k.startswith("dfits-data")]
        # by default 4-channel slabs (2 blocks along freq); planned: all 7 channels per chunk
        assert {key[2] for key in graph.layers[name]} == {0}
        assert {key[3] for key in graph.layers[name]} == {0, 1}  # rows split instead
        got = [thin.fits.moment(order).values for order in (0, 1, 2)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize(
    ("how", "dim"),
    [("nanstd", "freq"), ("std", ("y", "x")), ("nanmean", None), ("nanargmax", "freq"),
     ("argmin", None), ("count", "freq"), ("nanvar", "x")],
)  # fmt: skip
def test_reduce_matches_numpy_and_names_the_result(da, cube_data, how, dim):
    dims = da.dims if dim is None else (dim,) if isinstance(dim, str) else dim
    axes = tuple(da.get_axis_num(d) for d in dims)
    values = cube_data.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if how == "count":
            want = np.sum(~np.isnan(values), axis=axes)
        elif "arg" in how:
            want = getattr(np, how)(values, axis=None if dim is None else axes[0])
        else:
            want = getattr(np, how)(values, axis=axes)
    got = da.fits.reduce(how, dim)
    assert got.name == how
    assert set(got.dims) == set(da.dims) - set(dims)
    np.testing.assert_allclose(got.values, want, rtol=1e-6, equal_nan=True)
    units = da.attrs.get("units", "")
    if "arg" in how or how == "count":
        assert "units" not in got.attrs
    elif "var" in how:
        squared = (u.Unit(units) ** 2).to_string() if units else ""
        assert got.attrs.get("units", "") == squared  # astropy's format: "Jy2 / beam2"


def test_reduce_errors(da):
    with pytest.raises(ValueError, match="not a dimension"):
        da.fits.reduce("sum", "nope")
    with pytest.raises(TypeError, match="single axis"):
        da.fits.reduce("argmax", ("y", "x"))
    with pytest.raises(ValueError, match="unknown reduction 'median'; choose from argmax"):
        da.fits.reduce("median", "freq")
