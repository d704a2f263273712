"""Scalar arithmetic (``x * c``, ``x + c``, ``-x``) and squares keep chunks stored."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
import xarray as xr
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
from dfits.stored.affine import affine_spec
from dfits.stored.lazy import Deviation
from dfits.stored.nanmask import NanMask
from dfits.stored.stored import StoredChunk
from tests.array.helpers import encoded_case, reader_of, sampled_pairs, stored_sample

CASES = {
    "f32-nan-inf": (-32, None, None, None),
    "f64": (-64, None, None, None),
    "i16-scaled-blank": (16, 0.5, 3.0, -5),
    "f32-scaled": (-32, 0.25, 0.0, None),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request, tmp_path):
    """``(dask array over dfits, astropy's values, case name)``."""
    bitpix, _, _, blank = CASES[request.param]
    missing = request.param == "f32-nan-inf"
    data = stored_sample(bitpix, blank, seed=11, scale=4, span=40, nan=missing, inf=missing)
    if missing:
        data[5, 0, 0] = -0.0
    x, values = encoded_case(tmp_path, data, CASES[request.param], (4, 6, 5))
    return x, values, request.param


def _quiet(f, *args):
    with warnings.catch_warnings(), np.errstate(invalid="ignore", over="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


# maps that keep every case stored
EVERY = {"neg": lambda x: -x}
# ... scaled integers and raw floating data: powers of two
POWERS = {
    "times-4": lambda x: x * 4,
    "4-times": lambda x: 4.0 * x,
    "times-minus-2": lambda x: x * -2.0,
    "np-multiply": lambda x: np.multiply(x, 2.0),
    "over-8": lambda x: x / 8,
    "times-minus-half": lambda x: x * -0.5,
}
# ... data without BZERO: a constant added
ADD = {
    "plus-0.3": lambda x: x + 0.3,
    "0.3-plus": lambda x: 0.3 + x,
    "minus-1.7": lambda x: x - 1.7,
    "1.7-minus": lambda x: 1.7 - x,
}
# ... only raw floating data (one rounding, or the decoder's two)
RAW_FLOAT = {
    "times-0.1": lambda x: x * 0.1,
    "times-then-plus": lambda x: x * 1.1 + 0.7,
    "times-then-minus": lambda x: x * 3 - 2,
    "int-scalar": lambda x: x * 3,
    "np-scalar-same-dtype": lambda x: x * x.dtype.type(0.3),
}
# decoded: numpy's values, the slow way
DECODED = {
    "over-3": lambda x: x / 3,
    "3-over": lambda x: 3 / x,
    "plus-then-times": lambda x: (x + 0.7) * 1.1,
    "times-0": lambda x: x * 0,
    "array-operand": lambda x: x * np.asarray(2.0),
}
# a float64 numpy scalar makes float32 values float64 (computed in float64: decoded)
WIDENING = {"float64-scalar": lambda x: x * np.float64(0.5)}
MAPS = {
    "f32-nan-inf": {**EVERY, **POWERS, **ADD, **RAW_FLOAT},
    "f64": {**EVERY, **POWERS, **ADD, **RAW_FLOAT},
    "i16-scaled-blank": {**EVERY, **POWERS},
    "f32-scaled": {**EVERY, **ADD},
}

REDUCTIONS = {
    "sum": lambda y: y.sum(),
    "nansum-axis0": lambda y: np.nansum(y, axis=0),
    "mean-axis12": lambda y: y.mean(axis=(1, 2)),
    "nanmax": lambda y: np.nanmax(y, axis=0),
    "nanmin": lambda y: np.nanmin(y),
    "nanstd-axis0": lambda y: np.nanstd(y, axis=0),
    "masked-sum": lambda y: np.nansum(np.where(y > 1.0, y, np.nan), axis=0),
}


@pytest.mark.parametrize(
    ("case", "red"),
    # float64 maps take float32's route (the same maps, each reduction its own kernel
    # variant of the mapped encoding): under -m slow
    sampled_pairs(CASES, REDUCTIONS, lambda c, _: c != "f64"),
    indirect=["case"],
)
def test_reductions_after_scalar_arithmetic_are_fused(case, no_decode, red):
    x, data, name = case
    reduce = REDUCTIONS[red]
    for op, f in MAPS[name].items():
        got = _quiet(lambda: reduce(f(x)).compute())  # noqa: B023
        want = _quiet(reduce, f(data))
        assert np.asarray(got).dtype == np.asarray(want).dtype, op
        if red.startswith(("nanmax", "nanmin")):
            # extrema are values of the decoded array: numpy's, exactly
            np.testing.assert_array_equal(got, want, err_msg=op)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5, err_msg=op)


def test_values_are_numpys_exactly(case):
    x, data, name = case
    for op, f in {**MAPS[name], **DECODED, **WIDENING}.items():
        got = _quiet(lambda: f(x).compute())  # noqa: B023
        want = _quiet(f, data)
        assert type(got) is np.ndarray, op
        assert got.dtype == want.dtype, op
        np.testing.assert_array_equal(got, want, err_msg=op)


def test_which_chunks_stay_stored(case):
    x, _, name = case
    block = reader_of(x)
    chunk = block[(slice(0, 4),)]
    assert isinstance(chunk, StoredChunk)
    for op, f in MAPS[name].items():
        assert isinstance(f(chunk), StoredChunk), op
    for op, f in DECODED.items():
        assert not isinstance(_quiet(f, chunk), StoredChunk), op
    if x.dtype == np.float32:
        assert not isinstance(WIDENING["float64-scalar"](chunk), StoredChunk)
    for op, f in {**POWERS, **ADD, **RAW_FLOAT}.items():
        if op not in MAPS[name]:
            assert not isinstance(_quiet(f, chunk), StoredChunk), op


def test_xarray_arithmetic_then_reductions(case, no_decode):
    x, data, name = case
    lazy = xr.DataArray(x, dims=("freq", "y", "x"))
    plain = xr.DataArray(data, dims=("freq", "y", "x"))
    for op, f in MAPS[name].items():
        for red in (
            lambda a: a.sum("freq"),
            lambda a: a.max(("y", "x")),
            lambda a: a.std("freq"),
            lambda a: a.where(a > 1.0).mean("freq"),
        ):
            got = _quiet(lambda: red(f(lazy)).compute())  # noqa: B023
            want = _quiet(lambda: red(f(plain)))  # noqa: B023
            np.testing.assert_allclose(got.values, want.values, rtol=2e-6, atol=1e-5, err_msg=op)


def test_one_pass_std_after_scaling(case, monkeypatch):
    x, data, _ = case
    calls = []
    moments = kernels.moments

    def counted(*args, **kwargs):
        calls.append(1)
        return moments(*args, **kwargs)

    monkeypatch.setattr(kernels, "moments", counted)
    got = _quiet(lambda: np.nanstd(-x, axis=0).compute())
    np.testing.assert_allclose(got, _quiet(np.nanstd, -data, 0), rtol=2e-6, atol=1e-5)
    assert len(calls) == x.numblocks[0]


def test_operators_route_like_numpy(case):
    x, data, _ = case
    for op in (operator.mul, operator.add, operator.sub, operator.truediv):
        for c in (2.0, 0.5, 3):
            np.testing.assert_array_equal(
                _quiet(lambda: op(x, c).compute()),  # noqa: B023
                _quiet(op, data, c),
            )
            np.testing.assert_array_equal(
                _quiet(lambda: op(c, x).compute()),  # noqa: B023
                _quiet(op, c, data),
            )


# -- the spec itself, value by value ---------------------------------------------------------

FLOAT32_SPECIALS = np.array(
    [0.0, -0.0, 1.0, -1.0, 1e-45, 1.5e-38, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan],
    np.float32,
)


def _swapped(values, spec):
    stored = np.asarray(values, dtype=spec.stored)
    return stored.view(stored.dtype.newbyteorder("=")).view(f"u{spec.itemsize}")


OPS = {
    "mul": (np.multiply, True),
    "rmul": (np.multiply, False),
    "add": (np.add, True),
    "radd": (np.add, False),
    "sub": (np.subtract, True),
    "rsub": (np.subtract, False),
    "div": (np.true_divide, True),
}


def _apply(ufunc, first, a, c):
    with np.errstate(all="ignore"):
        return ufunc(a, c) if first else ufunc(c, a)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=40
    ),
    c=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30)
    | st.sampled_from([0.5, -2.0, 0.25, 8.0, 3, -1]),
    d=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30),
    op=st.sampled_from(list(OPS)),
    then=st.sampled_from([None, *OPS]),
    bitpix=st.sampled_from([-32, -64]),
)
# a product that underflowed does not grow back exactly (x * 0.5 * 2 is not x), and an
# offset that cancels a huge value cannot be scaled with it ((x - 3e38) * 2 is not x*2 - 6e38)
@example(values=[1e-45], c=0.5, d=2.0, op="mul", then="mul", bitpix=-32)
@example(values=[3e38], c=-3e38, d=2.0, op="add", then="mul", bitpix=-32)
def test_raw_float_maps_decode_as_numpy_computes(values, c, d, op, then, bitpix):
    spec = parse_decode_spec(bitpix)[0]
    a = np.concatenate([np.asarray(values, spec.physical), FLOAT32_SPECIALS.astype(spec.physical)])
    u = _swapped(a, spec)
    steps = [(op, c)] + ([(then, d)] if then else [])
    want = a
    for name, k in steps:
        ufunc, first = OPS[name]
        if spec is not None:
            spec = affine_spec(spec, ufunc, k, first)
        want = _apply(ufunc, first, want, k)
    if spec is None:
        return  # declined: the caller decodes and numpy computes, nothing to compare
    with np.errstate(all="ignore"):
        got = kernels.decode(u, spec)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=200, deadline=None)
