"""open_mfdataset keeps every file's name and header (dfits.xarray.combine_attrs)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from astropy.io import fits

import dfits.xarray
from tests.xarray.conftest import celestial_wcs, write

# xarray's combine must not warn about its coming defaults: what we keep must not depend on them
pytestmark = pytest.mark.filterwarnings("error::FutureWarning")


def _header_of(text: str) -> fits.Header:
    return fits.Header.fromstring(text, sep="\n")  # as docs/xarray.md shows


def _check_per_file(ds: xr.Dataset, paths: list[str]) -> None:
    """Every file's name and header, in ``paths``' order; the first file's for ``.fits``."""
    assert ds.attrs["fits_filenames"] == paths
    assert ds.attrs["fits_filename"] == paths[0]
    headers = ds["primary"].attrs["fits_headers"]
    assert len(headers) == len(paths)
    for text, path in zip(headers, paths, strict=True):
        assert _header_of(text) == fits.getheader(path)
    assert ds["primary"].fits.header.to_astropy() == fits.getheader(paths[0])


@pytest.fixture
def frames(tmp_path):
    """Three 1-channel frames of one field at increasing frequency, each its own OBJECT."""
    paths = []
    for i in range(3):
        w = celestial_wcs("SIN", "PC", (("FREQ", 1e9 + i * 1e6, 1e6, "Hz"),))
        data = np.full((1, 3, 4), i, ">f4")
        paths.append(write(tmp_path / f"f{i}.fits", data, w, OBJECT=f"field {i}", BUNIT="K"))
    return paths


@pytest.fixture
def exposures(tmp_path):
    """Four images of one field, each with its own DATE-OBS."""
    w = celestial_wcs("TAN")
    return [
        write(
            tmp_path / f"e{i}.fits",
            np.full((3, 4), i, ">f4"),
            w,
            **{"DATE-OBS": f"2026-0{i + 1}-01"},
        )
        for i in range(4)
    ]


def test_by_coords_lists_files_in_coordinate_order(frames):
    ds = xr.open_mfdataset(
        frames[::-1], engine="dfits", combine="by_coords", combine_attrs=dfits.xarray.combine_attrs
    )
    np.testing.assert_array_equal(ds["freq"].values, [1e9, 1.001e9, 1.002e9])
    np.testing.assert_array_equal(ds["primary"].mean(("y", "x")).values, [0, 1, 2])
    _check_per_file(ds, frames)  # the order along freq, not the order given
    assert ds["primary"].attrs["units"] == "K"  # every file agrees
    assert "object" not in ds["primary"].attrs  # the files differ: no one file's value


def test_nested_lists_files_along_the_new_dimension(exposures):
    paths = exposures[:3]
    ds = xr.open_mfdataset(
        paths, combine="nested", concat_dim="frame", combine_attrs=dfits.xarray.combine_attrs
    )
    assert ds["primary"].sizes["frame"] == 3
    np.testing.assert_array_equal(ds["primary"].max(("y", "x")).values, [0, 1, 2])
    _check_per_file(ds, paths)
    dates = [_header_of(h)["DATE-OBS"] for h in ds["primary"].attrs["fits_headers"]]
    assert dates == ["2026-01-01", "2026-02-01", "2026-03-01"]
    assert ds["primary"].isel(frame=1).fits.wcs.wcs.crval[0] == 150.0


def test_nested_in_two_dimensions_lists_files_in_c_order(exposures):
    e = exposures
    ds = xr.open_mfdataset(
        [[e[0], e[1]], [e[2], e[3]]],
        combine="nested",
        concat_dim=["row", "col"],
        combine_attrs=dfits.xarray.combine_attrs,
    )
    assert ds["primary"].dims[:2] == ("col", "row")
    flat = ds["primary"].max(("y", "x")).values.ravel()  # C order of the result's dims
    assert ds.attrs["fits_filenames"] == [e[int(i)] for i in flat]
    assert [_header_of(h)["DATE-OBS"] for h in ds["primary"].attrs["fits_headers"]] == [
        f"2026-0{int(i) + 1}-01" for i in flat
    ]


def test_default_keeps_the_first_file_and_the_lists_survive_zarr(tmp_path, exposures):
    paths = exposures[:3]
    plain = xr.open_mfdataset(paths, combine="nested", concat_dim="frame")  # xarray's "override"
    assert plain.attrs["fits_filename"] == paths[0]
    assert "fits_filenames" not in plain.attrs
    ds = xr.open_mfdataset(
        paths, combine="nested", concat_dim="frame", combine_attrs=dfits.xarray.combine_attrs
    )
    store = tmp_path / "stack.zarr"
    ds.to_zarr(store, mode="w", consolidated=False)
    _check_per_file(xr.open_dataset(store, engine="zarr", consolidated=False), paths)


def test_concat_of_combined_results_extends_the_lists(exposures):
    one = xr.open_mfdataset(
        exposures[:2], combine="nested", concat_dim="frame",
        combine_attrs=dfits.xarray.combine_attrs,
    )  # fmt: skip
    two = xr.open_dataset(exposures[2], engine="dfits")
    both = xr.concat([one, two], dim="frame", combine_attrs=dfits.xarray.combine_attrs)
    _check_per_file(both, exposures[:3])
