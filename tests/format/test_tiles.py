"""Z keywords of a compressed image's table: geometry, codec parameters, hostile values."""

from __future__ import annotations

import pytest

from dfits.errors import HeaderError
from dfits.format.cards import format_card
from dfits.format.header import Header
from dfits.format.tiles import parse_tiles


def table(**over: object) -> dict[str, object]:
    """A valid RICE_1 table header for a 200 x 300 image in 16-row tiles (13 tiles)."""
    h: dict[str, object] = {
        "XTENSION": "BINTABLE", "BITPIX": 8, "NAXIS": 2, "NAXIS1": 8, "NAXIS2": 13,
        "PCOUNT": 100, "GCOUNT": 1, "TFIELDS": 1, "TTYPE1": "COMPRESSED_DATA",
        "TFORM1": "1PB(60)", "ZIMAGE": True, "ZCMPTYPE": "RICE_1", "ZBITPIX": 16,
        "ZNAXIS": 2, "ZNAXIS1": 300, "ZNAXIS2": 200, "ZTILE1": 300, "ZTILE2": 16,
    }  # fmt: skip
    for key, value in over.items():
        if value is None:
            h.pop(key, None)
        else:
            h[key] = value
    return h


def test_geometry_and_edge_tiles():
    t = parse_tiles(table())
    assert (t.shape, t.tile, t.grid, t.ntiles) == ((200, 300), (16, 300), (13, 1), 13)
    assert t.tile_region(0) == (slice(0, 16), slice(0, 300))
    assert t.tile_region(12) == (slice(192, 200), slice(0, 300))  # the partial edge tile
    assert (t.algorithm, t.blocksize, t.bytepix, t.dither) == ("RICE_1", 32, 4, None)
    assert (t.heap_start, t.heap_stop) == (104, 204)


def test_two_dimensional_tiles_are_numbered_in_c_order():
    t = parse_tiles(table(ZTILE1=128, NAXIS2=13 * 3))
    assert t.grid == (13, 3)
    assert t.tile_region(4) == (slice(16, 32), slice(128, 256))
    assert t.tile_region(5) == (slice(16, 32), slice(256, 300))


def test_defaults_rice_one_and_parameters():
    t = parse_tiles(
        table(ZCMPTYPE="RICE_ONE", ZTILE1=None, ZTILE2=None, NAXIS2=200, ZNAME1="BLOCKSIZE",
              ZVAL1=16, ZNAME2="BYTEPIX", ZVAL2=2)
    )  # fmt: skip
    assert (t.algorithm, t.tile, t.blocksize, t.bytepix) == ("RICE_1", (1, 300), 16, 2)


def test_quantisation():
    cols = {"TFIELDS": 3, "NAXIS1": 24, "TTYPE2": "ZSCALE", "TFORM2": "1D"}
    cols |= {"TTYPE3": "ZZERO", "TFORM3": "1D"}
    t = parse_tiles(table(ZBITPIX=-32, ZQUANTIZ="SUBTRACTIVE_DITHER_2", ZDITHER0=42, **cols))
    assert (t.dither, t.dither0) == (2, 42)
    assert [c.name for c in t.columns] == ["COMPRESSED_DATA", "ZSCALE", "ZZERO"]
    # no ZSCALE: lossless floats, whatever ZQUANTIZ says
    t = parse_tiles(table(ZBITPIX=-32, ZQUANTIZ="NO_DITHER"))
    assert t.dither is None
    # ZDITHER0 absent: cfitsio's default seed, 1
    assert parse_tiles(table(ZBITPIX=-32, ZSCALE=0.5, ZZERO=0.0)).dither0 == 1