@given(
    stored=st.lists(st.integers(-32768, 32767), min_size=1, max_size=40),
    bscale=st.floats(min_value=1e-6, max_value=1e6) | st.sampled_from([0.5, 1.0, -0.25]),
    bzero=st.just(0.0) | st.floats(1e-3, 1e6) | st.floats(-1e6, -1e-3),
    k=st.integers(-8, 8),
    sign=st.sampled_from([1.0, -1.0]),
    op=st.sampled_from(["mul", "div", "neg", "rsub", "add"]),
)
def test_scaled_integer_maps_decode_as_numpy_computes(stored, bscale, bzero, k, sign, op):
    spec = parse_decode_spec(16, bscale, bzero, -32768)[0]
    raw = np.asarray(stored, np.int16)
    u = _swapped(raw, spec)
    phys = kernels.decode(u, spec)
    c = sign * 2.0**k
    if op == "neg":
        new, want = affine_spec(spec, np.negative, None, True), -phys
    else:
        ufunc, first = OPS[op]
        new, want = affine_spec(spec, ufunc, c, first), _apply(ufunc, first, phys, c)
    if op in ("add", "rsub") and bzero != 0.0:
        assert new is None  # a second rounded constant: not the decoder's map
        return
    assert new is not None
    with np.errstate(all="ignore"):
        got = kernels.decode(u, new)
    np.testing.assert_array_equal(got, want)


