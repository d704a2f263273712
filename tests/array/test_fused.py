"""Sums of recorded steps run compiled, bit for bit what numpy's steps give, or fall back."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest

from dfits.array import fused, partials, tiles
from dfits.array.dispatch import register_dask_hooks
from dfits.array.fused import fused_sum
from dfits.array.partials import PartialStack, SumPartial
from tests.array.helpers import block_array, write_image

register_dask_hooks()


def _stack(parts):
    return PartialStack([np.asarray(p).view(SumPartial) for p in parts], 0)


@pytest.fixture
def fused_calls(monkeypatch):
    """Whether each stack sum was answered by the compiled path (True) or not (False)."""
    calls: list[bool] = []
    real = fused.fused_sum

    def spy(*args):
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(partials, "fused_sum", spy)
    return calls


def _moment_term(rng, totals_dtype, mu_dtype, cast, broadcast_ns, where):
    """dask's combine (or, with ``where``, aggregate) term over a 4-part stack."""
    shape = (1, 7, 9)
    totals = [rng.standard_normal(shape).astype(totals_dtype) for _ in range(4)]
    totals[1][0, 2, 3] = np.nan
    totals[2][0, 4, 4] = np.inf
    if broadcast_ns:
        ns = [np.broadcast_to(np.int64(k), shape) for k in (3, 0, 2, 5)]
    else:
        ns = [rng.integers(0, 4, shape).astype(np.int64) for _ in range(4)]
    stack_t, stack_n = _stack(totals), _stack(ns)
    mu = rng.standard_normal(shape).astype(mu_dtype)
    with np.errstate(all="ignore"):
        inner = np.divide(stack_t, stack_n).astype(cast) - mu  # dask's divide(..., dtype)
        if where:
            inner = np.where(stack_n == 0, 0, inner)
        return stack_n * inner**2


@pytest.mark.parametrize("where", [False, True])
@pytest.mark.parametrize("broadcast_ns", [False, True])
@pytest.mark.parametrize(
    ("totals_dtype", "mu_dtype", "cast"),
    [
        (np.float32, np.float64, np.float64),
        (np.float32, np.float32, np.float32),
        (np.float64, np.float64, np.float64),
        (np.float32, np.float64, np.float32),
    ],
)
@pytest.mark.parametrize("skipna", [False, True])
def test_fused_sums_equal_the_tile_by_tile_steps(
    monkeypatch, fused_calls, where, broadcast_ns, totals_dtype, mu_dtype, cast, skipna
):
    rng = np.random.default_rng(17)
    term = _moment_term(rng, totals_dtype, mu_dtype, cast, broadcast_ns, where)
    assert all(isinstance(p, tiles.LazyPart) for p in term.parts)
    func = np.nansum if skipna else np.sum
    calls = fused_calls
    with np.errstate(all="ignore"):
        got = func(term, axis=0, keepdims=True)
        monkeypatch.setattr(partials, "FUSE", False)
        monkeypatch.setattr(tiles, "TILE_ITEMS", 5)  # several tiles a part
        want = func(term, axis=0, keepdims=True)
    assert calls == [True]  # the compiled path answered; the second sum did not ask it
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    real_values = ~np.isnan(want)  # a NaN's sign bit is the hardware's, not numpy's
    assert np.array_equal(np.signbit(got[real_values]), np.signbit(want[real_values]))
    with np.errstate(all="ignore"):
        dense = np.asarray(term)
    np.testing.assert_array_equal(want, func(dense, axis=0, keepdims=True))


def _lazy_stack(func, *stacks):
    return func(*stacks)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda a, b: np.sqrt(a) * b, id="a function outside the grammar"),
        pytest.param(lambda a, b: a**3 + b, id="a power other than 2"),
        pytest.param(lambda a, b: np.divide(a, b, dtype=np.float32), id="ufunc keywords"),
        pytest.param(lambda a, b: a.astype(np.int64) + b, id="float to integer cast"),
        pytest.param(lambda a, b: (a + 1j) * b, id="complex values"),
    ],
)
def test_steps_outside_the_grammar_fall_back_to_tiles(make):
    rng = np.random.default_rng(2)
    a = _stack([rng.random((1, 5, 6)) + 0.5 for _ in range(3)])
    b = _stack([rng.random((1, 5, 6)) for _ in range(3)])
    term = make(a, b)
    leaves = term.leaves()
    assert any(isinstance(leaf, tiles.LazyPart) for leaf in leaves)
    dtype = np.sum(np.zeros(1, term.dtype)).dtype
    assert fused_sum(leaves, leaves[0].shape, dtype, False) is None
    np.testing.assert_array_equal(np.sum(term, axis=0), np.sum(np.asarray(term), axis=0))


