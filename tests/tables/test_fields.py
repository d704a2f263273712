"""Field decoding edge cases the table fuzzer found (tables/fields.py)."""

from __future__ import annotations

import warnings

import numpy as np

from dfits.tables.fields import strings


def test_strings_strip_trailing_blanks_and_nuls_whatever_lies_inside():
    # fuzz seed 5404 table case 15281: np.char.rstrip stopped early on '\x00 \x00\x00\x00 '
    rows = [b"a\x00\x00\x00\x00\x00", b"\x00 \x00\x00\x00 ", b"\x00\x00\x00\x00@\x00",
            b"  ab  ", b"QQQQQQ", b"      ", b"\xe9t\xe9   "]  # fmt: skip
    got = strings(np.frombuffer(b"".join(rows), np.uint8).reshape(-1, 6))
    assert got.tolist() == ["a", "", "\x00\x00\x00\x00@", "  ab", "QQQQQQ", "", "été"]
    assert got.dtype == np.dtype("U6")
    assert strings(np.zeros((0, 6), np.uint8)).shape == (0,)


def test_a_scaled_value_past_float64_is_inf_without_a_warning(tmp_path):
    # fuzz seed 5404 table case 12155: TSCALn 1e305 on an I column overflows to inf (IEEE)
    import dfits
    from tests.tablefiles import write_table

    keywords = [("TFIELDS", 1), ("TTYPE1", "sI"), ("TFORM1", "I"), ("TSCAL1", 1e305)]
    data = np.array([30000, -30000, 0], ">i2").tobytes()  # 3e309: past float64
    path = write_table(tmp_path / "s.fits", keywords, data, naxis1=2, naxis2=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dfits.open(path) as f:
            got = f[1].read()["sI"]
    np.testing.assert_array_equal(got, [np.inf, -np.inf, 0.0])
