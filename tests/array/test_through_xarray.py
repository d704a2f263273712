"""xarray's reductions on a dfits-backed DataArray reach the fused kernels too."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import dfits
from dfits.io.writer import ImageWriter
from dfits.stored import stored


@pytest.fixture
def cube(tmp_path):
    path = tmp_path / "c.fits"
    rng = np.random.default_rng(5)
    data = rng.integers(-500, 500, (12, 10, 9)).astype(np.int16)
    data[2, 3, 4] = -32768
    with ImageWriter(
        path, data.shape, ">i2", [("BSCALE", 0.5), ("BZERO", 2.0), ("BLANK", -32768)]
    ) as out:
        out.write(data)
    ref = np.where(data == -32768, np.nan, data * 0.5 + 2.0)
    arr = xr.DataArray(dfits.open(path, chunks=(5, 10, 9))[0].data, dims=("z", "y", "x"))
    return arr, ref


@pytest.mark.parametrize(
    ("name", "lazy", "oracle"),
    [
        ("mean", lambda a: a.mean(), lambda r: np.nanmean(r)),
        ("mean-z", lambda a: a.mean("z"), lambda r: np.nanmean(r, axis=0)),
        ("std-yx", lambda a: a.std(("y", "x")), lambda r: np.nanstd(r, axis=(1, 2))),
        ("sum-skipna-false", lambda a: a.sum("x", skipna=False), lambda r: np.sum(r, axis=2)),
        # xarray's skipna sum and count are where/isnan graphs, not np.nansum
        ("sum", lambda a: a.sum(), lambda r: np.nansum(r)),
        ("sum-z", lambda a: a.sum("z"), lambda r: np.nansum(r, axis=0)),
        (
            "sum-min-count",
            lambda a: a.sum("y", min_count=10),
            lambda r: np.where(np.isnan(r).any(axis=1), np.nan, np.nansum(r, axis=1)),
        ),
        ("count", lambda a: a.count(), lambda r: np.sum(~np.isnan(r))),
        ("count-yx", lambda a: a.count(("y", "x")), lambda r: np.sum(~np.isnan(r), axis=(1, 2))),
        ("fillna-sum", lambda a: a.fillna(0).sum("z", skipna=False), lambda r: np.nansum(r, 0)),
        ("max", lambda a: a.max("y"), lambda r: np.nanmax(r, axis=1)),
        ("var-isel", lambda a: a.isel(z=slice(3, 9)).var("z"), lambda r: np.nanvar(r[3:9], axis=0)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_xarray_reductions_are_fused(cube, monkeypatch, name, lazy, oracle):
    arr, ref = cube

    def refuse(self):
        raise AssertionError("decoded a stored chunk")

    monkeypatch.setattr(stored.StoredChunk, "decode", refuse)
    got = lazy(arr).compute().values
    np.testing.assert_allclose(got, oracle(ref), rtol=1e-5, equal_nan=True)
