"""The original table of a tile-compressed table (ZTABLE = T), from its header alone."""

from __future__ import annotations

import pytest

from dfits.errors import HeaderError, UnsupportedError
from dfits.format.cards import END_CARD, format_card
from dfits.format.header import Header
from dfits.format.tiledtable import parse_tiled_table, restore_header, shuffle_width


def _header(**changes) -> Header:
    """A ZTABLE header of 3 columns (E, PJ, 2I), 25 rows in tiles of 10: 3 tiles."""
    cards = {
        "XTENSION": "BINTABLE", "BITPIX": 8, "NAXIS": 2, "NAXIS1": 48, "NAXIS2": 3,
        "PCOUNT": 900, "GCOUNT": 1, "TFIELDS": 3,
        "TTYPE1": "FLUX", "TFORM1": "1QB(50)", "TUNIT1": "Jy",
        "TTYPE2": "LIST", "TFORM2": "1QB(90)",
        "TTYPE3": "PAIR", "TFORM3": "1QB(40)", "TNULL3": -1, "TSCAL3": 2.0,
        "ZTABLE": True, "ZTILELEN": 10, "ZNAXIS1": 16, "ZNAXIS2": 25, "ZPCOUNT": 300,
        "ZFORM1": "E", "ZFORM2": "1PJ(7)", "ZFORM3": "2I",
        "ZCTYP1": "GZIP_2", "ZCTYP2": "RICE_1", "ZCTYP3": "NOCOMPRESS",
        "CHECKSUM": "0000", "DATASUM": "1", "ZHECKSUM": "abcd", "ZDATASUM": "42",
    }  # fmt: skip
    cards.update(changes)
    raw = b"".join(format_card(k, v) for k, v in cards.items() if v is not None)
    return Header(raw + END_CARD)


def _parse(header: Header):
    return parse_tiled_table(header, header["NAXIS1"], header["NAXIS2"], header["PCOUNT"], "f")


def test_the_original_table_and_its_tiles():
    t = _parse(_header())
    assert t.names == ["FLUX", "LIST", "PAIR"]
    flux, lst, pair = t.columns
    assert (flux.offset, flux.unit, str(flux.dtype)) == (0, "Jy", "float32")
    assert (lst.offset, lst.code, lst.form.element) == (4, "P", "J")
    assert (pair.offset, pair.shape, pair.null, pair.scale) == (12, (2,), -1, 2.0)
    assert (t.nrows, t.table.row_bytes, t.table.heap_size) == (25, 16, 300)
    assert (t.tile_rows, t.ntiles, t.heap_offset, t.heap_size) == (10, 3, 144, 900)
    assert [(c.algorithm, c.cell, c.cell_code) for c in t.cells] == [
        ("GZIP_2", 0, "Q"), ("RICE_1", 16, "Q"), ("NOCOMPRESS", 32, "Q")]  # fmt: skip
    assert list(t.tiles(9, 21)) == [0, 1, 2]
    assert list(t.tiles(10, 20)) == [1]
    assert t.rows_of(2) == (20, 25)
    assert t.find("flux") is flux


def test_restored_header_is_funpacks():
    h = restore_header(_header())
    assert (h["NAXIS1"], h["NAXIS2"], h["PCOUNT"]) == (16, 25, 300)
    assert [h[f"TFORM{n}"] for n in (1, 2, 3)] == ["E", "1PJ(7)", "2I"]
    assert (h["CHECKSUM"], h["DATASUM"], h["TUNIT1"]) == ("abcd", "42", "Jy")
    gone = ["ZTABLE", "ZTILELEN", "ZNAXIS1", "ZFORM1", "ZCTYP2", "ZHECKSUM", "ZDATASUM"]
    assert not [k for k in gone if k in h]
    assert h.count("CHECKSUM") == 1


def test_ztheap_becomes_theap_and_missing_ctype_is_gzip_2():
    t = _parse(_header(ZTHEAP=420, ZCTYP1=None, ZPCOUNT=330))
    assert t.header["THEAP"] == 420
    assert (t.table.heap_offset, t.table.heap_size) == (420, 310)
    assert t.cells[0].algorithm == "GZIP_2"
    assert parse_tiled_table(_header(ZTILELEN=1000), 48, 1, 900, "f").tile_rows == 25


def test_shuffle_widths():
    fixed = {c: shuffle_width(c, False) for c in "LXBIJKAEDCM"}
    assert fixed == {"L": 1, "X": 1, "B": 1, "I": 2, "J": 4, "K": 8, "A": 1, "E": 4, "D": 8,
                     "C": 1, "M": 1}  # fmt: skip
    arrays = {c: shuffle_width(c, True) for c in "BIJKEDCM"}
    assert arrays == {"B": 1, "I": 2, "J": 4, "K": 8, "E": 4, "D": 8, "C": 8, "M": 1}


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"ZTILELEN": None}, "ZTILELEN missing"),
        ({"ZTILELEN": 0}, "ZTILELEN = 0 must be an integer >= 1"),
        ({"ZNAXIS1": "16"}, "ZNAXIS1 = '16'"),
        ({"ZNAXIS2": -1}, "ZNAXIS2 = -1"),
        ({"ZPCOUNT": None}, "ZPCOUNT missing"),
        ({"ZFORM2": None}, "ZFORM2 .* missing"),
        ({"ZTILELEN": 5}, "NAXIS2 = 3 tiles, but ZNAXIS2 = 25 rows in tiles of ZTILELEN = 5"),
        ({"TFORM2": "1PJ"}, "TFORM2 = '1PJ' of a tile-compressed table must be '1QB' or '1PB'"),
        ({"TFORM3": "2QB"}, "TFORM3 = '2QB'"),
        ({"NAXIS1": 40}, "add up to 48 bytes but NAXIS1 = 40"),
        ({"ZNAXIS1": 17}, "add up to 16 bytes but NAXIS1 = 17"),
        ({"THEAP": 10}, "THEAP = 10 must lie between"),
        ({"ZNAXIS2": 10**9, "ZTILELEN": 4 * 10**8}, "cannot come out of a compressed heap"),
    ],
)
def test_bad_headers(changes, match):
    with pytest.raises(HeaderError, match=match):
        _parse(_header(**changes))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"ZCTYP1": "HCOMPRESS_1"}, r"column 1 \('FLUX'\): ZCTYP1 = 'HCOMPRESS_1'"),
        ({"ZCTYP1": "RICE_1"}, "'RICE_1' on TFORM1 = 'E'"),
        ({"ZCTYP1": 3}, "ZCTYP1 = 3"),
    ],
)
def test_algorithms_the_convention_does_not_define(changes, match):
    with pytest.raises(UnsupportedError, match=match):
        _parse(_header(**changes))
