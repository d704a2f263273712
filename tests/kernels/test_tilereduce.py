"""Reductions of quantised tiles from their integers equal numpy's on the dequantised chunk."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.tilegroup import place_group
from dfits.kernels.tilereduce import reduce_tiles

SHAPE = (6, 10, 9)
AXES = [(0, 1, 2), (0,), (1,), (2,), (0, 2), (1, 2)]


def tiles(method: int, seed: int):
    """Packed integers of 2 x 3 x 4 tiles over SHAPE (edge tiles partial), with ZBLANK and
    DITHER_2 zeros among them, seeds near the end of the dither sequence (it wraps)."""
    rng = np.random.default_rng(seed)
    places = [
        (slice(a, min(a + 2, 6)), slice(b, min(b + 3, 10)), slice(c, min(c + 4, 9)))
        for a in range(0, 6, 2)
        for b in range(0, 10, 3)
        for c in range(0, 9, 4)
    ]
    shapes = np.array([[s.stop - s.start for s in p] for p in places], np.int64)
    firsts = np.array([[s.start for s in p] for p in places], np.int64)
    n = len(places)
    packed = rng.integers(-3000, 3000, int(shapes.prod(axis=1).sum())).astype(np.int32)
    packed[::13] = -2147483647
    packed[::17] = -2147483646
    seeds = (np.arange(n) + 9990) % 10000
    quant = (rng.uniform(0.1, 2, n), rng.uniform(-5, 5, n), np.full(n, -2147483647), method, seeds)
    return packed, shapes, firsts, quant


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", [-1, 1, 2])
def test_reductions_equal_numpy_on_the_placed_chunk(method, dtype):
    packed, shapes, firsts, quant = tiles(method, method + 7)
    chunk = np.empty(SHAPE, dtype)
    place_group(packed, chunk, shapes, firsts, quant)
    assert np.isnan(chunk).any()
    wide = chunk.astype(np.float64)
    for axes in AXES:
        total, n = reduce_tiles(packed, shapes, firsts, quant, SHAPE, axes, "sum", True, dtype)
        np.testing.assert_allclose(total, np.nansum(wide, axis=axes), rtol=1e-14)
        np.testing.assert_array_equal(n, (~np.isnan(chunk)).sum(axis=axes))
        total, n = reduce_tiles(packed, shapes, firsts, quant, SHAPE, axes, "sum", False, dtype)
        np.testing.assert_array_equal(np.isnan(total), np.isnan(wide.sum(axis=axes)))
        np.testing.assert_array_equal(n, np.full(total.shape, chunk.size // total.size))
        for op, oracle in (("max", np.nanmax), ("min", np.nanmin)):
            value, valid, nans = reduce_tiles(
                packed, shapes, firsts, quant, SHAPE, axes, op, False, dtype
            )
            assert value.dtype == dtype
            np.testing.assert_array_equal(value, oracle(chunk, axis=axes))  # bit for bit
            np.testing.assert_array_equal(nans, np.isnan(chunk).sum(axis=axes))
            np.testing.assert_array_equal(valid, (~np.isnan(chunk)).sum(axis=axes))


def test_sum_of_many_rows_is_compensated():
    # one long row tile per row, all reduced: each row's float64 sum added with compensation
    rows, width = 400, 2000
    rng = np.random.default_rng(1)
    packed = rng.integers(0, 1 << 20, rows * width).astype(np.int32)
    shapes = np.tile([1, width], (rows, 1)).astype(np.int64)
    firsts = np.stack([np.arange(rows), np.zeros(rows, np.int64)], axis=1)
    quant = (np.full(rows, 1e-3), np.full(rows, 1e6), None, 1, np.arange(rows) % 10000)
    chunk = np.empty((rows, width), np.float32)
    place_group(packed, chunk, shapes, firsts, quant)
    total, _ = reduce_tiles(
        packed, shapes, firsts, quant, chunk.shape, (0, 1), "sum", False, np.float32
    )
    exact = np.sum(chunk.astype(np.longdouble))
    assert abs(float(total) - float(exact)) <= 4 * np.spacing(float(exact))
