"""Dequantisation: the convention's dither sequence and cfitsio's arithmetic, by a plain
Python oracle written from the standard."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.dequantize import ZERO_VALUE, dequantize, random_table


def oracle(q, scale, zero, method, row, dither0, blank, dtype):
    values, _ = random_table()
    out = np.empty(len(q), dtype)
    iseed = (row + dither0 - 1) % 10000
    nextrand = int(np.float32(values[iseed]) * np.float32(500))
    for i, v in enumerate(q.tolist()):
        if blank is not None and v == blank:
            out[i] = np.nan
        elif method == -1:
            out[i] = v * scale + zero
        elif method == 2 and v == ZERO_VALUE:
            out[i] = 0.0
        else:
            out[i] = (v - float(values[nextrand]) + 0.5) * scale + zero
        if method > 0:
            nextrand += 1
            if nextrand == 10000:
                iseed = (iseed + 1) % 10000
                nextrand = int(np.float32(values[iseed]) * np.float32(500))
    return out


def test_random_table_is_the_conventions():
    values, starts = random_table()
    assert values.dtype == np.float32
    assert values[0] == np.float32(16807 / 2147483647)
    assert starts.min() >= 0
    assert starts.max() < 500


@pytest.mark.parametrize("method", [-1, 1, 2])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("row", [0, 9998, 123456])
def test_equals_the_oracle(method, dtype, row):
    rng = np.random.default_rng(row)
    # long enough to wrap the 10,000-number table within one tile
    q = rng.integers(-1000, 1000, 12_007).astype(np.int32)
    q[::11] = ZERO_VALUE
    q[5::13] = -2147483647
    out = np.empty((1, q.size), dtype)
    dequantize(q, out, 0.37, 12.5, method, row, 42, -2147483647)
    want = oracle(q, 0.37, 12.5, method, row, 42, -2147483647, dtype)
    np.testing.assert_array_equal(out[0], want)


def test_strided_output_and_no_blank():
    q = np.arange(12, dtype=np.int16)
    base = np.zeros((3, 8), "f4")
    dequantize(q, base[:, ::2], 2.0, 1.0, -1, 0, 1, None)
    assert base[:, ::2].ravel().tolist() == (np.arange(12) * 2.0 + 1).tolist()
    assert not base[:, 1::2].any()
