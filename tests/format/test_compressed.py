"""A compressed image HDU described as its image: the image header is rebuilt at open only
when the table holds cards that set the image's scaling, else on first use, with the same
cards either way."""

from __future__ import annotations

import numpy as np
import pytest

import dfits
from dfits.format.compressed import image_header_of


def _write(path, scaled: bool) -> None:
    from astropy.io import fits

    header = fits.Header()
    header["OBJECT"] = "M 13"
    data = np.arange(40, dtype=np.int16).reshape(5, 8)
    hdu = fits.CompImageHDU(data, header, tile_shape=(2, 8))
    if scaled:
        hdu.scale("int16", bscale=2.0, bzero=10.0)
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)


@pytest.mark.parametrize("scaled", [False, True], ids=["plain", "bscale"])
def test_image_header_built_when_needed_and_equal_to_astropy(tmp_path, scaled):
    from astropy.io import fits

    path = tmp_path / "c.fits"
    _write(path, scaled)
    hdu = dfits.open(path)[1]
    # opening rebuilt it only where its BSCALE/BZERO/BLANK were needed for the values
    assert (hdu.layout.image_header is not None) is scaled
    header = hdu.header
    assert image_header_of(hdu.layout) is header is hdu.header  # built once, then kept
    with fits.open(path) as f:
        want = [(c.keyword, c.value) for c in f[1].header.cards]
        values = f[1].data
    assert [(c.keyword, c.value) for c in header.cards if c.keyword != "END"] == want
    assert ("BSCALE" in header) is scaled
    np.testing.assert_array_equal(hdu.data.compute(), values)
    assert hdu.dtype == values.dtype


def test_other_hdus_have_no_image_header(tmp_path):
    path = tmp_path / "c.fits"
    _write(path, False)
    layout = dfits.open(path)[0].layout
    assert image_header_of(layout) is None


@pytest.mark.parametrize(
    "names",
    [["COMPRESSED_IMAGE", "SCI"], ["SCI", "OTHER"], ["COMPRESSED_IMAGE"], []],
    ids=["default-then-own", "two-own", "default", "none"],
)
def test_name_from_the_image_header_as_astropy(tmp_path, names):
    from astropy.io import fits

    path = tmp_path / "n.fits"
    _write(path, scaled=False)
    with fits.open(path, disable_image_compression=True) as f:
        table = f[1].header
        del table["EXTNAME"]
        for name in names:
            table.append(("EXTNAME", name), end=True)
        f.writeto(path, overwrite=True)
    with fits.open(path) as f:
        want, want_card = f[1].name, f[1].header.get("EXTNAME")
    f = dfits.open(path)
    assert f[1].name == want
    assert f[1].header.get("EXTNAME") == want_card
    assert f[want].index == 1
    rows = f.info(output=False)
    assert rows[1][1] == want
    assert len(rows[1]) == 7
