"""The compressed image table dfits writes reads back through dfits' own parser, and as
the image astropy's CompImageHDU.header would give."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.errors import UnsupportedError
from dfits.format.descriptors import read_descriptors
from dfits.format.header import Header
from dfits.format.imagehdu import parse_storage, user_cards
from dfits.format.tiles import parse_tiles
from dfits.format.zheader import image_header
from dfits.format.ztable import NULL_VALUE, parse_compression, table_header, table_rows


def _spec(dtype="f4", shape=(10, 7, 30), **kw):
    kw.setdefault("compression", "RICE_1")
    return parse_compression(shape, parse_storage(dtype, "x"), "x", **kw)


def test_header_parses_back():
    spec = _spec(tile_shape=(1, 4, 30), dither_seed=42)
    cards = user_cards({"OBJECT": "M 1", "ZCMPTYPE": "GZIP_1", "TFORM1": "1J", "ZQUANTIZ": "x"})
    head = Header(table_header(spec, 1000, (90, 12), cards=cards, extname="SCI"))
    tiles = parse_tiles(head)
    assert (tiles.shape, tiles.tile, tiles.zbitpix) == ((10, 7, 30), (1, 4, 30), -32)
    assert (tiles.algorithm, tiles.blocksize, tiles.bytepix) == ("RICE_1", 32, 4)
    assert (tiles.dither, tiles.dither0, tiles.zblank) == (2, 42, NULL_VALUE)
    assert tiles.nrows == spec.ntiles == 20
    assert [c.name for c in tiles.columns] == [
        "COMPRESSED_DATA", "GZIP_COMPRESSED_DATA", "ZSCALE", "ZZERO",
    ]  # fmt: skip
    assert head["TFORM1"] == "1PB(90)"
    assert head["OBJECT"] == "M 1"
    assert head["EXTNAME"] == "SCI"
    image, _ = image_header(head)
    assert (image["NAXIS1"], image["NAXIS3"], image["BITPIX"]) == (30, 10, -32)


def test_unsigned_integers_keep_bzero_and_rows_parse():
    spec = _spec("u2", (5, 8), compression="GZIP_2")
    heap = 3_000_000_000  # past 2**31: 64-bit Q descriptors
    head = Header(table_header(spec, heap, (700_000_000, 0)))
    assert head["TFORM1"] == "1QB(700000000)"
    assert head["BZERO"] == 32768
    assert "ZQUANTIZ" not in head
    spans = np.array([[600_000_000, k * 600_000_000] for k in range(5)])
    rows = table_rows(spec, heap, spans, np.zeros_like(spans), np.zeros(5), np.zeros(5))
    got = read_descriptors(rows, parse_tiles(head))
    np.testing.assert_array_equal(got.spans["COMPRESSED_DATA"], spans)


def test_lossless_floats_say_so():
    head = Header(table_header(_spec(compression="GZIP_1", quantize_level=0), 0, (0, 0)))
    assert head["ZQUANTIZ"] == "NONE"
    assert parse_tiles(head).dither is None


@pytest.mark.parametrize(
    ("kw", "error"),
    [({"compression": "HCOMPRESS_2"}, "dfits writes"),
     ({"tile_shape": (1, 2)}, "tile_shape"),
     ({"quantize_method": "DITHER"}, "quantize_method"),
     ({"dither_seed": 0}, "dither_seed"),
     ({"quantize_level": float("nan")}, "finite")],
)  # fmt: skip
def test_bad_choices(kw, error):
    with pytest.raises((ValueError, UnsupportedError), match=error):
        _spec(**kw)
