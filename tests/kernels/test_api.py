"""Every kernel against its numpy oracle, on every encoding and awkward input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
from dfits.kernels import oracle
from dfits.kernels._compile import BLOCK
from dfits.kernels.extrema import _identity
from tests.kernels.checks import (
    U,
    assert_within,
    moment_tolerances,
    physical64,
    sampled,
    sum_tolerance,
)
from tests.kernels.conftest import ENCODINGS, encoding_matrix, make_stored, sampled_encodings

AXES = [None, 0, 1, 2, -1, (0, 1), (1, 2), (0, 2), (0, 1, 2)]
#: the band kernels' default sample: all axes, columns, rows, non-adjacent axes
BAND_AXES = sampled(AXES, [None, 0, -1, (0, 2)])
LAYOUTS = ["contiguous", "strided", "reversed", "readonly", "cutout"]
BAND_LAYOUTS = sampled(LAYOUTS, ["contiguous", "cutout"])
#: the default sample of reduced axes: all, leading columns, inner columns, rows, non-adjacent
CORE = [None, 0, 1, -1, (0, 2)]
#: the row kernels (all axes, the last one) of contiguous data: every encoding runs them in
#: the default run, through the loaders it shares with the column kernels; the column kernels,
#: strided layouts and narrow outputs compile per encoding for seconds each, so the default
#: run takes those on SAMPLE, and the array suite's compat tests run them on six other files
ROWS = {(None, "contiguous"), (-1, "contiguous")}

#: the column cases of the extrema identity test
ID_AXES = [(0,), (1,), ((0, 1),)]
#: (shape, axis) of the wide-column extrema test
WIDE = [((2, 7, 8200), 1), ((7, 3, 2734), 0)]
#: shapes of the empty and single-value test
TINY = [((0,),), ((0, 3),), ((1,),), ((1, 1, 1),)]
#: rows of the many-rows column sums
NB = [(3,), (4,), (258,), (601,)]
#: shapes of the many-rows column moments
MANY = [((2, 3, 37),), ((2, 4, 37),), ((2, 258, 37),), ((1, 601, 37),), ((1, 70, 2053),)]
#: axes of the weighted sums
W = [(0,), (1,), (-1,)]


def _pairs(axes, layouts):
    return [(axis, layout) for axis in axes for layout in layouts]


def uview(stored):
    return stored.view(f"u{stored.itemsize}")


def views(raw):
    """The same stored data as contiguous, strided, sliced and read-only inputs."""
    ro = raw.copy()
    ro.flags.writeable = False
    return {
        "contiguous": raw,
        "strided": raw[:, ::2, 1:],
        "reversed": raw[::-1, :, ::-3],
        "readonly": ro,
        # a box inside the cube: no two axes merge, whatever is reduced
        "cutout": raw[1:4, 1:5, 2:8],
    }


@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed", "readonly"])
def test_decode_matches_oracle(spec, rng, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    got = kernels.decode(uview(raw), spec)
    want = oracle.decode(raw, spec)
    assert got.dtype == want.dtype == spec.physical
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("spec", "axis", "layout"),
    encoding_matrix(
        _pairs(AXES, ["contiguous", "strided", "reversed", "cutout"]),
        _pairs(CORE, ["contiguous", "cutout"]),
        ROWS,
    ),
    indirect=["spec"],
)
def test_sums_and_moments_match_oracle(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    u = uview(raw)
    # bounds that hold for any summation order (``checks``): kernels accumulate float64
    # values in vector lanes, numpy pairwise; astropy rounds scaled float32 data first
    mean_tol, _, var_tol = moment_tolerances(raw, spec, axis)
    for skipna in (False, True):
        total, _ = kernels.sum_count(u, spec, axis, skipna=skipna)
        name = "nansum" if skipna else "sum"
        want = oracle.COMPARISONS[name](raw, spec, axis)
        assert_within(total, want, sum_tolerance(raw, spec, axis), "sums")
        cnt, mean, m2 = kernels.moments(u, spec, axis, skipna=skipna)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want_mean = oracle.COMPARISONS["nanmean" if skipna else "mean"](raw, spec, axis)
            want_var = oracle.COMPARISONS["nanvar" if skipna else "var"](raw, spec, axis)
        if skipna:
            np.testing.assert_array_equal(cnt, oracle.COMPARISONS["count"](raw, spec, axis))
        assert_within(mean, want_mean, mean_tol, "means")
        with np.errstate(all="ignore"):
            var = m2 / cnt
        assert_within(var, want_var, var_tol, "variances")


def test_decode_rows_reads_rows_where_the_geometry_says(spec, rng):
    raw = make_stored(spec, (9, 11), rng)
    base = uview(raw).reshape(-1)
    want = oracle.decode(raw, spec)
    # rows 2..6, columns 3..9, as a view would see them: offset 2·11 + 3, stride 11
    np.testing.assert_array_equal(kernels.decode_rows(base, (5, 7, 25, 11), spec), want[2:7, 3:10])
    # rows running upwards (a reversed view): start at row 8, stride -22
    np.testing.assert_array_equal(kernels.decode_rows(base, (4, 11, 88, -22), spec), want[::-2][:4])
    assert kernels.decode_rows(base, (0, 11, 0, 11), spec).shape == (0, 11)
    for bad in [(2, 11, 88, 11), (3, 5, 1, -1), (1, 100, 0, 0)]:
        with pytest.raises(ValueError, match="do not lie within"):
            kernels.decode_rows(base, bad, spec)


@pytest.mark.parametrize(
    ("spec", "axis", "layout"),
    encoding_matrix(_pairs(AXES, ["contiguous", "strided"]), _pairs(CORE, ["strided"])),
    indirect=["spec"],
)
def test_sums_stored_narrow_are_the_float64_sums_rounded(spec, rng, axis, layout):
    # ``dtype=`` changes only where the float64 accumulator is rounded: once, on store
    u = uview(views(make_stored(spec, (5, 7, 9), rng))[layout])
    for skipna in (False, True):
        wide, n_wide = kernels.sum_count(u, spec, axis, skipna=skipna)
        narrow, n_narrow = kernels.sum_count(u, spec, axis, skipna=skipna, dtype=np.float32)
        assert narrow.dtype == np.float32
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(narrow, np.asarray(wide).astype(np.float32))
        np.testing.assert_array_equal(n_narrow, n_wide)


def test_sums_refuse_a_non_float_dtype(spec):
    u = np.zeros(4, f"u{abs(spec.bitpix) // 8}")
    for dtype in (np.int32, np.float16):
        with pytest.raises(TypeError, match="float32 or float64"):
            kernels.sum_count(u, spec, dtype=dtype)


@pytest.mark.parametrize(
    ("spec", "axis"),
    # columns (axis 0) too: test_extrema_of_columns_at_the_identity compiles them anyway
    encoding_matrix([(a,) for a in AXES], [(a,) for a in CORE], [(None,), (-1,), (0,)]),
    indirect=["spec"],
)
def test_extrema_match_oracle(spec, rng, axis):
    raw = make_stored(spec, (5, 7, 9), rng)
    u = uview(raw)
    phys = oracle.decode(raw, spec)
    for want_max in (False, True):
        val, idx, _ = kernels.extrema(u, spec, axis, want_max=want_max)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = (np.nanmax if want_max else np.nanmin)(phys, axis=axis)
        has = idx >= 0
        np.testing.assert_array_equal(np.asarray(val)[has], np.asarray(want)[has])
        if (axis is None or np.ndim(axis) == 0) and np.all(has):
            with np.errstate(all="ignore"):
                ref = (np.nanargmax if want_max else np.nanargmin)(phys, axis=axis)
            np.testing.assert_array_equal(idx, ref)


def _flat(phys, axis):
    """``phys`` with the reduced axes (any tuple) flattened last, in C order."""
    axes = tuple(range(phys.ndim)) if axis is None else tuple(np.atleast_1d(axis) % phys.ndim)
    moved = np.moveaxis(phys, axes, tuple(range(-len(axes), 0)))
    return moved.reshape(*moved.shape[: phys.ndim - len(axes)], -1)


@pytest.mark.parametrize(
    ("spec", "axis", "layout"),
    encoding_matrix(_pairs(AXES, ["strided", "cutout"]), _pairs(CORE, ["strided", "cutout"])),
    indirect=["spec"],
)
def test_extrema_indices_on_views(spec, rng, axis, layout):
    # views that split into parts: indices are flat over the reduced axes, in C order,
    # of the first extreme valid value and of the first missing one
    _check_extrema(views(make_stored(spec, (5, 7, 9), rng))[layout], spec, axis)


@pytest.mark.parametrize(
    ("spec", "axis"),
    # the identities are the encoding's physical type's: the leading columns on every one
    encoding_matrix(ID_AXES, ID_AXES, [(0,)]),
    indirect=["spec"],
)
def test_extrema_of_columns_at_the_identity(spec, rng, axis):
    # the column kernel starts from the comparison's identity (±inf, an integer type's
    # end): columns whose valid values all equal it, or that have none, still get numpy's
    # answer
    raw = make_stored(spec, (6, 4, 5), rng)
    for want_max in (False, True):
        ident = _identity(spec.physical, want_max)
        if spec.mode == "scaled" and spec.bitpix > 0:
            stored = None  # scaled integers never reach ±inf
        elif spec.mode == "offset":
            stored = np.array(int(ident) - int(spec.bzero)).astype(spec.stored)
        else:
            stored = np.array(ident).astype(spec.stored)
        case = raw.copy()
        if stored is not None:
            case[:, 0, 1] = stored
            case[2:, 1, 2] = stored
        if spec.bitpix < 0:
            case[:, 2, 3] = np.nan
            case[:3, 1, 2] = np.nan
        elif spec.blank is not None:
            case[:, 2, 3] = spec.blank
        _check_extrema(case, spec, axis, (want_max,))


@pytest.mark.parametrize(
    ("spec", "shape", "axis"),
    encoding_matrix(WIDE, WIDE),
    indirect=["spec"],
)
def test_extrema_of_wide_columns(spec, rng, shape, axis):
    # the column kernel goes through more than one tile of columns (the last one partial),
    # four rows per pass and then the rest; ties across rows keep the first index
    raw = make_stored(spec, shape, rng)
    index = [slice(None)] * 3
    index[axis] = 5
    tied = [slice(None)] * 3
    tied[axis] = 1
    raw[tuple(index)] = raw[tuple(tied)]
    _check_extrema(raw, spec, axis)


def _check_extrema(raw, spec, axis, maxes=(False, True)):
    """``kernels.extrema`` of ``raw`` against numpy's first-occurrence rules."""
    flat = _flat(oracle.decode(raw, spec), axis)
    missing = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
    first_nan = np.where(missing.any(axis=-1), missing.argmax(axis=-1), -1)
    for want_max in maxes:
        val, idx, nan_idx = kernels.extrema(uview(raw), spec, axis, want_max=want_max)
        np.testing.assert_array_equal(nan_idx, first_nan)
        valid = ~missing.all(axis=-1)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            # the first valid value equal to the extreme (integers compared as they are)
            ext = (np.nanmax if want_max else np.nanmin)(flat, axis=-1, keepdims=True)
            want_idx = ((flat == ext) & ~missing).argmax(axis=-1)
        np.testing.assert_array_equal(idx, np.where(valid, want_idx, -1))
        want_val = np.take_along_axis(flat, np.expand_dims(want_idx, -1), -1)[..., 0]
        np.testing.assert_array_equal(np.asarray(val)[valid], want_val[valid])


