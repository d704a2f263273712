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
