"""Sum partials and their lazy stacks: a combine step's sum adds the parts; all else is numpy's."""

from __future__ import annotations

import pickle

import dask.array as da
import numpy as np
import pytest
from dask.array.core import _concatenate2

from dfits.array import reader
from dfits.stored import partials
from dfits.stored.partials import PartialStack, SumPartial, as_partial, concatenate_partials
from tests.array.helpers import float32_cube


def _parts(k: int, shape=(1, 4, 5), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).view(SumPartial) for _ in range(k)]


def test_a_stack_answers_the_sum_over_its_axis_and_numpy_otherwise():
    parts = _parts(3)
    dense = np.concatenate([p.view(np.ndarray) for p in parts], axis=0)
    stack = concatenate_partials(parts, axis=0)
    assert isinstance(stack, PartialStack)
    got = np.sum(stack, axis=0, keepdims=True)
    np.testing.assert_allclose(got, dense.sum(axis=0, keepdims=True), rtol=1e-15)
    assert np.sum(stack, axis=0).shape == (4, 5)
    # anything else: the dense concatenation, as numpy's
    np.testing.assert_array_equal(np.asarray(stack), dense)
    np.testing.assert_allclose(np.mean(stack, axis=0), dense.mean(axis=0))
    np.testing.assert_array_equal(stack[1], dense[1])
    np.testing.assert_allclose(np.sum(stack, axis=1), dense.sum(axis=1))


def test_nested_stacks_sum_every_leaf():
    rows = [concatenate_partials(_parts(2, shape=(1, 4, 1), seed=i), axis=2) for i in range(3)]
    stack = concatenate_partials(rows, axis=0)
    assert isinstance(stack, PartialStack)
    assert stack.stacked == frozenset({0, 2})
    dense = np.concatenate([np.asarray(r) for r in rows], axis=0)
    np.testing.assert_allclose(np.sum(stack, axis=(0, 2)), dense.sum(axis=(0, 2)), rtol=1e-14)


def test_parts_stacked_along_other_axes_are_concatenated_densely():
    # a part that is already a concatenation (one element of a level) beside a stack: the
    # leaves would not be one element thick along the stacked axis, so numpy concatenates
    single = concatenate_partials(
        [concatenate_partials(_parts(2, shape=(1, 4, 1)), axis=2)], axis=1
    )
    wide = np.asarray(single)
    mixed = concatenate_partials([wide.view(SumPartial), single], axis=0)
    want = np.concatenate([wide, wide], axis=0)
    np.testing.assert_array_equal(np.asarray(mixed), want)
    np.testing.assert_allclose(np.sum(mixed, axis=(0, 2)), want.sum(axis=(0, 2)))


def test_dask_concatenate2_reaches_the_hook():
    reader.register()
    parts = _parts(4)
    stacked = _concatenate2(parts, axes=[0])
    assert isinstance(stacked, PartialStack)


def test_sum_partials_are_plain_arrays_to_everything_else():
    p = as_partial(np.ones((1, partials.STACK_MIN_BYTES // 8)))
    assert isinstance(p, SumPartial)
    assert type(p + 1) is np.ndarray
    assert type(np.stack([p, p])) is np.ndarray
    assert type(p.copy()) is np.ndarray
    assert type(pickle.loads(pickle.dumps(p))) is np.ndarray
    count = as_partial(np.broadcast_to(np.float64(7), (1, 50000)))
    cast = count.astype(np.int64)
    assert isinstance(cast, SumPartial)
    assert not any(cast.strides)
    assert cast.dtype == np.int64
    assert not isinstance(as_partial(np.ones(3)), SumPartial)  # small ones stay plain


@pytest.mark.parametrize("every", [False, True], ids=["large-only", "every"])
def test_reductions_through_stacks_match_numpy(tmp_path, monkeypatch, every):
    if every:
        monkeypatch.setattr(partials, "STACK_MIN_BYTES", 0)
    x, ref = float32_cube(tmp_path, (12, 30, 36), (3, 10, 12), (4, 5, 6), 2)
    ref = ref.astype(np.float64)
    for got, want in [
        (da.nansum(x, axis=0), np.nansum(ref, axis=0)),
        (da.nanmean(x, axis=(0, 2)), np.nanmean(ref, axis=(0, 2))),
        (x.sum(), ref.sum()),
        (da.nanstd(x, axis=0), np.nanstd(ref, axis=0)),
    ]:
        value = got.compute()
        assert type(value) in (np.ndarray, np.float32, np.float64)
        np.testing.assert_allclose(value, want, rtol=2e-5, atol=1e-5, equal_nan=True)
