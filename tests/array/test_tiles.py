"""Tiles cover a part exactly once, and lazy parts evaluate to what the eager steps give."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dfits.array import tiles
from dfits.array.tiles import LazyPart, materialize, tile_slices, value_at

shapes = st.lists(st.integers(0, 7), min_size=1, max_size=4).map(tuple)


@given(shape=shapes, items=st.integers(1, 60))
def test_tiles_cover_every_index_once_in_order(shape, items):
    seen = np.zeros(shape, np.int64)
    order = np.arange(math.prod(shape)).reshape(shape)
    last = -1
    for tile in tile_slices(shape, items):
        assert len(tile) == len(shape)
        block = order[tile]
        if block.size:
            assert block.size <= items
            # C order: each tile starts after the previous one ended, with no gap
            assert block.ravel()[0] == last + 1
            assert np.all(np.diff(block.ravel()) == 1)
            last = block.ravel()[-1]
        seen[tile] += 1
    assert np.all(seen == 1)


def test_tile_size_follows_the_module_setting(monkeypatch):
    monkeypatch.setattr(tiles, "TILE_ITEMS", 6)
    assert [t[1] for t in tile_slices((1, 5, 3))] == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert len(list(tile_slices((1, 1024, 1024), items=1 << 15))) == 32


def _steps(rng):
    a = rng.standard_normal((1, 9, 7))
    b = np.abs(rng.standard_normal((1, 9, 7))) + 1
    mu = rng.standard_normal((1, 9, 7))
    counts = np.broadcast_to(np.asarray(4, dtype=np.int64), (1, 9, 7))
    ratio = LazyPart(functools.partial(np.divide, dtype=np.float32), [a, b], a.shape)
    inner = LazyPart(np.subtract, [ratio, mu], a.shape)
    square = LazyPart(np.power, [inner, 2], a.shape)
    scaled = LazyPart(np.multiply, [counts, square], a.shape)
    picked = LazyPart(np.where, [LazyPart(np.equal, [counts, 0], a.shape), 0, scaled], a.shape)
    eager = np.where(counts == 0, 0, counts * (np.divide(a, b, dtype=np.float32) - mu) ** 2)
    return picked, eager


def test_lazy_part_equals_the_eager_steps_whole_and_by_tile():
    part, eager = _steps(np.random.default_rng(0))
    assert part.dtype == eager.dtype
    assert part.shape == eager.shape
    np.testing.assert_array_equal(materialize(part), eager)
    for items in (1, 5, 7, 20, 1000):
        got = np.empty_like(eager)
        for tile in tile_slices(part.shape, items):
            got[tile] = value_at(part, tile)
        np.testing.assert_array_equal(got, eager)


def test_concrete_parts_pass_through():
    a = np.arange(6.0).reshape(1, 2, 3)
    assert materialize(a) is a
    np.testing.assert_array_equal(value_at(a, (slice(None), slice(1, 2), slice(None))), a[:, 1:])


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64])
def test_lazy_dtype_is_numpy_promotion(dtype):
    a = np.ones((1, 3, 4), dtype)
    part = LazyPart(np.multiply, [a, np.float32(2)], a.shape)
    assert part.dtype == (a * np.float32(2)).dtype
    half = LazyPart(np.true_divide, [a, 2], a.shape)
    assert half.dtype == (a / 2).dtype


def test_lazy_operands_of_another_shape_broadcast():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1, 6, 5))
    row = LazyPart(np.negative, [rng.standard_normal((1, 1, 5))], (1, 1, 5))
    part = LazyPart(np.add, [a, row], a.shape)
    want = a + materialize(row)
    got = np.empty_like(want)
    for tile in tile_slices(part.shape, 7):
        got[tile] = value_at(part, tile)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(materialize(part), want)
