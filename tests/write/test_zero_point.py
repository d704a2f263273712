"""ZZERO of quantised float tiles is cfitsio's zero point (fits_quantize_float/_double in
quantize.c), levels GZIP packs well, and every method reads back equal in astropy and funpack
(issue 46, item 5): NaN tiles, exact zeros under SUBTRACTIVE_DITHER_2, constant and all-NaN
tiles, ranges past 2^31 levels, float32 and float64; fpack writes the same ZZERO."""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import numpy as np
import pytest
from astropy.io import fits

import dfits
from tests.write.zchecks import as_cfitsio, check_file, funpack

NULL_VALUE, ZERO_VALUE, N_RESERVED = -2147483647, -2147483646, 10
METHODS = ["NO_DITHER", "SUBTRACTIVE_DITHER_1", "SUBTRACTIVE_DITHER_2"]
LIMIT = 2.0 * 2147483647.0 - N_RESERVED  # cfitsio: wider ranges of levels are not quantised
ROWS = 4  # rows per tile; each band of ROWS rows is one tile


def cfitsio_zero(lo: float, hi: float, delta: float, method: str, nans: bool) -> float:
    """The zero point as quantize.c chooses it."""
    if nans or method == "SUBTRACTIVE_DITHER_2":
        return lo - delta * float(NULL_VALUE + N_RESERVED)
    if (hi - lo) / delta < 2147483647.0 - N_RESERVED:
        return math.trunc(lo / delta + 0.5) * delta  # C's (LONGLONG) cast truncates
    return (lo + hi) / 2.0


def expected_zero(lo, hi, delta, method, nans):
    """cfitsio's, but centred where cfitsio's would put a level (dithered: ± 1) out of int32
    or on ZERO_VALUE/NULL_VALUE: only at the very edge of LIMIT, with NaN or DITHER_2."""
    zero = cfitsio_zero(lo, hi, delta, method, nans)
    low, high = (lo - zero) / delta, (hi - zero) / delta
    if low - 1 <= ZERO_VALUE or high + 1 > 2147483647:
        return (lo + hi) / 2.0
    return zero


def _mixed(dtype) -> np.ndarray:
    # one tile per band of ROWS rows: noise, a NaN, exact zeros (the minimum), constant,
    # all NaN, noise far from 0, an infinity
    rng = np.random.default_rng(5)
    x = rng.normal(100, 20, (7 * ROWS, 64))
    x[ROWS + 1, 3] = np.nan
    x[2 * ROWS : 3 * ROWS, ::5] = 0.0
    x[3 * ROWS : 4 * ROWS] = 7.0
    x[4 * ROWS : 5 * ROWS] = np.nan
    x[5 * ROWS : 6 * ROWS] += 1e6
    x[6 * ROWS + 2, 9] = np.inf
    return x.astype(dtype)


def _wide(dtype) -> np.ndarray:
    # with ZSCALE 1: ranges past 2^31 levels (no NaN, a NaN), and for float64 the very edge
    # (LIMIT levels with a NaN: cfitsio's own zero would overflow; one more: exact)
    ranges = [3e9, 3e9] + ([LIMIT, LIMIT, LIMIT + 1] if dtype == "float64" else [])
    x = np.empty((ROWS * len(ranges), 64))
    for k, span in enumerate(ranges):
        band = -1.5e9 + np.linspace(0.0, 1.0, ROWS * 64).reshape(ROWS, 64) * span
        band.reshape(-1)[-1] = -1.5e9 + span  # exactly the span, whatever linspace rounds
        x[k * ROWS : (k + 1) * ROWS] = band
    x[ROWS + 1, 5] = np.nan
    if dtype == "float64":
        x[3 * ROWS + 1, 5] = np.nan  # the LIMIT tile of band 2 has none, band 3 has one
    return x.astype(dtype)


def _tiles(path):
    with fits.open(path, disable_image_compression=True) as hl:
        t = hl[1].data
        exact = "GZIP_COMPRESSED_DATA" in t.names  # fpack writes it only when needed
        return [
            (exact and len(r["GZIP_COMPRESSED_DATA"]) > 0, float(r["ZSCALE"]), float(r["ZZERO"]))
            for r in t
        ]


def _check_zero_points(path, x, method, exact_bands, guarded=()):
    for k, (exact, scale, zero) in enumerate(_tiles(path)):
        tile = x[k * ROWS : (k + 1) * ROWS].astype(np.float64)
        assert exact == (k in exact_bands), k
        if exact:
            continue
        good = tile[~np.isnan(tile)]
        if good.size == 0:  # cfitsio's dummy range 0..1, noise 1
            assert zero == cfitsio_zero(0.0, 1.0, scale, method, True), k
            continue
        lo, hi, nans = good.min(), good.max(), good.size < tile.size
        assert zero == expected_zero(lo, hi, scale, method, nans), (k, zero)
        # the guard moves nothing but the very edge of LIMIT, with NaN or DITHER_2
        assert (zero == cfitsio_zero(lo, hi, scale, method, nans)) == (k not in guarded), k


