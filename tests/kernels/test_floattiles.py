"""The block kernel of quantised float tiles: its noise equals numpy's median-based oracle
exactly, and a block encoded in batches equals its tiles encoded one by one."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.format.imagehdu import parse_storage
from dfits.format.ztable import parse_compression
from dfits.kernels.floattiles import fast_median, median_inplace
from dfits.kernels.tileencode import encode_block, encode_tile, noise3, tile_regions


def noise3_oracle(tile: np.ndarray) -> float:
    """cfitsio's noise3 in numpy: per row the median of |2 v[i] - v[i-2] - v[i+2]| over its
    finite values, rows of fewer than 5 skipped (all short: the rows joined)."""
    rows = np.asarray(tile, np.float64).reshape(-1, tile.shape[-1])

    def row_median(r):
        v = r[np.isfinite(r)]
        if v.size < 5:
            return None
        return float(np.median(np.abs(2 * v[2:-2] - v[:-4] - v[4:])))

    meds = [m for m in map(row_median, rows) if m is not None]
    if not meds and rows.shape[0] > 1:
        meds = [m for m in [row_median(rows.reshape(-1))] if m is not None]
    return 0.6052697 * float(np.median(meds)) if meds else 0.0


@pytest.mark.parametrize("shape", [(1, 5), (1, 6), (1, 4096), (3, 7), (4, 8), (7, 3), (40, 3)])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_noise_equals_numpy_median(shape, dtype):
    rng = np.random.default_rng(shape[1])
    for trial in range(20):
        tile = rng.normal(0, 1 + trial, shape).astype(dtype)
        if trial % 3 == 1:
            tile = np.round(tile)  # many equal differences: ties in the selection
        if trial % 4 == 2:
            tile[0, ::2] = np.nan
            tile.reshape(-1)[-1] = np.inf
        if dtype == "f4":  # 2 v - a - b of float32 values is exact in float64: bit for bit
            assert noise3(tile) == noise3_oracle(tile)
        else:  # the kernel may reassociate it (fastmath, as the writer always has)
            assert noise3(tile) == pytest.approx(noise3_oracle(tile), rel=1e-14)


def _image(dtype: str = "f4") -> np.ndarray:
    x = np.random.default_rng(5).normal(10, 2, (45, 70)).astype(dtype)
    x[3] = 7.0  # a constant row: stored exactly
    x[10, 5] = np.inf  # a tile with an infinity: exactly too
    x[12] = np.nan  # all NaN
    x[20, ::3] = 0.0
    return x


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS", "HCOMPRESS_1"])
@pytest.mark.parametrize("tile", [None, (8, 16)])
@pytest.mark.parametrize("buffer", [64, 1 << 20])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_block_equals_tiles_one_by_one(algorithm, tile, buffer, dtype):
    x = _image(dtype)
    if algorithm == "HCOMPRESS_1" and tile is None:
        tile = (16, 70)
    spec = parse_compression(x.shape, parse_storage(dtype, "x"), "x", compression=algorithm,
                             tile_shape=tile, dither_seed=9)  # fmt: skip
    starts = (spec.tile[0], 0)  # a block that is not the image's first
    block = x[starts[0] :]
    spec = parse_compression(x.shape, parse_storage(dtype, "x"), "x", compression=algorithm,
                             tile_shape=spec.tile, dither_seed=9)  # fmt: skip
    heap, rows, sizes, scale, zero, count = b"", [], [], [], [], 0
    for b in encode_block(spec, block, starts, np.empty(buffer, np.uint8)):
        # consumed at once: the pieces may be views of the buffer the next batch reuses
        heap += b"".join(bytes(p) for p in b.pieces)
        rows += list(b.rows)
        sizes += [tuple(s) for s in b.sizes]
        scale += list(b.scale)
        zero += list(b.zero)
        count += 1
    assert count > 1 or buffer > 64
    expect, n = b"", 0
    for row, region in tile_regions(spec, starts, block.shape):
        data, fallback, s, z = encode_tile(spec, block[region], row)
        assert (rows[n], sizes[n], scale[n], zero[n]) == (row, (len(data), len(fallback)), s, z)
        expect += data + fallback
        n += 1
    assert n == len(rows)
    assert heap == expect
    if algorithm != "HCOMPRESS_1":  # its 16-row tiles hold no constant nor infinite one
        assert any(s[1] for s in sizes)  # the exact tiles were met


@pytest.mark.parametrize("n", [1, 2, 5, 511, 512, 513, 1000, 4092, 4093])
@pytest.mark.parametrize("kind", ["normal", "sorted", "reversed", "ties", "constant", "inf"])
def test_fast_median_is_numpys_median(n, kind):
    rng = np.random.default_rng(n)
    a = np.abs(rng.normal(0, 3, n))
    if kind == "sorted":
        a.sort()
    elif kind == "reversed":
        a = np.sort(a)[::-1].copy()
    elif kind == "ties":
        a = np.round(a)
    elif kind == "constant":
        a[:] = 2.5
    elif kind == "inf":
        a[::7] = np.inf
    want = float(np.median(a))
    got = fast_median(a.copy(), n, np.empty(n), np.empty(256))
    assert got == want
    assert median_inplace(a.copy(), n) == want
