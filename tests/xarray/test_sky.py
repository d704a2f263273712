"""2-D sky coordinates: not written by default, rebuilt exactly from a reopened zarr/netCDF."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from astropy.io import fits
from astropy.wcs import WCS

from dfits.cube.errors import RegionError
from tests.xarray.conftest import celestial_wcs, reread, write

N = 1024  # 4 MiB of float32: the few fixed bytes of metadata are well under 10 %


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> tuple[str, WCS]:
    path = tmp_path_factory.mktemp("sky") / "image.fits"
    data = np.random.default_rng(1).random((N, N)).astype(">f4")
    path = write(path, data, celestial_wcs("TAN"), BUNIT="Jy/beam", OBJECT="M 31")
    return path, reread(path)


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _write(ds: xr.Dataset, store: Path, kind: str) -> xr.Dataset:
    if kind == "zarr":
        encoding = {name: {"compressors": None} for name in ds.variables}
        ds.to_zarr(store, mode="w", consolidated=False, encoding=encoding)
        return xr.open_dataset(store, engine="zarr", consolidated=False)
    ds.to_netcdf(store, engine="scipy")
    return xr.open_dataset(store, engine="scipy")


def _check_sky(da: xr.DataArray, wcs: WCS, ys: np.ndarray, xs: np.ndarray) -> None:
    """The sky coordinates of ``da`` equal astropy's ``pixel_to_world`` at pixels ys × xs."""
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    extra = [0] * (wcs.pixel_n_dim - 2)
    want = wcs.pixel_to_world(xx, yy, *extra)
    want = want[0] if isinstance(want, list) else want
    sky = da.fits.sky_coords
    assert set(sky) == {"ra", "dec"}
    np.testing.assert_array_equal(sky["ra"].values, want.ra.deg)
    np.testing.assert_array_equal(sky["dec"].values, want.dec.deg)
    got = da.fits.skycoord()
    assert got.frame.name == want.frame.name
    np.testing.assert_array_equal(got.ra.deg, want.ra.deg)
    np.testing.assert_array_equal(got.dec.deg, want.dec.deg)


@pytest.mark.parametrize("kind", ["zarr", "netcdf"])
def test_written_store_holds_the_data_and_the_wcs_comes_back(tmp_path, image, kind):
    path, wcs = image
    ds = xr.open_dataset(path, engine="dfits", chunks={})
    assert [k for k, c in ds.coords.items() if c.ndim > 1] == []
    store = tmp_path / ("image.zarr" if kind == "zarr" else "image.nc")
    back = _write(ds, store, kind)
    data_bytes = N * N * 4
    assert _bytes(store) <= 1.1 * data_bytes
    if kind == "zarr":  # what is not the data: coordinates, attributes, metadata
        assert _bytes(store) - _bytes(store / "primary") < 0.02 * data_bytes
    da, orig = back["primary"], ds["primary"]
    np.testing.assert_array_equal(da.values, fits.getdata(path))
    assert da.fits.header.to_astropy() == fits.getheader(path)
    assert da.fits.wcs.to_header() == orig.fits.wcs.to_header() == wcs.to_header()
    assert da.attrs["units"] == "Jy/beam"
    assert back.attrs["fits_filename"] == ds.attrs["fits_filename"]
    ys, xs = np.arange(N), np.arange(N)
    _check_sky(da, wcs, ys, xs)
    # sliced after reopening: the exact values at the original pixels, and the sliced WCS
    sub = da.isel(y=slice(100, 400, 3), x=slice(7, 900, 5))
    _check_sky(sub, wcs, ys[100:400:3], xs[7:900:5])
    assert (
        sub.fits.wcs.to_header()
        == orig.isel(y=slice(100, 400, 3), x=slice(7, 900, 5)).fits.wcs.to_header()
    )


