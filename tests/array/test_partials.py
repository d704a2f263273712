"""Sum partials are added by dask's combine step, never concatenated, and never leak out."""

from __future__ import annotations

import pickle
import warnings

import dask.array as da
import numpy as np
import pytest
from dask.array.core import _concatenate2

from dfits.array import partials, tiles
from dfits.array.concat import concatenate_partials
from dfits.array.dispatch import register_dask_hooks
from dfits.array.partials import PartialStack, SumPartial, as_partial
from tests.array.helpers import float32_cube

register_dask_hooks()


def _parts(rng, n=4, shape=(1, 6, 5), dtype=np.float32):
    return [rng.standard_normal(shape).astype(dtype).view(SumPartial) for _ in range(n)]


def test_sum_partial_results_are_plain_arrays():
    p = np.arange(12.0).reshape(1, 3, 4).view(SumPartial)
    for out in (p + 1, np.sqrt(p), p.sum(axis=1), np.concatenate([p, p]), p.copy()):
        assert type(out) is np.ndarray
    assert type(pickle.loads(pickle.dumps(p))) is np.ndarray
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(p)), p.view(np.ndarray))
    out = np.empty((1, 3, 4))
    np.add(p, p, out=out)
    np.testing.assert_array_equal(out, 2 * np.arange(12.0).reshape(1, 3, 4))


def test_elementwise_steps_among_partials_stay_partials(monkeypatch):
    # dask's moment combine returns ``Ms.sum() + sum(ns * d**2)`` stacked: a partial, so
    # that the next level adds it instead of concatenating it
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    p = np.arange(12.0).reshape(1, 3, 4).view(SumPartial)
    q = (p * 2 + 1).view(SumPartial)
    for out in (p + q, p / q, p / 2, np.sqrt(p), np.divide(p, q, dtype=np.float32)):
        assert type(out) is SumPartial  # a lazy quotient is for dask's moment_chunk only
    for out in (p + np.ones((1, 3, 4)), p + np.ones(4), p.sum(axis=1), p.copy()):
        assert type(out) is np.ndarray
    assert not isinstance(np.sum(p), np.ndarray)
    np.testing.assert_array_equal(p + q, 3 * np.arange(12.0).reshape(1, 3, 4) + 1)


def test_stacking_one_partial_is_a_view(monkeypatch):
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    p = np.arange(12.0).reshape(1, 3, 4).view(SumPartial)
    for call in (lambda: np.stack([p], axis=-1), lambda: np.stack([p], -1)):
        m = call()
        assert type(m) is SumPartial
        assert m.shape == (1, 3, 4, 1)
        assert np.shares_memory(m, p)
        np.testing.assert_array_equal(m[..., 0], p)
    two = np.stack([p, p], axis=0)
    assert type(two) is SumPartial
    assert not np.shares_memory(two, p)
    np.testing.assert_array_equal(two, np.stack([p.view(np.ndarray)] * 2))


def test_constant_counts_stay_broadcasts(monkeypatch):
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    counts = [as_partial(np.broadcast_to(np.float64(k), (1, 300, 200))) for k in (3, 4, 5)]
    # dask's moment_chunk casts its count to int64: a broadcast again
    n = counts[0].astype(np.int64)
    assert type(n) is SumPartial
    assert n.dtype == np.int64
    assert not any(n.strides)
    np.testing.assert_array_equal(n, 3)
    stack = PartialStack(counts, 0)
    total = np.sum(stack, axis=0, keepdims=True)
    assert total.shape == (1, 300, 200)
    assert not any(total.strides)
    np.testing.assert_array_equal(total, 12.0)
    # the last step (no keepdims) hands out a real, writable array
    flat = np.sum(stack, axis=0)
    assert type(flat) is np.ndarray
    assert flat.flags.writeable
    np.testing.assert_array_equal(flat, 12.0)
    # anything that is not one value everywhere is cast as numpy does
    real = np.arange(6.0).reshape(1, 2, 3).view(SumPartial).astype(np.int64)
    assert real.flags.writeable
    np.testing.assert_array_equal(real, np.arange(6).reshape(1, 2, 3))


