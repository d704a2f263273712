from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

from dfits.io.writer import ImageWriter, format_card


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
