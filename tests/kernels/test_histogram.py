"""The key-count kernel of exact medians against its numpy oracle: both float widths, NaN,
infinities, signed zeros, denormals, empty and one-value inputs, strided views."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.histogram import BINS, key_counts, key_counts_oracle, key_of


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("centre", [None, 0.5])
def test_key_counts_equal_the_oracle(dtype, centre):
    rng = np.random.default_rng(5)
    v = (rng.standard_normal(5000) * 10).astype(dtype)
    v[::9], v[1], v[2], v[3], v[4] = np.nan, np.inf, -np.inf, -0.0, 1e-40
    width = 8 * v.itemsize
    first = key_of(v[5:6])[0]
    for shift in range(0, width, 16):
        above = int(first) >> (shift + 16) if shift + 16 < width else 0
        prefixes = np.array([above, 3], first.dtype)
        want = key_counts_oracle(v, centre, shift, prefixes)
        np.testing.assert_array_equal(key_counts(v, centre, shift, prefixes), want)


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("n", [0, 1])
def test_key_counts_of_nothing_and_of_one_value(dtype, n):
    v = np.full(n, 2.5, dtype)
    width = 8 * np.dtype(dtype).itemsize
    prefixes = np.zeros(2, f"u{np.dtype(dtype).itemsize}")
    got = key_counts(v, None, width - 16, prefixes)
    assert got.shape == (2, BINS)
    np.testing.assert_array_equal(got, key_counts_oracle(v, None, width - 16, prefixes))
    assert got[0].sum() == n


def test_key_counts_of_a_strided_read_only_view():
    base = np.random.default_rng(7).standard_normal((40, 30)).astype(np.float32)
    base.setflags(write=False)
    v = base[::3, 1::2]
    prefixes = np.zeros(2, np.uint32)
    np.testing.assert_array_equal(
        key_counts(v, 0.25, 16, prefixes), key_counts_oracle(v, 0.25, 16, prefixes)
    )
