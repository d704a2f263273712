"""The winning-part loops of arg-reduction combines against numpy's arg functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dfits.kernels.argcombine import fold_part, gather_part, oracle_winner

FUNCS = {
    "argmax": (True, False),
    "argmin": (False, False),
    "nanargmax": (True, True),
    "nanargmin": (False, True),
}


def _combine(parts, want_max, skipna):
    best = parts[0].copy()
    winner = np.zeros(best.size, np.uint8)
    for k in range(1, len(parts)):
        fold_part(best, winner, parts[k], k, want_max=want_max, skipna=skipna)
    return winner, best


def _check(parts, want_max, skipna):
    winner, best = _combine(parts, want_max, skipna)
    want = oracle_winner(parts, want_max=want_max, skipna=skipna)
    np.testing.assert_array_equal(winner, want)
    picked = np.stack(parts)[want, np.arange(want.size)]
    np.testing.assert_array_equal(best, picked)  # NaN where numpy's pick is NaN
    assert np.array_equal(np.signbit(best), np.signbit(picked))  # the first of ±0 wins
    out = parts[0].copy()
    for k in range(1, len(parts)):
        gather_part(out, winner, parts[k] * 2, k)
    np.testing.assert_array_equal(
        out, np.where(want == 0, parts[0], np.stack(parts)[want, np.arange(want.size)] * 2)
    )


def test_oracle_is_numpy_where_numpy_answers():
    parts = [np.array([1.0, np.nan, 3.0]), np.array([2.0, 5.0, np.nan])]
    stacked = np.stack(parts)
    assert list(oracle_winner(parts, want_max=True, skipna=False)) == list(np.argmax(stacked, 0))
    assert list(oracle_winner(parts, want_max=True, skipna=True)) == list(np.nanargmax(stacked, 0))
    assert list(oracle_winner(parts, want_max=False, skipna=True)) == list(np.nanargmin(stacked, 0))


@pytest.mark.parametrize("func", list(FUNCS))
def test_specials(func):
    want_max, skipna = FUNCS[func]
    nan, inf = np.nan, np.inf
    parts = [
        np.array([1.0, nan, 2.0, -0.0, nan, -inf, inf, 5.0, nan], np.float32),
        np.array([1.0, 3.0, nan, 0.0, nan, nan, inf, 5.0, 1.0], np.float32),
        np.array([4.0, nan, 7.0, -0.0, nan, -inf, -inf, -1.0, nan], np.float32),
    ]
    _check(parts, want_max, skipna)


@pytest.mark.parametrize("func", list(FUNCS))
@pytest.mark.parametrize("dtype", ["i2", "u2", "i4", "i8", "u1"])
def test_integers(func, dtype):
    want_max, skipna = FUNCS[func]
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    parts = [rng.integers(info.min, info.max, 500, dtype=dtype, endpoint=True) for _ in range(5)]
    parts[2][:50] = parts[0][:50]  # ties: the first part wins
    _check(parts, want_max, skipna)


def test_strided_values_and_empty():
    rec = np.zeros((3, 100), [("vals", "f8"), ("arg", "i8")])
    rec["vals"] = np.random.default_rng(1).standard_normal((3, 100))
    parts = [rec["vals"][k] for k in range(3)]  # strided field views
    assert not parts[0].flags.c_contiguous
    _check(parts, True, False)
    best, winner = np.empty(0), np.empty(0, np.uint8)
    fold_part(best, winner, np.empty(0), 1, want_max=True, skipna=False)  # nothing to do


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(list(FUNCS)),
    st.integers(2, 6),
    hnp.arrays(
        np.float64,
        st.integers(1, 40),
        elements=st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]),
    ),
    st.randoms(use_true_random=False),
)
def test_hypothesis_against_numpy(func, nparts, base, rnd):
    want_max, skipna = FUNCS[func]
    parts = [base] + [np.array(rnd.sample(list(base), len(base))) for _ in range(nparts - 1)]
    _check([p.astype(np.float32) for p in parts], want_max, skipna)
