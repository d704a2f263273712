"""Column keywords: what parses, and every bad input named by HDU, column and keyword."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.errors import DfitsError, HeaderError
from dfits.format.columns import parse_table
from dfits.format.header import Header
from dfits.format.tform import parse_ascii_tform, parse_binary_tform, physical_dtype
from tests.tablefiles import card


def header(*pairs: tuple[str, object]) -> Header:
    return Header(b"".join(card(k, v) for k, v in pairs))


def check_error(pairs, row_bytes, match, *, ascii=False, nrows=1, pcount=0):
    with pytest.raises(HeaderError, match=match) as info:
        parse_table(header(*pairs), ascii, row_bytes, nrows, pcount, "file 'x.fits', HDU 1")
    assert "HDU 1" in str(info.value)
    assert isinstance(info.value, DfitsError)


@pytest.mark.parametrize(
    ("tform", "code", "repeat", "width"),
    [("J", "J", 1, 4), ("16E", "E", 16, 64), ("13X", "X", 13, 2), ("0D", "D", 0, 0),
     ("1PJ(5)", "P", 1, 8), ("QD", "Q", 1, 16), ("20A", "A", 20, 20), ("2M", "M", 2, 32)],
)  # fmt: skip
def test_binary_tforms(tform, code, repeat, width):
    form = parse_binary_tform(tform)
    assert (form.code, form.repeat, form.width) == (code, repeat, width)


@pytest.mark.parametrize(
    ("code", "scale", "zero", "dtype"),
    [("I", 1, 32768, "u2"), ("J", 1, 2**31, "u4"), ("K", 1, 2**63, "u8"), ("B", 1, -128, "i1"),
     ("I", 2, 0, "f8"), ("E", 1, 1, "f8"), ("E", 1, 0, "f4"), ("L", 1, 0, "?"), ("C", 1, 0, "c8")],
)  # fmt: skip
def test_physical_dtypes(code, scale, zero, dtype):
    assert physical_dtype(code, scale, zero) == np.dtype(dtype)


def test_ascii_tforms():
    assert parse_ascii_tform("D25.17").decimals == 17
    assert parse_ascii_tform("I11").width == 11
    with pytest.raises(ValueError, match="needs a number of decimals"):
        parse_ascii_tform("E15")  # no decimals


@pytest.mark.parametrize("tform", ["TX", "1Y", "", "3", "2PJ", "PZ"])
def test_unparseable_tform(tform):
    check_error(
        [("TFIELDS", 1), ("TTYPE1", "FLUX"), ("TFORM1", tform)], 4, r"column 1 \('FLUX'\): TFORM1"
    )


def test_tfields_over_999_or_missing():
    check_error([("TFIELDS", 1000)], 0, "TFIELDS = 1000")
    check_error([], 0, "TFIELDS = None")


def test_missing_tform_named():
    check_error(
        [("TFIELDS", 2), ("TFORM1", "J"), ("TTYPE2", "B")], 4, r"column 2 \('B'\): TFORM2 missing"
    )


def test_missing_ttype_is_standard():
    table = parse_table(header(("TFIELDS", 1), ("TFORM1", "J")), False, 4, 1, 0, "x")
    assert table.names == ["col1"]


def test_widths_must_add_up_to_naxis1():
    check_error(
        [("TFIELDS", 2), ("TFORM1", "J"), ("TFORM2", "E")], 9, "add up to 8 bytes but NAXIS1 = 9"
    )


def test_tbcol_overlap_and_past_the_row():
    base = [("TFIELDS", 2), ("TTYPE1", "A"), ("TFORM1", "I5"), ("TTYPE2", "B"), ("TFORM2", "F8.2")]
    check_error(
        [*base, ("TBCOL1", 1), ("TBCOL2", 4)], 20, r"TBCOL2 = 4 overlaps column 1", ascii=True
    )
    check_error(
        [*base, ("TBCOL1", 1), ("TBCOL2", 15)],
        20,
        r"column 2 \('B'\): TBCOL2 = 15 .* past the row",
        ascii=True,
    )
    check_error([*base, ("TBCOL1", 1)], 20, r"TBCOL2 = None", ascii=True)
    # the same span twice (fuzz seed 10 case 4262: a TypeError sorting the columns)
    same = [("TFIELDS", 2), ("TTYPE1", "A"), ("TFORM1", "I5"), ("TTYPE2", "B"), ("TFORM2", "I5")]
    check_error(
        [*same, ("TBCOL1", 1), ("TBCOL2", 1)], 20, r"TBCOL2 = 1 overlaps column 1", ascii=True
    )


def test_theap_before_rows_or_past_pcount():
    base = [("TFIELDS", 1), ("TFORM1", "PJ(3)")]
    check_error([*base, ("THEAP", 8)], 8, "THEAP = 8 starts before", nrows=2, pcount=100)
    check_error([*base, ("THEAP", 200)], 8, "THEAP = 200 is past", nrows=2, pcount=100)
    table = parse_table(header(*base, ("THEAP", 40)), False, 8, 2, 100, "x")
    assert (table.heap_offset, table.heap_size) == (40, 76)  # a gap after the rows reads


def test_tdim_product_must_be_repeat():
    pairs = [("TFIELDS", 1), ("TTYPE1", "IMG"), ("TFORM1", "6E"), ("TDIM1", "(2,4)")]
    check_error(pairs, 24, r"column 1 \('IMG'\): TDIM1 = '\(2,4\)' holds 8 elements")
    table = parse_table(header(*pairs[:3], ("TDIM1", "(3,2)")), False, 24, 1, 0, "x")
    assert table.columns[0].shape == (2, 3)


def test_tnull_out_of_range_is_dropped():
    pairs = [("TFIELDS", 1), ("TFORM1", "I"), ("TNULL1", 70000)]
    assert parse_table(header(*pairs), False, 2, 1, 0, "x").columns[0].null is None


def test_tscal_zero_or_not_a_number():
    check_error([("TFIELDS", 1), ("TFORM1", "J"), ("TSCAL1", 0)], 4, "TSCAL1 = 0")
    check_error([("TFIELDS", 1), ("TFORM1", "J"), ("TZERO1", "x")], 4, "TZERO1 = 'x'")


@pytest.mark.parametrize(
    ("tform", "tdim", "array_shape"),
    [("PJ(12)", "(3,2)", (-1, 3)), ("PE(8)", "(4,1)", (1, -1)), ("QD(6)", "(2,3,4)", (-1, 3, 2)),
     ("PI(5)", "(5)", ()), ("PA(9)", "(3,3)", ()), ("PL(4)", "(2,2)", ())],
)  # fmt: skip
def test_tdim_of_variable_length_arrays_shapes_each_array(tform, tdim, array_shape):
    width = 8 if tform[0] == "P" else 16
    pairs = [("TFIELDS", 1), ("TFORM1", tform), ("TDIM1", tdim)]
    column = parse_table(header(*pairs), False, width, 1, 0, "x").columns[0]
    assert column.shape == ()
    assert column.array_shape == array_shape


def test_tdim_of_variable_length_arrays_bad():
    base = [("TFIELDS", 1), ("TTYPE1", "V"), ("TFORM1", "PJ(6)")]
    check_error([*base, ("TDIM1", "(3,x)")], 8, r"column 1 \('V'\): TDIM1 = '\(3,x\)' is not")
    check_error([*base, ("TDIM1", "(0,2)")], 8, r"TDIM1 = '\(0,2\)' has a zero axis")


# -- scaling cards of the wrong type (issue 51) -------------------------------------------------
_WRONG = {"undefined": None, "empty": "", "blank": "  ", "string": "abc", "logical": True}


@pytest.mark.parametrize("kind", list(_WRONG))
@pytest.mark.parametrize("key", ["TSCAL1", "TZERO1"])
def test_tscal_tzero_of_the_wrong_type_name_the_card(key, kind):
    value = _WRONG[kind]
    pairs = [("TFIELDS", 1), ("TTYPE1", "A"), ("TFORM1", "J")]
    image = f"{key:<8}=".encode().ljust(80) if value is None else card(key, value)
    with pytest.raises(HeaderError, match=rf"'x.fits', HDU 1, column 1 \('A'\): {key} ") as err:
        parse_table(Header(b"".join(card(k, v) for k, v in pairs) + image), False, 4, 1, 0,
                    "file 'x.fits', HDU 1")  # fmt: skip
    assert ("has no value" if value is None else "is not a finite number") in str(err.value)


@pytest.mark.parametrize("kind", list(_WRONG))
def test_tnull_of_the_wrong_type_matches_nothing(kind):
    # as astropy's data: a TNULLn that is not an integer blanks nothing (values stay integers)
    value = _WRONG[kind]
    pairs = [("TFIELDS", 1), ("TFORM1", "J")]
    image = b"TNULL1  =".ljust(80) if value is None else card("TNULL1", value)
    table = parse_table(Header(b"".join(card(k, v) for k, v in pairs) + image), False, 4, 1, 0, "x")
    assert table.columns[0].null is None
    assert table.columns[0].dtype == np.dtype("int32")
