"""The RICE_1 encoder writes cfitsio's bytes (imagecodecs' ``rcomp_encode``) and dfits' decoder
reads them back."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.rice import rice_decode
from dfits.kernels.riceencode import rice_bound, rice_encode

imagecodecs = pytest.importorskip("imagecodecs", reason="imagecodecs is cfitsio's encoder")


def values(dtype: str, kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n + len(kind))
    info = np.iinfo(dtype)
    if kind == "zeros":
        return np.zeros(n, dtype)
    if kind == "flat":
        return np.full(n, 7, dtype)
    if kind == "full":  # differences wrap in the values' width; raw blocks
        return rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    if kind == "ramp":
        return (np.arange(n) * 37 % (int(info.max) - int(info.min) + 1) + info.min).astype(dtype)
    scale = {"noise": 40, "wide": 3000}[kind]
    return rng.normal(0, scale, n).clip(info.min, info.max).astype(dtype)


@pytest.mark.parametrize("dtype", ["u1", "i1", "i2", "i4", "u4"])
@pytest.mark.parametrize("kind", ["zeros", "flat", "noise", "wide", "full", "ramp"])
@pytest.mark.parametrize("blocksize", [16, 32])
def test_bytes_equal_cfitsio_and_decode(dtype, kind, blocksize):
    for n in (1, 2, 5, 31, 32, 33, 100, 4097):
        a = values(dtype, kind, n)
        ours = rice_encode(a, blocksize)
        assert ours == bytes(imagecodecs.rcomp_encode(a, nblock=blocksize)), n
        assert len(ours) <= rice_bound(n, blocksize, a.itemsize)
        got = rice_decode(np.frombuffer(ours, np.uint8), n, blocksize, a.itemsize)
        np.testing.assert_array_equal(got.view(a.dtype), a)


def test_long_unary_codes():
    # a block of small differences, then one huge jump: unary runs of many bytes
    a = np.zeros(64, np.int32)
    a[40] = 1 << 20
    a[41:] = np.arange(23)
    assert rice_encode(a) == bytes(imagecodecs.rcomp_encode(a, nblock=32))


def test_refuses_what_it_cannot_code():
    with pytest.raises(ValueError, match="8, 16 or 32-bit"):
        rice_encode(np.zeros(4, np.int64))
    assert rice_encode(np.zeros(0, np.int16)) == b""
