"""Pure planning: factor choice, smooth lengths, norm factors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dfits.fft.plan import divisors, next_smooth, parse_norm, plan_length, scale


@given(st.integers(1, 5000))
def test_divisors_are_all_and_only_divisors(n):
    assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def _smooth(m: int) -> bool:
    for p in (2, 3, 5):
        while m % p == 0:
            m //= p
    return m == 1


@given(st.integers(1, 100_000))
def test_next_smooth_is_the_smallest_smooth_at_least_n(n):
    m = next_smooth(n)
    assert m >= n
    assert _smooth(m)
    assert not any(_smooth(k) for k in range(n, m))


@given(st.integers(2, 1 << 24), st.integers(2, 1 << 14), st.integers(0, 1 << 12))
def test_plans_respect_the_line_budget(n, max_line, prefer):
    try:
        split = plan_length(n, max_line, chunked=True, prefer=prefer)
    except ValueError:
        # only when not even a power-of-two convolution splits into lines that fit
        k = (2 * n - 2).bit_length()
        assert 1 << ((k + 1) // 2) > max_line
        assert all(max(d, n // d) > max_line for d in divisors(n))
        return
    if split.method == "direct":
        assert n <= max_line
        return
    assert split.n1 * split.n2 == split.m
    assert max(split.n1, split.n2) <= max_line
    if split.method == "sixstep":
        assert split.m == n
    else:
        assert split.m >= 2 * n - 1
        assert _smooth(split.m)
        # Bluestein only when no factorisation of n fits the budget
        assert all(max(d, n // d) > max_line for d in divisors(n))


def test_balanced_split_prefers_factors_matching_the_chunks():
    split = plan_length(1 << 20, 1 << 16, chunked=True, prefer=1 << 11)
    assert (split.n1, split.n2) == (1 << 10, 1 << 10)
    # 3000 = 2^3·3·5^3: sqrt is ~55; chunks of 120 make 40 or 60 the aligned choice
    split = plan_length(3000, 1000, chunked=True, prefer=120)
    assert 120 % split.n2 == 0
    assert split.n1 * split.n2 == 3000


def test_unchunked_axes_are_direct_however_long():
    assert plan_length(1 << 30, 16, chunked=False).method == "direct"


def test_lines_too_long_even_for_bluestein_raise():
    with pytest.raises(ValueError, match="longer than 4 elements"):
        plan_length(97, 4, chunked=True)


@pytest.mark.parametrize("n", [0, -3])
def test_nonpositive_lengths_raise(n):
    with pytest.raises(ValueError, match="number of data points"):
        plan_length(n, 16, chunked=True)


@pytest.mark.parametrize(
    ("norm", "inverse", "want"),
    [
        ("backward", False, 1.0),
        ("backward", True, 1 / 16),
        ("ortho", False, 1 / 4),
        ("ortho", True, 1 / 4),
        ("forward", False, 1 / 16),
        ("forward", True, 1.0),
    ],
)
def test_scale_follows_numpy(norm, inverse, want):
    assert math.isclose(scale(16, norm, inverse), want)


def test_norm_parsing():
    assert parse_norm(None) == "backward"
    with pytest.raises(ValueError, match="norm must be"):
        parse_norm("unitary")


def test_huge_lengths_plan_at_once_or_refuse():
    import time

    start = time.perf_counter()
    split = plan_length(10**12, 1 << 23, chunked=True)
    assert split.method == "sixstep"
    assert split.n1 * split.n2 == 10**12
    with pytest.raises(ValueError, match="raise block_size"):
        plan_length(10**18 + 3, 1 << 20, chunked=True)
    assert time.perf_counter() - start < 5
