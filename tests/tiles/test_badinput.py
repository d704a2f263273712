"""Damaged tile-compressed images: every failure is a DfitsError naming the HDU and the tile,
never a crash, an out-of-bounds write or wrong values (issue 30's "Bad input" items not
covered in ``test_reader.py``)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import dfits
from dfits.errors import DataError, DfitsError, HeaderError
from tests.tiles.test_reader import _tile_file


def _descriptor(path, row: int) -> int:
    """The file offset of table row ``row``'s COMPRESSED_DATA descriptor (count, offset)."""
    layout = dfits.open(path)[1].layout
    return layout.data_offset + row * layout.tiles.row_bytes


def test_gzip_tile_inflating_to_the_wrong_length(tmp_path):
    # tile 1's stream replaced by a valid gzip stream of 10 bytes: not the tile's 4 x 40 values
    path, heap, spans = _tile_file(tmp_path, "GZIP_1")
    short = zlib.compress(bytes(10))
    count, offset = spans[1]
    assert len(short) <= count
    blob = bytearray(path.read_bytes())
    blob[heap + offset : heap + offset + len(short)] = short
    at = _descriptor(path, 1)
    blob[at : at + 4] = np.array([len(short)], ">i4").tobytes()
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError, match=r"HDU 1.*tile 1 .*GZIP_1.*10 bytes decoded"):
        dfits.open(path)[1].data.compute()


def test_file_truncated_inside_the_heap(tmp_path):
    path, heap, spans = _tile_file(tmp_path, "RICE_1")
    blob = path.read_bytes()
    count, offset = spans[-1]
    path.write_bytes(blob[: heap + offset + count // 2])
    with pytest.raises(DfitsError, match="HDU 1"):
        dfits.open(path)[1].data.compute()


def test_flipped_rice_bytes_give_an_error_or_a_right_sized_image(tmp_path):
    # 120 random byte flips in the heap, one file each: a DataError naming the tile, or an
    # image of the right shape (a flip in a stream that stays valid changes values, which
    # only a checksum can tell), never a crash. Low-entropy values, so that most flips break
    # a stream's structure (its unary codes) rather than a raw block's literal bits.
    from astropy.io import fits

    data = np.random.default_rng(3).integers(0, 8, (12, 40)).astype(np.int16)
    path = tmp_path / "low.fits"
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(4, 40))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    reader = dfits.open(path)[1]._block(raw=False)
    heap = reader.heap_offset
    end = heap + int(reader.descriptors.spans["COMPRESSED_DATA"].sum(axis=1).max())
    good = path.read_bytes()
    rng = np.random.default_rng(30)
    errors = []
    for k in range(120):
        blob = bytearray(good)
        at = int(rng.integers(heap, end))
        blob[at] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(blob))
        try:
            got = dfits.open(path)[1].data.compute()
        except DataError as err:
            errors.append(str(err))
        else:
            assert got.shape == data.shape, k
    assert len(errors) > 60
    assert all("HDU 1" in e and "RICE_1" in e and "tile " in e for e in errors)


def test_non_ascii_ttype_of_zscale_is_a_header_error(tmp_path, corpus):
    # fuzz seed 4 case 2600: a flipped bit put '\xa0' in the comment of TTYPE2 = 'ZSCALE'.
    # The card's value is unusable (DESIGN), the column was hidden and the quantised
    # integers came out as the image's values with only a warning. TTYPEn places the
    # tiles' numbers, so it is now an error naming the HDU and the keyword, at data access.
    blob = bytearray((corpus / "nom-tam-fits/m13real_rice.fits").read_bytes())
    at = blob.index(b"TTYPE2  = 'ZSCALE  '")
    blob[at + 70] = 0xA0
    path = tmp_path / "nbsp.fits"
    path.write_bytes(bytes(blob))
    with pytest.warns(dfits.DfitsWarning, match="printable ASCII"):
        f = dfits.open(path)
    assert f[1].kind == "compressed_image"
    with pytest.raises(HeaderError, match=r"nbsp\.fits.*HDU 1.*TTYPE2 card"):
        f[1].data  # noqa: B018


def test_nocompress_tile_bytes_disagreeing_with_the_tile_shape(tmp_path):
    # tile 1's column holds two bytes fewer than its 4 x 40 int16 values: no whole number of
    # values (the GZIP case, a stream inflating short, is the first test above)
    path, _, spans = _tile_file(tmp_path, "NOCOMPRESS")
    count = spans[1][0]
    blob = bytearray(path.read_bytes())
    at = _descriptor(path, 1)
    blob[at : at + 4] = np.array([count - 2], ">i4").tobytes()
    path.write_bytes(bytes(blob))
    hdu = dfits.open(path)[1]
    for read in (lambda: hdu.data.compute(), lambda: hdu.section[5, 3]):
        with pytest.raises(DataError, match=rf"HDU 1.*tile 1 .*NOCOMPRESS.*{count - 2} bytes"):
            read()