def test_as_partial_marks_only_large_arrays(monkeypatch):
    small = np.zeros((1, 4))
    assert type(as_partial(small)) is np.ndarray
    big = np.zeros((1, partials.STACK_MIN_BYTES // 8))
    assert type(as_partial(big)) is SumPartial
    assert as_partial(3.0) == 3.0
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    assert type(as_partial(small)) is SumPartial
    assert type(as_partial(np.float64(1.0))) is np.float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("want", [None, np.float32, np.float64])
def test_stack_sum_equals_numpy_over_the_concatenation(dtype, keepdims, want):
    parts = _parts(np.random.default_rng(1), dtype=dtype)
    stack = PartialStack(parts, 0)
    dense = np.concatenate([p.view(np.ndarray) for p in parts])
    assert stack.shape == dense.shape
    assert stack.dtype == dense.dtype
    got = np.sum(stack, axis=(0,), keepdims=keepdims, dtype=want)
    ref = np.sum(dense, axis=(0,), keepdims=keepdims, dtype=want)
    assert type(got) is np.ndarray
    assert got.dtype == ref.dtype
    assert got.shape == ref.shape
    # numpy also adds the rows of an outer-axis reduction one after another: same rounding
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(stack.sum(axis=0, keepdims=keepdims, dtype=want), ref)


def test_stack_sum_leaves_its_inputs_alone():
    parts = _parts(np.random.default_rng(2))
    before = [p.copy() for p in parts]
    np.sum(PartialStack(parts, 0), axis=0)
    for p, b in zip(parts, before, strict=True):
        np.testing.assert_array_equal(p, b)


def test_nested_stacks_over_several_axes():
    rng = np.random.default_rng(3)
    grid = [[rng.standard_normal((1, 5, 1)).view(SumPartial) for _ in range(3)] for _ in range(2)]
    stack = PartialStack([PartialStack(row, 2) for row in grid], 0)
    dense = np.concatenate([np.concatenate(row, axis=2) for row in grid], axis=0)
    assert stack.axes == {0, 2}
    assert stack.shape == dense.shape == (2, 5, 3)
    np.testing.assert_allclose(np.sum(stack, axis=(0, 2)), dense.sum(axis=(0, 2)), rtol=1e-14)
    np.testing.assert_allclose(
        np.sum(stack, axis=(0, 2), keepdims=True), dense.sum(axis=(0, 2), keepdims=True)
    )


def test_nansum_of_stack_skips_nan_partials():
    parts = _parts(np.random.default_rng(4), dtype=np.float64)
    parts[1][0, 2, 3] = np.nan
    parts[2][0, 2, 3] = np.inf
    parts[3][0, 2, 3] = -np.inf  # inf - inf: NaN in a plain sum, skipped by none
    stack = PartialStack(parts, 0)
    dense = np.concatenate([p.view(np.ndarray) for p in parts])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.nansum(stack, axis=0), np.nansum(dense, axis=0))
        np.testing.assert_array_equal(np.sum(stack, axis=0), np.sum(dense, axis=0))
    assert np.isnan(parts[1][0, 2, 3])  # the NaN was skipped in a copy, not overwritten


def test_anything_but_the_matching_sum_concatenates():
    parts = _parts(np.random.default_rng(5))
    stack = PartialStack(parts, 0)
    dense = np.concatenate([p.view(np.ndarray) for p in parts])
    np.testing.assert_array_equal(np.asarray(stack), dense)
    np.testing.assert_array_equal(np.sum(stack, axis=1), dense.sum(axis=1))  # other axis
    np.testing.assert_array_equal(np.sum(stack), dense.sum())  # all axes
    np.testing.assert_array_equal(np.mean(stack, axis=0), dense.mean(axis=0))
    np.testing.assert_array_equal(stack * 2, dense * 2)
    np.testing.assert_array_equal(stack.astype(np.float64), dense.astype(np.float64))
    out = np.empty((1, 6, 5), np.float32)
    np.sum(stack, axis=0, keepdims=True, out=out)
    np.testing.assert_array_equal(out, dense.sum(axis=0, keepdims=True))
    assert type(np.sum(stack, axis=0, where=np.ones((4, 6, 5), bool))) is np.ndarray


def test_elementwise_work_on_stacks_is_done_part_by_part():
    rng = np.random.default_rng(8)
    a_parts, b_parts = _parts(rng, dtype=np.float64), _parts(rng, dtype=np.float64)
    a, b = PartialStack(a_parts, 0), PartialStack(b_parts, 0)
    da_, db = np.asarray(a), np.asarray(b)
    row = rng.standard_normal((1, 6, 5))
    for got, want in (
        (np.divide(a, b, dtype=np.float32), np.divide(da_, db, dtype=np.float32)),
        (a - row, da_ - row),
        (a**2 * b, da_**2 * db),
        (a == a_parts[1][0, 0, 0], da_ == a_parts[1][0, 0, 0]),
        (np.where(a > 0, 0, b), np.where(da_ > 0, 0, db)),
        (a.astype(np.float32), da_.astype(np.float32)),
    ):
        assert isinstance(got, PartialStack)
        assert got.shape == want.shape
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
    m = PartialStack([p.view(np.ndarray)[..., None].repeat(2, -1) for p in a_parts], 0)
    got = m[..., 1]
    assert isinstance(got, PartialStack)
    np.testing.assert_array_equal(np.asarray(got), da_)
    np.testing.assert_array_equal(np.sum(got, axis=0), da_.sum(axis=0))


@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("want", [None, np.float32])
def test_sums_of_steps_are_evaluated_by_tile_and_equal_the_eager_steps(monkeypatch, skipna, want):
    # dask's moment combine: Σ ns * (totals / ns - mu)², with tiles smaller than a part
    monkeypatch.setattr(tiles, "TILE_ITEMS", 7)
    rng = np.random.default_rng(10)
    totals_parts = _parts(rng, n=3, dtype=np.float64)
    totals_parts[1][0, 3, 2] = np.nan
    ns_parts = [np.full((1, 6, 5), k, np.int64).view(SumPartial) for k in (2, 3, 4)]
    totals, ns = PartialStack(totals_parts, 0), PartialStack(ns_parts, 0)
    mu = rng.standard_normal((1, 6, 5))
    term = ns * (np.divide(totals, ns, dtype=np.float64) - mu) ** 2
    assert isinstance(term, PartialStack)
    assert all(isinstance(p, tiles.LazyPart) for p in term.parts)
    dense_t, dense_n = np.asarray(totals), np.asarray(ns)
    eager = dense_n * (np.divide(dense_t, dense_n, dtype=np.float64) - mu) ** 2
    func = np.nansum if skipna else np.sum
    evaluated = []
    real = tiles.LazyPart.evaluate

    def spy(self, index=None):
        evaluated.append(index)
        return real(self, index)

    monkeypatch.setattr(tiles.LazyPart, "evaluate", spy)
    for keepdims in (True, False):
        got = func(term, axis=0, keepdims=keepdims, dtype=want)
        ref = func(eager, axis=0, keepdims=keepdims, dtype=want)
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    assert evaluated
    assert None not in evaluated  # never a whole part at once
    # anything else still sees the concatenation of the evaluated parts
    np.testing.assert_array_equal(np.asarray(term), eager)
    np.testing.assert_array_equal(np.sum(term, axis=1), eager.sum(axis=1))


def test_elementwise_work_that_would_differ_concatenates():
    rng = np.random.default_rng(9)
    a = PartialStack(_parts(rng, dtype=np.float64), 0)
    dense = np.asarray(a)
    full = rng.standard_normal((4, 6, 5))  # varies along the stacked axis: no part-wise
    for got, want in (
        (a + full, dense + full),
        (np.where(full > 0, a, 0), np.where(full > 0, dense, 0)),
    ):
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, want)
    other = PartialStack([np.asarray(dense[:2]), np.asarray(dense[2:])], 0)  # split otherwise
    assert type(a * other) is np.ndarray
    np.testing.assert_array_equal(a * other, dense * dense)
    np.testing.assert_array_equal(a[0], dense[0])  # indexing a stacked axis
    assert type(a[0]) is np.ndarray


