"""Layout scans of well-formed files: kinds, offsets, sizes, reads, speed."""

from __future__ import annotations

import dataclasses
import pickle
import time

import numpy as np
import pytest

from dfits.format.layout import HDULayout, scan
from tests.format import fitsgen as fg
from tests.format.checks import reader, scan_bytes

PRIMARY0 = fg.header([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0), ("EXTEND", True)])


def ext(shape=(3, 4), bitpix=16, *, name=None, ver=None, extra=()):
    cards = [*extra]
    if name is not None:
        cards.append(("EXTNAME", name))
    if ver is not None:
        cards.append(("EXTVER", ver))
    return fg.image_hdu(shape, bitpix, primary=False, extra=cards)


# -- good files -------------------------------------------------------------------------------
def test_primary_image():
    blob = fg.image_file((3, 4), 16)
    (hdu,) = scan_bytes(blob).hdus
    assert (hdu.index, hdu.kind, hdu.name, hdu.ver, hdu.xtension) == (
        0,
        "primary",
        "PRIMARY",
        1,
        None,
    )
    assert (hdu.header_offset, hdu.data_offset, hdu.data_size) == (0, 2880, 24)
    assert (hdu.padded_size, hdu.end, hdu.has_data) == (2880, 5760, True)
    assert (hdu.bitpix, hdu.shape) == (16, (3, 4))
    assert hdu.decode.physical == np.dtype("int16")
    assert hdu.header["NAXIS2"] == 3


def test_extensions_names_and_versions():
    blob = fg.fits_file(PRIMARY0, ext(name="SCI", ver=1), ext(name="SCI", ver=2), ext())
    hdus = scan_bytes(blob).hdus
    assert [(h.kind, h.name, h.ver, h.xtension) for h in hdus] == [
        ("primary", "PRIMARY", 1, None),
        ("image", "SCI", 1, "IMAGE"),
        ("image", "SCI", 2, "IMAGE"),
        ("image", "", 1, "IMAGE"),
    ]
    assert [h.header_offset for h in hdus] == [0, 2880, 8640, 14400]
    assert [h.data_offset for h in hdus] == [2880, 5760, 11520, 17280]
    assert (hdus[0].decode, hdus[0].shape, hdus[0].has_data) == (None, (), False)


def test_layout_is_frozen_and_pickles():
    layout = scan_bytes(fg.fits_file(PRIMARY0, ext(name="SCI")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.hdus[1].kind = "x"  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(layout))
    assert again == layout
    assert hash(again) == hash(layout)
    assert "header=" not in repr(layout.hdus[1])
    assert isinstance(again.hdus[1], HDULayout)
    assert again.hdus[1].header["EXTNAME"] == "SCI"
    assert dataclasses.replace(layout.hdus[1], name="X").name == "X"


def test_tables_compressed_and_unknown_extensions():
    table = fg.hdu(
        [("XTENSION", "BINTABLE"), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 6), ("NAXIS2", 5),
         ("PCOUNT", 10), ("GCOUNT", 1), ("TFIELDS", 0)],
        bytes(40),
    )  # fmt: skip
    compressed = fg.hdu(
        [("XTENSION", "BINTABLE"), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 8), ("NAXIS2", 2),
         ("PCOUNT", 0), ("GCOUNT", 1), ("ZIMAGE", True), ("EXTNAME", "COMPRESSED_IMAGE")],
        bytes(16),
    )  # fmt: skip
    ascii_table = fg.hdu(
        [("XTENSION", "TABLE"), ("BITPIX", 8), ("NAXIS", 2), ("NAXIS1", 10), ("NAXIS2", 3),
         ("PCOUNT", 0), ("GCOUNT", 1)],
        b" " * 30,
    )  # fmt: skip
    foreign = fg.hdu(
        [("XTENSION", "FOREIGN"), ("BITPIX", 16), ("NAXIS", 1), ("NAXIS1", 1000),
         ("PCOUNT", 4), ("GCOUNT", 2)],
        bytes(4016),
    )  # fmt: skip
    blob = fg.fits_file(PRIMARY0, table, compressed, ascii_table, foreign, ext(name="LAST"))
    hdus = scan_bytes(blob).hdus
    assert [h.kind for h in hdus] == [
        "primary", "bintable", "compressed_image", "table", "unknown", "image",
    ]  # fmt: skip
    assert [h.data_size for h in hdus] == [0, 40, 16, 30, 4016, 24]
    assert (hdus[4].xtension, hdus[4].decode) == ("FOREIGN", None)
    assert (hdus[1].shape, hdus[1].decode) == ((5, 6), None)
    assert hdus[-1].name == "LAST"


def test_random_groups_size_skips_naxis1():
    cards = [("SIMPLE", True), ("BITPIX", -32), ("NAXIS", 3), ("NAXIS1", 0), ("NAXIS2", 3),
             ("NAXIS3", 2), ("GROUPS", True), ("PCOUNT", 4), ("GCOUNT", 5)]  # fmt: skip
    (hdu,) = scan_bytes(fg.hdu(cards, bytes(4 * 5 * (4 + 6)))).hdus
    assert (hdu.kind, hdu.data_size, hdu.shape, hdu.decode) == (
        "random_groups",
        200,
        (2, 3, 0),
        None,
    )


def test_zero_length_axis_has_no_data():
    (hdu,) = scan_bytes(fg.hdu(fg.image_cards((0, 5)))).hdus
    assert (hdu.shape, hdu.data_size, hdu.data_offset, hdu.end) == ((0, 5), 0, 2880, 2880)
    assert hdu.decode is not None


