"""HCOMPRESS_1 encoding: dfits' decoder gives every tile back exactly (lossless), odd and
one-row shapes, 32-bit extremes and all-zero tiles included; a lossy scale stays near.
(astropy and funpack read written files back in tests/write/test_compressed.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.hcompress import hcompress_decode
from dfits.kernels.hencode import hcompress_encode

SHAPES = [(1, 1), (1, 7), (7, 1), (2, 2), (3, 4), (4, 4), (5, 33), (13, 17), (16, 100)]


def _tile(kind, shape, rng):
    if kind == "noise":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    if kind == "ramp":
        return (np.add.outer(np.arange(shape[0]), np.arange(shape[1])) * 3 + 100).astype("i4")
    if kind == "extremes":
        return rng.choice(np.array([-(2**31), 2**31 - 1, 0, 5]), shape).astype(np.int32)
    return np.zeros(shape, np.int32)


def _decode(stream, shape):
    out = hcompress_decode(np.frombuffer(stream, np.uint8), shape, 0)
    assert not isinstance(out, str), out
    return out.reshape(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
@pytest.mark.parametrize("kind", ["noise", "ramp", "extremes", "zeros"])
def test_lossless_round_trip(shape, kind):
    tile = _tile(kind, shape, np.random.default_rng(sum(shape)))
    np.testing.assert_array_equal(_decode(hcompress_encode(tile), shape), tile)


def test_smooth_tiles_compress_and_a_scale_is_lossy_but_near():
    tile = _tile("ramp", (16, 256), None) + np.random.default_rng(0).integers(0, 4, (16, 256))
    stream = hcompress_encode(tile)
    assert len(stream) < tile.size  # well under a byte a value
    lossy = hcompress_encode(tile, scale=16)
    assert len(lossy) < len(stream)
    back = _decode(lossy, tile.shape)
    assert 0 < np.abs(back - tile).max() <= 64


def test_refuses_other_than_two_dimensions():
    with pytest.raises(ValueError, match="2-D"):
        hcompress_encode(np.zeros(5, np.int32))
