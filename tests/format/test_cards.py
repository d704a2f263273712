from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.format.cards import (
    find_end,
    format_card,
    format_header,
    format_value,
    is_printable,
    parse_card,
    parse_keyword,
    parse_value,
)
from tests.format import fitsgen as fg
from tests.format.checks import check_card

PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)
KEYWORD = st.from_regex(r"[A-Z][A-Z0-9_-]{0,7}", fullmatch=True).filter(
    lambda k: k not in {"COMMENT", "HISTORY", "CONTINUE", "HIERARCH", "END"}
)
COMMENT = st.none() | st.text(PRINTABLE, max_size=30).map(str.strip)

#: Cards astropy reads one way or another, written by hand: free-format numbers, D
#: exponents, odd quoting, missing values, non-standard keywords.
CARDS = [
    "SIMPLE  =                    T / conforms",
    "BZERO   =  9223372036854775808",
    "NAXIS1  =                 00012",
    "CRVAL1  =  1.0D+03 / D exponent",
    "CRVAL2  = -1.5d-3",
    "CRVAL3  = - 5",
    "CRVAL4  = 1 E 3",
    "CRVAL5  = .5",
    "CRVAL6  = 5.",
    "CRVAL7  = -0.0",
    "CRVAL8  = 1.5E400",
    "CPLX    = (1, 2)",
    "CPLX2   = (1.5, -2E3) / complex",
    "OBJECT  = 'it''s  '           / quoted quote",
    "EMPTY   = ''",
    "BLANKS  = '    '",
    "LEADING = '  a'",
    "SLASH   = 'a /b' / c",
    "QUOTE   = 'a'b' / c",
    "TSTR    = 'T'",
    "CLOSE   = 'abc'/cmt",
    "INTCMT  = 1/cmt",
    "NOCMT   = 1 /",
    "UNDEF   =",
    "UNDEF2  =   / only a comment",
    "lower   = 1",
    " LEAD   = 5",
    "DATE-OBS= '2020-01-01'",
    "FO=O    = 5",
    "NOVALUE  bar",
    "NOEQ=1",
    "EQ10     = 5",
    "COMMENT   hello  ",
    "HISTORY x",
    "        blank card text",
    "",
    "END",
    "CONTINUE  'orphan'",
    "HIERARCH long.key.name = 5",
    "HIERARCH ESO DET CHIP = 'x' / chip",
    "HIERARCH ESO TEL AIRM START = 1.2",
    "DP1     = 'AXIS.1: 1'",
    # astropy refuses these values; dfits keeps the text (valid=False)
    "BAD1    = abc / junk",
    "BAD2    = 'abc",
    "BAD3    = t",
    "BAD4    = 1 2",
    "BAD5    = NaN",
    "BAD6    = 1_000",
    "BAD7    = 'a' junk",
    "BAD8    = T F",
    "BAD9    = 0x10",
]


@pytest.mark.parametrize("image", CARDS, ids=[c[:8].strip() or "blank" for c in CARDS])
def test_card_matches_astropy(image):
    image = image.ljust(80)
    check_card(parse_card(image), fits.Card.fromstring(image))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  42 / answer", (42, "answer", True)),
        ("1.0D+03", (1000.0, "", True)),
        ("'it''s  '", ("it's", "", True)),
        ("T", (True, "", True)),
        ("(1, -2.5)", (1 - 2.5j, "", True)),
        ("", (None, "", True)),
        ("  / c", (None, "c", True)),
        ("abc / junk", ("abc", "junk", False)),
        ("12345678901234567890123", (12345678901234567890123, "", True)),
    ],
)
def test_parse_value(text, expected):
    assert parse_value(text) == expected


def test_big_integers_stay_python_ints():
    value = parse_card("BZERO   =  9223372036854775808").value
    assert value == 2**63
    assert type(value) is int


def test_bytes_and_str_images_agree():
    image = "EXPTIME =               1200.5 / seconds"
    assert parse_card(image.encode()) == parse_card(image.ljust(80))


