"""Tile encoders: the dithered quantiser against a numpy oracle and the readers' dequantiser,
the noise estimate, the exact fallback, and every codec decoded by dfits' own decoders."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from dfits.format.imagehdu import parse_storage
from dfits.format.ztable import NULL_VALUE, parse_compression
from dfits.kernels.codecs import Codec, decode_tile, raw_tile
from dfits.kernels.dequantize import ZERO_VALUE, dequantize, random_table
from dfits.kernels.tileencode import encode_tile, noise3, quantize_tile


def oracle(x, scale, zero, method, row, dither0):
    """The convention's quantiser, written out in Python."""
    values, starts = random_table()
    iseed = (row + dither0 - 1) % 10000
    nextrand = starts[iseed]
    q = np.empty(x.size, np.int32)
    for i, v in enumerate(x.astype(np.float64)):
        if np.isnan(v):
            q[i] = NULL_VALUE
        elif method == 2 and v == 0.0:
            q[i] = ZERO_VALUE
        else:
            r = float(values[nextrand]) - 0.5 if method > 0 else 0.0
            q[i] = np.rint((v - zero) / scale + r)
        if method > 0:
            nextrand += 1
            if nextrand == 10000:
                iseed = (iseed + 1) % 10000
                nextrand = starts[iseed]
    return q


@pytest.mark.parametrize("method", [-1, 1, 2])
@pytest.mark.parametrize("row", [0, 9998])
def test_quantiser_equals_oracle_and_reads_back(method, row):
    rng = np.random.default_rng(row)
    # longer than the 10,000-step sequence wraps: the seed advances as the readers' does
    x = rng.normal(0, 3, 20011).astype("f4")
    x[[5, 77]] = np.nan
    x[[6, 78]] = 0.0
    scale, zero = 0.25, -1.5
    q = quantize_tile(x, scale, zero, method, row, 3)
    np.testing.assert_array_equal(q, oracle(x, scale, zero, method, row, 3))
    out = np.empty((1, x.size), "f4")
    dequantize(q, out, scale, zero, method, row, 3, NULL_VALUE)
    back = out[0]
    assert np.isnan(back[[5, 77]]).all()
    if method == 2:
        assert (back[[6, 78]] == 0).all()
    ok = ~np.isnan(x)
    assert np.abs(back[ok] - x[ok]).max() <= scale / 2 + 1e-5


def test_noise3():
    rng = np.random.default_rng(1)
    tile = rng.normal(5, 2.0, (4, 2000))
    assert noise3(tile) == pytest.approx(2.0, rel=0.05)
    assert noise3(np.full((1, 100), 3.0)) == 0.0
    tile[0, ::3] = np.nan
    assert noise3(tile) == pytest.approx(2.0, rel=0.05)
    assert noise3(rng.normal(0, 1, (40, 3))) > 0  # short rows are joined, as cfitsio does
    assert noise3(np.ones((1, 4))) == 0.0


@pytest.mark.parametrize("values", [np.full(50, 7.5, "f4"), np.r_[np.ones(9), np.inf]])
def test_untileable_floats_are_stored_exactly(values):
    spec = parse_compression((1, values.size), parse_storage(values.dtype, "x"), "x",
                             compression="RICE_1")  # fmt: skip
    data, fallback, _, _ = encode_tile(spec, values[None, :], 0)
    assert data == b""
    codec = Codec("RICE_1", spec.storage.bitpix, quantised=True)
    np.testing.assert_array_equal(raw_tile(codec, np.frombuffer(fallback, np.uint8),
                                           values.size, True), values)  # fmt: skip
    assert zlib.decompress(fallback, 31) == values.astype(values.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"])
@pytest.mark.parametrize("dtype", ["u1", "i2", "i4", "u2"])
def test_integer_tiles_decode_with_dfits_decoders(algorithm, dtype):
    info = np.iinfo(dtype)
    values = np.random.default_rng(2).integers(info.min, info.max, 1000, endpoint=True)
    values = values.astype(dtype)
    storage = parse_storage(dtype, "x")
    spec = parse_compression((1000,), storage, "x", compression=algorithm)
    data, fallback, _, _ = encode_tile(spec, values, 0)
    assert fallback == b""
    codec = Codec(algorithm, storage.bitpix, bytepix=spec.bytepix)
    stored = decode_tile(codec, np.frombuffer(data, np.uint8), 1000)
    native = stored.astype(stored.dtype.newbyteorder("="))
    if storage.flip:
        native = (native.view(f"u{native.itemsize}") ^ storage.flip).view(dtype)
    np.testing.assert_array_equal(native.view(dtype) if dtype == "u1" else native, values)
