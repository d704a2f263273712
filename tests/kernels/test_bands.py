"""The stored-integer route of band sums: its interval, and its kernels against the others."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
from dfits.kernels import bands as band_module
from dfits.kernels import oracle
from dfits.kernels._loaders import kind_of
from dfits.kernels.rawbands import raw_interval, rawband_kernels
from tests.kernels.checks import assert_within, physical64, sum_tolerance
from tests.kernels.conftest import make_stored
from tests.kernels.test_api import AXES, uview, views


def _all_stored(bitpix: int) -> np.ndarray:
    """Every stored integer of ``bitpix`` in increasing order, as big-endian stored values."""
    if bitpix == 8:
        return np.arange(256, dtype=np.uint8)
    return np.arange(-(1 << 15), 1 << 15, dtype=np.int32).astype(">i2")


def _inside(bitpix, scale, zero, lo, hi):
    """What numpy's comparison of astropy's decoded values keeps, per stored integer."""
    spec = parse_decode_spec(bitpix, scale, zero, None)[0]
    phys = oracle.decode(_all_stored(bitpix), spec).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return (phys >= lo) & (phys <= hi)


def _check_interval(bitpix, scale, zero, lo, hi):
    # Python floats, as the kernels' callers pass them (numpy's weak scalars: they must not
    # be rounded to float32 when compared with float32 values)
    lo, hi = float(lo), float(hi)
    span = raw_interval(bitpix, scale, zero, lo, hi)
    keep = _inside(bitpix, scale, zero, lo, hi)
    stored = _all_stored(bitpix).astype(np.int64)
    assert span is not None
    np.testing.assert_array_equal((stored >= span[0]) & (stored <= span[1]), keep)
    return span


SCALES = [(0.5, 3.0), (-0.25, 10.0), (1e-3, -7.5), (0.1, 0.0), (3.7e-8, 1.0), (1e4, -2e8)]


@pytest.mark.parametrize("bitpix", [8, 16])
@pytest.mark.parametrize(("scale", "zero"), SCALES)
def test_interval_keeps_what_numpy_keeps(bitpix, scale, zero):
    spec = parse_decode_spec(bitpix, scale, zero, None)[0]
    phys = oracle.decode(_all_stored(bitpix), spec).astype(np.float64)
    picks = np.quantile(phys, [0.0, 0.1, 0.5, 0.73, 1.0])
    bounds = [(-np.inf, np.inf), (np.inf, -np.inf), (np.nan, 1.0)]
    # ties at values the data can take, and one ulp beside them (strict comparisons)
    bounds += [(a, b) for a in picks for b in picks]
    bounds += [(np.nextafter(a, np.inf), np.nextafter(b, -np.inf)) for a, b in bounds[3:]]
    for lo, hi in bounds:
        _check_interval(bitpix, scale, zero, lo, hi)
    assert raw_interval(bitpix, scale, zero, 1.0, 0.0) == (1, 0)


@settings(max_examples=150, deadline=None)
@given(
    bitpix=st.sampled_from([8, 16]),
    scale=st.floats(-1e6, 1e6, allow_nan=False).filter(lambda s: s != 0),
    zero=st.floats(-1e9, 1e9, allow_nan=False),
    q=st.tuples(st.floats(-0.1, 1.1), st.floats(-0.1, 1.1)),
)
def test_interval_hypothesis(bitpix, scale, zero, q):
    spec = parse_decode_spec(bitpix, scale, zero, None)[0]
    phys = np.sort(oracle.decode(_all_stored(bitpix), spec).astype(np.float64))
    lo, hi = (phys[int(np.clip(f, 0, 1) * (phys.size - 1))] + (f - np.clip(f, 0, 1)) for f in q)
    _check_interval(bitpix, scale, zero, lo, hi)


def test_interval_refuses_what_is_not_one():
    # 0 · inf is NaN: the one stored 0 leaves a hole in the middle of an infinite scale's band
    assert raw_interval(16, np.inf, 0.0, -np.inf, np.inf) is None
    with pytest.raises(ValueError, match="BITPIX 32"):
        raw_interval(32, 1.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="scaled 8/16-bit"):
        rawband_kernels(kind_of(parse_decode_spec(-32, None, None, None)[0]))


SCALED = [(8, 2.0, 1.0, 0), (8, -0.5, 3.0, None), (16, 0.5, 3.0, -5), (16, -1e-3, 2.0, 0),
          (16, 3.7e-8, 1.0, None), (16, 0.1, -20.0, -32768)]  # fmt: skip


@pytest.mark.parametrize("encoding", SCALED, ids=str)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "reversed", "cutout"])
def test_stored_integer_route_matches_oracle(encoding, axis, layout, monkeypatch):
    spec = parse_decode_spec(*encoding)[0]
    rng = np.random.default_rng(7)
    raw = views(make_stored(spec, (5, 7, 9), rng))[layout]
    # the per-value kernel must not be what answers
    monkeypatch.setattr(band_module, "band_kernels", None)
    v = oracle.decode(raw, spec).astype(np.float64)
    finite = v[np.isfinite(v)]
    bands = [(-np.inf, np.inf), (np.median(finite), np.inf), (-np.inf, np.median(finite)),
             (finite.min(), finite.max()), (np.nextafter(finite.min(), np.inf), np.inf),
             (5.0, -5.0)]  # fmt: skip
    for lo, hi in bands:
        total, n = kernels.band_sum_count(uview(raw), spec, axis, lo=lo, hi=hi)
        want_total, want_n = oracle.band_sum_count(raw, spec, axis, lo, hi)
        np.testing.assert_array_equal(n, want_n)
        # scale·Σx + zero·n in float64 against Σ of float32-rounded values: each of those
        # is off by up to two float32 roundings (``checks``)
        keep = (v >= lo) & (v <= hi)
        assert_within(total, want_total, sum_tolerance(raw, spec, axis, keep))
        only_n = kernels.band_sum_count(uview(raw), spec, axis, lo=lo, hi=hi, sums=False)
        assert only_n[0] is None
        np.testing.assert_array_equal(only_n[1], n)
        narrow, none = kernels.band_sum_count(
            uview(raw), spec, axis, lo=lo, hi=hi, dtype=np.float32, counts=False
        )
        assert none is None
        np.testing.assert_array_equal(narrow, np.asarray(total).astype(np.float32))


@pytest.mark.parametrize("nb", [3, 4, 7, (1 << 15) + 5])
def test_stored_integer_columns_over_blocks_of_rows(nb):
    # int32 lanes restart every NARROW_BLOCK rows; the extremes of int16 fill them fully
    spec = parse_decode_spec(16, 0.5, 3.0, -5)[0]
    raw = np.full((1, nb, 3), 32767, ">i2")
    raw[0, ::3, 1] = -32768
    raw[0, 1::4, 2] = -5
    v = physical64(raw, spec)
    for lo, hi in [(-np.inf, np.inf), (0.0, np.inf), (-np.inf, 0.0)]:
        want_total, want_n = oracle.band_sum_count(raw, spec, 1, lo, hi)
        with np.errstate(invalid="ignore"):
            tol = sum_tolerance(raw, spec, 1, (v >= lo) & (v <= hi))
        for dtype in (np.float64, np.float32):
            total, n = kernels.band_sum_count(uview(raw), spec, 1, lo=lo, hi=hi, dtype=dtype)
            np.testing.assert_array_equal(n, want_n)
            # float32 sums are the float64 ones rounded once more, as they are stored
            rounding = np.abs(want_total) * 2.0**-24 if dtype == np.float32 else 0.0
            assert_within(total, want_total, tol + rounding)


def test_falls_back_to_the_per_value_kernel():
    spec = parse_decode_spec(16, np.inf, 0.0, None)[0]
    raw = np.array([[-2, 0, 3], [5, 0, -1]], ">i2")
    total, n = kernels.band_sum_count(uview(raw), spec, 0, lo=-np.inf, hi=np.inf)
    want_total, want_n = oracle.band_sum_count(raw, spec, 0, -np.inf, np.inf)
    np.testing.assert_array_equal(n, want_n)
    np.testing.assert_array_equal(total, want_total)
