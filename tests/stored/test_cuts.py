"""Threshold cuts: ``where(x > t, x, nan)`` sums, counts and means on the stored bytes."""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.stored.cuts import Cut, CutValues
from dfits.stored.stored import StoredChunk
from dfits.stored.thresholds import comparison_band
from tests.array.helpers import encoded_case, replan, sampled_pairs, stored_sample
from tests.profiles import examples

CASES = {
    "f32-nan-inf": (-32, None, None, None),
    "f64": (-64, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "i16": (16, None, None, None),
    "u8": (8, None, None, None),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request, tmp_path):
    bitpix, _, _, blank = CASES[request.param]
    missing = request.param == "f32-nan-inf"
    data = stored_sample(bitpix, blank, seed=5, scale=4, span=40, nan=missing, inf=missing)
    return encoded_case(tmp_path, data, CASES[request.param], (4, 6, 5))


def _cut(a, t):  # numpy's masked values, as xarray's where gives them
    with np.errstate(invalid="ignore"):
        return np.where(a > t, a, np.nan)


def _quiet(f, *args):
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


# lazy (dask over dfits), oracle (numpy over astropy's values); t is a value in the data
FUSED = {
    "nansum": (
        lambda x, t: da.nansum(da.where(x > t, x, np.nan)),
        lambda a, t: np.nansum(_cut(a, t)),
    ),
    "nansum-axis0": (
        lambda x, t: da.nansum(da.where(x > t, x, np.nan), axis=0),
        lambda a, t: np.nansum(_cut(a, t), axis=0),
    ),
    "sum-axis12-unskipped": (
        lambda x, t: da.where(x >= t, x, np.nan).sum(axis=(1, 2)),
        lambda a, t: np.where(a >= t, a, np.nan).sum(axis=(1, 2)),
    ),
    "zero-fill-sum": (
        lambda x, t: da.where(x < t, x, 0.0).sum(axis=(0, 2)),
        lambda a, t: np.where(a < t, a, 0.0).sum(axis=(0, 2)),
    ),
    "nanmean-axis2": (
        lambda x, t: da.nanmean(da.where(x <= t, x, np.nan), axis=2),
        lambda a, t: np.nanmean(np.where(a <= t, a, np.nan), axis=2),
    ),
    "mean-axis0": (
        lambda x, t: da.where(x > t, x, np.nan).mean(axis=0),
        lambda a, t: np.where(a > t, a, np.nan).mean(axis=0),
    ),
    "count": (lambda x, t: (x > t).sum(axis=0), lambda a, t: (a > t).sum(axis=0)),
    "count-reflected": (lambda x, t: (t < x).sum(), lambda a, t: (t < a).sum()),
    "count-nonzero": (
        lambda x, t: da.count_nonzero(x >= t, axis=1),
        lambda a, t: np.count_nonzero(a >= t, axis=1),
    ),
    "any-all": (
        lambda x, t: da.stack([(x > t).any(axis=0), (x > t).all(axis=0)]),
        lambda a, t: np.stack([(a > t).any(axis=0), (a > t).all(axis=0)]),
    ),
    "band": (
        lambda x, t: da.nansum(da.where((x > t - 3) & (x <= t + 2), x, np.nan), axis=(0, 1)),
        lambda a, t: np.nansum(np.where((a > t - 3) & (a <= t + 2), a, np.nan), axis=(0, 1)),
    ),
    "nanmax-lower-cut": (
        lambda x, t: da.nanmax(da.where(x >= t, x, np.nan), axis=0),
        lambda a, t: np.nanmax(np.where(a >= t, a, np.nan), axis=0),
    ),
    "nanmin-upper-cut": (
        lambda x, t: da.nanmin(da.where(x < t, x, np.nan), axis=(1, 2)),
        lambda a, t: np.nanmin(np.where(a < t, a, np.nan), axis=(1, 2)),
    ),
    "nanmax-band": (
        lambda x, t: da.nanmax(da.where((x > t - 3) & (x < t + 3), x, np.nan), axis=0),
        lambda a, t: np.nanmax(np.where((a > t - 3) & (a < t + 3), a, np.nan), axis=0),
    ),
    "nanmin-lower-cut": (
        lambda x, t: da.nanmin(da.where(x > t, x, np.nan), axis=0),
        lambda a, t: np.nanmin(np.where(a > t, a, np.nan), axis=0),
    ),
    "nanmax-upper-cut-axis12": (
        lambda x, t: da.nanmax(da.where(x <= t, x, np.nan), axis=(1, 2)),
        lambda a, t: np.nanmax(np.where(a <= t, a, np.nan), axis=(1, 2)),
    ),
    "nanmin-band-all": (
        lambda x, t: da.nanmin(da.where((x >= t) & (x < t + 5), x, np.nan)),
        lambda a, t: np.nanmin(np.where((a >= t) & (a < t + 5), a, np.nan)),
    ),
    "nanmax-nothing-passes": (
        lambda x, t: da.nanmax(da.where(x > np.inf, x, np.nan), axis=2),
        lambda a, t: np.nanmax(np.where(a > np.inf, a, np.nan), axis=2),
    ),
    "numpy-scalar-threshold": (
        lambda x, t: da.nansum(da.where(x > np.float64(t), x, np.nan), axis=0),
        lambda a, t: np.nansum(np.where(a > np.float64(t), a, np.nan), axis=0),
    ),
    "sliced": (
        lambda x, t: da.nansum(da.where(x[2:8, 1:] > t, x[2:8, 1:], np.nan), axis=0),
        lambda a, t: np.nansum(_cut(a[2:8, 1:], t), axis=0),
    ),
    "nanvar-axis0": (
        lambda x, t: da.nanvar(da.where(x > t, x, np.nan), axis=0),
        lambda a, t: np.nanvar(_cut(a, t), axis=0),
    ),
    "nanstd-all-ddof1": (
        lambda x, t: da.nanstd(da.where(x > t, x, np.nan), ddof=1),
        lambda a, t: np.nanstd(_cut(a, t), ddof=1),
    ),
    "var-axis12-unskipped": (
        lambda x, t: da.where(x >= t, x, np.nan).var(axis=(1, 2)),
        lambda a, t: np.where(a >= t, a, np.nan).var(axis=(1, 2)),
    ),
    "max-unskipped": (
        lambda x, t: da.where(x > t, x, np.nan).max(axis=0),
        lambda a, t: np.where(a > t, a, np.nan).max(axis=0),
    ),
    "min-unskipped-axis12": (
        lambda x, t: da.where(x <= t, x, np.nan).min(axis=(1, 2)),
        lambda a, t: np.where(a <= t, a, np.nan).min(axis=(1, 2)),
    ),
    "zero-fill-max": (
        lambda x, t: da.where(x > t, x, 0.0).max(axis=0),
        lambda a, t: np.where(a > t, a, 0.0).max(axis=0),
    ),
    "zero-fill-min-axis02": (
        lambda x, t: da.where(x < t, x, 0.0).min(axis=(0, 2)),
        lambda a, t: np.where(a < t, a, 0.0).min(axis=(0, 2)),
    ),
    # the zero decides wherever some value is outside: values below 0 kept, or above
    "zero-fill-max-upper-cut": (
        lambda x, t: da.where(x < t, x, 0.0).max(axis=0),
        lambda a, t: np.where(a < t, a, 0.0).max(axis=0),
    ),
    "zero-fill-min-lower-cut": (
        lambda x, t: da.where(x > t, x, 0.0).min(axis=(1, 2)),
        lambda a, t: np.where(a > t, a, 0.0).min(axis=(1, 2)),
    ),
    "zero-fill-nanmax-all": (
        lambda x, t: da.nanmax(da.where(x >= t, x, 0.0)),
        lambda a, t: np.nanmax(np.where(a >= t, a, 0.0)),
    ),
    "zero-fill-max-nothing-passes": (
        lambda x, t: da.where(x > np.inf, x, 0.0).max(axis=2),
        lambda a, t: np.where(a > np.inf, a, 0.0).max(axis=2),
    ),
    "zero-fill-min-everything-passes": (
        lambda x, t: da.where(x > -np.inf, x, 0.0).min(axis=0),
        lambda a, t: np.where(a > -np.inf, a, 0.0).min(axis=0),
    ),
    "zero-fill-var": (
        lambda x, t: da.where(x > t, x, 0.0).var(axis=0),
        lambda a, t: np.where(a > t, a, 0.0).var(axis=0),
    ),
    "zero-fill-nanstd-axis12": (
        lambda x, t: da.nanstd(da.where(x <= t, x, 0.0), axis=(1, 2)),
        lambda a, t: np.nanstd(np.where(a <= t, a, 0.0), axis=(1, 2)),
    ),
    "zero-fill-std-all-ddof1": (
        lambda x, t: da.where(x > t, x, 0.0).std(ddof=1),
        lambda a, t: np.where(a > t, a, 0.0).std(ddof=1),
    ),
    "zero-fill-nanmean-axis2": (
        lambda x, t: da.nanmean(da.where(x > t, x, 0.0), axis=2),
        lambda a, t: np.nanmean(np.where(a > t, a, 0.0), axis=2),
    ),
    "zero-fill-var-nothing-passes": (
        lambda x, t: da.where(x > np.inf, x, 0.0).var(axis=0),
        lambda a, t: np.where(a > np.inf, a, 0.0).var(axis=0),
    ),
    "nanstd-band-axis02": (
        lambda x, t: da.nanstd(da.where((x > t - 3) & (x <= t + 2), x, np.nan), axis=(0, 2)),
        lambda a, t: np.nanstd(np.where((a > t - 3) & (a <= t + 2), a, np.nan), axis=(0, 2)),
    ),
}

DECODED = {
    # integer data keep integers (exact sums); float data are fused (same values)
    "zero-fill-same-dtype": (
        lambda x, t: da.where(x < t, x, 0).sum(axis=(0, 2)),
        lambda a, t: np.where(a < t, a, 0).sum(axis=(0, 2)),
    ),
    "inverted": (lambda x, t: (~(x > t)).sum(axis=0), lambda a, t: (~(a > t)).sum(axis=0)),
    "or": (
        lambda x, t: ((x > t) | (x < t - 2)).sum(axis=0),
        lambda a, t: ((a > t) | (a < t - 2)).sum(axis=0),
    ),
    "fill-one": (
        lambda x, t: da.where(x > t, x, 1).sum(axis=0),
        lambda a, t: np.where(a > t, a, 1).sum(axis=0),
    ),
    "other-values": (
        lambda x, t: da.where(x > t, x + 1, np.nan).sum(axis=0),
        lambda a, t: np.where(a > t, a + 1, np.nan).sum(axis=0),
    ),
    "array-threshold": (
        lambda x, t: (x > da.full(x.shape, t, chunks=x.chunks)).sum(axis=0),
        lambda a, t: (a > t).sum(axis=0),
    ),
    "mask-values": (lambda x, t: x > t, lambda a, t: a > t),
    "cut-values": (
        lambda x, t: da.where(x > t, x, np.nan),
        lambda a, t: np.where(a > t, a, np.nan),
    ),
    "zero-fill-nanmean": (
        lambda x, t: da.nanmean(da.where(x > t, x, 0), axis=0),
        lambda a, t: np.nanmean(np.where(a > t, a, 0), axis=0),
    ),
    # ``values - c`` outside dask's moment_chunk: plain values
    "shifted-values": (
        lambda x, t: ((da.where(x > t, x, np.nan) - 1.5) ** 2).sum(axis=0),
        lambda a, t: ((_cut(a, t) - 1.5) ** 2).sum(axis=0),
    ),
}


def _threshold(ref):
    finite = ref[np.isfinite(ref)]
    return finite.flat[len(finite) // 3].item()  # a value in the data: ties matter


def _check(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "biu":
        assert got.dtype.kind == want.dtype.kind
        np.testing.assert_array_equal(got, want)
    else:
        assert got.dtype == want.dtype
        rtol = 1e-5 if want.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    ("case", "name"),
    # float64 cuts run the float32 route on wider loads (each pair its own band, extrema or
    # moment kernel, the column moments 15 s on a cold cache): under -m slow; the kernels'
    # tests check float64 bands, test_compat float64 comparisons
    sampled_pairs(CASES, FUSED, lambda c, _: c != "f64"),
    indirect=["case"],
)
def test_cut_reductions_are_fused_and_match_numpy(case, no_decode, name):
    x, ref = case
    t = _threshold(ref)
    lazy, oracle = FUSED[name]
    _check(_quiet(lambda: lazy(x, t).compute()), _quiet(oracle, ref, t))


@pytest.mark.parametrize("name", list(DECODED))
def test_other_uses_of_cuts_give_numpys_values(case, name):
    x, ref = case
    t = _threshold(ref)
    lazy, oracle = DECODED[name]
    got = _quiet(lambda: lazy(x, t).compute())
    assert type(got) is np.ndarray or np.isscalar(got)
    _check(got, _quiet(oracle, ref, t))


@pytest.mark.parametrize(
    ("name", "lazy", "oracle"),
    [
        ("sum", lambda a, t: a.where(a > t).sum("z"), lambda r, t: np.nansum(_cut(r, t), axis=0)),
        (
            "sum-dims",
            lambda a, t: a.where(a > t).sum(("y", "x")),
            lambda r, t: np.nansum(_cut(r, t), axis=(1, 2)),
        ),
        (
            "sum-min-count",
            lambda a, t: a.where(a > t).sum("z", min_count=3),
            lambda r, t: np.where((r > t).sum(axis=0) < 3, np.nan, np.nansum(_cut(r, t), axis=0)),
        ),
        ("count", lambda a, t: a.where(a > t).count("y"), lambda r, t: (r > t).sum(axis=1)),
        (
            "mean",
            lambda a, t: a.where(a > t).mean("z"),
            lambda r, t: np.nanmean(_cut(r, t), axis=0),
        ),
        ("mean-all", lambda a, t: a.where(a > t).mean(), lambda r, t: np.nanmean(_cut(r, t))),
        ("peak", lambda a, t: a.where(a > t).max("z"), lambda r, t: np.nanmax(_cut(r, t), axis=0)),
        (
            "floor",
            lambda a, t: a.where(a > t).min(("y", "x")),
            lambda r, t: np.nanmin(_cut(r, t), axis=(1, 2)),
        ),
        (
            "between",
            lambda a, t: a.where((a > t - 3) & (a < t + 3)).sum("x"),
            lambda r, t: np.nansum(np.where((r > t - 3) & (r < t + 3), r, np.nan), axis=2),
        ),
        ("std", lambda a, t: a.where(a > t).std("z"), lambda r, t: np.nanstd(_cut(r, t), axis=0)),
        (
            "var-dims-ddof1",
            lambda a, t: a.where(a > t).var(("y", "x"), ddof=1),
            lambda r, t: np.nanvar(_cut(r, t), axis=(1, 2), ddof=1),
        ),
        (
            "zero-filled-std",
            lambda a, t: a.where(a > t, 0.0).std("z"),
            lambda r, t: np.std(np.where(r > t, r, 0.0), axis=0),
        ),
        (
            "zero-filled-peak-and-count",
            lambda a, t: a.where(a < t, 0.0).max("z") + a.where(a < t, 0.0).count("z"),
            lambda r, t: np.where(r < t, r, 0.0).max(axis=0) + r.shape[0],
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_xarray_masked_reductions_are_fused(case, no_decode, name, lazy, oracle):
    x, ref = case
    t = _threshold(ref)
    arr = xr.DataArray(x, dims=("z", "y", "x"))
    got = _quiet(lambda: lazy(arr, t).compute().values)
    want = _quiet(oracle, ref.astype(np.float64), t)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_cut_objects_reach_the_reduction(case):
    x, _ = case
    stored = dask.get(dict(x.__dask_graph__()), x.__dask_keys__()[0][0][0])
    assert isinstance(stored, StoredChunk)
    cut = stored > 0
    assert isinstance(cut, Cut)
    assert cut.shape == stored.shape
    assert cut.dtype == np.bool_
    assert isinstance(stored > 0, Cut)
    assert isinstance((stored > 0) & (stored < 5), Cut)
    values = np.where(cut, stored, np.nan)
    assert isinstance(values, CutValues)
    assert isinstance(values[1:, 2], CutValues)
    assert isinstance(np.where(cut, stored, 0.0), CutValues)
    assert not isinstance(np.where(cut, stored, 2.0), CutValues)
    assert not isinstance(np.where(cut, 1.0, stored), CutValues)
    assert type(~cut) is np.ndarray


@pytest.mark.parametrize("skipna", [False, True])
def test_squared_deviations_of_cut_values(case, no_decode, skipna):
    """``Σ (values - c)²`` over a cut's values, for any centre: NaN outside the cut is
    skipped or makes the slice NaN, as numpy's sum of the decoded values does."""
    from dfits.stored.stored import Deviation

    x, ref = case
    t = _threshold(ref)
    stored = dask.get(dict(x.__dask_graph__()), x.__dask_keys__()[0][0][0])
    values = np.where(stored > t, stored, np.nan)
    want_values = _cut(ref[: stored.shape[0]], t)
    reduce = np.nansum if skipna else np.sum
    for axis in (0, (1, 2), None):
        # dask's centre: its chunk's means, with the reduced axes kept
        centre = np.full(np.shape(np.sum(want_values, axis=axis, keepdims=True)), 1.25)
        got = _quiet(reduce, Deviation(values, centre) ** 2, axis)
        want = _quiet(reduce, (want_values - np.asarray(centre)) ** 2, axis)
        # an infinity inside the cut makes the slice NaN (its M2 is inf - inf), as numpy's
        # var does, not the inf of a sum of squares about a finite centre: dask's centre is
        # the chunk's mean, inf there, and its own sum then has NaN terms too
        want = np.where(np.any(np.isinf(want_values), axis=axis), np.nan, want)
        _check(np.asarray(got, np.float64), np.asarray(want, np.float64))


@pytest.mark.parametrize(
    ("physical", "t", "op", "band"),
    [
        # a Python float against float32 data compares in float32 (NEP 50)
        (np.float32, 0.1, np.greater_equal, (float(np.float32(0.1)), np.inf)),
        # a numpy float64 keeps its precision
        (np.float32, np.float64(0.1), np.greater_equal, (0.1, np.inf)),
        (np.float64, 2.0, np.greater, (float(np.nextafter(2.0, np.inf)), np.inf)),
        (np.float64, 2.0, np.less, (-np.inf, float(np.nextafter(2.0, -np.inf)))),
        (np.int16, 2.5, np.less_equal, (-np.inf, 2.5)),
        (np.int16, 100000, np.less, (-np.inf, float(np.nextafter(100000.0, -np.inf)))),
        (np.float32, np.inf, np.greater, (np.inf, -np.inf)),
        (np.float32, -np.inf, np.less, (np.inf, -np.inf)),
        (np.float32, np.nan, np.greater_equal, (np.inf, -np.inf)),
        (np.float32, np.array(3.0), np.greater_equal, (3.0, np.inf)),
    ],
)
def test_comparison_band(physical, t, op, band):
    assert comparison_band(op, np.dtype(physical), t) == band


@pytest.mark.parametrize(
    ("physical", "t"),
    [
        (np.int64, 3),  # int64 data compare exactly in integers
        (np.float32, True),
        (np.float32, 1e300),  # numpy would warn and compare against inf
        (np.int32, 2**60),
        (np.float32, np.array([1.0])),
        (np.float32, "3"),
    ],
)
def test_comparison_band_declines(physical, t):
    assert comparison_band(np.greater, np.dtype(physical), t) is None


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    c0=st.integers(1, 9),
    c1=st.integers(1, 6),
    c2=st.integers(2, 5),
    axis=st.sampled_from([None, 0, 1, 2, (0, 1), (1, 2), (0, 2)]),
    op=st.sampled_from(["gt", "ge", "lt", "le"]),
    pick=st.integers(0, 10**6),
    nudge=st.sampled_from([-1, 0, 1]),
)
def test_hypothesis_cut_sums_and_counts(case, no_decode, c0, c1, c2, axis, op, pick, nudge):
    x, ref = case
    x = replan(x, (c0, c1, c2), "hyp-cut")
    finite = np.unique(ref[np.isfinite(ref)])
    t = finite[pick % finite.size]
    if nudge and ref.dtype.kind == "f":  # the neighbours of a value: strict/closed bounds
        t = np.nextafter(t, np.inf * nudge, dtype=ref.dtype)
    t = t.item()
    cmp = {"gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal}[op]
    keep = _quiet(cmp, ref, t)
    want_n = keep.sum(axis=axis)
    want = np.where(keep, ref, 0).sum(axis=axis, dtype=np.float64)
    mask = cmp(x, t)
    np.testing.assert_array_equal(mask.sum(axis=axis).compute(), want_n)
    got = _quiet(lambda: da.nansum(da.where(mask, x, np.nan), axis=axis).compute())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the banded moments and extremes, across chunk boundaries
    values = da.where(mask, x, np.nan)
    kept = np.where(keep, ref.astype(np.float64), np.nan)
    for lazy, oracle in ((da.nanvar, np.nanvar), (da.nanmax, np.nanmax), (da.nanmin, np.nanmin)):
        got = _quiet(lambda f=lazy: f(values, axis=axis).compute())
        want = _quiet(oracle, kept, axis)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    ("lazy", "oracle"),
    [
        (lambda x, t: x[x > t], lambda a, t: a[a > t]),
        (lambda x, t: da.argwhere(x >= t), lambda a, t: np.argwhere(a >= t)),
        (lambda x, t: ((x > t) == (x < t + 1)).sum(), lambda a, t: ((a > t) == (a < t + 1)).sum()),
        (lambda x, t: (x > t).astype(np.float32).mean(), lambda a, t: (a > t).astype("f4").mean()),
        (lambda x, t: da.isnan(x).T.sum(axis=0), lambda a, t: np.isnan(a).T.sum(axis=0)),
        (
            lambda x, t: x.map_blocks(lambda b: (b > t).reshape(b.shape).T.T, dtype=bool),
            lambda a, t: a > t,
        ),
    ],
    ids=["boolean-index", "argwhere", "equal", "astype-mean", "mask-transpose", "reshape"],
)
def test_cuts_and_masks_used_as_arrays(case, lazy, oracle):
    """Lazy masks answer the rest of ndarray's surface with numpy's values."""
    x, ref = case
    t = _threshold(ref)
    got = _quiet(lambda: np.asarray(lazy(x, t).compute()))
    _check(got, _quiet(oracle, ref, t))


def test_one_pass_for_counts_and_means(case, monkeypatch):
    """Counts and means of cut values read each chunk once: the pass gives sums and counts
    (a mean asks for both, and nothing tells a count from the first half of a mean)."""
    from dfits import kernels

    x, ref = case
    t = _threshold(ref)
    calls = []
    real = kernels.band_sum_count

    def spy(*args, **kwargs):
        calls.append((kwargs.get("sums", True), kwargs.get("counts", True)))
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels, "band_sum_count", spy)
    (x > t).sum(axis=0).compute()  # a mask's count: counted alone
    assert calls
    assert all(c == (False, True) for c in calls)
    calls.clear()
    xr.DataArray(x).where(xr.DataArray(x) > t).count("dim_1").compute()
    assert len(calls) == x.numblocks[0]
    assert all(c == (True, True) for c in calls)
    calls.clear()
    _quiet(lambda: da.nanmean(da.where(x > t, x, np.nan), axis=0).compute())
    assert len(calls) == x.numblocks[0]  # one pass per chunk
    assert all(c == (True, True) for c in calls)


def test_two_passes_for_masked_variances(case, monkeypatch):
    """dask's moment_chunk asks for counts and sums, then for squared deviations: a sums
    pass, then one banded moments pass (the table's ``reduce(..., band=)`` makes one)."""
    from dfits import kernels

    x, ref = case
    t = _threshold(ref)
    calls = []
    for name in ("band_moments", "band_sum_count"):
        real = getattr(kernels, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(kernels, name, spy)
    _quiet(lambda: da.nanstd(da.where(x > t, x, np.nan), axis=(0, 1)).compute())
    assert sorted(calls) == sorted(["band_sum_count", "band_moments"] * x.numblocks[0])
    calls.clear()
    arr = xr.DataArray(x, dims=("z", "y", "x"))
    _quiet(lambda: arr.where(arr > t).var("z").compute())
    assert sorted(set(calls)) == ["band_moments", "band_sum_count"]
    assert len(calls) <= 2 * x.numblocks[0]


@pytest.mark.parametrize(
    ("lazy", "oracle"),
    [
        (
            lambda x: da.nanstd(da.where(x > 0.5, x, np.nan), axis=0),
            lambda a: np.nanstd(_cut(a, 0.5), axis=0),
        ),
        (
            lambda x: da.where(x > 0.5, x, 0.0).std(axis=0),
            lambda a: np.where(a > 0.5, a, 0.0).std(axis=0),
        ),
        (
            lambda x: da.nanvar(da.where(x > 0.5, x, np.nan) * 1.0, axis=0),
            lambda a: np.nanvar(_cut(a, 0.5), axis=0),
        ),
    ],
    ids=["fused", "zero-fill", "decoded"],
)
def test_masked_variance_maps_with_large_partials(tmp_path, lazy, oracle):
    """Maps whose partials are large enough to be added lazily (``u = total / n`` is then a
    lazy quotient): ``values - u`` must work on every route (it raised TypeError before)."""
    data = np.random.default_rng(2).random((3, 64, 1024), dtype=np.float32)
    x, ref = encoded_case(tmp_path, data, (-32, None, None, None), (1, 64, 1024))
    got = _quiet(lambda: lazy(x).compute())
    _check(got, _quiet(oracle, ref))


def test_threshold_from_the_data_itself(case, no_decode):
    """``x > x.mean()``: a 0-d dask array threshold reaches each task as a 0-d numpy value."""
    x, ref = case
    centre = da.nanmean(x)
    got = _quiet(lambda: da.nansum(da.where(x > centre, x, np.nan), axis=0).compute())
    # (with inf and -inf in the data the mean is NaN, and nothing passes: as numpy)
    want = _quiet(np.nansum, np.where(ref > centre.compute(), ref, np.nan), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["ge", "gt"])
def test_peak_of_a_cut_at_the_largest_value(case, no_decode, op):
    """Ties at the cut: ``x >= top`` keeps the largest value, ``x > top`` keeps nothing."""
    x, ref = case
    top = np.nanmax(np.where(np.isinf(ref), np.nan, ref)).item()
    cmp = np.greater_equal if op == "ge" else np.greater
    got = _quiet(lambda: da.nanmax(da.where(cmp(x, top), x, np.nan), axis=(1, 2)).compute())
    want = _quiet(np.nanmax, np.where(_quiet(cmp, ref, top), ref, np.nan), (1, 2))
    _check(got, want)
