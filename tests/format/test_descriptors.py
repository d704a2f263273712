"""Per-tile descriptors of a compressed image's table: layout of a row, heap bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.errors import HeaderError
from dfits.format.descriptors import parse_columns, read_descriptors
from dfits.format.tiles import parse_tiles

HEADER = {
    "NAXIS1": 37, "NAXIS2": 3, "PCOUNT": 50, "TFIELDS": 5, "TTYPE1": "COMPRESSED_DATA",
    "TFORM1": "1PB(20)", "TTYPE2": "GZIP_COMPRESSED_DATA", "TFORM2": "1QB", "TTYPE3": "FLAG",
    "TFORM3": "3X", "TTYPE4": "ZSCALE", "TFORM4": "1D", "TTYPE5": "ZBLANK", "TFORM5": "J",
    "ZCMPTYPE": "RICE_1", "ZBITPIX": -32, "ZNAXIS": 1, "ZNAXIS1": 30, "ZTILE1": 10,
}  # fmt: skip


def rows(spans: list[tuple[int, int]], scale: float = 0.5) -> bytes:
    out = b""
    for k, (count, offset) in enumerate(spans):
        out += np.array([count, offset], ">i4").tobytes()
        out += np.array([0, 0], ">i8").tobytes() + b"\x80"
        out += np.array([scale * (k + 1)], ">f8").tobytes() + np.array([k - 7], ">i4").tobytes()
    return out


def test_row_layout():
    cols, width = parse_columns(HEADER)
    assert width == 37
    assert [(c.name, c.offset, c.code, c.element) for c in cols] == [
        ("COMPRESSED_DATA", 0, "P", "B"), ("GZIP_COMPRESSED_DATA", 8, "Q", "B"),
        ("ZSCALE", 25, "D", ""), ("ZBLANK", 33, "J", ""),
    ]  # fmt: skip


def test_read_descriptors():
    d = read_descriptors(rows([(10, 0), (20, 10), (20, 30)]), parse_tiles(HEADER))
    assert d.spans["COMPRESSED_DATA"].tolist() == [[10, 0], [20, 10], [20, 30]]
    assert d.values["ZSCALE"].tolist() == [0.5, 1.0, 1.5]
    assert d.values["ZBLANK"].tolist() == [-7, -6, -5]
    assert d.heap_size == 50


@pytest.mark.parametrize(
    ("spans", "row", "text"),
    [
        ([(10, 0), (20, 10), (21, 30)], 3, "21 bytes at heap offset 30"),
        ([(10, 0), (1, 50), (1, 1)], 2, "1 bytes at heap offset 50"),
        ([(-1, 0), (1, 1), (1, 1)], 1, "-1 bytes at heap offset 0"),
        ([(1, 0), (1, -4), (1, 1)], 2, "at heap offset -4"),
    ],
)
def test_descriptor_outside_the_heap(spans, row, text):
    with pytest.raises(HeaderError, match=f"row {row} .*{text}.*50 bytes") as info:
        read_descriptors(rows(spans), parse_tiles(HEADER), "file 'x', HDU 1")
    assert "COMPRESSED_DATA" in str(info.value)
    assert "HDU 1" in str(info.value)
