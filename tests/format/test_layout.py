"""Layout scans of bad input: each case of DESIGN.md's table, and what dfits says."""

from __future__ import annotations

import re

import pytest

from dfits.errors import DfitsWarning, HeaderError, NotFITSError, TruncatedFileError
from dfits.format import window
from dfits.format.layout import scan
from tests.format import fitsgen as fg
from tests.format.checks import scan_bytes

PRIMARY0 = fg.header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0), ("EXTEND", True)])


def ext(shape=(3, 4), bitpix=16, *, name=None, ver=None, extra=()):
    cards = [*extra]
    if name is not None:
        cards.append(("EXTNAME", name))
    if ver is not None:
        cards.append(("EXTVER", ver))
    return fg.image_hdu(shape, bitpix, primary=False, extra=cards)


# -- not FITS ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"", r"file 't.fits': not a FITS file: the file is empty"),
        (b"# a text file\nhello\n", r"offset 0 holds b'# a text file\\nhello\\n'"),
        (fg.header([("BITPIX", 8), ("SIMPLE", True)]), r"offset 0 holds b'BITPIX  =  "),
        (ext(), r"starts with an XTENSION card b\"XTENSION= 'IMAGE   '"),
        (b"\x1f\x8b\x08\x00" + bytes(100), r"gzip signature"),
        (b"BZh91AY&SY" + bytes(100), r"bzip2 signature"),
    ],
    ids=["empty", "text", "no-simple-first", "bare-xtension", "gzip", "bzip2"],
)
def test_not_fits(blob, message):
    with pytest.raises(NotFITSError, match=message):
        scan_bytes(blob)


def test_simple_false_reads_with_one_warning():
    cards = [("SIMPLE", False), *fg.image_cards((2,), 16)[1:]]
    with pytest.warns(DfitsWarning, match=r"HDU 0 \('PRIMARY'\): SIMPLE = False") as record:
        (hdu,) = scan_bytes(fg.hdu(cards, fg.data_for((2,), 16))).hdus
    assert len(record) == 1
    assert (hdu.kind, hdu.shape) == ("primary", (2,))


# -- header structure -------------------------------------------------------------------------
def test_missing_end_card_with_known_size():
    blob = fg.header(fg.image_cards(()), end=False)
    with pytest.raises(
        HeaderError,
        match=r"HDU 0: no END card in the header that starts at "
        r"offset 0: searched 2880 bytes to the end of the file \(offset 2880\)",
    ):
        scan_bytes(blob)


def test_missing_end_card_in_an_extension():
    blob = PRIMARY0 + fg.header([("XTENSION", "IMAGE"), ("BITPIX", 8)], end=False)
    with pytest.raises(
        HeaderError,
        match=r"HDU 1: no END card .* offset 2880: .*"
        r"the header begins b\"XTENSION= 'IMAGE",
    ):
        scan_bytes(blob, size=None)


def test_missing_end_card_stops_at_the_header_limit(monkeypatch):
    monkeypatch.setattr(window, "MAX_HEADER_BYTES", 20 * 2880)
    blank = b" " * 2880

    def endless(offset, n):  # a header of blank cards that never ends
        return (fg.header(fg.image_cards(()), end=False) if offset == 0 else b"") + blank * (
            n // 2880 + 1
        )

    with pytest.raises(HeaderError, match="header size limit"):
        scan(endless, None, filename="endless.fits")


