"""The image header of a compressed image equals astropy's ``CompImageHDU.header``."""

from __future__ import annotations

import warnings

import pytest

from dfits.format.cards import format_card
from dfits.format.header import Header
from dfits.format.zheader import image_header

COMPRESSED = [
    "astropy/comp.fits",
    "astropy/compressed_float_bzero.fits",
    "astropy/compressed_image.fits",
    "astropy/compressed_with_nan.fits",
    "astropy/double_ext.fits",
    "astropy/m13_gzip.fits",
    "astropy/m13_hcomp.fits",
    "astropy/m13_plio.fits",
    "astropy/m13_rice.fits",
    "fitsio/test_gzip_compressed_image.fits.fz",
    "fitsio/test_rice_dither2_seed42.fits.fz",
    "nom-tam-fits/m13real_rice.fits",
]


def _cards(header) -> list[tuple[str, object]]:
    return [(c.keyword, c.value) for c in header.cards if c.keyword != "END"]


@pytest.mark.parametrize("name", COMPRESSED)
def test_corpus_headers_equal_astropy(corpus, name):
    from astropy.io import fits

    import dfits

    path = corpus / name
    hdu = dfits.open(path)[1]
    assert hdu.kind == "compressed_image"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as f:
            want = [(c.keyword, c.value) for c in f[1].header.cards]
    assert _cards(hdu.header) == want


def _table(*cards: tuple) -> Header:
    base = [
        ("XTENSION", "BINTABLE"), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 8), ("NAXIS2", 1),
        ("PCOUNT", 0), ("GCOUNT", 1), ("TFIELDS", 2), ("TTYPE1", "COMPRESSED_DATA"),
        ("TFORM1", "1PB(0)"), ("TTYPE2", "ZBLANK"), ("TFORM2", "1J"), ("ZIMAGE", True),
        ("ZTENSION", "IMAGE", "ext"), ("ZBITPIX", 16), ("ZNAXIS", 1), ("ZNAXIS1", 4),
        ("ZTILE1", 4), ("ZCMPTYPE", "RICE_1"), ("ZNAME1", "BLOCKSIZE"), ("ZVAL1", 32),
    ]  # fmt: skip
    return Header(b"".join(format_card(*c) for c in [*base, *cards]) + b"END".ljust(80))


def test_written_header_matches_astropy(tmp_path):
    import numpy as np
    from astropy.io import fits

    import dfits

    header = fits.Header()
    header["OBJECT"] = "M 13"
    header["HISTORY"] = "written by a test"
    data = np.arange(40, dtype=np.int16).reshape(5, 8)
    hdu = fits.CompImageHDU(data, header, name="SCI", tile_shape=(2, 8))
    hdu.scale("int16", bscale=2.0, bzero=10.0)
    path = tmp_path / "c.fits"
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path, checksum=True)
    with fits.open(path) as f:
        want = [(c.keyword, c.value) for c in f[1].header.cards]
    assert _cards(dfits.open(path)[1].header) == want


def test_zblank_column_without_keyword_defaults_blank():
    got, notes = image_header(_table(("OBJECT", "x")))
    assert got["BLANK"] == -32768
    assert notes == [
        "Setting default value -32768 for missing BLANK keyword in compressed extension"
    ]
    assert got["XTENSION"] == "IMAGE"
    assert got.comments["XTENSION"] == "ext"
    assert (got["BITPIX"], got["NAXIS"], got["NAXIS1"], got["PCOUNT"], got["GCOUNT"]) == (
        16, 1, 4, 0, 1,
    )  # fmt: skip
    assert not any(k.startswith(("Z", "T")) for k in got)


def test_repeated_bzero_reaches_the_image_last_applies_as_astropy(tmp_path):
    # fuzz seed 3 case 4216: a second BZERO in a compressed image's table header; the image
    # header kept only the first, silently
    import numpy as np
    from astropy.io import fits

    import dfits

    values = np.arange(12, dtype=np.uint16).reshape(3, 4) + 40000
    path = tmp_path / "c.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(values)]).writeto(path)
    blob = bytearray(path.read_bytes())
    end = blob.index(b"END" + b" " * 77, 2880)
    assert blob[end + 80 : end + 160] == b" " * 80  # room for one more card in the block
    blob[end : end + 160] = format_card("BZERO", 100).ljust(80) + b"END".ljust(80)
    path.write_bytes(bytes(blob))
    # astropy's data takes the first or the last depending on its header parser; DESIGN's
    # rule is the last, which is astropy's data once the first is made a COMMENT card
    first = blob.index(b"BZERO   =", 2880)
    blob[first : first + 8] = b"COMMENT "
    (tmp_path / "last.fits").write_bytes(bytes(blob))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(tmp_path / "last.fits") as hdul:
            want = np.asarray(hdul[1].data)
        with dfits.open(path) as f:
            got = f[1].data.compute()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, values.astype(np.float32) - 32768 + 100)


def test_repeated_scaling_cards_after_a_long_string(tmp_path):
    # fuzz seed 8 case 9463: CONTINUE cards before the BZERO cards made their 80-byte
    # positions differ from their card numbers; the image header asked for a card past the
    # end (IndexError) or would have copied the wrong one
    long = format_card("OBJECT", "x" * 60 + "&") + b"CONTINUE  'y'".ljust(80)
    table = Header(
        b"".join(format_card(*c) for c in [("XTENSION", "BINTABLE"), ("BITPIX", 8)])
        + long
        + _table(("BZERO", 5), ("BZERO", 7)).tostring()[160:]
    )
    got, _ = image_header(table)
    assert got.count("BZERO") == 2
    assert (got["BZERO", 0], got["BZERO", 1]) == (5, 7)
    assert got["OBJECT"] == "x" * 60 + "y"