def test_hook_concatenates_unless_a_sum_follows():
    parts = _parts(np.random.default_rng(6))
    # called directly (not from dask's _concatenate2 in a summing caller): a real concatenation
    direct = concatenate_partials(parts, axis=0)
    assert type(direct) is np.ndarray
    assert direct.shape == (4, 6, 5)
    # dask's _concatenate2 outside a reduction (e.g. concatenate3 of map_blocks results)
    assert type(_concatenate2(parts, axes=[0])) is np.ndarray


@pytest.fixture
def cube(tmp_path, monkeypatch):
    monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    return float32_cube(tmp_path, (30, 8, 9), (3, 8, 9), (4, 2, 3), seed=7)


def test_dask_combine_adds_partials_without_concatenating(cube, monkeypatch):
    x, data = cube

    def refuse(self):
        raise AssertionError("partials were concatenated")

    monkeypatch.setattr(PartialStack, "dense", refuse)
    added = []
    real = partials._stack_sum

    def spy(stack, *args):
        added.append(len(stack.leaves()))
        return real(stack, *args)

    monkeypatch.setattr(partials, "_stack_sum", spy)
    monkeypatch.setattr(tiles, "TILE_ITEMS", 5)
    whole = []
    evaluate = tiles.LazyPart.evaluate

    def by_tile(self, index=None):
        if index is None:
            whole.append(self)
        return evaluate(self, index)

    monkeypatch.setattr(tiles.LazyPart, "evaluate", by_tile)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for lazy, want in (
            (x.sum(axis=0), np.sum(data.astype(float), axis=0)),
            (da.nansum(x, axis=0), np.nansum(data.astype(float), axis=0)),
            (x.mean(axis=0), np.mean(data.astype(float), axis=0)),
            (da.nanmean(x, axis=0, split_every=3), np.nanmean(data.astype(float), axis=0)),
            (x.sum(axis=(0, 2), keepdims=True), data.astype(float).sum(axis=(0, 2), keepdims=1)),
            # dask's moment combine: divide, astype, subtract, power, where, [..., k], sums
            (x.std(axis=0), np.std(data.astype(float), axis=0)),
            (da.nanvar(x, axis=0, ddof=1), np.nanvar(data.astype(float), axis=0, ddof=1)),
        ):
            added.clear()
            got = lazy.compute()
            assert added, "dask's combine did not reach the stack"
            assert not whole, "a combine step filled a whole part"
            assert type(got) is np.ndarray
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_higher_moments_materialise_the_lazy_centre(cube):
    # order 3: the chunk's Σ(x - u)³ is no squared sum, so its lazy centre u = total / n is
    # evaluated whole; dask's order-3 combine concatenates (values only here)
    x, data = cube
    values = data.astype(float)
    want = np.mean((values - values.mean(axis=0)) ** 3, axis=0)
    got = da.moment(x, 3, axis=0).compute()
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_user_blocks_of_partials_come_back_plain(cube):
    x, data = cube
    keep = x.map_blocks(lambda b: np.sum(b, axis=0, keepdims=True), chunks=(1, 8, 9))
    got = keep.compute()
    assert type(got) is np.ndarray
    assert got.shape == (10, 8, 9)
    one = x[:3].map_blocks(lambda b: np.sum(b, axis=0, keepdims=True), chunks=(1, 8, 9))
    got_one = one.compute()
    assert type(got_one) is np.ndarray
    np.testing.assert_allclose(got_one[0], data[:3].astype(float).sum(axis=0), rtol=1e-6)
    # the moment (var/std) combine does arithmetic on the concatenation: it gets a real one
    np.testing.assert_allclose(
        x.std(axis=0).compute(), np.std(data.astype(float), axis=0), rtol=1e-5, equal_nan=True
    )


