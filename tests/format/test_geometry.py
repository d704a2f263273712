"""Images numpy arrays cannot describe (issue 34's fuzz escapes): NAXIS 65 to 999, and empty
images whose other axes multiply past numpy's byte limit."""

from __future__ import annotations

import pytest

import dfits
from dfits import UnsupportedError
from dfits.format.geometry import MAX_RANK, check_shape
from tests.format import fitsgen as fg


def test_check_shape_accepts_numpy_limits():
    check_shape((1,) * MAX_RANK, 8, "x")
    check_shape((0, 2**60 - 1), 8, "x")  # just under 2**63 bytes over the non-zero axes
    check_shape((0, 2**63 - 1), 1, "x")


@pytest.mark.parametrize("shape", [(0, 2**60), (0, 2**61, 5), (10**26, 0)])
def test_check_shape_refuses_what_numpy_refuses(shape):
    import numpy as np

    with pytest.raises(ValueError, match=r"dimension|too big"):
        np.empty(shape, np.float64)
    with pytest.raises(UnsupportedError, match=r"x: axes .* 8-byte values"):
        check_shape(shape, 8, "x")


def test_empty_image_with_huge_axis_refuses_data(tmp_path):
    # fuzz seed 1 case 191: NAXIS1 = 0, NAXIS2 = 1e26 planned 1e26 one-row chunks (MemoryError)
    cards = fg.image_cards((10**26, 0), 8)
    path = fg.write(tmp_path / "huge.fits", fg.hdu(cards, b""))
    with dfits.open(path) as f:
        assert f[0].shape == (10**26, 0)
        for read in (lambda: f[0].data, lambda: f[0].raw, lambda: f[0].section[0:1, :]):
            with pytest.raises(UnsupportedError, match=r"huge\.fits.*HDU 0.*axes"):
                read()


@pytest.mark.parametrize("naxis", [65, 999])
def test_many_axes_open_and_refuse_data_naming_the_hdu(tmp_path, naxis):
    specs = fg.image_cards((1,) * naxis, 16)
    path = fg.write(tmp_path / "many.fits", fg.hdu(specs, b"\0\1"))  # one 16-bit value
    with dfits.open(path) as f:
        hdu = f[0]
        assert hdu.shape == (1,) * naxis
        assert hdu.header["NAXIS"] == naxis
        repr(hdu)
        f.info(output=False)
        reads = [lambda: hdu.data, lambda: hdu.raw, lambda: hdu.section[(0,) * naxis]]
        for read in reads:
            with pytest.raises(UnsupportedError, match=rf"many\.fits.*HDU 0.*NAXIS = {naxis}"):
                read()