def test_short_image_is_padded():
    assert parse_card("NAXIS   = 2").image == "NAXIS   = 2".ljust(80)


def test_non_ascii_card_kept_raw():
    card = parse_card("OBSERVER= 'Ren\xe9e' / name".encode("latin-1").ljust(80))
    assert not card.valid
    assert card.keyword == "OBSERVER"
    assert card.value == "'Ren\xe9e' / name"
    assert card.image.encode("latin-1")[:20] == b"OBSERVER= 'Ren\xe9e' / "


def test_control_character_makes_card_raw():
    card = parse_card(b"NAXIS   =                    2\t".ljust(80))
    assert not card.valid


def test_is_printable():
    assert is_printable(bytes(range(32, 127)))
    assert not is_printable(b"\x7f")
    assert not is_printable(b"\x00")


def test_parse_keyword():
    assert parse_keyword("naxis1  = 3") == "NAXIS1"
    assert parse_keyword("HIERARCH Foo.Bar = 1") == "Foo.Bar"
    assert parse_keyword("COMMENT = x") == "COMMENT"


def test_continue_long_string_matches_astropy():
    value = "x" * 70 + "it''s" + "y" * 100
    image = fits.Card("LONGSTR", value.replace("''", "'"), "a comment").image
    assert len(image) > 80
    card = parse_card(image)
    assert card.value == value.replace("''", "'")
    check_card(card, fits.Card.fromstring(image))


def test_continue_after_non_string_keeps_first_value():
    image = "NUM     = 5".ljust(80) + "CONTINUE  'zz'".ljust(80)
    card = parse_card(image)
    assert (card.value, card.valid) == (5, False)


def test_repr_is_short():
    assert repr(parse_card("NAXIS   = 2")) == "Card(keyword='NAXIS', value=2, comment='', ...)"


# -- generated cards ------------------------------------------------------------------------
def _check(keyword, value, comment):
    try:
        image = fg.card(keyword, value, comment)
    except ValueError:  # longer than a card
        return
    check_card(parse_card(image), fits.Card.fromstring(image.decode()))


@given(KEYWORD, st.integers(-(10**30), 10**30) | st.booleans(), COMMENT)
def test_generated_int_and_bool_cards(keyword, value, comment):
    _check(keyword, value, comment)


@given(KEYWORD, st.floats(allow_nan=False, allow_infinity=False), COMMENT)
def test_generated_float_cards(keyword, value, comment):
    _check(keyword, value, comment)
    _check(keyword, fg.format_value(value).replace("E", "D").encode(), comment)


@given(KEYWORD, st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e30))
def test_generated_complex_cards(keyword, value):
    _check(keyword, value, None)


@given(KEYWORD, st.text(PRINTABLE, max_size=60), COMMENT)
def test_generated_string_cards(keyword, value, comment):
    _check(keyword, value, comment)


@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{8,20}", fullmatch=True), st.integers(-999, 999))
def test_generated_hierarch_cards(keyword, value):
    _check(keyword, value, None)


@pytest.mark.filterwarnings("ignore:Card is too long")
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(KEYWORD, st.text(PRINTABLE, min_size=60, max_size=400), st.text(PRINTABLE, max_size=150))
def test_generated_continue_cards(keyword, value, comment):
    image = fits.Card(keyword, value, comment.strip()).image
    check_card(parse_card(image), fits.Card.fromstring(image))


@given(st.text(PRINTABLE, min_size=80, max_size=80))
def test_any_printable_card_matches_astropy_or_is_marked(image):
    # dfits reads lower-case HIERARCH cards (astropy refuses their values) and plain
    # record-valued cards; everything else must agree exactly.
    if image[:8].strip().upper() == "HIERARCH" and image[:8] != "HIERARCH":
        return
    check_card(parse_card(image), fits.Card.fromstring(image))


@given(
    KEYWORD, st.text(PRINTABLE, max_size=70) | st.text("'/ TF()0123456789.+-EDed,&x", max_size=70)
)
def test_any_value_field_matches_astropy_or_is_marked(keyword, field):
    image = f"{keyword:<8}= {field}".ljust(80)
    check_card(parse_card(image), fits.Card.fromstring(image))


