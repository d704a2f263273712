"""Compatibility through xarray: DataArrays over dfits data behave like ones over numpy.

Each test opens a sample file three ways — the ``dfits`` engine as is (lazy backend array),
the engine with ``chunks=`` (dask), and a DataArray wrapped around the dfits dask array —
applies one xarray operation, and compares with the same operation on a DataArray over
astropy's values (same dims and coordinates, chunked alike). Computed results must hold plain
``numpy.ndarray`` data.
"""

from __future__ import annotations

import importlib.util
import re

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from tests.compat_ops import CASE_NAMES, assert_same, write_cases

# asking the engine for chunks finer than the (single) preferred chunk is the point here
pytestmark = pytest.mark.filterwarnings("ignore:The specified chunks separate:UserWarning")

DIMS = ("z", "y", "x")
OPENERS = ("engine", "engine-chunks", "wrapped")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("compat-xarray"))


@pytest.fixture(params=CASE_NAMES)
def case(request, cases):
    return cases[request.param]


@pytest.fixture(params=OPENERS)
def pair(request, case):
    """(DataArray over dfits, DataArray over astropy's values, the case)."""
    if request.param == "wrapped":
        got = xr.DataArray(case.dfits(), dims=DIMS, name="primary")
    else:
        chunks = {"z": 4, "y": 3} if request.param == "engine-chunks" else None
        got = xr.open_dataarray(case.path, engine="dfits", chunks=chunks)
    assert got.dims == DIMS
    coords = {name: (c.dims, c.values) for name, c in got.coords.items()}
    want = xr.DataArray(case.ref, dims=DIMS, coords=coords, name=got.name)
    if got.chunks is not None:
        want = want.chunk(dict(zip(DIMS, got.chunks, strict=True)))
    return got, want, case


def assert_plain_data(result: xr.DataArray) -> None:
    """A computed DataArray holds a plain ndarray, not dask and not a dfits type."""
    assert not isinstance(result.data, da.Array), "still a dask array after computing"
    assert type(result.data) is np.ndarray, f"holds {type(result.data).__qualname__}"


def check(pair, op) -> None:
    """``op`` on both DataArrays, computed: same dims, coordinates, dtype and values."""
    got_in, want_in, _ = pair
    got, want = op(got_in).compute(), op(want_in).compute()
    assert_plain_data(got)
    assert got.dims == want.dims
    xr.testing.assert_equal(got.coords.to_dataset(), want.coords.to_dataset())
    assert_same(got.data, want.data)


def test_load_and_compute_give_numpy(pair):
    """``.load()``, ``.compute()``, ``.values`` and ``np.asarray`` all give plain ndarrays."""
    got, _, case = pair
    computed = got.compute()
    assert_plain_data(computed)
    assert_same(computed.data, case.ref)
    assert type(got.values) is np.ndarray
    assert type(np.asarray(got)) is np.ndarray
    loaded = got.load()
    assert loaded is got
    assert_plain_data(loaded)
    assert_same(loaded.data, case.ref)


@pytest.mark.parametrize("skipna", [True, False], ids=["skipna", "keepna"])
@pytest.mark.parametrize("name", ["mean", "sum", "std", "max", "argmax"])
def test_reduction(pair, name, skipna):
    """``mean/sum/std/max/argmax`` over the leading dim, with and without skipping NaN."""
    check(pair, lambda d: getattr(d, name)("z", skipna=skipna))


def test_reduction_over_all_dims(pair):
    """Reductions over every dim give 0-d plain ndarrays."""
    check(pair, lambda d: d.sum())
    check(pair, lambda d: d.std(["y", "x"]))
    check(pair, lambda d: d.count("z"))
    check(pair, lambda d: d.mean("x", skipna=False))
    check(pair, lambda d: d.argmax("x"))


@pytest.mark.parametrize(
    "op",
    [
        lambda d: d.rolling(z=3).mean(),
        lambda d: d.rolling(y=3, center=True, min_periods=1).mean(),
        lambda d: d.rolling(x=4).sum(),
    ],
    ids=["z3", "y3-center", "x4-sum"],
)
def test_rolling(pair, op):
    """Rolling windows (``sliding_window_view`` or ``map_overlap`` underneath)."""
    check(pair, op)


@pytest.mark.parametrize(
    "op",
    [
        lambda d: d.coarsen(z=2, y=2).mean(),
        lambda d: d.coarsen(y=3, x=5, boundary="trim").max(),
        lambda d: d.coarsen(x=5, boundary="pad").sum(),
    ],
    ids=["z2-y2-mean", "trim-max", "pad-sum"],
)
def test_coarsen(pair, op):
    """Block aggregation with exact, trimmed and padded boundaries."""
    check(pair, op)


def test_where(pair):
    """``where`` with a threshold: masking, filling, then reducing."""
    t = pair[2].threshold
    check(pair, lambda d: d.where(d > t))
    check(pair, lambda d: d.where(d > t, 0).sum("y"))
    check(pair, lambda d: xr.where(d > t, 1, 0).sum("z"))


def test_interp(pair):
    """Linear interpolation along a float coordinate assigned on both sides."""
    pytest.importorskip("scipy")
    z = np.arange(6.0) * 0.5
    check(pair, lambda d: d.assign_coords(z=z).interp(z=[0.25, 1.1, 2.4]))


def test_resample(pair):
    """``resample`` over a daily datetime coordinate on the leading dim."""
    times = pd.date_range("2024-01-01", periods=6, freq="D")
    check(pair, lambda d: d.assign_coords(z=times).resample(z="2D").mean())
    check(pair, lambda d: d.assign_coords(z=times).resample(z="3D").max())


def test_to_zarr_round_trip(pair, tmp_path):
    """``to_zarr`` then ``xr.open_zarr`` gives astropy's values back."""
    got, _, case = pair
    store = tmp_path / "x.zarr"
    got.to_dataset(name="primary").to_zarr(store, mode="w", consolidated=False)
    back = xr.open_zarr(store, consolidated=False)["primary"].compute()
    assert_plain_data(back)
    assert back.dims == DIMS
    assert_same(back.data, case.ref)


def _netcdf_engine() -> str:
    for module, engine in (("netCDF4", "netcdf4"), ("h5netcdf", "h5netcdf"), ("scipy", "scipy")):
        if importlib.util.find_spec(module) is not None:
            return engine
    pytest.skip("no netCDF engine installed (netCDF4, h5netcdf or scipy)")


def test_to_netcdf_round_trip(pair, tmp_path):
    """``to_netcdf`` then ``xr.open_dataarray`` gives astropy's values back."""
    engine = _netcdf_engine()
    got, _, case = pair
    path = tmp_path / "x.nc"
    try:  # netCDF3 (scipy's engine) holds no unsigned or 64-bit integers, whoever writes them
        xr.DataArray(case.ref, dims=DIMS).to_netcdf(tmp_path / "ref.nc", engine=engine)
    except ValueError as err:
        with pytest.raises(ValueError, match=re.escape(str(err)[:40])):
            got.to_netcdf(path, engine=engine)
        return
    got.to_netcdf(path, engine=engine)
    with xr.open_dataarray(path, engine=engine) as back:
        loaded = back.load()
        assert_plain_data(loaded)
        assert_same(loaded.data, case.ref)
