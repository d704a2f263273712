"""Positions of extremes through the table: equal to numpy's arg functions, ties and NaNs
included, on dfits arrays (the indexed kernel pass) and numpy-backed ones, any chunking."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.array import reduce
from tests.array.helpers import replan, write_image
from tests.profiles import examples

HOWS = ("argmax", "argmin", "nanargmax", "nanargmin")


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    values = np.random.default_rng(3).standard_normal((9, 8, 10)).astype(np.float32)
    values[2, 3, 4] = np.nan
    values[1, 1, 1] = values[6, 1, 1] = np.nanmax(values) + 1  # a tie: the first one wins
    path = tmp_path_factory.mktemp("arg") / "cube.fits"
    write_image(path, values)
    import dfits

    return replan(dfits.open(path)[0].data, (4, 8, 10), "argcube"), values


def _numpy(how, a, axis):
    try:
        return getattr(np, how)(a, axis=axis)
    except ValueError:
        return ValueError


def _allnan_numpy(how, a, axis):
    """numpy's ``nan`` arg reduction with -1 for all-NaN slices (the ``allnan=-1`` option)."""
    fill = -np.inf if how == "nanargmax" else np.inf
    index = getattr(np, how.removeprefix("nan"))(np.where(np.isnan(a), fill, a), axis=axis)
    return np.where(np.all(np.isnan(a), axis=axis), -1, index)


def _table(how, x, axis):
    try:
        return reduce(x, how, axis=axis).compute()
    except ValueError:
        return ValueError


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    how=st.sampled_from(HOWS),
    axis=st.sampled_from([None, 0, 1, 2, -1]),
    chunks=st.tuples(st.integers(1, 9), st.integers(1, 8), st.integers(2, 10)),
)
def test_positions_equal_numpy_on_any_chunking(tmp_path_factory, how, axis, chunks):
    path = tmp_path_factory.mktemp("tie") / "tie.fits"
    rng = np.random.default_rng(sum(chunks))
    a = rng.integers(-3, 4, (9, 8, 10)).astype(np.float32)  # many ties
    a[2, :, 5] = np.nan  # an all-NaN slice along axis 1
    a[0, 0, 0] = a[4, 4, 4] = np.nan
    write_image(path, a)
    import dfits

    stored = replan(dfits.open(path)[0].data, chunks, "tie")
    want = _numpy(how, a, axis)
    for x in (stored, da.from_array(a, chunks=chunks)):
        got = _table(how, x, axis)
        if want is ValueError:
            assert got is ValueError
        else:
            assert np.array_equal(got, want), (how, axis, chunks)
            assert np.asarray(got).dtype == np.intp
        if how.startswith("nan"):
            got = reduce(x, how, axis=axis, allnan=-1).compute()
            assert np.array_equal(got, _allnan_numpy(how, a, axis)), (how, axis, chunks)
            assert got.dtype == np.intp


@pytest.mark.parametrize(("bitpix", "blank"), [(16, -7), (32, None), (-64, None)])
def test_integers_with_blank_and_doubles(tmp_path, bitpix, blank):
    rng = np.random.default_rng(abs(bitpix))
    dtype = {16: "i2", 32: "i4", -64: "f8"}[bitpix]
    a = rng.integers(-5, 6, (6, 5, 7)).astype(dtype)
    if blank is not None:
        a[1, 2, 3] = blank
    path = tmp_path / "i.fits"
    write_image(path, a, blank=blank)
    import dfits

    x = replan(dfits.open(path)[0].data, (2, 5, 3), "arg")
    physical = a.astype(np.float64)
    if blank is not None:
        physical[a == blank] = np.nan
    for how in HOWS:
        for axis in (None, 0, 2):
            assert np.array_equal(_table(how, x, axis), _numpy(how, physical, axis))


def test_keepdims_and_one_axis_only(cube):
    x, values = cube
    got = reduce(x, "argmax", axis=0, keepdims=True).compute()
    assert np.array_equal(got, np.argmax(values, axis=0, keepdims=True))
    with pytest.raises(TypeError, match="single axis"):
        reduce(x, "argmax", axis=(0, 1))
    with pytest.raises(ValueError, match="empty"):
        reduce(x[:0], "argmin")


def test_allnan_option(tmp_path):
    """``allnan`` gives all-NaN slices an index (numpy's nanarg* raise, the default here)."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a[:, 1, 2] = np.nan
    path = tmp_path / "nan.fits"
    write_image(path, a)
    import dfits

    x = replan(dfits.open(path)[0].data, (1, 3, 4), "allnan")
    for how in ("nanargmax", "nanargmin"):
        with pytest.raises(ValueError, match="All-NaN"):
            reduce(x, how, axis=0).compute()
        got = reduce(x, how, axis=0, allnan=-7, keepdims=True).compute()
        want = _allnan_numpy(how, a, 0)
        want[want == -1] = -7
        assert np.array_equal(got, want[None])
        assert got[0, 1, 2] == -7
        got = reduce(x, how, axis=2, allnan=-1).compute()
        assert np.array_equal(got, _allnan_numpy(how, a, 2))
    with pytest.raises(TypeError, match="allnan"):
        reduce(x, "argmax", axis=0, allnan=-1)
    with pytest.raises(TypeError):
        reduce(x, "nanargmax", axis=0, allnan=0.5)
    with pytest.raises(TypeError):
        reduce(x, "nanargmax", axis=0, ddof=1)


@pytest.mark.parametrize("route", ["table", "dask", "allnan"])
def test_one_indexed_pass_answers_the_peak_and_its_position(cube, monkeypatch, route):
    """Along an outer axis one indexed kernel pass per chunk answers both what dask's argmax
    asks (the maximum, then its position) and the table's partial."""
    import dfits.kernels

    x, values = cube
    calls = []
    real = dfits.kernels.extrema

    def counting(*args, **kwargs):
        calls.append(kwargs.get("with_index", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(dfits.kernels, "extrema", counting)
    if route == "allnan":  # a peak's position (peak_velocity): the same one pass
        got = reduce(x, "nanargmax", axis=0, allnan=-1).compute()
        assert np.array_equal(got, _allnan_numpy("nanargmax", values, 0))
    else:
        got = (reduce(x, "argmax", axis=0) if route == "table" else x.argmax(axis=0)).compute()
        assert np.array_equal(got, np.argmax(values, axis=0))
    assert calls == [True] * x.numblocks[0]
