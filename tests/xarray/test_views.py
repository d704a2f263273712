"""HDU-like views over dask arrays: the attributes the figures read; sections read lazily."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from dfits.format.header import Header
from dfits.xarray.views import ArrayHDU, spectral_labels

from .conftest import spectral_cube_file


def test_array_hdu_offers_what_figures_read():
    data = da.arange(24, chunks=6).reshape(2, 3, 4)
    view = ArrayHDU(data, Header(b""), "cube")
    assert (view.shape, view.dtype, view.name) == ((2, 3, 4), data.dtype, "cube")
    assert (view.kind, view.is_image, view.index) == ("image", True, 0)
    got = view.section[1, ::2]
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, np.arange(24).reshape(2, 3, 4)[1, ::2])


@pytest.mark.parametrize("kind", ["freq-descending-4d", "freq-ascending-3d"])
def test_channel_maps_titled_in_the_chosen_spectral_unit(tmp_path, kind):
    cube = xr.open_dataarray(spectral_cube_file(tmp_path, kind), engine="dfits")
    velo = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")["vrad"].values
    fig = cube.fits.plot_channel_maps(4, unit="km/s", velocity_convention="radio")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    groups = np.array_split(np.arange(velo.size), 4)
    assert titles == [
        f"ch {g[0]}–{g[-1]}: {velo[g[0]]:.4f}–{velo[g[-1]]:.4f} km / s" for g in groups
    ]
    freq = cube.fits.plot_channel_maps(2)  # its own coordinate: Hz shown as GHz
    ghz = cube["freq"].values / 1e9
    assert freq.axes[0].get_title() == f"ch 0–6: {ghz[0]:.4f}–{ghz[6]:.4f} GHz"
    assert spectral_labels(cube.isel(freq=0)) is None  # no spectral dimension left
