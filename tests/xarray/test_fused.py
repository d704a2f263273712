"""A DataArray's values as dask: dfits' own chunks for file selections, else its own data."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from dfits.cube.wcs import pixel_coords
from dfits.xarray.fused import fused_dask


@pytest.fixture
def da(cube):
    return xr.open_dataarray(cube[0], engine="dfits")


def _from_file(x):
    return any(k.startswith("dfits-data") for k in x.dask.layers)


def test_pixel_coords(da):
    sub = da.isel(x=slice(2, 8, 2), stokes=0)
    pixels = pixel_coords(sub)
    assert pixels[1].tolist() == [2, 4, 6]  # x is FITS axis 1
    assert pixels[4] == 0  # stokes picked by the integer selection: a scalar coordinate


@pytest.mark.parametrize(
    "index",
    [{}, {"x": slice(1, 9, 2)}, {"stokes": 1, "freq": slice(6, 0, -3)}],
    ids=["whole", "stepped", "reversed"],
)
def test_file_selections_read_dfits_chunks(da, cube_data, index):
    sub = da.isel(index)
    x = fused_dask(sub)
    assert _from_file(x)
    np.testing.assert_array_equal(x.compute(), sub.values)


def test_reduction_plan_along_a_dimension(da):
    x = fused_dask(da, along="freq")
    assert x.chunks[da.get_axis_num("freq")] == (da.sizes["freq"],)


def test_other_data_keep_their_own(da, cube_data):
    loaded = da.copy().load()
    x = fused_dask(loaded)
    assert not _from_file(x)
    assert x.npartitions == 1
    computed = (da * 2).chunk({"freq": 3})  # arithmetic leaves the file behind
    assert fused_dask(computed) is computed.data
    uneven = da.isel(freq=[0, 2, 3])  # not evenly stepped: xarray's lazy array, chunked
    y = fused_dask(uneven)
    assert not _from_file(y)
    np.testing.assert_array_equal(y.compute(), cube_data[:, [0, 2, 3]])
