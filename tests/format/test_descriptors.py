"""Per-tile descriptors of a compressed image's table: layout of a row, heap bounds."""

from __future__ import annotations

import re

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


def test_picked_rows_and_empty_tiles():
    # a stamp reads a few rows out of a run: values in the order asked, the error naming the
    # table row; an empty tile (0 bytes) may point anywhere, as cfitsio allows
    blob = rows([(10, 0), (0, 9999), (20, 30)])
    d = read_descriptors(blob, parse_tiles(HEADER), rows=np.array([7, 5]), first=5)
    assert d.spans["COMPRESSED_DATA"].tolist() == [[20, 30], [10, 0]]
    assert d.values["ZSCALE"].tolist() == [1.5, 0.5]
    d = read_descriptors(blob, parse_tiles(HEADER), rows=np.array([6]), first=5)
    assert d.spans["COMPRESSED_DATA"].tolist() == [[0, 9999]]
    bad = rows([(10, 0), (1, 50), (20, 30)])
    with pytest.raises(HeaderError, match=r"row 7 \(tile 6\) .*1 bytes at heap offset 50"):
        read_descriptors(bad, parse_tiles(HEADER), "x", rows=np.array([5, 6]), first=5)
    empty = read_descriptors(b"", parse_tiles(HEADER), rows=np.array([], np.int64))
    assert empty.spans["COMPRESSED_DATA"].shape == (0, 2)
    assert empty.values["ZBLANK"].dtype == np.int64


def test_huge_q_descriptors_do_not_wrap_around():
    # offset + count past 2**63 wraps to a negative int64: still outside the heap
    h = dict(HEADER, TFORM1="1QB(20)", NAXIS1=45)
    row = np.array([2**62, 2**62], ">i8").tobytes() + bytes(29)
    with pytest.raises(HeaderError, match="points outside the heap"):
        read_descriptors(row, parse_tiles(h), "x")
    row = np.array([1, 2**63 - 1], ">i8").tobytes() + bytes(29)
    with pytest.raises(HeaderError, match="points outside the heap"):
        read_descriptors(row, parse_tiles(h), "x")


@pytest.mark.parametrize(
    ("name", "tform"),
    [("ZSCALE", "1A"), ("ZSCALE", "1L"), ("ZSCALE", "1X"), ("ZSCALE", "1C"), ("ZSCALE", "1M"),
     ("ZSCALE", "1PD(1)"), ("ZZERO", "1A"), ("ZZERO", "1L"), ("ZBLANK", "1A"), ("ZBLANK", "1L"),
     ("ZBLANK", "1E"), ("ZBLANK", "1D"), ("COMPRESSED_DATA", "1J")],
)  # fmt: skip
def test_quantisation_column_of_the_wrong_type_names_its_cards(name, tform):
    # issue 51: a string or logical ZSCALE/ZZERO/ZBLANK cell was read as 8 bytes of a double,
    # taking the next field's bytes; now the column's cards are a HeaderError
    header = {"TFIELDS": 2, "TTYPE1": "COMPRESSED_DATA", "TFORM1": "1PB(9)", "TTYPE2": name,
              "TFORM2": tform}  # fmt: skip
    if name == "COMPRESSED_DATA":
        header["TTYPE1"] = "OTHER"
    at = re.escape(f"x: TTYPE2 = '{name}', TFORM2 = '{tform}': the {name} column must be")
    with pytest.raises(HeaderError, match=at):
        parse_columns(header, "x: ")


@pytest.mark.parametrize(("name", "tform"), [("ZSCALE", "1E"), ("ZZERO", "1J"), ("ZBLANK", "1I")])
def test_quantisation_columns_of_any_number_type(name, tform):
    header = {"TFIELDS": 1, "TTYPE1": name, "TFORM1": tform}
    (col,), _ = parse_columns(header)
    assert (col.name, col.code) == (name, tform[1])
