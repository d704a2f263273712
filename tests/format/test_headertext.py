"""The fits_header attribute: one card a line in xarray's reprs, the same header back."""

from __future__ import annotations

import numpy as np
import xarray as xr
from astropy.io import fits

from dfits.format.headertext import card_text, readable_header


def test_header_attr_is_one_card_a_line_and_round_trips(tmp_path):
    path = tmp_path / "h.fits"
    header = fits.Header()
    header["OBJECT"] = "NGC 1333"
    header["HISTORY"] = "x" * 70
    header["COMMENT"] = "a comment that is long enough to have wrapped mid-word before"
    fits.PrimaryHDU(np.zeros((3, 4), ">f4"), header).writeto(path)
    da = xr.open_dataarray(path, engine="dfits")
    text = da.attrs["fits_header"]
    lines = text.split("\n")
    assert lines[0].startswith("SIMPLE  =")
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)
    assert "END" not in lines
    assert list(da.attrs)[-1] == "fits_header"  # the short attributes show first
    ref = fits.getheader(path)
    assert dict(da.fits.header.to_astropy()) == dict(ref)
    html = da._repr_html_()
    assert "OBJECT  = &#x27;NGC 1333&#x27;" in html or "OBJECT  = 'NGC 1333'" in html
    assert card_text(text) == ref.tostring()[: len(card_text(text))]


def test_card_text_reads_the_older_80_column_layout():
    cards = "SIMPLE  =                    T".ljust(80) + "END".ljust(80)
    assert card_text(cards) == cards
    assert card_text(readable_header(cards)) == cards