def test_integer_sum_is_exact(spec, rng):
    if not kernels.is_integer_kind(spec):
        pytest.skip("floating physical values")
    raw = make_stored(spec, (4, 6, 8), rng)
    phys = oracle.decode(raw, spec)
    for axis in AXES:
        got = kernels.integer_sum(uview(raw), spec, axis)
        want = np.sum(phys, axis=axis)
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("spec", "shape"),
    encoding_matrix(TINY, TINY),
    indirect=["spec"],
)
def test_empty_and_single_element(spec, rng, shape):
    raw = make_stored(spec, shape, rng, missing=False)
    u = uview(raw)
    total, n = kernels.sum_count(u, spec)
    assert n == raw.size
    np.testing.assert_allclose(total, oracle.decode(raw, spec).astype(float).sum())
    assert kernels.decode(u, spec).shape == shape
    cnt, mean, _ = kernels.moments(u, spec)
    assert cnt == raw.size
    assert np.isnan(mean) if raw.size == 0 else mean == oracle.decode(raw, spec).item()


def test_memmap_input(tmp_path, rng):
    spec = parse_decode_spec(-64)[0]
    raw = make_stored(spec, (100, 30), rng)
    path = tmp_path / "x.bin"
    raw.tofile(path)
    mm = np.memmap(path, dtype=np.uint64, mode="r", shape=raw.shape)
    total, _ = kernels.sum_count(mm, spec, skipna=True)
    assert_within(total, np.nansum(raw.astype(float)), sum_tolerance(raw, spec, None))