def test_specs_declined():
    f32 = parse_decode_spec(-32)[0]
    i16 = parse_decode_spec(16)[0]
    u16 = parse_decode_spec(16, 1, 32768)[0]
    scaled = parse_decode_spec(16, 0.1, 5.0)[0]
    bad = parse_decode_spec(16, 0.0, 5.0)[0]
    widened = parse_decode_spec(-32)[0].__class__(-32, np.dtype(np.float64))
    assert affine_spec(i16, np.multiply, 2.0, True) is None  # integer physical values
    assert affine_spec(u16, np.add, 1.0, True) is None
    assert affine_spec(bad, np.negative, None, True) is None  # cannot decode at all
    assert affine_spec(widened, np.multiply, 2.0, True) is None  # float64 maths of float32
    assert affine_spec(scaled, np.multiply, 0.3, True) is None  # a third rounding
    assert affine_spec(scaled, np.add, 1.0, True) is None
    assert affine_spec(f32, np.multiply, np.float64(2.0), True) is None  # float64 result
    assert affine_spec(f32, np.multiply, 1e39, True) is None  # no float32 holds it
    assert affine_spec(f32, np.multiply, np.nan, True) is None
    assert affine_spec(f32, np.multiply, True, True) is None
    assert affine_spec(f32, np.multiply, 1 + 2j, True) is None
    assert affine_spec(f32, np.true_divide, 2.0, False) is None  # 2 / x
    assert affine_spec(f32, np.power, 2.0, True) is None
    assert affine_spec(f32, np.multiply, 0.1, True).bscale == 0.1
    ok = affine_spec(affine_spec(f32, np.multiply, 0.1, True), np.add, 2.0, True)
    assert (ok.mode, ok.bscale, ok.bzero) == ("scaled", 0.1, 2.0)
    assert affine_spec(scaled, np.true_divide, 4, True).bscale == pytest.approx(0.025)


