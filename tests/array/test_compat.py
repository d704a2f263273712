"""Compatibility: reductions, elementwise steps and indexing on dfits arrays equal numpy's.

Each test applies one operation to a dfits array and to ``da.from_array`` of astropy's values
of the same file (same chunks) and compares the computed results (:mod:`tests.compat_ops`).
"""

from __future__ import annotations

import pickle

import dask.array as da
import numpy as np
import pytest

from tests.array.helpers import sampled_pairs
from tests.compat_ops import CASE_NAMES, CHUNKS, SPLIT_CHUNKS, assert_plain, check, write_cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("compat"))


@pytest.fixture(params=CASE_NAMES)
def case(request, cases):
    return cases[request.param]


REDUCTIONS = ("sum", "mean", "std", "var", "min", "max", "nansum", "nanmean", "nanstd", "nanmax")
ARG_REDUCTIONS = ("argmax", "argmin", "nanargmax")


@pytest.mark.parametrize("axis", [None, 0, (1, 2), -1], ids=["all", "0", "1-2", "last"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction(case, name, axis):
    """``np.<name>(x, axis=...)`` (through ``__array_function__``) matches, dtype included."""
    check(case, lambda x: getattr(np, name)(x, axis=axis))


@pytest.mark.parametrize("name", ["sum", "mean", "std", "var", "min", "max"])
def test_reduction_method(case, name):
    """The method spelling ``x.<name>(axis=0)`` matches too."""
    check(case, lambda x: getattr(x, name)(axis=0))


@pytest.mark.parametrize("axis", [None, 0, -1], ids=["all", "0", "last"])
@pytest.mark.parametrize("name", ARG_REDUCTIONS)
def test_arg_reduction(case, name, axis):
    """Indices of extremes are exact, including where NaN or BLANK sits (numpy: first NaN)."""
    check(case, lambda x: getattr(da, name)(x, axis=axis))


@pytest.mark.parametrize("chunks", [CHUNKS, SPLIT_CHUNKS], ids=["rows", "split-rows"])
def test_compute_is_plain_native_numpy(case, chunks):
    """``compute()`` hands back a plain native ndarray equal to astropy's ``.data``."""
    got = case.dfits(chunks).compute()
    assert type(got) is np.ndarray
    assert got.dtype.isnative
    check(case, lambda x: x, chunks)


@pytest.mark.parametrize(
    "op",
    [
        lambda x: (x * 2 + 1).sum(),
        lambda x: abs(x).max(),
        lambda x: np.sqrt(abs(x)),
        lambda x: x - x.mean(axis=0),
        lambda x: (x - 0.5).mean(axis=-1),
        lambda x: (-x).min(axis=0),
        lambda x: (x / 3).std(),
        lambda x: np.exp(x * 1e-4).sum(axis=(1, 2)),
    ],
    ids=[
        "x*2+1-sum",
        "abs-max",
        "sqrt-abs",
        "minus-mean0",
        "x-0.5-mean",
        "neg-min",
        "div-std",
        "exp-sum",
    ],
)
def test_elementwise_then_reduce(case, op):
    """Elementwise steps with scalars (fused or decoded) give numpy's values and dtypes."""
    check(case, op)


def test_where_threshold_sum(case):
    """``da.where(x > t, x, nan).sum(axis=0)``: the threshold-cut path."""
    t = case.threshold
    check(case, lambda x: da.where(x > t, x, np.nan).sum(axis=0))


COMPARISONS = {
    "gt-sum": lambda x, t: (x > t).sum(),
    "le-sum0": lambda x, t: (x <= t).sum(axis=0),
    "gt-any": lambda x, t: (x > t).any(axis=-1),
    "gt-mask": lambda x, t: x > t,
}


@pytest.mark.parametrize(
    ("case", "op"),
    # each file's counts compile its band kernels (~10 s on a cold cache): float64 and int32
    # load as float32 and uint16 do (a wider word), so they run under -m slow
    sampled_pairs(CASE_NAMES, COMPARISONS, lambda c, _: c not in ("float64", "int32")),
    indirect=["case"],
)
def test_comparison(case, op):
    """Comparisons with a scalar (lazy cuts in dfits) count and mask like numpy."""
    check(case, lambda x: COMPARISONS[op](x, case.threshold))


@pytest.mark.parametrize(
    "op",
    [
        lambda x: np.isnan(x).sum(),
        lambda x: np.isnan(x).sum(axis=(0, 2)),
        lambda x: np.isnan(x),
        lambda x: (~np.isnan(x)).sum(axis=0),
    ],
    ids=["sum", "sum-0-2", "mask", "not-sum"],
)
def test_isnan(case, op):
    """``np.isnan`` masks (NaN in floats, BLANK in scaled integers) count like numpy's."""
    check(case, op)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_astype_then_sum(case, dtype):
    """``x.astype(dtype).sum(axis=0)`` (exact widening, narrowing, or a cast of NaN)."""
    with np.errstate(invalid="ignore"):
        check(case, lambda x: x.astype(dtype).sum(axis=0))


@pytest.mark.parametrize(
    "index",
    [
        (slice(None, None, 2), slice(1, -1)),
        (Ellipsis, slice(None, None, -3)),
        (1, slice(2, 9), 5),
        ([0, 2],),
        (slice(None), [1, 4, 4, 9]),
        (slice(3, 3),),
    ],
    ids=["step-inner", "negative-step", "ints", "list0", "list1-repeat", "empty"],
)
def test_indexing(case, index):
    """Strided, reversed, integer and fancy indexing, computed and then summed."""
    check(case, lambda x: x[index])
    check(case, lambda x: x[index].sum(axis=0))


def test_boolean_mask_indexing(case):
    """``x[x > t]`` with unknown chunk sizes, made known by ``compute_chunk_sizes``."""
    t = case.threshold

    def select(x):
        return x[x > t].compute_chunk_sizes()

    check(case, select)
    check(case, lambda x: select(x).sum())


def test_pickle_round_trip(case):
    """A pickled dfits array computes to the same values after unpickling."""
    x = case.dfits()
    again = pickle.loads(pickle.dumps(x))
    assert again.name == x.name
    check(case, lambda y: pickle.loads(pickle.dumps(y)))
    assert_plain(again.sum().compute())


def test_numpy_asarray_of_dask_array(case):
    """``np.asarray`` on the dask array itself computes to a plain ndarray."""
    got = np.asarray(case.dfits())
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, case.ref)
