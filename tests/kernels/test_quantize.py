"""The quantising encoder (floats to BSCALE/BZERO/BLANK integers) against its numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dfits.format.imagehdu import parse_quantized
from dfits.kernels.quantize import quantize_oracle, quantize_rows


def _check(values: np.ndarray, bitpix: int, bscale: float, bzero: float, blank=None):
    s = parse_quantized(values.dtype, "x", bitpix, bscale, bzero, blank)
    lo, hi = s.limits
    size = bitpix // 8
    out = np.empty(values.shape, dtype=f"u{size}")
    sums = quantize_rows(values, out, s.bscale, s.bzero, s.blank, lo, hi)
    stored, expected = quantize_oracle(values, size, s.bscale, s.bzero, s.blank, lo, hi)
    assert out.tobytes() == stored.tobytes()
    assert [int(v) for v in sums] == expected
    return stored


@pytest.mark.parametrize("bitpix", [8, 16, 32, 64])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_matches_oracle_with_nan_inf_and_clipping(bitpix, dtype):
    values = np.random.default_rng(bitpix).standard_normal((3, 257)) * 10.0 ** (bitpix // 4)
    values[0, :6] = [np.nan, np.inf, -np.inf, 1e300, -1e300, 0.5]
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf: on purpose
        values = values.astype(dtype)
    stored = _check(values, bitpix, 0.5, 1.0)
    lo, hi = parse_quantized(dtype, "x", bitpix, 0.5, 1.0).limits
    blank = hi + 1 if bitpix == 8 else lo - 1
    assert list(stored[0, :5]) == [blank, hi, lo, hi, lo]


def test_rounds_half_to_even_and_keeps_blank_out_of_range():
    stored = _check(np.array([[0.5, 1.5, 2.5, -0.5, -40000.0, np.nan]]), 16, 1.0, 0.0)
    assert stored.tolist() == [[0, 2, 2, 0, -32767, -32768]]
    stored = _check(np.array([[np.nan, 300.0, 7.0]]), 8, 1.0, 0.0, blank=255)
    assert stored.tolist() == [[255, 254, 7]]


def test_bad_parameters():
    with pytest.raises(ValueError, match="BITPIX 12"):
        parse_quantized("f4", "x", 12)
    with pytest.raises(ValueError, match="finite"):
        parse_quantized("f4", "x", 16, 0.0)
    with pytest.raises(ValueError, match="BLANK 70000"):
        parse_quantized("f4", "x", 16, 1.0, 0.0, 70000)
    with pytest.raises(NotImplementedError, match="takes floats"):
        parse_quantized("i4", "x", 16)


@settings(max_examples=40, deadline=None)
@given(
    values=hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(0, 9))),
    bitpix=st.sampled_from([8, 16, 32]),
    bscale=st.sampled_from([1.0, 0.25, 3.0, -2.0]),
    bzero=st.sampled_from([0.0, 100.0, -7.5]),
)
def test_any_floats_match_oracle(values, bitpix, bscale, bzero):
    _check(values, bitpix, bscale, bzero)
