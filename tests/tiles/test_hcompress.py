"""HCOMPRESS_1 images read through dfits equal astropy and funpack, lossless and lossy."""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest

import dfits
from dfits.errors import DataError
from tests.tiles.test_reader import FPACK, FUNPACK, _image, astropy_data, check, needs_fpack

CASES = [
    # (bitpix, shape, tile shape, astropy keywords)
    (16, (40, 50), (40, 50), {}),
    (16, (37, 45), (16, 20), {}),
    (32, (30, 33), (10, 33), {}),
    (8, (24, 30), (8, 15), {}),
    (16, (3, 20, 21), (1, 20, 21), {}),
    (16, (40, 50), (16, 25), {"hcomp_scale": 6, "hcomp_smooth": 1}),
    (-32, (40, 50), (16, 25), {"quantize_method": 1, "hcomp_scale": 4}),
    (-32, (40, 50), (40, 50), {"quantize_method": 2, "hcomp_scale": 2.5, "hcomp_smooth": 1}),
    (-64, (30, 30), (10, 10), {"quantize_method": -1}),
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[2]))}-{len(c[3])}kw"
)
def test_astropy_written_equals_astropy(tmp_path, case):
    from astropy.io import fits

    bitpix, shape, tile, kw = case
    data = _image(bitpix, shape)
    if bitpix < 0:
        kw = {"quantize_level": 4.0, "dither_seed": 9, **kw}
    path = tmp_path / "h.fits"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = fits.CompImageHDU(data, compression_type="HCOMPRESS_1", tile_shape=tile, **kw)
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    got = check(path)
    if bitpix > 0 and not kw:
        np.testing.assert_array_equal(got.data.compute(), data)  # lossless: the original


@needs_fpack
@pytest.mark.parametrize(
    ("flags", "bitpix", "shape"),
    [
        (["-h"], 16, (40, 50)),
        (["-h", "-t", "16,12"], 32, (30, 40)),
        (["-h", "-s", "4"], 16, (40, 50)),
        (["-h", "-s", "3", "-t", "20,10"], 16, (33, 47)),
        (["-h", "-q", "4"], -32, (30, 40)),
        (["-h", "-s", "2.5", "-q", "8"], -32, (30, 40)),
    ],
    ids=lambda v: "".join(v) if isinstance(v, list) else None,
)
def test_fpack_written_equals_astropy_and_funpack(tmp_path, flags, bitpix, shape):
    from astropy.io import fits

    data = np.nan_to_num(_image(bitpix, shape))
    if bitpix > 0:  # a smooth image: what lossy hcompress keeps recognisable
        y, x = np.indices(shape)
        data = (1000 + 5 * x - 3 * y + data % 50).astype(data.dtype)
    raw = tmp_path / "raw.fits"
    fits.PrimaryHDU(data).writeto(raw)
    packed = tmp_path / "raw.fits.fz"
    subprocess.run([FPACK, *flags, "-O", str(packed), str(raw)], check=True, timeout=60)
    hdu = check(packed)
    assert hdu.header.get("ZCMPTYPE") is None
    unpacked = tmp_path / "unpacked.fits"
    subprocess.run([FUNPACK, "-O", str(unpacked), str(packed)], check=True, timeout=60)
    np.testing.assert_array_equal(hdu.data.compute(), astropy_data(unpacked, 0))
    if flags == ["-h"]:
        np.testing.assert_array_equal(hdu.data.compute(), data)


def _hcompress_file(tmp_path):
    from astropy.io import fits

    path = tmp_path / "h.fits"
    data = _image(16, (12, 40))
    hdu = fits.CompImageHDU(data, compression_type="HCOMPRESS_1", tile_shape=(4, 40))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    f = dfits.open(path)[1]
    heap = f.layout.data_offset + f.layout.tiles.heap_start
    spans = f._block(raw=False).descriptors.spans["COMPRESSED_DATA"]
    return path, heap, [tuple(map(int, s)) for s in spans]


@pytest.mark.parametrize(
    ("at", "new", "reason"),
    [
        (0, b"\x00\x00", "magic code"),
        (2, np.array([5, 32], ">i4").tobytes(), "5 x 32 tile, but the tile is 4 x 40"),
        (2, np.array([2**31 - 1, 40], ">i4").tobytes(), "2147483647 x 40 tile"),
        (25, b"\x70", "unknown format code"),
    ],
    ids=["magic", "nx-ny", "absurd-nx", "format-code"],
)
def test_broken_tile_names_file_hdu_tile_and_algorithm(tmp_path, at, new, reason):
    path, heap, spans = _hcompress_file(tmp_path)
    first = astropy_data(path)[0:4]
    blob = bytearray(path.read_bytes())
    start = heap + spans[2][1] + at
    blob[start : start + len(new)] = new
    path.write_bytes(bytes(blob))
    hdu = dfits.open(path)[1]
    np.testing.assert_array_equal(hdu.section[0:4], first)  # the other tiles still read
    with pytest.raises(DataError, match=rf"h\.fits.*HDU 1.*tile 2 .*HCOMPRESS_1.*{reason}"):
        hdu.data.compute()


def test_truncated_tile(tmp_path):
    path, _, spans = _hcompress_file(tmp_path)
    layout = dfits.open(path)[1].layout
    blob = bytearray(path.read_bytes())
    row = layout.data_offset + 1 * layout.tiles.row_bytes
    blob[row : row + 4] = np.array([spans[1][0] // 2], ">i4").tobytes()
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError, match=r"tile 1 .*HCOMPRESS_1.*ends before"):
        dfits.open(path)[1].section[5, 3]