def test_parts_of_different_steps_or_shapes_fall_back():
    rng = np.random.default_rng(3)
    x = [rng.random((1, 4, 5)) for _ in range(2)]
    one = tiles.LazyPart(np.subtract.__call__, [x[0], 1.0], (1, 4, 5))
    import functools

    sub = tiles.LazyPart(functools.partial(np.subtract), [x[0], 1.0], (1, 4, 5))
    add = tiles.LazyPart(functools.partial(np.add), [x[1], 1.0], (1, 4, 5))
    dt = np.dtype(np.float64)
    assert fused_sum([sub, add], (1, 4, 5), dt, False) is None  # not the same chain
    assert fused_sum([one, one], (1, 4, 5), dt, False) is None  # not a recognised callable
    wide = tiles.LazyPart(functools.partial(np.add), [rng.random((2, 3, 4, 5)), 1.0], (2, 3, 4, 5))
    wide_view = tiles.LazyPart(
        functools.partial(np.add), [rng.random((2, 3, 5, 4)).swapaxes(2, 3), 1.0], (2, 3, 4, 5)
    )
    # 3+ axes that are not one run in memory cannot be laid out in two dimensions
    assert fused_sum([wide_view, wide_view], (2, 3, 4, 5), dt, False) is None
    got = fused_sum([wide, wide], (2, 3, 4, 5), dt, False)  # C-ordered: they can
    np.testing.assert_array_equal(got, (wide.args[0] + 1.0) * 2)


@pytest.fixture
def cubes(tmp_path, monkeypatch):
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    rng = np.random.default_rng(8)
    out = {}
    f4 = rng.standard_normal((24, 10, 12)).astype(np.float32) * 3 + 7
    f4[2, 3, 4] = np.nan
    f4[:, 5, 6] = np.nan
    f4[7, 8, 9] = np.inf
    path = str(tmp_path / "f4.fits")
    out["f4"] = block_array(path, write_image(path, f4), f4.shape, -32, chunks=(3, 10, 12))[0]
    i2 = rng.integers(-500, 500, (24, 10, 12)).astype(np.int16)
    i2[1, 2, 3] = -32768
    i2[:, 4, 4] = -32768
    path = str(tmp_path / "i2.fits")
    offset = write_image(path, i2, 0.5, 10.0, -32768)
    out["i2"] = block_array(path, offset, i2.shape, 16, 0.5, 10.0, -32768, chunks=(3, 10, 12))[0]
    f8 = rng.standard_normal((24, 10, 12)) * 1e3 + 1e6
    path = str(tmp_path / "f8.fits")
    out["f8"] = block_array(path, write_image(path, f8), f8.shape, -64, chunks=(5, 4, 12))[0]
    return out


@pytest.mark.parametrize("name", ["f4", "i2", "f8"])
@pytest.mark.parametrize("func", ["var", "std", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [0, 1, (0, 2)])
def test_dask_variances_through_the_compiled_combine_equal_the_tile_steps(
    cubes, monkeypatch, fused_calls, name, func, axis
):
    x = cubes[name]
    used = fused_calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = getattr(da, func)(x, axis=axis, ddof=1, split_every=3).compute()
        assert any(used)
        monkeypatch.setattr(partials, "FUSE", False)
        want = getattr(da, func)(x, axis=axis, ddof=1, split_every=3).compute()
        ref = getattr(np, func)(x.compute().astype(np.float64), axis=axis, ddof=1)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)


def test_combine_steps_fill_no_map_for_mu_and_add_into_their_own_sums(cubes, monkeypatch):
    # mu = divide(total, n) stays a recorded quotient inside the combine and aggregate, and
    # Ms.sum() + sum(ns * d**2) lands in one of the two fresh sums; the result is plain
    x = cubes["f4"]
    lazy, inplace = [], []
    real_astype, real_scratch = tiles.LazyPart.astype, partials._scratch_for_sum

    def astype_spy(self, dtype, **kw):  # numpy_compat's divide casts dask's lazy mu
        lazy.append(True)
        return real_astype(self, dtype, **kw)

    def scratch_spy(inputs):
        out = real_scratch(inputs)
        inplace.append(out is not None)
        return out

    monkeypatch.setattr(tiles.LazyPart, "astype", astype_spy)
    monkeypatch.setattr(partials, "_scratch_for_sum", scratch_spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = da.nanvar(x, axis=0, split_every=3).compute()
        want = np.nanvar(x.compute().astype(np.float64), axis=0)
    assert type(got) is np.ndarray
    assert any(lazy)
    assert any(inplace)
    np.testing.assert_allclose(got, want, rtol=2e-5)


def test_sums_of_partials_elsewhere_are_fresh_arrays(monkeypatch):
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    rng = np.random.default_rng(4)
    parts = [rng.random((1, 3, 4)).view(SumPartial) for _ in range(3)]
    a = np.sum(_stack(parts), axis=0, keepdims=True)  # a fresh stack sum, marked
    b = np.sum(_stack(parts[::-1]), axis=0, keepdims=True)
    before = np.array(a), np.array(b)
    c = a + b  # not dask's moment helper: neither input is written
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])
    np.testing.assert_array_equal(c, before[0] + before[1])
    q = np.divide(a, b)  # not dask's mu either: a real quotient
    assert isinstance(q, np.ndarray)
    np.testing.assert_array_equal(q, before[0] / before[1])