@pytest.mark.parametrize(
    ("cards", "message"),
    [
        ([("SIMPLE", True), ("NAXIS", 0)], r"mandatory keyword BITPIX missing from the header "
         r"at offset 0"),
        ([("SIMPLE", True), ("BITPIX", 8)], r"mandatory keyword NAXIS missing"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 3)],
         r"mandatory keyword NAXIS2 missing"),
        ([("SIMPLE", True), ("BITPIX", 8), ("BITPIX", 16), ("NAXIS", 0)],
         r"mandatory keyword BITPIX appears 2 times \(offsets \[80, 160\], values \[8, 16\]\)"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", 3), ("NAXIS1", 3)],
         r"mandatory keyword NAXIS1 appears 2 times"),
        ([("SIMPLE", True), ("BITPIX", 12), ("NAXIS", 0)], r"BITPIX = 12 at offset 80: must "
         r"be one of 8, 16, 32, 64, -32, -64"),
        ([("SIMPLE", True), ("BITPIX", b"16.0"), ("NAXIS", 0)], r"BITPIX = 16.0 at offset 80"),
        ([("SIMPLE", True), ("BITPIX", True), ("NAXIS", 0)], r"BITPIX = True"),
        ([("SIMPLE", True), ("BITPIX", "16"), ("NAXIS", 0)], r"BITPIX = '16'"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", -1)], r"NAXIS = -1 at offset 160: must "
         r"be an integer from 0 to 999"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1000)], r"NAXIS = 1000"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", b"2.5")], r"NAXIS = 2.5"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", "two")], r"NAXIS = 'two'"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", -3)], r"NAXIS1 = -3 at "
         r"offset 240: must be a non-negative integer"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", b"3.0")], r"NAXIS1 = 3.0"),
        ([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", None)], r"NAXIS1 = None"),
    ],
    ids=[
        "no-bitpix", "no-naxis", "no-naxis2", "dup-bitpix", "dup-naxis1", "bitpix-12",
        "bitpix-float", "bitpix-bool", "bitpix-string", "naxis-negative", "naxis-1000",
        "naxis-float", "naxis-string", "naxisn-negative", "naxisn-float", "naxisn-undefined",
    ],
)  # fmt: skip
def test_bad_primary_mandatory_keywords(cards, message):
    with pytest.raises(HeaderError, match=r"file 't.fits', HDU 0 \('PRIMARY'\): " + message):
        scan_bytes(fg.header(cards))


