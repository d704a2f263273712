"""Compiled sums of elementwise expressions against numpy's steps, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.kernels.elementwise import evaluate, sum_kernel

# dask's moment combine, Σ ns * (divide(totals, ns).astype(dt) - mu) ** 2, for float32 parts
COMBINE = (
    "binop", "*", "float64", ("arg", 0),
    ("square", "float64",
     ("binop", "-", "float64",
      ("cast", "float64", ("binop", "/", "float64", ("in", 1), ("arg", 0))), ("in", 2))),
)  # fmt: skip
# its aggregate: where(ns == 0, 0, inner) first, the quotient cast to float32
AGGREGATE = (
    "binop", "*", "float64", ("in", 0),
    ("square", "float64",
     ("where", "float64", ("binop", "==", "int64", ("in", 0), ("const", "int", "0")),
      ("const", "int", "0"),
      ("binop", "-", "float64",
       ("cast", "float32", ("binop", "/", "float64", ("in", 1), ("in", 0))), ("in", 2)))),
)  # fmt: skip
FLOAT32_STEPS = (
    "binop", "+", "float32",
    ("square", "float32", ("binop", "-", "float32", ("in", 0), ("const", "float", "0.5"))),
    ("binop", "*", "float32", ("in", 1), ("const", "float", "nan")),
)  # fmt: skip


def _specials(rng, shape, dtype):
    a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = np.inf
    flat[5::13] = -np.inf
    flat[1::17] = 0.0
    flat[2::19] = -0.0
    return a


def _run(expr, parts, value_dtype, acc_dtype, skipna):
    kernel = sum_kernel(expr, value_dtype, acc_dtype, skipna)
    acc = np.empty(next(np.shape(p) for p in parts[0] if np.ndim(p)), acc_dtype)
    for k, inputs in enumerate(parts):
        kernel(acc, k == 0, *inputs)
    return acc


def _oracle(expr, parts, acc_dtype, skipna):
    values = [np.asarray(evaluate(expr, list(inputs))) for inputs in parts]
    if skipna:
        values = [np.where(np.isnan(v), 0, v) if v.dtype.kind == "f" else v for v in values]
    if len(values) == 1:
        return values[0].astype(acc_dtype)
    acc = np.add(values[0], values[1], dtype=acc_dtype, casting="unsafe")
    for v in values[2:]:
        np.add(acc, v, out=acc, dtype=acc_dtype, casting="unsafe")
    return acc


def _same(got, want):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where numpy's is NaN
    real = ~np.isnan(want)  # a NaN's sign bit is the hardware's (0/0, 0*inf), not numpy's
    assert np.array_equal(np.signbit(got[real]), np.signbit(want[real]))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("nparts", [1, 2, 5])
def test_moment_combine_equals_numpys_steps(skipna, nparts):
    rng = np.random.default_rng(nparts)
    parts = []
    for k in range(nparts):
        ns = np.int64(k + 1)
        totals = _specials(rng, (6, 9), np.float32)
        mu = _specials(rng, (6, 9), np.float64)
        parts.append((ns, totals, mu))
    want = _oracle(COMBINE, parts, "float64", skipna)
    _same(_run(COMBINE, parts, "float64", "float64", skipna), want)


@pytest.mark.parametrize("acc_dtype", ["float32", "float64"])
def test_aggregate_with_zero_counts_and_broadcast_inputs(acc_dtype):
    rng = np.random.default_rng(3)
    parts = []
    for _ in range(3):
        ns = np.broadcast_to(rng.integers(0, 3, (1, 9)), (6, 9))  # zero strides, zeros too
        totals = _specials(rng, (6, 9), np.float32)
        mu = np.broadcast_to(_specials(rng, (6, 1), np.float64), (6, 9))
        parts.append((ns, totals, mu))
    want = _oracle(AGGREGATE, parts, acc_dtype, False)
    _same(_run(AGGREGATE, parts, "float64", acc_dtype, False), want)


def test_float32_steps_and_constants():
    rng = np.random.default_rng(4)
    parts = [(_specials(rng, (5, 7), np.float32), _specials(rng, (5, 7), np.float32))]
    parts.append(tuple(p[::-1] for p in parts[0]))  # non-contiguous views
    for skipna in (False, True):
        want = _oracle(FLOAT32_STEPS, parts, "float32", skipna)
        _same(_run(FLOAT32_STEPS, parts, "float32", "float32", skipna), want)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["int16", "int64", "uint8", "float32", "float64"]),
    st.sampled_from(["int32", "float32", "float64"]),
    st.sampled_from(["+", "-", "*", "/"]),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
)
def test_binary_steps_in_any_loop_dtype(in_dtype, loop, op, nparts, seed):
    # operands cast to the loop dtype, the step computed in it, as numpy's ufunc loops do
    if loop == "int32" and (op == "/" or in_dtype.startswith("float")):
        loop = "float64"  # float to integer casts are not in the grammar (NaN has no value)
    rng = np.random.default_rng(seed)
    expr = ("binop", op, loop, ("in", 0), ("cast", in_dtype, ("in", 1)))
    info = np.iinfo(in_dtype) if in_dtype[0] in "iu" else None

    def draw():
        if info is None:
            return _specials(rng, (3, 4), in_dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), (3, 4)).astype(in_dtype)

    parts = [(draw(), draw()) for _ in range(nparts)]
    acc = "float64" if loop != "int32" else "int64"
    with np.errstate(all="ignore"):
        want = _oracle(expr, parts, acc, False)
        got = _run(expr, parts, loop, acc, False)
    _same(got, want)


@pytest.mark.parametrize(
    "expr",
    [
        ("binop", "**", "float64", ("in", 0), ("in", 0)),
        ("cast", "complex128", ("in", 0)),
        ("const", "int", "__import__('os')"),
        ("binop", "+", "float64", ("in", 0), ("const", "float", "1.0; import os")),
        ("sqrt", "float64", ("in", 0)),
    ],
)
def test_outside_the_grammar_is_refused(expr):
    with pytest.raises(ValueError):
        sum_kernel(expr, "float64", "float64", False)


def test_one_compilation_per_expression():
    assert sum_kernel(COMBINE, "float64", "float64", False) is sum_kernel(
        COMBINE, "float64", "float64", False
    )