def test_header_over_several_blocks():
    extra = [("COMMENT", f"line {i}") for i in range(80)]
    blob = fg.fits_file(fg.image_hdu((2,), extra=extra), ext(name="B"))
    hdus = scan_bytes(blob).hdus
    assert hdus[0].data_offset == 3 * 2880
    assert hdus[1].name == "B"


def test_end_card_filling_a_block_exactly():
    specs = fg.image_cards((2, 2)) + [("C" + str(i), i) for i in range(30)]
    assert len(specs) == 35  # + END = 36 cards = one block
    (hdu,) = scan_bytes(fg.hdu(specs, bytes(8))).hdus
    assert hdu.data_offset == 2880


@pytest.mark.parametrize("odd", [b"END     = 1000", b"END                     $"])
def test_only_the_standard_end_card_ends_a_header(tmp_path, odd):
    # fuzz seeds 6 and 7: an END keyword with more after it does not end the header, as in
    # astropy's parser of ASCII headers; the header goes on to the real END card
    from astropy.io import fits

    filler = [("C" + str(i), i) for i in range(40)]
    specs = [*fg.image_cards((2,)), b"OBJECT  = 'M13'", odd, *filler, ("LATE", 1)]
    blob = fg.header(specs) + fg.pad(fg.data_for((2,), 16))
    (hdu,) = scan_bytes(blob).hdus
    assert hdu.data_offset == 2 * 2880
    assert hdu.header["LATE"] == 1
    path = tmp_path / "end.fits"
    path.write_bytes(blob)
    with fits.open(path) as hdul:  # a file: astropy's parser of ASCII headers
        assert hdul[0].header["LATE"] == 1


def test_scaling_and_unsigned_decode():
    blob = fg.fits_file(
        fg.image_hdu((2, 2), 16, extra=[("BZERO", 32768), ("BSCALE", 1)]),
        ext((2,), 32, extra=[("BSCALE", 0.5), ("BZERO", 1.0), ("BLANK", -1)]),
    )
    first, second = scan_bytes(blob).hdus
    assert first.decode.physical == np.dtype("uint16")
    assert (second.decode.mode, second.decode.blank) == ("scaled", -1)


def test_offsets_beyond_4_gib_stay_exact():
    big = 2**32 + 2880 * 7  # a 4 GiB+ primary image, never materialised
    head = fg.header(fg.image_cards((big,), 8))
    tail = ext(name="AFTER")
    start = 2880 + -(-big // 2880) * 2880
    total = start + len(tail)
    reads = []

    def read_at(offset, n):  # a sparse file: header, zeros, extension
        reads.append(n)
        stop = min(offset + n, total)
        out = head[offset:stop] + bytes(max(0, min(stop, start) - max(offset, len(head))))
        return out + tail[max(0, offset - start) : max(0, stop - start)]

    hdus = scan(read_at, total, filename="big.fits").hdus
    assert (hdus[1].header_offset, hdus[1].data_offset) == (start, start + 2880)
    assert type(hdus[1].data_offset) is int
    assert hdus[1].name == "AFTER"
    assert sum(reads) < 2**20


def test_alike_headers_shared_or_not_read_the_same():
    # Standard keywords share one description; HIERARCH or lower-case keywords do not.
    plain = [ext((i + 1, 2), name="SCI", ver=i) for i in range(3)]
    hierarch = [ext((i + 1, 2), name="SCI", ver=i, extra=["HIERARCH ESO DET ID = 7"])
                for i in range(3)]  # fmt: skip
    lower = [ext((i + 1, 2), name="SCI", ver=i, extra=["exptime = 5.0"]) for i in range(3)]
    for hdus in (plain, hierarch, lower):
        layout = scan_bytes(fg.fits_file(PRIMARY0, *hdus, *hdus))
        got = [(h.name, h.ver, h.shape, h.data_size) for h in layout.hdus[1:]]
        assert got == [("SCI", i, (i + 1, 2), 4 * (i + 1)) for i in (0, 1, 2)] * 2


def test_unknown_size_source():
    blob = fg.fits_file(PRIMARY0, ext(name="A"), ext(name="B"))
    layout = scan_bytes(blob, size=None)
    assert [h.name for h in layout.hdus] == ["PRIMARY", "A", "B"]
    assert layout.size is None


def test_few_reads_for_many_small_hdus():
    blob = fg.fits_file(PRIMARY0, *(ext(name="SCI", ver=i) for i in range(300)))
    reads = []
    assert len(scan_bytes(blob, reads=reads).hdus) == 301
    assert len(reads) <= 8


def test_data_of_big_hdus_is_skipped():
    blob = fg.fits_file(PRIMARY0, ext((600, 600), 16), ext((600, 600), 16), ext(name="END"))
    reads = []
    hdus = scan_bytes(blob, reads=reads).hdus
    assert hdus[-1].name == "END"
    assert sum(n for _, n in reads) < 4 * 64 * 1024  # the 720 kB images are never read


# -- speed ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_ten_thousand_hdus_open_fast():
    data = fg.pad(fg.data_for((10, 10), 16))
    blob = fg.fits_file(PRIMARY0, *(fg.header(fg.image_cards(
        (10, 10), 16, primary=False, extra=[("EXTNAME", "SCI"), ("EXTVER", i)])) + data
        for i in range(1, 10_000)))  # fmt: skip
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        layout = scan(reader(blob), len(blob), filename="many.fits")
        names = [h.header["EXTNAME"] for h in layout.hdus[1:]]
        best = min(best, time.perf_counter() - start)
    assert len(names) == 9_999
    assert layout.hdus[-1].ver == 9_999
    assert best < 1.0  # ~0.1 s on a quiet 2-core machine; astropy takes ~6 s