# -- squares: x ** 2 before a sum or mean (a noise rms) ----------------------------------------

SQUARES = {
    "pow-2": lambda x: x**2,
    "pow-2.0": lambda x: x**2.0,
    "times-itself": lambda x: x * x,
    "np-square": np.square,
    "neg-then-square": lambda x: (-x) ** 2,
}
SQUARE_REDUCTIONS = {
    "sum": lambda y: y.sum(),
    "nansum-axis0": lambda y: np.nansum(y, axis=0),
    "mean-axis12": lambda y: y.mean(axis=(1, 2)),
    "nanmean-axis0": lambda y: np.nanmean(y, axis=0),
}


@pytest.mark.parametrize("red", list(SQUARE_REDUCTIONS))
def test_sums_and_means_of_squares_are_fused(case, no_decode, red):
    x, data, _ = case
    reduce = SQUARE_REDUCTIONS[red]
    for op, f in SQUARES.items():
        got = _quiet(lambda: reduce(f(x)).compute())  # noqa: B023
        want = _quiet(reduce, f(data))
        assert np.asarray(got).dtype == np.asarray(want).dtype, op
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5, err_msg=op)


def test_xarray_rms_and_sums_of_squares_are_fused(case, no_decode):
    x, data, _ = case
    lazy = xr.DataArray(x, dims=("freq", "y", "x"))
    plain = xr.DataArray(data, dims=("freq", "y", "x"))
    for red in (
        lambda a: np.sqrt((a**2).mean(("y", "x"))),
        lambda a: (a**2).sum("freq"),
        lambda a: (a**2).sum("freq", min_count=3),
        lambda a: (a**2).count(),
    ):
        got = _quiet(lambda: red(lazy).compute())  # noqa: B023
        np.testing.assert_allclose(got.values, _quiet(red, plain).values, rtol=2e-6, atol=1e-5)


def test_squares_are_numpys_values(case):
    x, data, _ = case
    for op, f in {
        **SQUARES,
        "cube": lambda x: x**3,
        "pow-f64": lambda x: x ** np.float64(2),
    }.items():
        got = _quiet(lambda: f(x).compute())  # noqa: B023
        want = _quiet(f, data)
        assert got.dtype == want.dtype, op
        np.testing.assert_array_equal(got, want, err_msg=op)
        got = _quiet(lambda: f(x).max(axis=0).compute())  # noqa: B023  (decoded: numpy's)
        np.testing.assert_array_equal(got, _quiet(lambda: f(data).max(axis=0)), err_msg=op)  # noqa: B023


def test_which_squares_stay_lazy():
    spec = parse_decode_spec(-32)[0]
    chunk = StoredChunk(np.zeros((2, 3), np.uint32), spec)
    assert all(isinstance(f(chunk), Deviation) for f in SQUARES.values())
    for f in (lambda x: x**3, lambda x: x ** np.float64(2), lambda x: x**True, lambda x: 2**x):
        assert not isinstance(f(chunk), Deviation)
    ints = StoredChunk(np.zeros((2, 3), np.uint16), parse_decode_spec(16)[0])
    assert not isinstance(ints**2, Deviation)  # integer squares wrap around: numpy's
    # the chunk's NaN mask serves the square only about a finite scalar
    assert isinstance(np.isnan(chunk**2), NanMask)
    assert not isinstance(np.isnan(Deviation(chunk, np.float32(np.nan), 2)), NanMask)
    assert not isinstance(np.isnan(Deviation(chunk, np.zeros((2, 1), np.float32), 2)), NanMask)