def test_wrong_view_dtype_is_refused():
    spec = parse_decode_spec(-32)[0]
    with pytest.raises(TypeError, match="uint32"):
        kernels.decode(np.zeros(3, np.uint64), spec)


@settings(max_examples=40, deadline=None)
@given(
    enc=st.sampled_from(ENCODINGS),
    shape=st.lists(st.integers(0, 6), min_size=1, max_size=4).map(tuple),
    data=st.data(),
)
def test_hypothesis_shapes_and_axes(enc, shape, data):
    spec = parse_decode_spec(*enc[1:])[0]
    raw = make_stored(spec, shape, np.random.default_rng(len(shape)))
    axes = data.draw(st.sets(st.integers(0, len(shape) - 1)))
    axis = tuple(sorted(axes)) or None
    total, _ = kernels.sum_count(uview(raw), spec, axis, skipna=True)
    want = oracle.COMPARISONS["nansum"](raw, spec, axis)
    assert_within(total, want, sum_tolerance(raw, spec, axis))


#: Higham & Mary's probabilistic bound (SIAM J. Sci. Comput. 41, 2019): where rounding errors
#: are independent and of mean zero, a sum's error exceeds ``λ·u·sqrt(Σ P²)`` (``P`` the
#: partial sums it rounds) with probability at most ``2·exp(-λ²/2)`` (Azuma-Hoeffding):
#: 3e-8 for λ = 6.
LAMBDA = 6.0