@pytest.mark.parametrize(
    ("cards", "message"),
    [
        ([("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 0), ("PCOUNT", -1), ("GCOUNT", 1)],
         r"PCOUNT = -1 at offset 3120"),
        ([("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 0), ("PCOUNT", 0), ("GCOUNT", 1.5)],
         r"GCOUNT = 1.5"),
        ([("XTENSION", "IMAGE"), ("NAXIS", 0), ("PCOUNT", 0), ("GCOUNT", 1)],
         r"mandatory keyword BITPIX missing from the header at offset 2880"),
        ([("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", 2), ("PCOUNT", 0),
          ("GCOUNT", 1), ("EXTNAME", "SCI"), ("GCOUNT", 1)], r"\('SCI'\): .*GCOUNT appears 2"),
    ],
    ids=["pcount-negative", "gcount-float", "no-bitpix", "dup-gcount"],
)  # fmt: skip
def test_bad_extension_mandatory_keywords(cards, message):
    with pytest.raises(HeaderError, match=r"file 't.fits', HDU 1\b.*" + message):
        scan_bytes(PRIMARY0 + fg.header(cards))


def test_mandatory_keywords_out_of_order_read_with_one_warning():
    # astropy/verify.fits has NAXIS before BITPIX; astropy reads it silently.
    blob = fg.header([("SIMPLE", True), ("NAXIS", 1), ("BITPIX", 8), ("NAXIS1", 4)])
    with pytest.warns(
        DfitsWarning, match=r"out of order \(BITPIX at card 2, NAXIS at card 1"
    ) as record:
        (hdu,) = scan_bytes(blob + fg.pad(bytes(4))).hdus
    assert len(record) == 1
    assert (hdu.bitpix, hdu.shape) == (8, (4,))


def test_extension_without_pcount_gcount_reads_with_one_warning():
    # astrogo's IMAGE extensions omit both; astropy assumes 0 and 1.
    blob = PRIMARY0 + fg.hdu(
        [("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 1), ("NAXIS1", 5)], bytes(5)
    )
    with pytest.warns(DfitsWarning, match=r"HDU 1: mandatory PCOUNT and GCOUNT missing") as rec:
        hdus = scan_bytes(blob).hdus
    assert len(rec) == 1
    assert hdus[1].data_size == 5


def test_non_ascii_in_a_mandatory_card_is_an_error():
    blob = fg.header([("SIMPLE", True), b"BITPIX  =                    8 / \xe9", ("NAXIS", 0)])
    with pytest.raises(
        HeaderError,
        match=r"mandatory card BITPIX at offset 80 holds bytes "
        r"outside printable ASCII: b'BITPIX  =  .*\\xe9'",
    ):
        scan_bytes(blob)


def test_non_ascii_elsewhere_is_kept_raw_with_one_warning():
    blob = PRIMARY0 + ext(name="SCI", extra=[b"OBSERVER= 'Ren\xc3\xa9e'", b"NOTE    = '\x00'"])
    with pytest.warns(
        DfitsWarning,
        match=r"HDU 1 \('SCI'\): 2 card\(s\) hold bytes outside "
        r"printable ASCII.*card 7 at offset 3440",
    ) as record:
        hdus = scan_bytes(blob).hdus
    assert len(record) == 1
    assert hdus[1].header["OBSERVER"] == "'Ren\xc3\xa9e'"
    assert hdus[1].shape == (3, 4)


# -- sizes ------------------------------------------------------------------------------------
def test_truncated_data_names_range_and_size():
    blob = fg.image_file((100, 100), 16)[: 2880 + 5000]
    with pytest.raises(
        TruncatedFileError,
        match=r"HDU 0 \('PRIMARY'\): truncated file: the "
        r"data needs bytes 2880 to 22880 .* but the file holds 7880 bytes",
    ):
        scan_bytes(blob)


def test_truncated_data_found_by_a_short_read_of_unknown_size():
    blob = fg.fits_file(PRIMARY0, ext((100, 100)))[:-10000]
    with pytest.raises(TruncatedFileError, match="HDU 1"):
        scan_bytes(blob, size=None)


def test_absurd_axes_never_allocate_or_wrap():
    cards = fg.image_cards((10**12, 10**12), 64)
    with pytest.raises(
        TruncatedFileError,
        match=r"needs bytes 2880 to 8000000000000000000002880 "
        r"\(shape \(1000000000000, 1000000000000\), BITPIX 64",
    ):
        scan_bytes(fg.header(cards))
    head = fg.header(cards)

    def endless(offset, n):  # a source of unknown size that never runs short
        return (head[offset : offset + n]).ljust(n, b"\0")

    with pytest.raises(
        HeaderError, match="data would end at offset 8000000000000000000002880, beyond any file"
    ):
        scan(endless, None, filename="t.fits")


def test_unpadded_last_block_reads_with_one_warning():
    blob = fg.fits_file(PRIMARY0, ext((3, 4)))[: -(2880 - 24)]
    with pytest.warns(
        DfitsWarning,
        match=r"HDU 1: the last block is not padded to 2880 bytes: "
        r"the file ends at offset 5784, padding would end at 8640",
    ) as record:
        hdus = scan_bytes(blob).hdus
    assert len(record) == 1
    assert hdus[1].data_size == 24


def test_unpadded_header_without_data():
    blob = fg.header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)], padded=False)
    with pytest.warns(DfitsWarning, match="not padded"):
        (hdu,) = scan_bytes(blob).hdus
    assert hdu.data_offset == 2880


def test_truncated_header_block_with_data_is_an_error():
    blob = fg.header(fg.image_cards((4,), 8), padded=False)
    with pytest.raises(TruncatedFileError, match="data needs bytes 2880 to 2884"):
        scan_bytes(blob)


@pytest.mark.parametrize(
    ("trailer", "what"),
    [
        (b"hello world" * 10, r"not an HDU \(no XTENSION card\): b'hello world"),
        (bytes(2880), "zero or blank padding"),
        (b" " * 240, "zero or blank padding"),
    ],
    ids=["junk", "zeros", "blanks"],
)
def test_bytes_after_the_last_hdu(trailer, what):
    blob = fg.fits_file(PRIMARY0, ext(name="SCI"))
    pattern = rf"file 't.fits': {len(trailer)} bytes after the last HDU, at offset 8640, ignored: "
    with pytest.warns(DfitsWarning, match=pattern + what) as record:
        hdus = scan_bytes(blob + trailer).hdus
    assert len(record) == 1
    assert [h.name for h in hdus] == ["PRIMARY", "SCI"]


def test_broken_header_after_the_last_hdu_is_an_error():
    blob = fg.fits_file(PRIMARY0, fg.header([("XTENSION", "IMAGE")], end=False)[:400])
    with pytest.raises(HeaderError, match="HDU 1: no END card"):
        scan_bytes(blob)


# -- scaling keywords -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ([("BSCALE", "abc")], "BSCALE = 'abc' is not a number"),
        ([("BSCALE", b"abc")], "BSCALE = 'abc' is not a number"),
        ([("BSCALE", 0)], "BSCALE = 0: physical values cannot be computed"),
        ([("BZERO", True)], "BZERO = True is not a number"),
    ],
    ids=["bscale-string", "bscale-unparsable", "bscale-zero", "bzero-bool"],
)
def test_unusable_scaling_keeps_header_readable(extra, error):
    (hdu,) = scan_bytes(fg.image_file((2, 2), 16, extra=extra)).hdus
    assert hdu.decode.error == f"file 't.fits', HDU 0 ('PRIMARY'): {error}"
    assert hdu.header["NAXIS1"] == 2


@pytest.mark.parametrize(
    ("bitpix", "blank", "message"),
    [(-32, 5, "BLANK = 5 ignored on floating-point data"),
     (16, "x", "BLANK = 'x' is not an integer; ignored")],
    ids=["float-data", "not-an-integer"],
)  # fmt: skip
def test_odd_blank_warns_once(bitpix, blank, message):
    blob = fg.image_file((2, 2), bitpix, extra=[("BLANK", blank)])
    with pytest.warns(DfitsWarning, match=re.escape(message)) as record:
        (hdu,) = scan_bytes(blob).hdus
    assert len(record) == 1
    assert hdu.decode.blank is None


def test_decode_errors_name_their_own_hdu():
    blob = fg.fits_file(PRIMARY0, *(ext((2,), 16, extra=[("BSCALE", 0)]) for _ in range(3)))
    errors = [h.decode.error for h in scan_bytes(blob).hdus[1:]]
    assert [e.split(":")[0] for e in errors] == [f"file 't.fits', HDU {i}" for i in (1, 2, 3)]


def test_warnings_repeat_for_every_alike_hdu():
    # Shared descriptions must not swallow the warnings of the HDUs that share them.
    blob = fg.fits_file(PRIMARY0, *(ext((2,), -32, extra=[("BLANK", 5)]) for _ in range(3)))
    with pytest.warns(DfitsWarning) as record:
        scan_bytes(blob)
    assert [str(w.message)[:14] for w in record] == [
        f"file 't.fits', HDU {i}"[:14] for i in (1, 2, 3)
    ]
    assert {re.search(r"HDU (\d)", str(w.message))[1] for w in record} == {"1", "2", "3"}


def test_warnings_point_at_the_caller_of_scan():
    blob = fg.header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)], padded=False)
    with pytest.warns(DfitsWarning, match="not padded") as record:
        scan(lambda o, n: blob[o : o + n], len(blob), filename="t.fits")  # the line warned at
    (w,) = record
    assert w.filename == __file__
    assert w.lineno == test_warnings_point_at_the_caller_of_scan.__code__.co_firstlineno + 3
