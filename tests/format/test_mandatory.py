"""Mandatory keywords: the geometry they fix, errors naming the card, notes for oddities."""

from __future__ import annotations

import pytest

from dfits.errors import HeaderError
from dfits.format.header import Header
from dfits.format.mandatory import check_mandatory
from tests.format import fitsgen as fg


def _check(specs, primary=True, offset=0):
    notes: list[str] = []
    return check_mandatory(Header(fg.header(specs)), primary, offset, "f.fits[0]", notes), notes


def test_check_mandatory_reads_the_geometry():
    h = Header(fg.header(fg.image_cards((3, 4), 32, primary=False)))
    assert check_mandatory(h, False, 0, "x", notes := []) == (32, [4, 3], 0, 1)
    assert notes == []


@pytest.mark.parametrize(
    ("specs", "match"),
    [
        ([("SIMPLE", True), ("NAXIS", 0)], "mandatory keyword BITPIX missing .* offset 2880"),
        ([("SIMPLE", True), ("BITPIX", 12), ("NAXIS", 0)], r"BITPIX = 12 at offset 2960"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", -1)], "NAXIS = -1"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", 2.5)], "NAXIS1 = 2.5"),
        (
            [("SIMPLE", True), ("BITPIX", 8), ("BITPIX", 16), ("NAXIS", 0)],
            r"BITPIX appears 2 times \(offsets \[2960, 3040\], values \[8, 16\]\)",
        ),
        ([("SIMPLE", True), b"BITPIX  =                   \xe98", ("NAXIS", 0)], "BITPIX at"),
    ],
    ids=["missing", "illegal-bitpix", "naxis", "naxisn", "duplicated", "bad-bytes"],
)
def test_errors_name_the_card(specs, match):
    with pytest.raises(HeaderError, match=f"f.fits\\[0\\]: .*{match}"):
        _check(specs, offset=2880)


def test_oddities_become_notes():
    got, notes = _check([("SIMPLE", False), ("NAXIS", 0), ("BITPIX", 8), ("OBJECT", "x")])
    assert got == (8, [], 0, 1)
    assert any("SIMPLE = False" in n for n in notes)
    assert any("out of order" in n for n in notes)
    ext, notes = _check([("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 0)], primary=False)
    assert ext == (8, [], 0, 1)
    assert any("PCOUNT and GCOUNT missing" in n for n in notes)
