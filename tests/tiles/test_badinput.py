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


# -- scaling and Z cards of the wrong type (issue 51) -------------------------------------------
_WRONG = {"undefined": b"", "empty": b"''", "string": b"'abc'", "logical": b"T"}


def _three(compression: str) -> tuple[bytes, int]:
    """An int16 primary image, a compressed image (int16 GZIP_1, or quantised float32 RICE_1,
    ZSCALE/ZZERO columns) and an int32 extension; the bytes and where HDU 1's header starts."""
    import io

    from astropy.io import fits

    if compression == "GZIP_1":
        values = np.arange(16 * 20, dtype=np.int16).reshape(16, 20)
    else:
        values = np.linspace(0, 1, 16 * 20, dtype=np.float32).reshape(16, 20)
    hdus = [
        fits.PrimaryHDU(np.arange(6, dtype=np.int16)),
        fits.CompImageHDU(values, compression_type=compression, tile_shape=(4, 20)),
        fits.ImageHDU(np.arange(12, dtype=">i4").reshape(3, 4), name="DQ"),
    ]
    buf = io.BytesIO()
    fits.HDUList(hdus).writeto(buf)
    return buf.getvalue(), 5760


def _set_card(blob: bytes, start: int, image: bytes) -> bytes:
    """``blob`` whose header at ``start`` holds ``image`` (80 bytes) in place of the card of
    the same keyword, or before END (into the block's blank padding)."""
    key = image[:8]
    at = start
    while blob[at : at + 80] != b"END".ljust(80):
        if blob[at : at + 8] == key:
            return blob[:at] + image + blob[at + 80 :]
        at += 80
    assert blob[at + 80 : at + 160] == b" " * 80, "no room before the block's end"
    return blob[:at] + image + b"END".ljust(80) + blob[at + 160 :]


def _wrong(key: str, kind: str) -> bytes:
    value = _WRONG[kind]
    return (f"{key:<8}=".encode() + (b" " + value.rjust(20) if value else b"")).ljust(80)


def _check_rest_reads(clean: bytes, f, hdu: int) -> None:
    """Every HDU but ``hdu`` reads as astropy's of the ``clean`` file (astropy may fail on
    the damaged one, `ZQUANTIZ  =` a KeyError); ``hdu``'s header stays readable."""
    import io
    import warnings

    from astropy.io import fits

    assert f[hdu].header.ncards > 0
    assert f[hdu].kind == "compressed_image"
    with warnings.catch_warnings(), fits.open(io.BytesIO(clean)) as want:
        warnings.simplefilter("ignore")
        for other in {0, 1, 2} - {hdu}:
            np.testing.assert_array_equal(f[other].data.compute(), want[other].data)


@pytest.mark.parametrize("kind", list(_WRONG))
@pytest.mark.parametrize(
    "key", ["ZSCALE", "ZZERO", "ZBLANK", "ZDITHER0", "ZQUANTIZ", "BSCALE", "BZERO"]
)
@pytest.mark.parametrize("compression", ["GZIP_1", "RICE_1"], ids=["int16", "quantised"])
def test_z_or_scaling_keyword_of_the_wrong_type(tmp_path, compression, key, kind):
    # the escape of issue 51: `ZSCALE  =` in a GZIP_1 integer image's header reached the
    # dequantiser as None (a TypeError); every such value is a HeaderError naming the card
    blob, start = _three(compression)
    path = tmp_path / "z.fits"
    path.write_bytes(_set_card(blob, start, _wrong(key, kind)))
    with dfits.open(path) as f:
        named = rf"z\.fits', HDU 1 \('COMPRESSED_IMAGE'\): {key}\b"
        for read in (lambda: f[1].data, lambda: f[1].section[:2]):
            with pytest.raises(HeaderError, match=named):
                read()
        _check_rest_reads(blob, f, 1)


@pytest.mark.parametrize("tform", ["1L", "1A", "1X"])
@pytest.mark.parametrize("column", ["ZSCALE", "ZZERO"])
def test_quantisation_cells_of_the_wrong_type(tmp_path, column, tform):
    # a ZSCALE/ZZERO column of logicals, characters or bits: its 1-byte cells were read as
    # the 8 bytes of a double, taking the next field's bytes as the tiles' scale
    blob, start = _three("RICE_1")
    at = blob.index(f"'{column}".encode(), start) - 10  # the TTYPEn card
    n = blob[at + 5 : at + 8].strip().decode()
    form = blob.index(f"TFORM{n}".ljust(8).encode(), start)
    image = f"TFORM{n}".ljust(8).encode() + f"= '{tform}'".encode()
    path = tmp_path / "cells.fits"
    path.write_bytes(blob[:form] + image.ljust(80) + blob[form + 80 :])
    with dfits.open(path) as f:
        named = rf"cells\.fits', HDU 1 .*TTYPE{n} = '{column}', TFORM{n} = '{tform}'"
        with pytest.raises(HeaderError, match=named):
            f[1].data  # noqa: B018
        _check_rest_reads(blob, f, 1)