@pytest.mark.parametrize(
    ("over", "keyword"),
    [
        ({"ZCMPTYPE": "LZMA_9"}, "ZCMPTYPE = 'LZMA_9'"),
        ({"ZCMPTYPE": 7}, "ZCMPTYPE = 7"),
        ({"ZBITPIX": 13}, "ZBITPIX = 13"),
        ({"ZTILE2": 0}, "ZTILE2 = 0"),
        ({"ZTILE1": -5}, "ZTILE1 = -5"),
        ({"ZTILE2": 10}, "NAXIS2 = 13"),  # 20 tiles of 10 rows, 13 table rows
        ({"ZNAXIS": 1000}, "ZNAXIS = 1000"),
        ({"ZNAXIS": -1}, "ZNAXIS = -1"),
        ({"ZNAXIS1": 2**40, "ZNAXIS2": 2**40, "ZTILE2": 2**40, "NAXIS2": 1}, "ZNAXISn"),
        ({"ZNAXIS1": 2**70}, "ZNAXIS1 = 1180591620717411303424"),
        ({"ZNAXIS2": None}, "ZNAXIS2 = None"),
        ({"ZQUANTIZ": "SUBTRACTIVE_DITHER_9"}, "ZQUANTIZ"),
        ({"ZDITHER0": 1.5}, "ZDITHER0 = 1.5"),
        # fuzz seed 4 case 14785: past 64 bits, it overflowed the tile seeds at read time
        ({"ZSCALE": 0.5, "ZQUANTIZ": "SUBTRACTIVE_DITHER_1", "ZDITHER0": 2**63}, "must be from 1"),
        ({"ZSCALE": 0.5, "ZQUANTIZ": "SUBTRACTIVE_DITHER_2", "ZDITHER0": 0}, "ZDITHER0 = 0 must"),
        # fuzz seed 32 case 33810: past int64 it was an OverflowError at read time
        ({"ZSCALE": 0.5, "ZBLANK": 2**64}, "ZBLANK = 18446744073709551616"),
        ({"ZNAME1": "BYTEPIX", "ZVAL1": 3}, "BYTEPIX = 3"),
        # fuzz seed 20 case 17596: inf reached int(), an OverflowError
        ({"ZNAME1": "BLOCKSIZE", "ZVAL1": float("inf")}, "BLOCKSIZE = inf"),
        ({"ZNAME1": "SCALE", "ZVAL1": 2.0**40}, "SCALE = 1099511627776.0"),
        ({"TFORM1": "1PZ"}, "TFORM1 = '1PZ'"),
        ({"NAXIS1": 9}, "NAXIS1 = 9"),
        ({"TTYPE1": "DATA"}, "COMPRESSED_DATA"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_hostile_keywords_name_the_keyword(over, keyword):
    with pytest.raises(HeaderError, match="HDU 1") as info:
        parse_tiles(table(**over), "file 'x.fits', HDU 1")
    assert keyword in str(info.value)


def stored(h: dict[str, object], key: str, image: bytes) -> Header:
    """``h`` as stored cards, the card of ``key`` replaced by the 80 bytes ``image``."""
    cards = [image.ljust(80) if k == key else format_card(k, v) for k, v in h.items()]
    return Header(b"".join(cards))


QUANTISED = table(ZBITPIX=-32, TFIELDS=2, NAXIS1=16, TTYPE2="ZSCALE", TFORM2="1D")


@pytest.mark.parametrize(
    ("key", "image"),
    [
        # fuzz seed 4 case 2600 (also 10768, 10835, seed 3 case 13780): one byte outside
        # ASCII in the comment hid the column, and the quantised integers came out as values
        ("TTYPE2", b"TTYPE2  = 'ZSCALE  '           / label for field   3     \xa0"),
        ("TTYPE2", b"TTYPE2  = 'ZSCALE  '           / label for fie\x00d"),
        ("TTYPE2", b"TTYPE2  = 'ZSCALE  "),  # an unterminated string does not parse either
        ("TFORM2", b"TFORM2  = '1D'    / \xe9"),
        ("ZBITPIX", b"ZBITPIX =                  -32 / \xa0"),
        ("ZNAME1", b"ZNAME1  = 'BLOCKSIZE'  / \xa0"),
    ],
    ids=["ttype-nbsp", "ttype-nul", "ttype-unterminated", "tform", "zbitpix", "zname"],
)
def test_unusable_structural_card_is_a_header_error(key, image):
    h = dict(QUANTISED, ZNAME1="BLOCKSIZE", ZVAL1=32)
    with pytest.raises(HeaderError, match=rf"HDU 1.*{key} card .*printable ASCII"):
        parse_tiles(stored(h, key, image), "file 'x.fits', HDU 1")


def test_unusable_other_card_is_read_around():
    # only the cards that place tiles and numbers are structural: others stay warnings
    h = dict(QUANTISED, OBJECT="M13")
    t = parse_tiles(stored(h, "OBJECT", b"OBJECT  = 'M13' / \xa0"), "x")
    assert [c.name for c in t.columns] == ["COMPRESSED_DATA", "ZSCALE"]


def test_unusable_structural_card_after_a_good_header_with_the_same_keywords():
    # the structural positions are kept per keyword index: a second header with the same
    # keywords but a bad value is still refused, and a good one after it still reads
    h = dict(QUANTISED, ZNAME1="BLOCKSIZE", ZVAL1=32)
    good = stored(h, "ZVAL1", b"ZVAL1   =                   32")
    assert parse_tiles(good, "x").blocksize == 32
    bad = stored(h, "ZVAL1", b"ZVAL1   =                 3 2x")
    with pytest.raises(HeaderError, match=r"HDU 1.*ZVAL1 card b'ZVAL1   =  .*3 2x'.*printable"):
        parse_tiles(bad, "file 'x.fits', HDU 1")
    assert parse_tiles(good, "x").blocksize == 32
