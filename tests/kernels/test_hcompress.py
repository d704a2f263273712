"""HCOMPRESS_1 decoding equals astropy's (cfitsio's C) tile for tile; broken streams are
reported, never decoded into garbage or out-of-bounds writes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dfits.kernels.hcompress import HEADER_BYTES, hcompress_decode, read_header

fits = pytest.importorskip("astropy.io.fits", reason="astropy writes the test streams")


def streams(tmp_path, data, tile, **kw) -> tuple[list[np.ndarray], np.ndarray, dict]:
    """Every tile stream of ``data`` written by astropy as HCOMPRESS_1, astropy's decoded
    integers (the quantised ones for floats) and the table header."""
    path = tmp_path / "h.fits"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = fits.CompImageHDU(data, compression_type="HCOMPRESS_1", tile_shape=tile, **kw)
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
        with fits.open(path, disable_image_compression=True) as f:
            rows = [np.array(r, np.uint8) for r in f[1].data["COMPRESSED_DATA"]]
            header = dict(f[1].header)
        with fits.open(path) as f:
            want = np.array(f[1].data)
    return rows, want, header


def tiles_of(shape, tile):
    """The regions of the tiles of ``shape``, in table order."""
    grid = [range(0, n, t) for n, t in zip(shape, tile, strict=True)]
    for corner in np.ndindex(*[len(g) for g in grid]):
        yield tuple(
            slice(g[k], min(g[k] + t, n))
            for g, k, t, n in zip(grid, corner, tile, shape, strict=True)
        )


def image(shape, kind: str) -> np.ndarray:
    rng = np.random.default_rng(len(kind) + len(shape))
    if kind == "sky":  # smooth background, a few stars, noise: what hcompress is for
        y, x = np.indices(shape[-2:])
        sky = 1000 + 3 * x - 2 * y + rng.normal(0, 10, shape[-2:])
        sky[y % 13 == 5] += 4000
        return np.broadcast_to(sky, shape).astype(np.int32)
    if kind == "wide":
        return rng.integers(-(2**30), 2**30, shape).astype(np.int32)
    return rng.normal(-40, 300, shape).astype(np.int16)


@pytest.mark.parametrize(
    ("shape", "tile"),
    [((64, 64), (64, 64)), ((37, 51), (16, 20)), ((20, 33), (5, 33)), ((3, 9, 11), (1, 9, 11))],
    ids=lambda v: "x".join(map(str, v)),
)
@pytest.mark.parametrize("kind", ["sky", "wide", "signed"])
def test_lossless_tiles_equal_astropy(tmp_path, shape, tile, kind):
    data = image(shape, kind)
    rows, want, _ = streams(tmp_path, data, tile)
    np.testing.assert_array_equal(want, data)
    for stream, region in zip(rows, tiles_of(shape, tile), strict=True):
        part = want[region]
        got = hcompress_decode(stream, part.shape, 0)
        np.testing.assert_array_equal(got.reshape(part.shape), part)


@pytest.mark.parametrize("smooth", [0, 1])
@pytest.mark.parametrize("scale", [2, 7, 40])
def test_lossy_tiles_equal_astropy(tmp_path, scale, smooth):
    """Lossy: not the original values, but exactly the integers cfitsio decodes to,
    smoothing included."""
    data = image((45, 70), "sky")
    tile = (20, 32)
    rows, want, header = streams(tmp_path, data, tile, hcomp_scale=scale, hcomp_smooth=smooth)
    assert not np.array_equal(want, data)
    assert header["ZVAL2"] == smooth  # SMOOTH as astropy wrote it, and applied when it decoded
    for stream, region in zip(rows, tiles_of(data.shape, tile), strict=True):
        part = want[region]
        got = hcompress_decode(stream, part.shape, smooth)
        np.testing.assert_array_equal(got.reshape(part.shape), part)
    if smooth:
        unsmoothed = hcompress_decode(rows[0], (20, 32), 0)
        assert not np.array_equal(unsmoothed.reshape(20, 32), want[:20, :32])


@pytest.fixture
def stream(tmp_path) -> np.ndarray:
    rows, _, _ = streams(tmp_path, image((24, 30), "sky"), (24, 30))
    return rows[0]


def _with(stream: np.ndarray, at: int, new: bytes) -> np.ndarray:
    out = stream.copy()
    out[at : at + len(new)] = np.frombuffer(new, np.uint8)
    return out


def test_header_is_read(stream):
    nx, ny, scale, _, planes = read_header(stream)
    assert (nx, ny, scale) == (24, 30, 0)
    assert 0 < max(planes) <= 32


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: _with(s, 0, b"\xdd\x98"), "magic code"),
        (lambda s: s[:10], "fewer than its 25-byte header"),
        (lambda s: _with(s, 2, np.array([25, 30], ">i4").tobytes()), "25 x 30 tile"),
        (lambda s: _with(s, 2, np.array([30, 24], ">i4").tobytes()), "30 x 24 tile"),
        (lambda s: _with(s, 2, np.array([2**30, 2**30], ">i4").tobytes()), "x 1073741824"),
        (lambda s: _with(s, 2, np.array([-24, -30], ">i4").tobytes()), "-24 x -30"),
        (lambda s: _with(s, 22, b"\xc8"), "200 bit planes"),
        (lambda s: s[: len(s) // 2], "ends before its last coefficient"),
        (lambda s: s[: HEADER_BYTES + 1], "ends before its last coefficient"),
        (lambda s: _with(s, HEADER_BYTES, b"\x50"), "unknown format code"),
    ],
    ids=[
        "magic",
        "short-header",
        "nx-too-big",
        "transposed",
        "absurd-size",
        "negative",
        "planes",
        "half",
        "header-only",
        "format-code",
    ],
)
def test_broken_streams_are_reported(stream, change, reason):
    got = hcompress_decode(change(stream), (24, 30), 0)
    assert isinstance(got, str)
    assert reason in got


def test_garbled_streams_never_crash(stream):
    """Flipped bytes anywhere after the header: an error or some integers, never a crash
    or a write outside the tile (the work arrays are sized from the tile)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        bad = stream.copy()
        at = rng.integers(HEADER_BYTES, len(bad), 3)
        bad[at] ^= rng.integers(1, 256, 3).astype(np.uint8)
        got = hcompress_decode(bad, (24, 30), 1)
        assert isinstance(got, str) or got.shape == (720,)
