"""The checksum convention and the cards a written image HDU gets, against astropy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.io import fits
from hypothesis import given, settings
from hypothesis import strategies as st

from dfits.errors import HeaderError, UnsupportedError
from dfits.format.cards import parse_card
from dfits.format.checksum import add, combine, decode_datasum, encode_checksum, place
from dfits.format.header import Header
from dfits.format.imagehdu import image_header, parse_storage, user_cards
from dfits.format.longcards import format_cards
from dfits.kernels.checksum import word_sum_oracle


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_encoded_value_brings_the_sum_to_negative_zero(total):
    # total: the HDU summed with '0' * 16 in the card; swapping in the encoding must give -0
    # (the value starts at column 12 of its card: byte 11, 3 past a word boundary)
    encoded = encode_checksum(total).encode("ascii")
    assert encoded.isalnum()
    zeros = place(word_sum_oracle(np.frombuffer(b"0" * 16, np.uint8)), 11)
    real = add(total, place(word_sum_oracle(np.frombuffer(encoded, np.uint8)), 11))
    assert add(real, 0xFFFFFFFF - zeros) == 0xFFFFFFFF


@pytest.mark.parametrize(
    "name", ["astropy/checksum.fits", "astropy/m13.fits", "nom-tam-fits/checksum.fits"]
)
def test_encoding_reproduces_the_corpus_checksums(corpus, name):
    raw = bytearray((corpus / name).read_bytes())
    with fits.open(corpus / name) as hl:
        offsets = [(h.fileinfo()["hdrLoc"], h.fileinfo()["datLoc"], h.fileinfo()["datSpan"])
                   for h in hl]  # fmt: skip
    for head, data, span in offsets:
        block = raw[head : data + span]
        at = block.find(b"CHECKSUM= '") + 11
        stored = block[at : at + 16].decode()
        block[at : at + 16] = b"0" * 16
        assert encode_checksum(word_sum_oracle(np.frombuffer(bytes(block), np.uint8))) == stored


@given(st.binary(min_size=0, max_size=64), st.lists(st.integers(0, 64), max_size=5))
@settings(max_examples=200, deadline=None)
def test_partial_sums_at_any_offset_combine_to_the_whole(data, cuts):
    edges = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    pieces = [
        (word_sum_oracle(np.frombuffer(data[a:b], np.uint8)), a)
        for a, b in itertools.pairwise(edges)
    ]
    assert combine(pieces) == word_sum_oracle(np.frombuffer(data, np.uint8))


def test_add_is_end_around():
    assert add(0xFFFFFFFF, 0xFFFFFFFF) == 0xFFFFFFFF
    assert add(0x80000000, 0x80000000) == 1


def test_datasum_values():
    assert decode_datasum("0") == 0
    assert decode_datasum(12) == 12
    assert decode_datasum("4294967296") is None
    assert decode_datasum(True) is None


@pytest.mark.parametrize(
    ("value", "comment"),
    [
        ("x" * 100 + "it's", "note"),
        ("'" * 100, ""),
        ("a" * 67, " ".join(["c"] * 100)),
        ("b" * 66 + "'", "hello"),
        ("a" * 68, ""),
    ],
    ids=["long", "quotes", "long-comment", "quote-at-edge", "one-past"],
)
def test_long_strings_read_back_in_astropy_and_dfits(value, comment):
    raw = format_cards("LONG", value, comment)
    assert len(raw) % 80 == 0
    h = fits.Header.fromstring(raw.decode() + "END".ljust(80))
    assert (h["LONG"], h.comments["LONG"]) == (value, comment)
    assert (parse_card(raw).value, parse_card(raw).comment) == (value, comment)


def test_long_history_takes_several_cards():
    text = "dfits moment 0 of " + "/very/long/path/" * 20
    raw = format_cards("HISTORY", text)
    h = fits.Header.fromstring(raw.decode() + "END".ljust(80))
    assert "".join(h["HISTORY"]) == text


@pytest.mark.parametrize(
    ("dtype", "bitpix", "bzero"),
    [("u1", 8, None), ("i1", 8, -128), ("i2", 16, None), ("u2", 16, 32768),
     ("u4", 32, 2**31), ("u8", 64, 2**63), ("f2", -32, None), (">f8", -64, None)],
)  # fmt: skip
def test_storage(dtype, bitpix, bzero):
    s = parse_storage(dtype, "x")
    assert (s.bitpix, s.bzero) == (bitpix, bzero)


@pytest.mark.parametrize("dtype", ["c16", "O", "U3", "?", "M8[s]"])
def test_unstorable_dtypes_raise(dtype):
    with pytest.raises(UnsupportedError, match="cannot store dtype"):
        parse_storage(dtype, "file 'x.fits', HDU 0")


def test_header_mandatory_cards_and_owned_cards():
    cards = user_cards([("BITPIX", 16), ("NAXIS2", 2), ("BSCALE", 2.0), ("OBJECT", "M31")])
    h = Header(image_header((2, 3), parse_storage("i2", "x"), primary=True, cards=cards))
    assert h["OBJECT"] == "M31"
    assert "BSCALE" not in h
    assert h.count("BITPIX") == 1


@pytest.mark.parametrize(
    "cards",
    [[("NAXIS1", 4)], [("NAXIS", 3)], [("BITPIX", -32)], [("NAXIS3", 1)], [("GCOUNT", 2)]],
    ids=["naxis1", "naxis", "bitpix", "extra-axis", "gcount"],
)
def test_contradicting_header_raises(cards):
    with pytest.raises(HeaderError, match="contradicts"):
        image_header((2, 3), parse_storage("i2", "x"), primary=True, cards=user_cards(cards))


def test_scaled_integer_header_with_float_data_is_written_as_floats():
    cards = user_cards([("BITPIX", 16), ("BSCALE", 0.5), ("BZERO", 3.0)])
    h = Header(image_header((2,), parse_storage("f4", "x"), primary=True, cards=cards))
    assert h["BITPIX"] == -32
    assert "BSCALE" not in h
