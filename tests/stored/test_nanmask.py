"""NaN masks and NaN-zeroed chunks: xarray's skipna sum/count graphs on the stored bytes."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.format.dtypes import parse_decode_spec
from dfits.stored.nanmask import NanMask, NanZeroed, nan_zeroed
from dfits.stored.stored import StoredChunk
from tests.array.helpers import encoded_case, replan, stored_sample
from tests.profiles import examples

CASES = {
    "f32-nan": (-32, None, None, None),
    "f64": (-64, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "i16": (16, None, None, None),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request, tmp_path):
    bitpix, _, _, blank = CASES[request.param]
    data = stored_sample(bitpix, blank, seed=11, nan=request.param == "f32-nan")
    return encoded_case(tmp_path, data, CASES[request.param], (4, 6, 5))


# lazy (dask over dfits), oracle (numpy over astropy's values)
FUSED = {
    "isnan-sum": (lambda x: da.isnan(x).sum(), lambda a: np.isnan(a).sum()),
    "isnan-sum-axis0": (lambda x: da.isnan(x).sum(axis=0), lambda a: np.isnan(a).sum(axis=0)),
    "valid-sum-axis12": (
        lambda x: (~da.isnan(x)).sum(axis=(1, 2)),
        lambda a: (~np.isnan(a)).sum(axis=(1, 2)),
    ),
    "logical-not-sum": (
        lambda x: da.logical_not(da.isnan(x)).sum(axis=2),
        lambda a: np.logical_not(np.isnan(a)).sum(axis=2),
    ),
    "isnan-any-axis0": (lambda x: da.isnan(x).any(axis=0), lambda a: np.isnan(a).any(axis=0)),
    "isnan-all-axis12": (
        lambda x: da.isnan(x).all(axis=(1, 2)),
        lambda a: np.isnan(a).all(axis=(1, 2)),
    ),
    "count-nonzero": (
        lambda x: da.count_nonzero(da.isnan(x), axis=1),
        lambda a: np.count_nonzero(np.isnan(a), axis=1),
    ),
    "where-zero-sum": (
        lambda x: da.where(da.isnan(x), 0, x).sum(axis=0),
        lambda a: np.nansum(a, axis=0),
    ),
    "where-valid-sum": (
        lambda x: da.where(~da.isnan(x), x, da.zeros_like(x)).sum(axis=(0, 2)),
        lambda a: np.nansum(a, axis=(0, 2)),
    ),
    "sliced-mask": (
        lambda x: da.isnan(x[2:8, 1:]).sum(axis=0),
        lambda a: np.isnan(a[2:8, 1:]).sum(axis=0),
    ),
}

# the same masks used in ways the kernels do not answer: numpy's values, decoded
DECODED = {
    "where-one": (
        lambda x: da.where(da.isnan(x), 1, x).sum(),
        lambda a: np.where(np.isnan(a), 1, a).sum(),
    ),
    "where-swapped": (
        lambda x: da.where(da.isnan(x), x, 0).sum(axis=0),
        lambda a: np.where(np.isnan(a), a, 0).sum(axis=0),
    ),
    "mask-mean": (lambda x: da.isnan(x).mean(axis=1), lambda a: np.isnan(a).mean(axis=1)),
    "mask-as-int": (
        lambda x: da.isnan(x).astype(np.int8).sum(axis=0),
        lambda a: np.isnan(a).astype(np.int8).sum(axis=0),
    ),
    "mask-and": (
        lambda x: (da.isnan(x) & (x > 0)).sum(axis=0),
        lambda a: (np.isnan(a) & (a > 0)).sum(axis=0),
    ),
    "mask-values": (lambda x: da.isnan(x), lambda a: np.isnan(a)),
    "zeroed-values": (lambda x: da.where(da.isnan(x), 0, x), lambda a: np.where(np.isnan(a), 0, a)),
    "zeroed-max": (
        lambda x: da.where(da.isnan(x), 0, x).max(axis=0),
        lambda a: np.where(np.isnan(a), 0, a).max(axis=0),
    ),
}


def _check(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "biu":
        assert got.dtype.kind == want.dtype.kind
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name", list(FUSED))
def test_mask_reductions_are_fused_and_match_numpy(case, no_decode, name):
    x, ref = case
    lazy, oracle = FUSED[name]
    _check(lazy(x).compute(), oracle(ref))


@pytest.mark.parametrize("name", list(DECODED))
def test_other_uses_of_masks_give_numpys_values(case, name):
    x, ref = case
    lazy, oracle = DECODED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = lazy(x).compute()
    want = oracle(ref)
    assert type(got) is np.ndarray or np.isscalar(got)
    _check(got, want)


@pytest.mark.parametrize(
    ("name", "lazy", "oracle"),
    [
        ("sum", lambda a: a.sum(), lambda r: np.nansum(r)),
        ("sum-dim", lambda a: a.sum("z"), lambda r: np.nansum(r, axis=0)),
        ("sum-dims", lambda a: a.sum(("y", "x")), lambda r: np.nansum(r, axis=(1, 2))),
        (
            "sum-min-count",
            lambda a: a.sum("y", min_count=6),
            lambda r: np.where(np.isnan(r).any(axis=1), np.nan, np.nansum(r, axis=1)),
        ),
        ("count", lambda a: a.count(), lambda r: np.sum(~np.isnan(r))),
        ("count-dim", lambda a: a.count("x"), lambda r: np.sum(~np.isnan(r), axis=2)),
        ("fillna", lambda a: a.fillna(0).sum("z", skipna=False), lambda r: np.nansum(r, axis=0)),
        ("isnull-sum", lambda a: a.isnull().sum("z"), lambda r: np.isnan(r).sum(axis=0)),
        ("notnull-any", lambda a: a.notnull().any("z"), lambda r: (~np.isnan(r)).any(axis=0)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_xarray_skipna_sum_and_count_are_fused(case, request, name, lazy, oracle):
    x, ref = case
    if not (name == "fillna" and ref.dtype.kind in "iu"):
        # (xarray's fillna of integers wraps them in np.where with a constant mask: decoded)
        request.getfixturevalue("no_decode")
    arr = xr.DataArray(x, dims=("z", "y", "x"))
    ref = ref.astype(np.float64) if ref.dtype.kind in "iu" else ref
    got = lazy(arr).compute().values
    want = oracle(ref)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    c0=st.integers(1, 9),
    c1=st.integers(1, 6),
    c2=st.integers(2, 5),
    dims=st.sampled_from([None, "z", "y", "x", ("z", "y"), ("y", "x"), ("z", "x")]),
    min_count=st.sampled_from([None, 1, 4, 40]),
)
def test_hypothesis_xarray_sum_and_count(case, no_decode, c0, c1, c2, dims, min_count):
    x, ref = case
    arr = xr.DataArray(replan(x, (c0, c1, c2), "hyp-mask"), dims=("z", "y", "x"))
    axis = (
        None
        if dims is None
        else tuple(arr.get_axis_num(dims if isinstance(dims, tuple) else (dims,)))
    )
    floats = ref.dtype.kind == "f"
    ref = ref.astype(np.float64)
    missing = np.isnan(ref)
    want = np.nansum(ref, axis=axis)
    if min_count is not None and floats:  # xarray skips NaN, and so min_count, for floats only
        want = np.where((~missing).sum(axis=axis) < min_count, np.nan, want)
    got = arr.sum(dims, min_count=min_count).values
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(arr.count(dims).values, (~missing).sum(axis=axis))


def _chunk(values):
    """A stored chunk over big-endian float32 values."""
    stored = np.asarray(values, ">f4")
    return StoredChunk(stored.view(np.uint32), parse_decode_spec(-32)[0])


def test_nan_zeroed_recognises_zeros_only():
    c = _chunk(np.arange(6.0).reshape(2, 3))
    m = np.isnan(c)
    assert isinstance(m, NanMask)
    assert not m.valid
    assert isinstance(~m, NanMask)
    assert (~m).valid
    assert isinstance(np.logical_not(m), NanMask)
    zeros = [
        0,
        0.0,
        -0.0,
        np.float32(0),
        np.zeros(3, np.float32),
        np.broadcast_to(np.zeros((), np.float32), (2, 3)),
        np.zeros((2, 3), np.int16),
    ]
    for zero in zeros:
        assert isinstance(nan_zeroed(m, zero, c), NanZeroed), zero
        assert isinstance(nan_zeroed(~m, c, zero), NanZeroed), zero
    others = [
        1,
        False,
        np.ones(3, np.float32),
        np.zeros(3, np.float64),
        np.zeros((4, 2, 3), np.float32),
        np.zeros(0, np.float32),
        "0",
    ]
    for other in others:
        assert nan_zeroed(m, other, c) is None, other
    assert nan_zeroed(m, c, 0) is None  # where(isnan(c), c, 0) keeps the NaN
    assert nan_zeroed(~m, 0, c) is None
    assert nan_zeroed(m, 0, _chunk(np.ones((2, 3)))) is None  # another chunk's mask
    assert nan_zeroed(np.zeros((2, 3), bool), 0, c) is None