@pytest.mark.parametrize("kind", ["zarr", "netcdf"])
def test_cube_round_trip(tmp_path, cube, kind):
    path, wcs = cube
    ds = xr.open_dataset(path, engine="dfits")
    back = _write(ds, tmp_path / f"cube.{kind}", kind)
    da = back["primary"]
    assert da.dims == ("stokes", "freq", "y", "x")
    np.testing.assert_array_equal(da["freq"].values, ds["freq"].values)
    assert list(da["stokes"].values) == ["I", "Q"]
    assert da.fits.wcs.to_header() == wcs.to_header()
    plane = da.isel(stokes=1, freq=3, y=slice(2, 9))
    _check_sky(plane, wcs, np.arange(2, 9), np.arange(10))
    np.testing.assert_array_equal(
        plane.fits.sky_coords["dec"].values,
        xr.open_dataarray(path, sky_coords=True)["dec"].values[2:9],
    )


def test_sky_coords_keyword_restores_the_2d_coordinates(image):
    path, wcs = image
    ds = xr.open_dataset(path, engine="dfits", sky_coords=True, chunks={})
    assert ds["ra"].dims == ("y", "x")
    assert ds["ra"].attrs["units"] == "deg"
    assert ds["ra"].chunks == ds["primary"].chunks  # dask, in the data's chunks
    block = ds["ra"][5:8, 1000:1003].values
    want = wcs.pixel_to_world(*np.meshgrid(np.arange(1000, 1003), np.arange(5, 8)))
    np.testing.assert_array_equal(block, want.ra.deg)
    lazy = xr.open_dataset(path, engine="dfits", sky_coords=True)
    assert not lazy["dec"].variable._in_memory  # computed on demand
    assert lazy["dec"].isel(y=3, x=4).item() == wcs.pixel_to_world(4, 3).dec.deg
    # ra/dec are ordinary variables there: drop_variables and assign_coords work as before
    only = xr.open_dataset(path, engine="dfits", sky_coords=True, drop_variables=["ra"])
    assert "ra" not in only.coords
    assert "dec" in only.coords
    da = xr.open_dataarray(path, engine="dfits")
    assert set(da.assign_coords(da.fits.sky_coords).coords) >= {"ra", "dec"}


def test_scalar_pixel_and_errors(tmp_path, image):
    path, wcs = image
    row = xr.open_dataarray(path, engine="dfits").isel(y=17, x=slice(0, 5))
    assert row.fits.sky_coords["ra"].dims == ("x",)
    np.testing.assert_array_equal(
        row.fits.sky_coords["ra"].values, wcs.pixel_to_world(np.arange(5), 17).ra.deg
    )
    plain = xr.open_dataarray(write(tmp_path / "p.fits", np.zeros((3, 4), ">f4")))
    with pytest.raises(RegionError, match="no celestial WCS"):
        plain.fits.sky_coords  # noqa: B018
    with pytest.raises(RegionError, match="pixel_y/pixel_x"):
        xr.DataArray(np.zeros(3), attrs=plain.attrs).fits.sky_coords  # noqa: B018
    # decode_wcs=False keeps pixel-index dimensions and no world coordinates at open
    pix = xr.open_dataset(path, engine="dfits", decode_wcs=False, sky_coords=True)
    assert set(pix.coords) == {"pixel_y", "pixel_x"}


def test_moment_map_writes_small(tmp_path, cube):
    # a product of the accessor keeps the header and pixel coordinates: its sky comes back too
    path, wcs = cube
    m0 = xr.open_dataarray(path, engine="dfits").isel(stokes=0).fits.moment(0)
    store = tmp_path / "m0.zarr"
    m0.to_dataset(name="m0").to_zarr(store, mode="w", consolidated=False)
    back = xr.open_dataarray(store, engine="zarr", consolidated=False)
    assert [k for k, c in back.coords.items() if c.ndim > 1] == []
    _check_sky(back, wcs, np.arange(12), np.arange(10))
    assert os.path.isdir(store)
