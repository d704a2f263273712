from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

from dfits.format.dtypes import BITPIX_TO_STORED
from dfits.io.writer import ImageWriter, format_card, header_bytes

BITPIX_OF = {dtype: bitpix for bitpix, dtype in BITPIX_TO_STORED.items()}


def test_written_file_reads_back_in_astropy(tmp_path):
    path = tmp_path / "w.fits"
    data = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    with ImageWriter(
        path, data.shape, ">i2", [("BSCALE", 0.5), ("OBJECT", "M 1's"), ("FLAG", True)]
    ) as out:
        out.write(data[:1])
        out.write(data[1:])
    assert path.stat().st_size % 2880 == 0
    with fits.open(path) as hl:
        np.testing.assert_array_equal(hl[0].data, data * np.float32(0.5))
        assert hl[0].header["OBJECT"] == "M 1's"
        assert hl[0].header["FLAG"] is True


def test_failure_leaves_no_partial_file(tmp_path):
    path = tmp_path / "good.fits"
    path.write_bytes(b"previous content")

    def interrupted():
        with ImageWriter(path, (4, 4), ">f4") as out:
            out.write(np.zeros((2, 4), np.float32))
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        interrupted()
    assert path.read_bytes() == b"previous content"
    assert list(tmp_path.iterdir()) == [path]


def test_short_data_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "short.fits"
    with pytest.raises(ValueError, match="wrote 32 of 64"), ImageWriter(path, (4, 4), ">f4") as out:
        out.write(np.zeros((2, 4), np.float32))
    assert not path.exists()


def test_cards_are_80_ascii_chars():
    assert len(format_card("CRVAL1", 83.8221)) == 80
    with pytest.raises(ValueError, match="non-ASCII"):
        format_card("OBJECT", "café")


@pytest.mark.parametrize("stored", [">u1", ">i2", ">i4", ">i8", ">f4", ">f8", "<f8", "=i2"])
def test_every_bitpix_round_trips(tmp_path, stored):
    path = tmp_path / "b.fits"
    data = np.arange(12).reshape(3, 4).astype(stored)
    with ImageWriter(path, data.shape, stored) as out:
        out.write(data)
    with fits.open(path) as hl:
        assert hl[0].header["BITPIX"] == BITPIX_OF[np.dtype(stored).newbyteorder(">")]
        np.testing.assert_array_equal(hl[0].data, data)


def test_unwritable_dtype_is_refused(tmp_path):
    with pytest.raises(ValueError, match="uint16"):
        ImageWriter(tmp_path / "u.fits", (2, 2), np.uint16)


def test_cards_come_from_the_format_layer():
    from dfits.format import cards

    assert format_card is cards.format_card
    assert header_bytes is cards.format_header