def test_constant_counts_take_no_memory(cube):
    # dask's mean asks numel for a count map per chunk; when every count is the same the
    # answer is a broadcast of one value, not a fresh map (a 4 MiB one per moment-map chunk)
    from dask.array.reductions import nannumel, numel

    from dfits.array.build import ImageBlock

    x, data = cube
    block = next(v for v in x.dask.values() if isinstance(v, ImageBlock))
    chunk = block[3:6, :, :]
    for keepdims, shape in ((True, (1, 8, 9)), (False, (8, 9))):
        n = numel(chunk, axis=(0,), keepdims=keepdims, dtype=np.float32)
        assert n.shape == shape
        assert n.dtype == np.float32
        assert 0 in n.strides
        np.testing.assert_array_equal(n, 3)
    # NaN-aware counts are real maps: one NaN at [4, 2, 3]
    m = nannumel(chunk, axis=(0,), keepdims=False, dtype=np.float64)
    assert 0 not in m.strides
    want = np.full((8, 9), 3.0)
    want[2, 3] = 2
    np.testing.assert_array_equal(m, want)
    np.testing.assert_allclose(
        x.mean(axis=0).compute(), data.astype(float).mean(axis=0), rtol=1e-5, equal_nan=True
    )


def test_nan_aware_counts_reach_moment_chunk_without_copies(cube):
    # nanvar's chunk step asks nannumel for a count map and casts it to int64: it gets the
    # kernel's int64 counts read-only, and the cast is the same array, not two fresh maps
    from dask.array.reductions import moment_chunk, nannumel

    from dfits.array.build import ImageBlock

    x, data = cube
    block = next(v for v in x.dask.values() if isinstance(v, ImageBlock))
    chunk = block[3:6, :, :]  # holds the NaN at [4, 2, 3]
    got = moment_chunk(chunk, sum=np.nansum, numel=nannumel, axis=(0,), keepdims=True)
    n = got["n"]
    assert n.dtype == np.int64
    assert not n.flags.writeable
    want_n = np.full((1, 8, 9), 3)
    want_n[0, 2, 3] = 2
    np.testing.assert_array_equal(n, want_n)
    values = data[3:6].astype(np.float64)
    np.testing.assert_allclose(got["total"], np.nansum(values, axis=0, keepdims=True), rtol=1e-6)
    m2 = np.nanvar(values, axis=0, keepdims=True) * want_n
    np.testing.assert_allclose(got["M"][..., 0], m2, rtol=1e-5, atol=1e-6)
    # outside moment_chunk, nannumel keeps dask's float64 counts
    assert nannumel(chunk, axis=(0,), keepdims=True).dtype == np.float64
