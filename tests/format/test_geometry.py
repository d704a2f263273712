"""Images with more axes than numpy arrays can have (issue 34's fuzz escape): NAXIS 65 to 999."""

from __future__ import annotations

import pytest

import dfits
from dfits import UnsupportedError
from dfits.format.geometry import MAX_RANK, check_rank
from tests.format import fitsgen as fg


def test_check_rank_accepts_numpy_limit():
    check_rank((1,) * MAX_RANK, "x")


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
