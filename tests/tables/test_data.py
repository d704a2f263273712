"""``hdu.data`` of a table (issue 44): astropy's ``hdu.data[name]``, rows and columns, lazily.

Every column kind of the generated tables (:data:`tests.tables.generated.BINARY` and
``ASCII``) goes through ``data[name]`` and ``data[rows]``; the oracle is astropy's
``hdu.data`` under dfits' one decode (:func:`tests.tablefiles.astropy_decoded`) and
``hdu.column``, which must give the same values.
"""

from __future__ import annotations

import numpy as np
import pytest

import dfits
from tests.tables.generated import ASCII, BINARY, write_ascii, write_binary

fits = pytest.importorskip("astropy.io.fits")


@pytest.fixture(scope="module", params=["binary", "ascii"])
def table(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / f"{request.param}.fits"
    writer = write_binary if request.param == "binary" else write_ascii
    return writer(path, seed=44, nrows=23)


def _equal(got: list, want: list, name: str) -> None:
    assert len(got) == len(want), name
    for a, b in zip(got, want, strict=True):
        assert isinstance(a, str) == isinstance(b, str), name  # a string per row, or an array
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def test_data_is_lazy_and_lists_the_columns(table):
    hdu = dfits.open(table)[1]
    data = hdu.data
    kinds = BINARY if hdu.kind == "bintable" else ASCII
    assert data.names == hdu.colnames == list(kinds)
    assert len(data) == 23
    assert data.shape == (23,)
    assert data.columns == hdu.columns
    assert list(data) == data.names
    assert "E" in data or hdu.kind == "table"
    assert "nope" not in data
    assert hdu.dtype == data.dtype
    assert data.dtype.names == tuple(kinds)
    with fits.open(table) as ref:
        assert len(ref[1].data) == len(data)


@pytest.mark.parametrize("rows", [slice(None), slice(3, 17, 2), [5, 0, 22, 5], 7, -1, "mask"])
def test_rows_equal_the_columns(table, rows):
    """``data[rows]`` holds ``hdu.column(name)[rows]`` of every kind (which
    tests/tables/test_routes.py checks against astropy)."""
    hdu = dfits.open(table)[1]
    if isinstance(rows, str):
        rows = np.arange(23) % 3 == 1
    got = hdu.data[rows]
    scalar = isinstance(rows, int)
    assert isinstance(got, np.void if scalar else np.ndarray)
    assert got.dtype == hdu.dtype
    for c in hdu.columns:
        want = hdu.column(c.name).compute()[rows]
        if c.code in "PQ":
            cells = [got[c.name]] if scalar else list(got[c.name])
            _equal(cells, [want] if scalar else list(want), c.name)
        else:
            np.testing.assert_array_equal(got[c.name], want, err_msg=c.name)


def test_data_column_is_the_one_route(table):
    hdu = dfits.open(table)[1]
    for name in hdu.colnames:
        a, b = hdu.data[name], hdu[name]
        assert a.name == b.name, name  # the same graph: data[name] is hdu.column(name)


def test_info_lists_tables_as_astropy(table):
    f = dfits.open(table)
    ours = f.info(output=False)
    with fits.open(table) as ref:
        theirs = ref.info(output=False)
    assert ours[1][5:] == theirs[1][5:7]  # "23R x 31C", "[B, I, ...]"


def test_a_broken_table_header_raises_at_data(tmp_path):
    path = tmp_path / "bad.fits"
    write_binary(path, seed=1, nrows=3, kinds=["E"])
    raw = bytearray(path.read_bytes())
    at = raw.index(b"TFORM1  = ")
    raw[at + 10 : at + 30] = b"'Z'".ljust(20)
    path.write_bytes(bytes(raw))
    hdu = dfits.open(path)[1]
    with pytest.raises(dfits.DfitsError, match="TFORM1"):
        hdu.data  # noqa: B018
    f = dfits.open(path)
    assert f.info(output=False)[1][5:] == ("3R x 1C", "[Z]")


def test_read_gives_every_column_as_hdu_column(table):
    """``hdu.read`` (one pass for every column) equals ``hdu.column(name).compute()`` for
    every kind, and with ``where=`` the same rows of each."""
    hdu = dfits.open(table)[1]
    got = hdu.read()
    assert list(got) == hdu.colnames
    first = hdu.colnames[4]
    rows = hdu.where(f"isfinite({first})" if hdu.kind == "table" else "E > 0")
    some = hdu.read(hdu.colnames[::2], where="E > 0" if hdu.kind == "bintable" else None)
    for c in hdu.columns:
        want = hdu.column(c.name).compute()
        assert got[c.name].dtype == want.dtype, c.name
        if c.code in "PQ":
            _equal(list(got[c.name]), list(want), c.name)
        else:
            np.testing.assert_array_equal(got[c.name], want, err_msg=c.name)
        if hdu.kind == "bintable" and c.name in some:
            part = some[c.name]
            if c.code in "PQ":
                _equal(list(part), list(want[rows]), c.name)
            else:
                np.testing.assert_array_equal(part, want[rows], err_msg=c.name)


def test_two_columns_of_one_name_are_listed_never_read_by_it(tmp_path):
    """astropy refuses such a table's data; dfits lists its columns and refuses every read
    by the shared name (which of the two is meant cannot be told), naming both TTYPEs."""
    path = write_binary(tmp_path / "dup.fits", seed=2, nrows=4, kinds=["E", "J", "D"])
    raw = bytearray(path.read_bytes())
    at = raw.index(b"TTYPE2  = 'J")
    raw[at + 11] = ord("E")
    path.write_bytes(bytes(raw))
    hdu = dfits.open(path)[1]
    assert hdu.colnames == ["E", "E", "D"]
    assert dfits.open(path).info(output=False)[1][5:] == ("4R x 3C", "[E, J, D]")
    reads = [lambda: hdu["E"], hdu.to_pandas, hdu.to_arrow, hdu.read, lambda: hdu.dtype,
             lambda: hdu.data.dtype, lambda: hdu.to_dask_dataframe()]  # fmt: skip
    for read in reads:
        with pytest.raises(dfits.HeaderError, match=r"HDU 1.*TTYPE\d.*'E'"):
            read()
    np.testing.assert_array_equal(hdu["D"].compute(), hdu.read(["D"])["D"])  # others read