def _check_accuracy(n):
    rng = np.random.default_rng(7)
    values = rng.random(n) * 2.0 - 0.5  # mixed signs, exactly representable float64s
    exact = math.fsum(values)
    spec = parse_decode_spec(-64)[0]
    got, _ = kernels.sum_count(values.astype(">f8").view(np.uint64), spec)
    # Blocked + compensated: each block of BLOCK values is summed in vector lanes, and
    # whatever the lane count no partial sum in block b exceeds S_b = Σ|x| over it, nor
    # does it take more than BLOCK + 64 roundings; the blocks are then combined with
    # Neumaier's compensation (error 2u|Σ| + O(n·u²)). In the worst case (adversarial data)
    # that is γ(BLOCK)·Σ|x|; these values have uniformly random low bits, so their rounding
    # errors are independent and unbiased and the probabilistic bound applies:
    # λ·u·sqrt((BLOCK + 64)·Σ_b S_b²), set by the block, not by n. A plain running float64
    # sum (P up to Σ|x|) misses it by ~70x at n = 1e7, and the blocked sum with the
    # compensation compiled away (as it once was) by ~4x.
    size = -(-n // BLOCK) * BLOCK
    s_b = np.abs(np.pad(values, (0, size - n))).reshape(-1, BLOCK).sum(axis=1)
    bound = LAMBDA * U * math.sqrt((BLOCK + 64) * float(s_b @ s_b)) + 2 * U * abs(exact)
    assert abs(got - exact) <= bound


def test_sum_accuracy_1e7():
    _check_accuracy(10**7)


@pytest.mark.slow
def test_sum_accuracy_1e8():
    _check_accuracy(10**8)


@pytest.mark.parametrize(("spec", "nb"), encoding_matrix(NB, NB), indirect=["spec"])
def test_column_sums_over_many_rows(spec, rng, nb):
    # moment maps: the middle axis reduced in tiles of 4 rows, blocks of 256 compensated
    raw = make_stored(spec, (2, nb, 37), rng)
    for skipna in (False, True):
        total, n = kernels.sum_count(uview(raw), spec, 1, skipna=skipna)
        want = oracle.COMPARISONS["nansum" if skipna else "sum"](raw, spec, 1)
        assert_within(total, want, sum_tolerance(raw, spec, 1))
        want_n = oracle.COMPARISONS["count"](raw, spec, 1) if skipna else np.full((2, 37), nb)
        np.testing.assert_array_equal(n, want_n)


@pytest.mark.filterwarnings("ignore:(Mean of empty|Degrees of freedom):RuntimeWarning")
@pytest.mark.parametrize(
    ("spec", "shape"),
    encoding_matrix(
        MANY,
        MANY,
    ),
    indirect=["spec"],
)
def test_column_moments_over_many_rows(spec, rng, shape):
    # variance maps: passes of four rows plus a remainder, blocks of 64 rows merged with
    # Chan's update, tiles of 2048 columns plus a remainder
    raw = make_stored(spec, shape, rng)
    mean_tol, _, var_tol = moment_tolerances(raw, spec, 1)
    for skipna in (False, True):
        cnt, mean, m2 = kernels.moments(uview(raw), spec, 1, skipna=skipna)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want_mean = oracle.COMPARISONS["nanmean" if skipna else "mean"](raw, spec, 1)
            want_var = oracle.COMPARISONS["nanvar" if skipna else "var"](raw, spec, 1)
        if skipna:
            np.testing.assert_array_equal(cnt, oracle.COMPARISONS["count"](raw, spec, 1))
        if not (skipna and spec.has_missing):
            # every column counts every row: one read-only value, not a map of counts
            assert not any(cnt.strides)
            assert not cnt.flags.writeable
            assert cnt.dtype == np.int64
            np.testing.assert_array_equal(cnt, shape[1])
        assert_within(mean, want_mean, mean_tol, "means")
        with np.errstate(all="ignore"):
            var = m2 / cnt
        assert_within(var, want_var, var_tol, "variances")


def _check_weighted(raw, spec, axis, rng):
    weights = rng.standard_normal(raw.shape[axis])
    shape = [1] * raw.ndim
    shape[axis] = raw.shape[axis]
    w = np.broadcast_to(weights.reshape(shape), raw.shape)
    for threshold in (None, 0.0):
        got = kernels.weighted_sums(uview(raw), spec, axis, weights, threshold=threshold)
        want = oracle.weighted_sums(raw, spec, axis % 3, weights, threshold)
        assert got.shape == want.shape == (3, *np.delete(raw.shape, axis % 3))
        # both add the same float64 products (astropy's float32 rounding of scaled data
        # included), in different orders
        with np.errstate(invalid="ignore"):
            keep = None if threshold is None else physical64(raw, spec) >= threshold
        for p in range(3):
            tol = sum_tolerance(raw, spec, axis, keep, weights=w**p)
            assert_within(got[p], want[p], tol, f"sums of I·w**{p}")


@pytest.mark.parametrize(("spec", "axis"), encoding_matrix(W, W), indirect=["spec"])
def test_weighted_sums_match_oracle(spec, rng, axis):
    # read-only: what chunk maps are
    _check_weighted(views(make_stored(spec, (5, 7, 9), rng))["readonly"], spec, axis, rng)


@pytest.mark.parametrize("encoding", [(16, 0.5, 3.0, -5), (-32, None, None, None)], ids=str)
@pytest.mark.parametrize(("axis", "layout"), [(1, "strided"), (2, "reversed"), (0, "reversed")])
def test_weighted_sums_strided(rng, encoding, axis, layout):
    spec = parse_decode_spec(*encoding)[0]
    _check_weighted(views(make_stored(spec, (5, 7, 9), rng))[layout], spec, axis, rng)


def test_weighted_sums_edges(rng):
    spec = parse_decode_spec(-32, None, None, None)[0]
    raw = np.full((3, 4), np.nan, ">f4")
    got = kernels.weighted_sums(uview(raw), spec, 0, np.ones(3))
    np.testing.assert_array_equal(got, np.zeros((3, 4)))  # all missing: empty sums
    empty = kernels.weighted_sums(uview(raw[:0]), spec, 0, np.ones(0))
    assert empty.shape == (3, 4)
    assert not empty.any()
    with pytest.raises(ValueError, match="weights must have shape"):
        kernels.weighted_sums(uview(raw), spec, 1, np.ones(3))
    inf = np.array([[1.0, np.inf], [-np.inf, 2.0]], ">f4")
    got = kernels.weighted_sums(uview(inf), spec, 0, np.array([1.0, 2.0]))
    want = oracle.weighted_sums(inf, spec, 0, [1.0, 2.0])
    np.testing.assert_array_equal(got, want)


BANDS = [
    (-np.inf, np.inf),
    (0.0, np.inf),
    (-np.inf, -1.5),
    (-20.0, 35.0),
    (5.0, -5.0),  # empty
    (np.nan, np.inf),  # empty
]


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", BAND_AXES)
@pytest.mark.parametrize("layout", BAND_LAYOUTS)
def test_band_sums_match_oracle(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    u = uview(raw)
    v = oracle.decode(raw, spec).astype(np.float64)
    finite = v[np.isfinite(v)]
    # bounds at stored values too: ties must fall on the side numpy's comparison puts them
    edges = [(finite.min(), finite.max()), (np.median(finite), np.inf)] if finite.size else []
    for lo, hi in BANDS + edges:
        total, n = kernels.band_sum_count(u, spec, axis, lo=lo, hi=hi)
        want_total, want_n = oracle.band_sum_count(raw, spec, axis, lo, hi)
        assert total.dtype == np.float64
        assert n.dtype == np.int64
        np.testing.assert_array_equal(n, want_n)
        assert_within(total, want_total, sum_tolerance(raw, spec, axis, _inside(v, lo, hi)))


def _inside(v, lo, hi):
    """The band the kernels select: ``lo <= v <= hi`` (NaN never inside)."""
    with np.errstate(invalid="ignore"):
        return (v >= lo) & (v <= hi)


@pytest.mark.parametrize("nb", [3, 4, 258, 601])
def test_band_column_sums_over_many_rows(rng, nb):
    spec = parse_decode_spec(16, 0.5, 3.0, -5)[0]
    raw = make_stored(spec, (2, nb, 11), rng)
    keep = _inside(physical64(raw, spec), -100.0, 4000.0)
    for axis in (1, (0, 1)):
        total, n = kernels.band_sum_count(uview(raw), spec, axis, lo=-100.0, hi=4000.0)
        want_total, want_n = oracle.band_sum_count(raw, spec, axis, -100.0, 4000.0)
        np.testing.assert_array_equal(n, want_n)
        assert_within(total, want_total, sum_tolerance(raw, spec, axis, keep))


def test_band_sums_of_empty_and_single_values():
    spec = parse_decode_spec(-32, None, None, None)[0]
    total, n = kernels.band_sum_count(uview(np.zeros((0, 4), ">f4")), spec, 0, lo=0.0)
    np.testing.assert_array_equal(total, np.zeros(4))
    np.testing.assert_array_equal(n, np.zeros(4, np.int64))
    one = np.array([2.5], ">f4")
    assert kernels.band_sum_count(uview(one), spec, None, lo=2.5)[1] == 1
    assert kernels.band_sum_count(uview(one), spec, None, lo=np.nextafter(2.5, 3))[1] == 0
    inf = np.array([np.inf, -np.inf, np.nan, 1.0], ">f4")
    total, n = kernels.band_sum_count(uview(inf), spec, None, lo=-np.inf, hi=np.inf)
    assert np.isnan(total)
    assert n == 3
    total, n = kernels.band_sum_count(uview(inf), spec, None, lo=0.0)
    assert (total, n) == (np.inf, 2)


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", BAND_AXES)
@pytest.mark.parametrize("layout", sampled(["contiguous", "cutout"], ["cutout"]))
def test_band_sums_stored_narrow_without_counts(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    total, _n = kernels.band_sum_count(uview(raw), spec, axis, lo=-20.0)
    narrow, none = kernels.band_sum_count(
        uview(raw), spec, axis, lo=-20.0, dtype=np.float32, counts=False
    )
    assert none is None
    assert narrow.dtype == np.float32
    np.testing.assert_array_equal(narrow, np.asarray(total).astype(np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        kernels.band_sum_count(uview(raw), spec, axis, dtype=np.int32)


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", BAND_AXES)
@pytest.mark.parametrize("layout", BAND_LAYOUTS)
def test_band_moments_match_oracle(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    v = oracle.decode(raw, spec).astype(np.float64)
    finite = v[np.isfinite(v)]
    edges = [(finite.min(), finite.max()), (np.median(finite), np.inf)] if finite.size else []
    for lo, hi in BANDS + edges:
        n, mean, m2 = kernels.band_moments(uview(raw), spec, axis, lo=lo, hi=hi)
        want_n, want_mean, want_m2 = oracle.band_moments(raw, spec, axis, lo, hi)
        np.testing.assert_array_equal(n, want_n)
        assert n.dtype == np.int64
        # NaN exactly where nothing is inside; scaled float32 values are accumulated from
        # their float64 scaling, the oracle's from the float32-rounded ones (``checks``)
        mean_tol, m2_tol, _ = moment_tolerances(raw, spec, axis, _inside(v, lo, hi))
        assert_within(mean, want_mean, mean_tol, "means")
        assert_within(m2, want_m2, m2_tol, "M2")


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", BAND_AXES)
@pytest.mark.parametrize("layout", BAND_LAYOUTS)
def test_band_extrema_match_oracle(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    phys = oracle.decode(raw, spec)
    wide = phys.astype(np.float64)
    finite = wide[np.isfinite(wide)]
    edges = [(finite.min(), finite.max()), (np.median(finite), np.inf)] if finite.size else []
    for lo, hi in BANDS + edges:
        with np.errstate(invalid="ignore"):
            inside = (wide >= lo) & (wide <= hi)
        want_n = inside.sum(axis=axis)
        for want_max, pick in ((False, np.min), (True, np.max)):
            val, n, out = kernels.extrema(
                uview(raw), spec, axis, want_max=want_max, with_index=False, band=(lo, hi)
            )
            np.testing.assert_array_equal(n, want_n)
            np.testing.assert_array_equal(out, inside.size / max(np.size(want_n), 1) - want_n)
            assert np.asarray(val).dtype == spec.physical
            if inside.any():
                # physical values exactly: outside the band, a value that never wins
                if spec.physical.kind == "f":
                    loses = -np.inf if want_max else np.inf
                else:
                    info = np.iinfo(spec.physical)
                    loses = info.min if want_max else info.max
                want = pick(np.where(inside, phys, phys.dtype.type(loses)), axis=axis)
                has = np.asarray(want_n) > 0
                np.testing.assert_array_equal(np.asarray(val)[has], np.asarray(want)[has])
    with pytest.raises(ValueError, match="without indices"):
        kernels.extrema(uview(raw), spec, axis, band=(0.0, 1.0))


@pytest.mark.parametrize("nb", [3, 70, 601])
def test_band_moments_of_offset_columns(rng, nb):
    # a large offset and a band that drops the first rows: the shifted sums must not cancel
    spec = parse_decode_spec(-64, None, None, None)[0]
    raw = (1e8 + rng.standard_normal((2, nb, 5))).astype(">f8")
    raw[:, :2] = 0.0  # outside the band, first in every column
    keep = physical64(raw, spec) >= 1e7
    for axis in (1, (0, 1), 2):
        n, mean, m2 = kernels.band_moments(uview(raw), spec, axis, lo=1e7, hi=np.inf)
        want = oracle.band_moments(raw, spec, axis, 1e7, np.inf)
        np.testing.assert_array_equal(n, want[0])
        # the M2 bound grows like n·u·R·|x| (R ≈ 10, the range kept; |x| ≈ 1e8), not like
        # n·u·x²: squares summed about 0 would land some 1e7 times outside it
        mean_tol, m2_tol, _ = moment_tolerances(raw, spec, axis, keep)
        assert_within(mean, want[1], mean_tol, "means")
        assert_within(m2, want[2], m2_tol, "M2")


def test_band_moments_of_nothing():
    spec = parse_decode_spec(16, 0.5, 3.0, -5)[0]
    n, mean, m2 = kernels.band_moments(uview(np.zeros((0, 4), ">i2")), spec, 0, lo=0.0)
    np.testing.assert_array_equal(n, np.zeros(4, np.int64))
    assert np.isnan(mean).all()
    assert np.isnan(m2).all()
    raw = np.array([[-5, 7], [-5, 9]], ">i2")  # BLANKs only in the first column
    n, mean, m2 = kernels.band_moments(uview(raw), spec, 0)
    np.testing.assert_array_equal(n, [0, 2])
    np.testing.assert_array_equal(mean, [np.nan, 7.0])
    np.testing.assert_array_equal(m2, [np.nan, 0.5])  # 6.5 and 7.5


@pytest.mark.parametrize("spec", sampled_encodings(), indirect=True)
@pytest.mark.parametrize("axis", sampled([None, 0, (1, 2)], [0, (1, 2)]))
@pytest.mark.parametrize("layout", sampled(["contiguous", "cutout"], ["cutout"]))
def test_band_counts_alone(spec, rng, axis, layout):
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    _, n = kernels.band_sum_count(uview(raw), spec, axis, lo=-20.0, hi=40.0)
    none, alone = kernels.band_sum_count(uview(raw), spec, axis, lo=-20.0, hi=40.0, sums=False)
    assert none is None
    np.testing.assert_array_equal(alone, n)
    with pytest.raises(ValueError, match="sums, counts or both"):
        kernels.band_sum_count(uview(raw), spec, axis, sums=False, counts=False)
