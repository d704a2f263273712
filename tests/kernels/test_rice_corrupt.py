"""The word-at-a-time RICE_1 decoder equals a byte-at-a-time reference on every stream.

The reference is the first (byte-at-a-time, checked at every byte) decoder, in plain Python:
on valid streams both equal cfitsio's, and on truncated, extended and corrupted streams the
new decoder must give the same verdict (and the same values where it decodes).
"""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.rice import _PARAMS, rice_decode

imagecodecs = pytest.importorskip("imagecodecs", reason="imagecodecs encodes the test streams")


def reference(src: bytes, npix: int, blocksize: int, bytepix: int) -> np.ndarray | str:
    """Byte-at-a-time decoding, every read checked (the decoder this one replaced)."""
    fsbits, fsmax, bbits = _PARAMS[bytepix]
    short, over = "the Rice stream ends before its last pixel", "unused bytes"
    n = len(src)
    if n < bytepix + 1:
        return short
    last = int.from_bytes(src[:bytepix], "big")
    mask, out = (1 << bbits) - 1, np.empty(npix, np.int64)
    c, b, nbits = bytepix + 1, src[bytepix], 8

    def more(b, c):
        if c >= n:
            raise IndexError
        return (b << 8) | src[c], c + 1

    try:
        for i in range(0, npix, blocksize):
            nbits -= fsbits
            while nbits < 0:
                b, c = more(b, c)
                nbits += 8
            fs, b = (b >> nbits) - 1, b & ((1 << nbits) - 1)
            for k in range(i, min(i + blocksize, npix)):
                if fs < 0:
                    diff = 0
                elif fs == fsmax:
                    diff, need = b, bbits - nbits
                    while need >= 8:
                        byte, c = more(0, c)
                        diff, need = (diff << 8) | byte, need - 8
                    if need > 0:
                        byte, c = more(0, c)
                        diff = (diff << need) | (byte >> (8 - need))
                        nbits = 8 - need
                        b = byte & ((1 << nbits) - 1)
                    else:
                        b, nbits = 0, 0
                else:
                    while b == 0:
                        b, c = more(0, c)
                        nbits += 8
                    nzero = nbits - b.bit_length()
                    nbits -= nzero + 1
                    b ^= 1 << nbits
                    nbits -= fs
                    while nbits < 0:
                        b, c = more(b, c)
                        nbits += 8
                    diff, b = (nzero << fs) | (b >> nbits), b & ((1 << nbits) - 1)
                last = (last + (diff >> 1 if diff % 2 == 0 else -(diff >> 1) - 1)) & mask
                out[k] = last
    except IndexError:
        return short
    if c < n:
        return over
    half = 1 << (bbits - 1)
    return out - ((out & half) << 1) if bytepix > 1 else out


def _same(got, want, dtype):
    if isinstance(want, str):
        assert isinstance(got, str)
        assert want in got
    else:
        assert not isinstance(got, str), got
        np.testing.assert_array_equal(got, want.astype(np.int64).astype(dtype))


def _stream(dtype: str, n: int, seed: int, blocksize: int = 32) -> tuple[np.ndarray, bytes]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    a = rng.normal(100, [3, 300, 3e4][seed % 3], n).clip(info.min, info.max).astype(dtype)
    a[rng.integers(0, n, 5)] = info.max  # raw blocks and long unary runs
    a[: n // 7] = a[0]  # zero blocks
    return a, imagecodecs.rcomp_encode(a, nblock=blocksize)


@pytest.mark.parametrize("dtype", ["u1", "i2", "i4"])
def test_reference_equals_cfitsio(dtype):
    for seed in range(3):
        a, s = _stream(dtype, 700, seed)
        np.testing.assert_array_equal(reference(s, a.size, 32, a.itemsize), a)


@pytest.mark.parametrize("dtype", ["u1", "i2", "i4"])
def test_every_cut_and_extension_as_the_reference(dtype):
    a, s = _stream(dtype, 300, 1, 16)
    src = np.frombuffer(s, np.uint8)
    for cut in range(len(s) + 1):
        _same(
            rice_decode(src[:cut], a.size, 16, a.itemsize),
            reference(s[:cut], a.size, 16, a.itemsize),
            dtype,
        )
    for extra in (b"\0", b"\x80" * 9, b"\xff" * 3):
        got = rice_decode(np.frombuffer(s + extra, np.uint8), a.size, 16, a.itemsize)
        assert "unused bytes" in got


@pytest.mark.parametrize("dtype", ["u1", "i2", "i4"])
def test_corrupted_streams_as_the_reference(dtype):
    rng = np.random.default_rng(5)
    for seed in range(3):
        a, s = _stream(dtype, 500, seed)
        for _ in range(60):
            bad = bytearray(s)
            for at in rng.integers(0, len(s), rng.integers(1, 4)):
                bad[at] = rng.integers(0, 256) if rng.random() < 0.5 else 0
            want = reference(bytes(bad), a.size, 32, a.itemsize)
            _same(
                rice_decode(np.frombuffer(bytes(bad), np.uint8), a.size, 32, a.itemsize),
                want,
                dtype,
            )


def test_runs_of_zero_bytes_longer_than_a_word():
    # a unary code spanning many words, then the stream ends: refused, without looping
    for zeros in (7, 8, 9, 40):
        s = bytes([0, 0, 0x20]) + bytes(zeros)
        assert rice_decode(np.frombuffer(s, np.uint8), 4, 32, 2) == reference(s, 4, 32, 2)
        s2 = s + b"\x80\x00"
        _same(rice_decode(np.frombuffer(s2, np.uint8), 4, 32, 2), reference(s2, 4, 32, 2), "i2")