# -- writing: format_card is parse_card's inverse, and astropy reads what it writes ----------
def _round_trip(keyword, value, comment=""):
    image = format_card(keyword, value, comment)
    assert len(image) == 80
    card = parse_card(image)
    assert card.valid
    check_card(card, fits.Card.fromstring(image.decode("ascii")))
    assert card.comment == comment.strip()
    return card


@given(KEYWORD, st.integers(-(10**18), 10**18) | st.booleans(), COMMENT.map(lambda c: c or ""))
def test_format_int_and_bool_round_trip(keyword, value, comment):
    card = _round_trip(keyword, value, comment)
    assert card.value == value
    assert type(card.value) is type(value)


@given(KEYWORD, st.floats(allow_nan=False, allow_infinity=False))
def test_format_float_round_trip(keyword, value):
    card = _round_trip(keyword, value)
    assert isinstance(card.value, float)
    if len(repr(value)) <= 20:
        assert card.value == value  # exact whenever 20 columns hold the shortest form
    else:
        assert card.value == pytest.approx(value, rel=1e-12, abs=0)


@given(KEYWORD, st.text(PRINTABLE, max_size=60), COMMENT.map(lambda c: c or ""))
def test_format_string_round_trip(keyword, value, comment):
    text = f"{keyword:<8}= {format_value(value)}" + (f" / {comment}" if comment else "")
    if len(text) > 80:
        with pytest.raises(ValueError, match="80 characters"):
            format_card(keyword, value, comment)
        return
    card = _round_trip(keyword, value, comment)
    assert card.value == value.rstrip()  # trailing blanks are not significant in FITS


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (True, "T".rjust(20)),
        (np.bool_(False), "F".rjust(20)),
        (np.int16(-3), "-3".rjust(20)),
        (np.uint64(2**63), str(2**63).rjust(20)),
        (0.1, "0.1".rjust(20)),
        (100.0, "100.0".rjust(20)),
        (1e22, "1E+22".rjust(20)),
        (1e-5, "1E-05".rjust(20)),
        (np.float32(0.5), "0.5".rjust(20)),
        (-1.2345678901234567e-300, "-1.234567890123E-300"),  # rounded to fit 20 columns
        (3 + 4j, "(3.0, 4.0)".rjust(20)),
        (None, " " * 20),
        ("M 1's", "'M 1''s  '"),
        ("", "'        '"),
    ],
    ids=repr,
)
def test_format_value(value, field):
    assert format_value(value) == field


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("OBJECT", "café"), "non-ASCII"),
        (("OBJECT", "tab\there"), "non-ASCII"),
        (("TOOLONGKEY", 1), "keyword"),
        (("ESO DET", 1), "keyword"),
        (("OBJECT", "x" * 70), "80 characters"),
        (("CRVAL1", float("nan")), "nan"),
        (("CRVAL1", float("inf")), "inf"),
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else v,
)
def test_format_card_refuses(args, match):
    with pytest.raises(ValueError, match=match):
        format_card(*args)


def test_format_value_refuses_other_types():
    with pytest.raises(TypeError, match="list"):
        format_value([1, 2])


def test_format_commentary_and_end_cards():
    assert format_card("history", "reduced").rstrip() == b"HISTORY reduced"
    assert format_card("COMMENT").strip() == b"COMMENT"
    assert format_card("END").rstrip() == b"END"
    assert parse_card(format_card("HISTORY", "a = 'b' / c")).value == "a = 'b' / c"


def test_format_header_reads_back():
    block = format_header([("SIMPLE", True), ("BITPIX", -32), ("NAXIS", 0), ("OBJECT", "x", "c")])
    assert len(block) == 2880
    assert find_end(block) == 4 * 80
    header = fits.Header.fromstring(block.decode("ascii"))
    assert header["OBJECT"] == "x"
    assert header.comments["OBJECT"] == "c"
    assert header["BITPIX"] == -32
