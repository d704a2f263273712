"""Exact lazy medians against numpy and astropy: every float kind, NaN, infinities, ties."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from astropy.stats import median_absolute_deviation
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.cube.medians import median_deviation, nanmedian


def _same(got, want):
    assert got.dtype == want.dtype
    assert got == want or (np.isnan(got) and np.isnan(want))


@settings(max_examples=25, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-1e6, 1e6),
            st.just(float("nan")),
            st.sampled_from([0.0, -0.0, 1.0, float("inf"), float("-inf"), 1e-310]),
        ),
        min_size=1,
        max_size=300,
    ),
    chunk=st.integers(1, 50),
    dtype=st.sampled_from(["f4", "f8", "i2"]),
)
def test_medians_equal_numpy_and_astropy(values, chunk, dtype):
    v = np.array(values)
    if dtype == "i2":
        v = np.nan_to_num(v, posinf=7, neginf=-7).clip(-3e4, 3e4)
    v = v.astype(dtype)
    x = da.from_array(v, chunks=chunk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's all-NaN and inf - inf notes
        _same(nanmedian(x).compute(), np.nanmedian(v))
        _same(median_deviation(x).compute(), median_absolute_deviation(v, ignore_nan=True))


def test_medians_of_nothing_and_of_a_scalar():
    nothing = da.from_array(np.full((3, 4), np.nan, np.float32), chunks=2)
    assert np.isnan(nanmedian(nothing).compute())
    assert np.isnan(median_deviation(nothing).compute())
    assert nanmedian(da.from_array(np.float64(2.5))).compute() == 2.5


def test_medians_are_lazy_and_pass_over_the_chunks_a_fixed_number_of_times(monkeypatch):
    import dfits.kernels.histogram as histogram

    calls = []
    real = histogram.key_counts

    def counted(*args):
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(histogram, "key_counts", counted)
    rng = np.random.default_rng(3)
    v = rng.standard_normal((6, 10, 10)).astype(np.float32)
    v[v > 1.5] = np.nan
    x = da.from_array(v, chunks=(2, 5, 10))
    for kind, passes in ((np.float32, 4), (np.float64, 8)):
        lazy = median_deviation(x.astype(kind))
        assert not calls
        got = lazy.compute()
        assert got == median_absolute_deviation(v.astype(kind), ignore_nan=True)
        assert len(calls) == passes * x.npartitions
        calls.clear()


class _Tracked(np.ndarray):
    """An ndarray that counts how many of its kind are alive."""

    alive = 0
    most = 0

    def __array_finalize__(self, obj):
        if type(obj) is np.ndarray:  # a fresh block (views of it are not counted)
            type(self).alive += 1
            type(self).most = max(type(self).most, type(self).alive)

    def __del__(self):
        if isinstance(self.base, np.ndarray) and type(self.base) is np.ndarray:
            type(self).alive -= 1


def _block(i, n):
    return np.random.default_rng(i).standard_normal(n).astype(np.float32).view(_Tracked)


def test_passes_hold_one_block_at_a_time():
    """Each pass reads a block, counts it and drops it: never the whole array in memory."""
    import dask

    blocks = [da.from_delayed(dask.delayed(_block)(i, 1000), (1000,), np.float32) for i in range(8)]
    x = da.concatenate(blocks)
    lazy = median_deviation(x)
    _Tracked.alive = _Tracked.most = 0
    with dask.config.set(scheduler="sync"):
        got = lazy.compute()
    assert _Tracked.most == 1  # the sync scheduler: one block read, counted and dropped
    values = np.concatenate([_block(i, 1000) for i in range(8)]).view(np.ndarray)
    assert got == median_absolute_deviation(values)


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_chunks_are_counted_a_slab_at_a_time(dtype, monkeypatch, tmp_path):
    """A dfits chunk is decoded and counted in slabs of rows (a few per chunk here), with the
    same medians as numpy: a counting pass never holds a whole decoded chunk per thread."""
    from astropy.io import fits

    import dfits
    from dfits.cube import medians

    rng = np.random.default_rng(3)
    data = rng.standard_normal((6, 10, 12)).astype(dtype)
    data[::2, :3, :3] = np.nan
    path = tmp_path / "c.fits"
    fits.PrimaryHDU(data).writeto(path)
    x = dfits.open(path, chunks=(3, 10, 12))[0].data
    monkeypatch.setattr(medians, "SLAB_BYTES", 2 * 10 * 12 * data.itemsize)  # 2 rows a slab
    from dfits.kernels import histogram

    seen = []
    real = histogram.key_counts
    monkeypatch.setattr(histogram, "key_counts", lambda v, *a: seen.append(v.shape) or real(v, *a))
    _same(nanmedian(x).compute(), np.nanmedian(data))
    want = np.nanmedian(np.abs(data - np.nanmedian(data)))
    _same(median_deviation(x).compute(), want)
    assert seen
    assert max(s[0] for s in seen) == 2
