"""RICE_1 decoding equals cfitsio's encoder round trip; broken streams are reported."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.rice import rice_decode

imagecodecs = pytest.importorskip("imagecodecs", reason="imagecodecs encodes the test streams")


def values(dtype: str, kind: str, n: int = 3000) -> np.ndarray:
    rng = np.random.default_rng(len(kind))
    info = np.iinfo(dtype)
    if kind == "flat":
        return np.full(n, 7, dtype)
    if kind == "full":
        return rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    return rng.normal(0, 40, n).clip(info.min, info.max).astype(dtype)


@pytest.mark.parametrize("dtype", ["u1", "i2", "i4"])
@pytest.mark.parametrize("kind", ["flat", "noise", "full"])
@pytest.mark.parametrize("blocksize", [16, 32])
def test_round_trip(dtype, kind, blocksize):
    a = values(dtype, kind)
    stream = np.frombuffer(imagecodecs.rcomp_encode(a, nblock=blocksize), np.uint8)
    got = rice_decode(stream, a.size, blocksize, np.dtype(dtype).itemsize)
    np.testing.assert_array_equal(got, a)


def test_edge_sizes():
    for n in (1, 2, 31, 33):
        a = values("i2", "noise", n)
        stream = np.frombuffer(imagecodecs.rcomp_encode(a, nblock=32), np.uint8)
        np.testing.assert_array_equal(rice_decode(stream, n, 32, 2), a)
    assert rice_decode(np.zeros(0, np.uint8), 0, 32, 4).size == 0


def test_truncated_and_overlong_streams_are_reported():
    a = values("i4", "noise")
    stream = np.frombuffer(imagecodecs.rcomp_encode(a, nblock=32), np.uint8)
    assert rice_decode(stream[: len(stream) // 2], a.size, 32, 4) == (
        "the Rice stream ends before its last pixel"
    )
    assert rice_decode(stream[:3], a.size, 32, 4) == "the Rice stream ends before its last pixel"
    longer = np.concatenate([stream, np.zeros(5, np.uint8)])
    assert "unused bytes" in rice_decode(longer, a.size, 32, 4)
