"""Repeated and odd scaling keywords (issue 34's fuzz escapes): values equal astropy's data."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits import DfitsWarning
from tests.format import fitsgen as fg


def _astropy(path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as hdul:
            return np.asarray(hdul[0].data)


def _dfits(path) -> tuple[np.ndarray, np.ndarray]:
    with dfits.open(path) as f:
        return f[0].data.compute(), f[0].section[:]


@pytest.mark.parametrize("key", ["BSCALE", "BZERO", "BLANK"])
def test_repeated_scaling_card_uses_the_last_as_astropy(tmp_path, key):
    first, last = {"BSCALE": (2.0, 3.0), "BZERO": (1.0, 5.0), "BLANK": (1, 2)}[key]
    base = {"BSCALE": ("BSCALE", 0.5), "BZERO": ("BZERO", 1.0), "BLANK": ("BLANK", 7)}
    extra = [card for name, card in base.items() if name != key]
    extra += [(key, first), ("COMMENT", "between"), (key, last)]
    path = fg.write(tmp_path / "dup.fits", fg.image_file((3, 4), 16, extra=extra))
    message = f"{key} appears 2 times ({first!r}, {last!r}); the last, {last!r}, applies"
    with pytest.warns(DfitsWarning, match=re.escape(message)):
        data, section = _dfits(path)
    want = _astropy(path)
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
    assert data.dtype == want.dtype


def test_float_literal_blank_is_ignored_on_scaled_data_as_astropy(tmp_path):
    # HiPS tiles write BLANK = -32768.0: not an integer, so not a BLANK (standard, astropy 8)
    values = np.array([[-32768, 0], [1, 2]])
    extra = [("BSCALE", 2.0), ("BZERO", 1.0), "BLANK   =             -32768.0"]
    blob = fg.image_file((2, 2), 16, extra=extra, values=values)
    path = fg.write(tmp_path / "hips.fits", blob)
    with pytest.warns(DfitsWarning, match=re.escape("BLANK = -32768.0 is not an integer; ignored")):
        data, _ = _dfits(path)
    want = _astropy(path)
    np.testing.assert_array_equal(data, want)
    assert not np.isnan(data).any()


def test_hierarch_bscale_scales_nothing_as_astropy(tmp_path):
    # fuzz case (34, 42): a HIERARCH card is not the reserved keyword it spells
    blob = fg.image_file((2, 3), -64, extra=["HIERARCH BSCALE = 2.0"])
    path = fg.write(tmp_path / "hierarch.fits", blob)
    data, section = _dfits(path)
    want = _astropy(path)
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
    np.testing.assert_array_equal(want, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("keyword", ["BLaNK", "bscale", "Bzero"])
def test_lower_case_scaling_keyword_applies_as_astropy(tmp_path, keyword):
    # fuzz seed 33 case 13160: header["BLANK"] found 'BLaNK' but the decode ignored it
    value = {"BLANK": "3", "BSCALE": "2.0", "BZERO": "1.0"}[keyword.upper()]
    blob = fg.image_file((2, 3), 8, extra=[f"{keyword:<8}= {value:>20}"])
    path = fg.write(tmp_path / "case.fits", blob)
    data, section = _dfits(path)
    want = _astropy(path)
    assert data.dtype == want.dtype
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
    assert not np.array_equal(want, np.arange(6).reshape(2, 3))  # the card did apply


@pytest.mark.parametrize(
    ("bitpix", "blank", "scaling"),
    [(8, 1000, []), (8, -1, []), (16, 40000, []), (16, 40000, [("BSCALE", 2.0)])],
)
def test_blank_outside_the_type_matches_nothing_but_makes_floats_as_astropy(
    tmp_path, bitpix, blank, scaling
):
    # fuzz seed 1 case 2268: BITPIX = 8, BLANK = 1000 read as uint8; astropy's data is float32
    values = np.array([[0, 1, 2], [3, 4, 5]])
    blob = fg.image_file((2, 3), bitpix, extra=[*scaling, ("BLANK", blank)], values=values)
    path = fg.write(tmp_path / "blank.fits", blob)
    with pytest.warns(DfitsWarning, match=rf"BLANK = {blank} outside the range.*matches no value"):
        data, section = _dfits(path)
    want = _astropy(path)
    assert data.dtype == want.dtype
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
    assert not np.isnan(data).any()


@pytest.mark.parametrize("logical", ["T", "F"])
@pytest.mark.parametrize("scaling", [[], [("BSCALE", 2.0)]], ids=["raw", "scaled"])
def test_logical_blank_is_not_a_blank(tmp_path, logical, scaling):
    # fuzz seed 2 case 1204: BLANK = T. The standard makes BLANK an integer; astropy takes
    # T as 1 (a Python bool is an int) and blanks every 1. dfits ignores it, with a warning:
    # astropy's data read with ignore_blank=True.
    values = np.array([[0, 1, 2], [1, 4, 5]])
    extra = [*scaling, f"BLANK   = {logical:>20}"]
    path = fg.write(tmp_path / "t.fits", fg.image_file((2, 3), 16, extra=extra, values=values))
    with pytest.warns(DfitsWarning, match=r"BLANK = (True|False) is not an integer; ignored"):
        data, section = _dfits(path)
    with fits.open(path, ignore_blank=True) as hdul:
        want = np.asarray(hdul[0].data)
    assert data.dtype == want.dtype.newbyteorder("=")
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
    assert not np.isnan(data).any()


def test_repeated_bscale_last_applies_whatever_else_the_header_holds(tmp_path):
    # fuzz seed 1 case 7709: a COMMENT with non-ASCII bytes sends astropy to its full header
    # parser, whose data then takes the *first* BSCALE; without it astropy takes the last.
    # dfits takes the last either way (DESIGN), equal to astropy on the clean header.
    values = np.array([[1, 2, 3], [4, 5, 6]])
    extra = [("BSCALE", 2.0), ("COMMENT", "between"), ("BSCALE", 3.0)]
    clean = fg.write(tmp_path / "clean.fits", fg.image_file((2, 3), 16, extra=extra, values=values))
    blob = bytearray(clean.read_bytes())
    at = blob.index(b"COMMENT between")
    blob[at + 20 : at + 22] = b"\x80\x7f"
    odd = fg.write(tmp_path / "odd.fits", bytes(blob))
    for path in (clean, odd):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            data, section = _dfits(path)
        assert any("BSCALE appears 2 times" in str(w.message) for w in seen)
        np.testing.assert_array_equal(data, values * 3.0)
        np.testing.assert_array_equal(section, values * 3.0)
    np.testing.assert_array_equal(_astropy(clean), values * 3.0)


# -- scaling cards of the wrong type (issue 51) -------------------------------------------------
#: value fields of the wrong type: no value at all, empty and blank strings, text, logicals
WRONG = {
    "undefined": b"",
    "empty": b"''",
    "blank": b"'   '",
    "string": b"'abc'",
    "number-text": b"'2.0'",
    "true": b"T",
    "false": b"F",
}


def _wrong_card(key: str, kind: str) -> bytes:
    value = WRONG[kind]
    return (f"{key:<8}=".encode() + (b" " + value.rjust(20) if value else b"")).ljust(80)


def _three_hdus(bad: bytes, at: int) -> bytes:
    """A primary int16 image, an int32 and a float32 extension; ``bad`` in HDU ``at``."""
    values = np.arange(6).reshape(2, 3)
    specs = [((2, 3), 16, True), ((2, 3), 32, False), ((3, 2), -32, False)]
    return fg.fits_file(
        *(
            fg.image_hdu(shape, bitpix, primary=primary, values=values.reshape(shape),
                         extra=[("EXTNAME", f"E{i}")] + ([bad.decode()] if i == at else []))
            for i, (shape, bitpix, primary) in enumerate(specs)
        )
    )  # fmt: skip


@pytest.mark.parametrize("at", [0, 1])
@pytest.mark.parametrize("kind", list(WRONG))
@pytest.mark.parametrize("key", ["BSCALE", "BZERO"])
def test_scaling_card_of_the_wrong_type_is_a_header_error_at_data_access(tmp_path, key, kind, at):
    path = fg.write(tmp_path / "w.fits", _three_hdus(_wrong_card(key, kind), at))
    with dfits.open(path) as f:
        hdu = f[at]
        assert key in hdu.header  # the header stays readable
        assert hdu.raw.compute().shape == hdu.shape  # so do the stored values
        named = rf"w\.fits', HDU {at} \('E{at}'\): {key} (has no value|= .* is not a number)"
        with pytest.raises(dfits.HeaderError, match=named):
            hdu.data  # noqa: B018
        with pytest.raises(dfits.HeaderError, match=named):
            hdu.section[:1]
        with warnings.catch_warnings(), fits.open(path) as want:
            warnings.simplefilter("ignore")
            for other in {0, 1, 2} - {at}:  # the rest of the file reads as astropy's
                np.testing.assert_array_equal(f[other].data.compute(), want[other].data)


@pytest.mark.parametrize("kind", ["undefined", "empty", "blank", "string", "number-text"])
def test_blank_card_of_the_wrong_type_is_ignored_with_a_warning(tmp_path, kind):
    values = np.array([[0, 1, 2], [3, 4, 5]])
    extra = [_wrong_card("BLANK", kind).decode()]
    path = fg.write(tmp_path / "b.fits", fg.image_file((2, 3), 16, extra=extra, values=values))
    message = r"BLANK (has no value \(nothing follows '='\)|= .* is not an integer); ignored"
    with pytest.warns(DfitsWarning, match=message):
        data, section = _dfits(path)
    want = _astropy(path)  # astropy ignores them too
    assert data.dtype == want.dtype.newbyteorder("=") == np.dtype("int16")
    np.testing.assert_array_equal(data, want)
    np.testing.assert_array_equal(section, want)
