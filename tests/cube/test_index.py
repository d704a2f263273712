"""Label slices of world coordinates in either order, on ascending and descending axes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from dfits.cube.index import WorldIndex, with_world_index

from .conftest import spectral_cube_file


@pytest.mark.parametrize("kind", ["freq-descending-4d", "freq-ascending-3d"])
@pytest.mark.parametrize("chunks", [None, {}])
def test_sel_slices_between_two_values_whatever_the_direction(tmp_path, kind, chunks):
    cube = xr.open_dataarray(spectral_cube_file(tmp_path, kind), engine="dfits", chunks=chunks)
    assert isinstance(cube.xindexes["freq"], WorldIndex)
    f = cube["freq"].values
    lo, hi = sorted((f[2], f[8]))
    want = f[(f >= lo) & (f <= hi)]
    for bounds in ((lo, hi), (hi, lo)):
        got = cube.sel(freq=slice(*bounds))
        assert got.sizes["freq"] == 7
        np.testing.assert_array_equal(np.sort(got["freq"].values), np.sort(want))
        np.testing.assert_array_equal(got.values, cube.isel(freq=np.isin(f, want)).values)
    # the index survives selections and unit conversions
    part = cube.isel(freq=slice(1, 10))
    assert part.sel(freq=slice(lo, hi)).sizes["freq"] == 7
    v = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
    assert isinstance(v.xindexes["vrad"], WorldIndex)
    vel = v["vrad"].values
    assert v.sel(vrad=slice(vel[8], vel[2])).sizes["vrad"] == 7
    assert v.sel(vrad=slice(vel[2], vel[8])).sizes["vrad"] == 7


def test_everything_else_is_pandas_index_selection():
    a = with_world_index(
        xr.DataArray(np.arange(5.0), dims="f", coords={"f": [5.0, 4.0, 3.0, 2.0, 1.0]})
    )
    assert a.sel(f=3.0).item() == 2.0
    assert a.sel(f=[1.0, 5.0]).values.tolist() == [4.0, 0.0]
    assert a.sel(f=2.9, method="nearest").item() == 2.0
    assert a.sel(f=slice(4.0, None)).values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert a.sel(f=slice(None, None, 2)).size == 3
    assert a.sel(f=slice(3.0, 3.0)).values.tolist() == [2.0]
    with pytest.raises(KeyError):
        a.sel(f=7.0)
    labels = with_world_index(xr.DataArray([1, 2], dims="s", coords={"s": ["I", "V"]}))
    assert not isinstance(labels.xindexes["s"], WorldIndex)  # only numeric coordinates
