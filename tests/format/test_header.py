from __future__ import annotations

import pickle

import pytest
from astropy.io import fits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfits.format.cards import find_end
from dfits.format.header import Header
from tests.format import fitsgen as fg
from tests.format.checks import check_header

PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)

SAMPLE = [
    ("SIMPLE", True),
    ("BITPIX", 16),
    ("NAXIS", 0),
    "HIERARCH long.key.name = 5",
    "HIERARCH ESO DET CHIP = 'x' / chip",
    ("DUP", 1),
    ("DUP", 2, "second"),
    ("COMMENT", "a"),
    ("COMMENT", "b"),
    "        blank1",
    "",
    ("HISTORY", "h1"),
    "LONG    = 'abc&'  / c1",
    "CONTINUE  'def&' / c2",
    "CONTINUE  'ghi'",
    ("OBJECT", "M31", "target"),
    ("UNDEF", None, "nothing"),
    "lower   = 7",
    "DP1     = 'AXIS.1: 1'",
]


@pytest.fixture
def sample() -> Header:
    return Header(fg.header(SAMPLE))


def test_sample_matches_astropy(sample):
    check_header(sample, fits.Header.fromstring(fg.header(SAMPLE)))


def test_lookups(sample):
    assert sample["bitpix"] == 16
    assert sample["DUP"] == 1  # first occurrence, as astropy
    assert sample["DUP", 1] == 2
    assert sample["COMMENT"] == ("a", "b")
    assert sample[""] == ("blank1", "")
    assert sample["LONG"] == "abcdefghi"
    assert sample["LONG.KEY.NAME"] == sample["long.key.name"] == 5
    assert sample["HIERARCH ESO DET CHIP"] == "x"
    assert sample["UNDEF"] is None
    assert sample["LOWER"] == 7
    assert sample[0] is True
    assert sample[-1] == "AXIS.1: 1"


def test_missing_keys(sample):
    with pytest.raises(KeyError, match="NOPE"):
        sample["NOPE"]
    assert sample.get("NOPE", 3) == 3
    assert "NOPE" not in sample
    assert "naxis" in sample
    assert 0 not in sample
    with pytest.raises(IndexError):
        sample["DUP", 2]
    with pytest.raises(IndexError):
        sample[100]
    assert Header(fg.header([("SIMPLE", True)])).get("HISTORY", ()) == ()


def test_mapping_protocol(sample):
    keys = list(sample)
    assert keys[:6] == ["SIMPLE", "BITPIX", "NAXIS", "long.key.name", "ESO DET CHIP", "DUP"]
    assert len(sample) == len(keys) == len(set(keys))
    assert sample.ncards == len(sample.cards) == 17
    assert dict(sample)["COMMENT"] == ("a", "b")
    assert sample == Header(fg.header(SAMPLE))


def test_comments(sample):
    assert sample.comments["LONG"] == "c1 c2"
    assert sample.comments["DUP"] == ""
    assert sample.comments["OBJECT"] == "target"
    with pytest.raises(KeyError):
        sample.comments["NOPE"]


def test_positions(sample):
    assert sample.index("DUP") == 5
    assert sample.locate("DUP", 1) == 6
    assert sample.locate("HISTORY") == 11
    assert sample.locate("OBJECT") == 15  # after the two CONTINUE cards
    assert sample.count("dup") == 2
    assert sample.value_at(sample.index("OBJECT")) == "M31"
    assert sample.card_bytes(sample.index("LONG"))[80:88] == b"CONTINUE"
    with pytest.raises(ValueError, match="NOPE"):
        sample.index("NOPE")


def test_tostring_round_trip(sample):
    raw = fg.header(SAMPLE)
    assert sample.tostring() == raw
    assert Header(raw.decode("latin-1")).tostring() == raw
    assert Header.fromstring(raw) == sample


def test_to_astropy(sample):
    theirs = sample.to_astropy()
    assert isinstance(theirs, fits.Header)
    assert theirs["OBJECT"] == "M31"
    assert len(theirs) == sample.ncards


def test_repr_lists_cards(sample):
    lines = repr(sample).splitlines()
    assert len(lines) == 19  # 17 cards, one followed by two CONTINUE cards
    assert lines[0].startswith("SIMPLE  =")
    assert all(len(line) == 80 for line in lines)


def test_pickle_carries_only_the_cards(sample):
    sample["OBJECT"], sample.cards  # fill the caches
    blob = pickle.dumps(sample)
    assert len(blob) < len(sample.tostring()) + 200
    again = pickle.loads(blob)
    assert again == sample
    assert again.tostring() == sample.tostring()


