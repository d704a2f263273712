"""The reductions dfits owns: every table entry equals numpy, on dfits and numpy-backed arrays."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.array import AGGREGATIONS, reduce
from tests.array.helpers import (
    WIDE_MOMENTS,
    check_wide,
    float32_cube,
    replan,
    wide_integers,
    write_image,
)
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


# -- kernel passes and decodes per chunk of every public statistic on the table ---------------

# (the ``counted`` fixture and PASS_KERNELS: tests/conftest.py)


#: encodings of the pass-count cube: (BITPIX, BLANK)
PASS_CUBES = {"f32-nan": (-32, None), "i16-blank": (16, -7), "i64": (64, None)}


@pytest.fixture(scope="module", params=sorted(PASS_CUBES))
def pass_cube(request, tmp_path_factory):
    from tests.array.helpers import stored_sample, write_image

    bitpix, blank = PASS_CUBES[request.param]
    data = stored_sample(bitpix, blank, seed=2, nan=True)
    path = tmp_path_factory.mktemp("passes") / f"{request.param}.fits"
    write_image(path, data, blank=blank)
    import dfits

    return request.param, replan(dfits.open(path)[0].data, (3, 6, 5), f"passes-{request.param}")


@pytest.mark.parametrize("how", sorted(AGGREGATIONS))
def test_each_entry_is_one_kernel_pass_per_chunk_and_no_decode(pass_cube, counted, how):
    """Every entry of the table reads each chunk once, with its kernel, never decoding it;
    a count of values that cannot be missing (integers without BLANK) reads nothing."""
    name, x = pass_cube
    # the sample has all-NaN slices, where numpy's nanargmax raises: give them an index
    options = {"allnan": -1} if how.startswith("nanarg") else {}
    for axis in (None, 0, 2):
        counted.clear()
        _quiet(lambda axis=axis: reduce(x, how, axis=axis, **options).compute())
        if how == "count" and name == "i64":
            assert counted == {}, axis
            continue
        assert len(counted) == 1, (axis, counted)
        assert list(counted.values()) == [x.npartitions], (axis, counted)
        assert not {"decode", "chunk.decode"} & set(counted), (axis, counted)


def test_reductions_computed_together_share_one_pass(pass_cube, counted):
    """A sum, a count and a mean of one chunk over the same axes (quicklook's, computed
    together, their chunk steps on two threads) run the sum pass once per chunk: the
    second asker waits for the first's memoised result."""
    import dask

    name, x = pass_cube
    for _ in range(3):  # a race shows up only sometimes
        counted.clear()
        _quiet(
            lambda: dask.compute(*(reduce(x, h, axis=0) for h in ("nansum", "count", "nanmean")))
        )
        kernel = "integer_sum" if name == "i64" else "sum_count"
        if name == "i64":  # its sum wraps as numpy's (integer pass), its mean is a float sum
            assert counted == {kernel: x.npartitions, "sum_count": x.npartitions}
        else:
            assert counted == {kernel: x.npartitions}


def test_quicklook_reduces_in_two_passes_per_chunk(tmp_path, counted):
    """quicklook(full=True): moment 0 and the channel count along the spectral axis from
    one sum pass, the mean spectrum over the plane from another; nothing decodes."""
    import dask
    from astropy.io import fits

    import dfits
    from dfits.jupyter.figures import quicklook

    data = np.random.default_rng(4).random((6, 50, 40)).astype(np.float32)
    data[0, 0, 0] = np.nan
    cards = [("CTYPE3", "FREQ"), ("CRVAL3", 1e9), ("CDELT3", 1e6), ("CRPIX3", 1.0)]
    fits.writeto(tmp_path / "q.fits", data, fits.Header(cards))
    hdu = fits.PrimaryHDU(np.nan_to_num(data * 100, nan=-7).astype(np.int16), fits.Header(cards))
    hdu.header["BLANK"] = -7
    hdu.writeto(tmp_path / "qi.fits")
    for name in ("q.fits", "qi.fits"):
        with dask.config.set({"array.chunk-size": "8KiB"}):
            image = dfits.open(tmp_path / name)[0]
            chunks = image.data.npartitions
            counted.clear()
            quicklook(image, full=True)
        assert chunks > 2
        assert counted == {"sum_count": 2 * chunks}, name


def test_mean_partials_are_float64_whatever_the_integer(tmp_path):
    """A mean's chunk totals are exact within a chunk and float64 between chunks: int64
    totals of int32 chunks would wrap once the chunks together pass 2**63 (2**32 values
    near 2**31, a 16 GiB cube), where numpy's float64 mean does not."""
    from dfits.array import steps
    from dfits.stored.stored import StoredChunk
    from tests.array.helpers import reader_of

    values = np.full((4, 3), 2**31 - 1, np.int32)
    write_image(tmp_path / "j.fits", values)
    import dfits

    stored = dfits.open(tmp_path / "j.fits", chunks=(2, 3))[0].data
    chunk = reader_of(stored)[(slice(0, 2), slice(0, 3))]
    assert isinstance(chunk, StoredChunk)
    for block in (values, chunk):
        part = steps.mean_chunk(block, (0,), False)
        assert part["total"].dtype == np.float64
    np.testing.assert_array_equal(reduce(stored, "mean", axis=0).compute(), values.mean(0))