def _check_read_back(path, x, cfitsio=True):
    back = check_file(path, x, lossless=False)  # astropy and dfits alike, verified
    if cfitsio:  # cfitsio has no NOCOMPRESS decoder ("unknown compression algorithm")
        np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(back))
    finite = np.isfinite(x)
    np.testing.assert_array_equal(np.isnan(back), np.isnan(x))
    scales = np.repeat([s for _, s, _ in _tiles(path)], ROWS)[:, None]
    err = np.abs(back.astype(np.float64)[finite] - x.astype(np.float64)[finite])
    slack = (scales + 4 * np.abs(x.astype(np.float64)) * np.finfo(x.dtype).eps)[finite]
    assert np.all(err <= slack)  # the levels dequantise to the values


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("compression", ["RICE_1", "GZIP_1", "GZIP_2", "HCOMPRESS_1", "NOCOMPRESS"])
def test_mixed_tiles(tmp_path, compression, method, dtype):
    x, path = _mixed(dtype), tmp_path / "mixed.fits"
    opts = {"quantize_level": 4, "quantize_method": method, "dither_seed": 9}
    dfits.to_fits(x, path, compression=compression, tile_shape=(ROWS, 64), **opts)
    _check_zero_points(path, x, method, exact_bands={3, 6})
    _check_read_back(path, x, cfitsio=compression != "NOCOMPRESS")
    if method == "SUBTRACTIVE_DITHER_2":  # exact zeros stay exact
        np.testing.assert_array_equal(dfits.open(path)[1].data.compute()[x == 0.0], 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("compression", ["RICE_1", "GZIP_1"])
def test_wide_tiles(tmp_path, compression, method, dtype):
    x, path = _wide(dtype), tmp_path / "wide.fits"
    opts = {"quantize_level": -1.0, "quantize_method": method, "dither_seed": 9}
    dfits.to_fits(x, path, compression=compression, tile_shape=(ROWS, 64), **opts)
    if dtype == "float32":
        _check_zero_points(path, x, method, exact_bands=set())
        return _check_read_back(path, x)
    guarded = {2, 3} if method == "SUBTRACTIVE_DITHER_2" else {3}
    _check_zero_points(path, x, method, exact_bands={4}, guarded=guarded)
    _check_read_back(path, x)


def _fpack(path, *options):
    tool = shutil.which("fpack")
    if tool is None:
        pytest.skip("fpack not installed (apt-get install libcfitsio-bin)")
    out = path.parent / (path.name + ".fz")
    subprocess.run([tool, *options, "-O", str(out), str(path)], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("method", "flag"), list(zip(METHODS, ["-q0", "-q", "-qz"], strict=True)))
def test_zero_equals_fpacks(tmp_path, method, flag, dtype):
    """With the same ZSCALE (an absolute level), fpack's ZZERO tile by tile, NaN rows too."""
    x = _mixed(dtype)
    raw, path = tmp_path / "raw.fits", tmp_path / "dfits.fits"
    fits.PrimaryHDU(x).writeto(raw)
    theirs = _tiles(_fpack(raw, flag, "-0.25"))  # row tiles, as fpack's default
    opts = {"quantize_level": -0.25, "quantize_method": method, "tile_shape": (1, 64)}
    dfits.to_fits(x, path, compression="RICE_1", **opts)
    ours = _tiles(path)
    assert len(ours) == len(theirs) == x.shape[0]
    compared = 0
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        # cfitsio takes infinities for NaN, dfits stores their tiles exactly; all-NaN tiles'
        # ZZERO is never used (cfitsio's, with an absolute level, is its unset minimum)
        if not (a[0] or b[0] or np.isinf(x[k]).any() or np.isnan(x[k]).all()):
            assert a[1:] == b[1:], (k, a, b)
            compared += 1
    assert compared > x.shape[0] // 2


@pytest.mark.parametrize("method", ["SUBTRACTIVE_DITHER_1", "SUBTRACTIVE_DITHER_2"])
def test_gzip_size_near_fpacks(tmp_path, method):
    """GZIP_1, q = 16, of 1024 × 1024 float32 noise: at most 1.02 × `fpack -g -q 16`'s."""
    x = np.random.default_rng(1).normal(100, 10, (1024, 1024)).astype("f4")
    raw, path = tmp_path / "raw.fits", tmp_path / "dfits.fits"
    fits.PrimaryHDU(x).writeto(raw)
    theirs = os.path.getsize(_fpack(raw, "-g", "-q", "16"))
    dfits.to_fits(x, path, compression="GZIP_1", quantize_level=16, quantize_method=method)
    assert os.path.getsize(path) <= 1.02 * theirs, (os.path.getsize(path), theirs)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("base", "scale"), [(1e30, np.spacing(1e30) / 8), (1e20, 1.0)])
def test_far_from_zero(tmp_path, method, base, scale):
    """1e30 with ZSCALE ulp/8: lo / ZSCALE past int64, where cfitsio's (LONGLONG) cast
    overflows (dfits truncates the double: the same value wherever the cast is defined).
    1e20 with ZSCALE 1: cfitsio's shift rounds to a multiple of 16384 and would put the lowest
    level at -2^31, out of the levels' room: centred instead (with NaN, or DITHER_2)."""
    x = np.repeat(base + np.spacing(base) * np.arange(64.0)[None], 2 * ROWS, axis=0)
    x[ROWS + 1, 3] = np.nan
    path = tmp_path / "far.fits"
    opts = {"quantize_level": -scale, "quantize_method": method, "dither_seed": 2}
    dfits.to_fits(x, path, compression="RICE_1", tile_shape=(ROWS, 64), **opts)
    guarded = set() if base > 1e25 else {0, 1} if method == "SUBTRACTIVE_DITHER_2" else {1}
    _check_zero_points(path, x, method, exact_bands=set(), guarded=guarded)
    _check_read_back(path, x)