def test_header_without_end_reads_every_card():
    raw = fg.cards([("A", 1), ("B", 2)])
    assert dict(Header(raw)) == {"A": 1, "B": 2}
    assert dict(Header()) == {}


def test_find_end_needs_card_boundary():
    text = fg.cards([("COMMENT", "x" * 69 + "END")]) + b" " * 80 + fg.cards(["END"])
    assert find_end(text) == 160
    assert find_end(text, 0, 150) == -1
    assert find_end(b"  " + fg.cards(["END"]), 2) == 2
    # only END and 77 blanks: not an END keyword with a value (astropy's fast parser)
    assert find_end(fg.cards(["A = 1", "END     = 9", "END"])) == 160


def test_same_keywords_share_one_index():
    a = Header(fg.header(fg.image_cards((2, 3), extra=[("EXTVER", 1)])))
    b = Header(fg.header(fg.image_cards((4, 5), extra=[("EXTVER", 2)])))
    c = Header(fg.header(fg.image_cards((4, 5, 6))))
    assert a.keyword_index is b.keyword_index
    assert a.keyword_index is not c.keyword_index
    assert (a["NAXIS1"], b["NAXIS1"], a["EXTVER"], b["EXTVER"]) == (3, 5, 1, 2)


def test_bad_cards_are_found_and_kept_raw():
    raw = fg.header([("SIMPLE", True), b"OBSERVER= 'Ren\xe9e'", ("NAXIS", 0)])
    h = Header(raw)
    assert h.bad_cards == (1,)
    assert h["OBSERVER"] == "'Ren\xe9e'"
    assert h["NAXIS"] == 0
    assert not h.cards[1].valid
    assert not h.card("OBSERVER").valid  # one card parsed, without parsing them all
    assert h.card("NAXIS").value == 0


def test_card_by_keyword_and_occurrence(sample):
    assert sample.card("DUP", 1).image[:8] == "DUP     "
    assert sample.card("DUP", 1).value == sample["DUP", 1]
    assert sample.card("LONG").value == sample["LONG"]  # CONTINUE cards joined
    with pytest.raises(KeyError, match="NOPE"):
        sample.card("NOPE")


# -- generated headers ------------------------------------------------------------------------
KEYWORD = st.sampled_from(["A", "B", "DUP", "OBJECT", "NAXIS", "DATE-OBS", "X_1"])
VALUE = (
    st.integers(-(10**20), 10**20)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(PRINTABLE, max_size=40)
    | st.none()
)
CARD = st.one_of(
    st.tuples(KEYWORD, VALUE),
    st.tuples(st.sampled_from(["COMMENT", "HISTORY", ""]), st.text(PRINTABLE, max_size=60)),
    st.tuples(st.sampled_from(["HIERARCH A.b", "HIERARCH ESO X"]), st.integers(0, 9)).map(
        lambda kv: f"{kv[0]} = {kv[1]}"
    ),
    st.tuples(KEYWORD, st.text(PRINTABLE, min_size=60, max_size=200)).map(
        lambda kv: fits.Card(kv[0], kv[1]).image
    ),
    st.text(PRINTABLE, min_size=80, max_size=80).filter(
        lambda s: s[:8].strip().upper() != "HIERARCH" and s[:8] != "CONTINUE"
    ),
)


@pytest.mark.filterwarnings("ignore::astropy.utils.exceptions.AstropyUserWarning")
@pytest.mark.filterwarnings("ignore::astropy.io.fits.verify.VerifyWarning")
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(CARD, max_size=40))
def test_generated_headers_match_astropy(cards):
    raw = fg.header(cards)
    check_header(Header(raw), fits.Header.fromstring(raw))


ODD = [
    *SAMPLE,
    "BAD     = 'unterminated",
    "JUNK    = abc / text",
    "A= B    = 1",  # a value indicator before column 9: the card's value is not "1"
    "END     = 5",  # an END card that does not end the header: value "= 5", as astropy
    b"NBSP    = 1 / \xa0",
    "EMPTY   =",
]


def test_valid_at_is_card_valid():
    # valid_at takes a shortcut for plain cards (the structural check of compressed HDUs)
    h = Header(b"".join(_image(c) for c in ODD))
    assert [h.valid_at(i) for i in range(h.ncards)] == [c.valid for c in h.cards]
    assert [h.value_at(i) for i in range(h.ncards)] == [c.value for c in h.cards]
    assert h["END"] == fits.Header.fromstring(_image("END     = 5"))["END"] == "= 5"
    assert h.valid_at(-1) == h.cards[-1].valid
    with pytest.raises(IndexError):
        h.valid_at(h.ncards)


def _image(card) -> bytes:
    if isinstance(card, bytes):
        return card.ljust(80)
    return fg.header([card])[:80]
