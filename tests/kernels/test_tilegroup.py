"""A chunk of tiles in one call equals decoding and placing each tile on its own."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.dequantize import dequantize
from dfits.kernels.rice import rice_decode
from dfits.kernels.tilegroup import place_group, rice_group

imagecodecs = pytest.importorskip("imagecodecs", reason="imagecodecs encodes the test streams")


def streams(tiles: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = [np.frombuffer(imagecodecs.rcomp_encode(t.ravel(), nblock=32), np.uint8) for t in tiles]
    counts = np.array([len(p) for p in parts], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return np.concatenate(parts), starts, counts


def test_group_equals_tile_by_tile_nd():
    rng = np.random.default_rng(3)
    chunk = rng.integers(-500, 500, (5, 7, 9)).astype(np.int32)
    # tiles of 2 x 3 x 4 over the chunk, edge tiles partial
    places = [
        (slice(a, min(a + 2, 5)), slice(b, min(b + 3, 7)), slice(c, min(c + 4, 9)))
        for a in range(0, 5, 2)
        for b in range(0, 7, 3)
        for c in range(0, 9, 4)
    ]
    tiles = [np.ascontiguousarray(chunk[p]) for p in places]
    blob, starts, counts = streams(tiles)
    npix = np.array([t.size for t in tiles], np.int64)
    packed, bad, _ = rice_group(blob, starts, counts, npix, 32, 4)
    assert bad == -1
    for t, a, n in zip(tiles, starts, counts, strict=True):
        np.testing.assert_array_equal(rice_decode(blob[a : a + n], t.size, 32, 4), t.ravel())
    out = np.zeros_like(chunk, dtype=np.int16)
    shapes = np.array([[s.stop - s.start for s in p] for p in places], np.int64)
    firsts = np.array([[s.start for s in p] for p in places], np.int64)
    place_group(packed, out, shapes, firsts)
    np.testing.assert_array_equal(out, chunk)


def test_group_reports_the_failing_tile():
    tiles = [np.arange(100, dtype=np.int32) * k for k in range(1, 4)]
    blob, starts, counts = streams(tiles)
    counts[1] -= 3
    packed, bad, status = rice_group(blob, starts, counts, np.full(3, 100), 32, 4)
    assert (packed, bad, status) == (None, 1, -1)


@pytest.mark.parametrize("method", [-1, 1, 2])
def test_group_dequantises_as_each_tile(method):
    rng = np.random.default_rng(method + 5)
    q = rng.integers(-3000, 3000, (4, 50)).astype(np.int32)
    q[:, ::7] = -2147483646
    q[1, 3] = -2147483647
    rows = np.array([7, 8, 9, 10], np.int64)
    scale, zero = np.array([0.5, 0.25, 2.0, 1.0]), np.array([1.0, -2.0, 0.0, 5.0])
    blank = np.full(4, -2147483647, np.int64)
    seeds = (rows + 42 - 1) % 10000
    out = np.empty((4, 50), np.float32)
    place_group(
        q.ravel(), out, np.array([[1, 50]] * 4), np.array([[k, 0] for k in range(4)]),
        (scale, zero, blank, method, seeds),
    )  # fmt: skip
    for k in range(4):
        want = np.empty((1, 50), np.float32)
        dequantize(q[k], want, scale[k], zero[k], method, int(rows[k]), 42, -2147483647)
        np.testing.assert_array_equal(out[k], want[0])
