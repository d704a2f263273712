"""The reductions dfits owns: every table entry equals numpy, on dfits and numpy-backed arrays."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.array import AGGREGATIONS, reduce
from tests.array.helpers import WIDE_MOMENTS, check_wide, float32_cube, replan, wide_integers
from tests.profiles import examples

ORACLES = {
    "sum": np.sum,
    "nansum": np.nansum,
    "mean": np.mean,
    "nanmean": np.nanmean,
    "var": np.var,
    "nanvar": np.nanvar,
    "std": np.std,
    "nanstd": np.nanstd,
    "max": np.max,
    "nanmax": np.nanmax,
    "min": np.min,
    "nanmin": np.nanmin,
    "count": lambda a, axis: np.sum(~np.isnan(a), axis=axis),
}


def test_every_entry_has_an_oracle():
    # the positional entries (arg reductions) are compared with numpy in test_argsteps
    from tests.array.test_argsteps import HOWS

    assert {name for name, agg in AGGREGATIONS.items() if not agg.positional} == set(ORACLES)
    assert {name for name, agg in AGGREGATIONS.items() if agg.positional} == set(HOWS)


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    return float32_cube(tmp_path_factory.mktemp("agg"), (10, 14, 18), (3, 7, 18), (2, 3, 4), 5)


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kwargs)


def _check(got, want, dtype):
    assert type(got) is np.ndarray or np.isscalar(got)
    assert np.asarray(got).dtype == np.asarray(want).dtype or dtype.kind == "f"
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, equal_nan=True)


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    how=st.sampled_from(sorted(ORACLES)),
    axis=st.sampled_from([None, 0, 1, 2, (0, 1), (1, 2), (0, 2)]),
    chunks=st.tuples(st.integers(1, 10), st.integers(2, 14), st.integers(5, 18)),
    backed=st.booleans(),
)
def test_entries_match_numpy(cube, how, axis, chunks, backed):
    x, data = cube
    z = replan(x, chunks, "agg") if backed else da.from_array(data, chunks=chunks)
    got = _quiet(lambda: reduce(z, how, axis=axis).compute())
    want = _quiet(ORACLES[how], data.astype(np.float64), axis=axis)
    _check(got, want, np.dtype(np.float32))


def test_keepdims_and_ddof(cube):
    x, data = cube
    got = _quiet(lambda: reduce(x, "nanstd", axis=(1, 2), keepdims=True, ddof=1).compute())
    want = _quiet(np.nanstd, data.astype(float), axis=(1, 2), keepdims=True, ddof=1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_bands_reduce_the_values_inside(cube):
    x, data = cube
    inside = np.where((data >= 0.2) & (data <= 1.5), data.astype(float), np.nan)
    for how in ("nansum", "nanmean", "nanstd", "nanmax", "count"):
        got = _quiet(lambda how=how: reduce(x, how, axis=0, band=(0.2, 1.5)).compute())
        np.testing.assert_allclose(got, _quiet(ORACLES[how], inside, axis=0), rtol=1e-5,
                                   atol=1e-6, equal_nan=True, err_msg=how)  # fmt: skip


def test_one_kernel_pass_per_chunk(cube, monkeypatch, no_decode):
    from dfits import kernels

    x, _ = cube
    calls = []
    real = kernels.moments

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels, "moments", spy)
    _quiet(lambda: reduce(x, "nanstd", axis=0).compute())
    assert len(calls) == x.npartitions


def test_integer_sums_are_exact(tmp_path):
    from astropy.io import fits

    import dfits

    data = np.full((4, 5), 2**40 + 1, dtype=np.int64)
    path = tmp_path / "i8.fits"
    fits.PrimaryHDU(data).writeto(path)
    x = dfits.open(path, chunks=(1, 5))[0].data
    got = reduce(x, "sum").compute()
    assert got.dtype == np.int64
    assert int(got) == int(data.sum())


@pytest.mark.parametrize("how", ["min", "max", "nanmin", "nanmax"])
def test_empty_extremes_raise_as_numpy(how):
    # "nanmin" once became "nmin" through lstrip("n").lstrip("a") and did not raise
    with pytest.raises(ValueError, match="zero-size"):
        getattr(np, how)(np.zeros((0, 3)), axis=0)
    with pytest.raises(ValueError, match="zero-size"):
        reduce(da.zeros((0, 3)), how, axis=0)


_WIDE_HOWS = ("sum", "nansum", *WIDE_MOMENTS)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), dtype=st.sampled_from([np.int64, np.uint64]))
def test_wide_integer_images_reduce_as_numpy(tmp_path, data, dtype):
    """BITPIX 64 images (and BZERO = 2**63 unsigned ones) whose sums pass 2**63: every route
    (numpy calls and methods on the dask array, reduce, numpy-backed blocks) gives numpy's
    value of the decoded array, means and spreads accumulated in float64, sums wrapping."""
    from astropy.io import fits

    import dfits

    shape = data.draw(st.tuples(st.integers(1, 5), st.integers(1, 6)), label="shape")
    size = shape[0] * shape[1]
    drawn = data.draw(st.lists(wide_integers(dtype), min_size=size, max_size=size), label="values")
    values = np.array(drawn, dtype=dtype).reshape(shape)
    chunks = data.draw(st.tuples(st.integers(1, shape[0]), st.integers(1, shape[1])))
    axis = data.draw(st.sampled_from([None, 0, 1]), label="axis")
    path = tmp_path / f"wide-{np.dtype(dtype)}-{abs(hash(values.tobytes()))}.fits"
    fits.PrimaryHDU(values).writeto(path, overwrite=True)
    x = dfits.open(path, chunks=chunks)[0].data
    assert x.dtype == dtype
    plain = da.from_array(values, chunks=chunks)
    for how in _WIDE_HOWS:
        routes = {
            f"np.{how}": getattr(np, how)(x, axis=axis),
            f"reduce {how}": reduce(x, how, axis=axis),
            f"reduce {how} of numpy blocks": reduce(plain, how, axis=axis),
        }
        if not how.startswith("nan"):
            routes[f"x.{how}()"] = getattr(x, how)(axis=axis)
        for what, lazy in routes.items():
            check_wide(_quiet(lazy.compute), values, how, axis, f"{what} axis={axis}")


def test_wide_integer_means_do_not_decode(tmp_path, no_decode):
    """The float64 sums of 64-bit integers come from a kernel pass, not a decoded chunk."""
    from astropy.io import fits

    import dfits

    values = np.array([[2**62, 2**62], [2**62, -5]], np.int64)
    fits.PrimaryHDU(values).writeto(tmp_path / "k.fits")
    x = dfits.open(tmp_path / "k.fits", chunks=(1, 2))[0].data
    for how in WIDE_MOMENTS:
        check_wide(getattr(np, how)(x).compute(), values, how, what=how)
        check_wide(reduce(x, how).compute(), values, how, what=f"reduce {how}")
