"""Table HDUs through the dfits engine: a ``row`` dimension, one lazy variable per column,
equal to astropy's ``Table``."""

from __future__ import annotations

import pickle

import dask
import numpy as np
import pytest
import xarray as xr
from astropy.io import fits
from astropy.table import Table

CORPUS = "/work/shared/corpus"


def expected_values(column) -> np.ndarray:
    """An astropy Table column as dfits gives it: NaN for masked (null) integers, str for
    bytes, object arrays of arrays for variable-length columns."""
    mask = np.ma.getmaskarray(column)
    data = np.ma.getdata(column)
    if data.dtype.kind == "S":
        data = np.char.decode(data, "ascii")
    if mask.any() and data.dtype.kind in "iuf":  # masked strings hold their text
        data = np.where(mask, np.nan, data)
    return data


def assert_column_equal(values: np.ndarray, expected) -> None:
    """``values`` (NaN for nulls) equal to an astropy Table column (masked for nulls)."""
    data = expected_values(expected)
    if data.dtype.kind == "O":
        assert values.dtype.kind == "O"
        assert len(values) == len(data)
        for got, want in zip(values, data, strict=True):
            np.testing.assert_array_equal(got, want)
        return
    assert values.shape == data.shape
    np.testing.assert_array_equal(values, data)


@pytest.fixture(scope="module")
def table_file(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 57
    cols = [
        fits.Column("flux", "E", unit="Jy", array=rng.normal(size=n).astype(">f4")),
        fits.Column("time", "D", unit="s", array=rng.normal(size=n)),
        fits.Column("count", "J", null=-1, array=np.where(np.arange(n) % 7 == 0, -1, 3)),
        fits.Column("big", "K", array=rng.integers(-(2**62), 2**62, n)),
        fits.Column("small", "I", bzero=32768, array=rng.integers(0, 65535, n).astype(np.uint16)),
        fits.Column("name", "8A", array=[f"s{i}" for i in range(n)]),
        fits.Column("flag", "L", array=np.arange(n) % 3 == 0),
        fits.Column("vec", "3E", unit="m", array=rng.normal(size=(n, 3)).astype(">f4")),
        fits.Column("img", "6I", dim="(3,2)", array=np.arange(n * 6).reshape(n, 2, 3)),
        fits.Column("vla", "PJ()", array=[np.arange(i % 4) for i in range(n)]),
    ]
    path = tmp_path_factory.mktemp("tables") / "t.fits"
    hdu = fits.BinTableHDU.from_columns(cols, name="EVENTS")
    fits.HDUList([fits.PrimaryHDU(np.zeros((2, 2))), hdu]).writeto(path)
    return str(path)


def test_dataset_equals_astropy_table(table_file):
    ds = xr.open_dataset(table_file, engine="dfits", hdu="EVENTS")
    expected = Table.read(table_file, hdu="EVENTS")
    assert list(ds.data_vars) == expected.colnames
    assert ds.sizes["row"] == len(expected)
    for name in expected.colnames:
        assert_column_equal(ds[name].values, expected[name])
        unit = expected[name].unit
        assert ds[name].attrs.get("units") == (None if unit is None else str(unit))
    assert ds["vec"].dims == ("row", "vec_dim_0")
    assert ds["img"].dims == ("row", "img_dim_0", "img_dim_1")
    assert ds["img"].shape == (57, 2, 3)
    assert ds["img"].attrs["tdim"] == "(3,2)"
    assert ds["name"].dtype.kind == "U"
    assert ds["vla"].dtype == object
    # TNULL: NaN in floats, the stored integers in encoding
    assert ds["count"].dtype == np.float64
    assert ds["count"].encoding["_FillValue"] == -1
    assert ds["small"].dtype == np.uint16


def test_lazy_until_read(table_file, monkeypatch):
    from dfits.tables.columns import ColumnReader

    calls = []
    original = ColumnReader.rows
    monkeypatch.setattr(
        ColumnReader,
        "rows",
        lambda self, a, b: calls.append((self.column.name, a, b)) or original(self, a, b),
    )
    ds = xr.open_dataset(table_file, engine="dfits", hdu=1)
    assert calls == []
    values = ds["flux"].isel(row=slice(3, 9)).values
    assert calls == [("flux", 3, 9)]
    assert values.shape == (6,)


@pytest.mark.parametrize(
    "key", [slice(5, 40, 3), slice(None, None, -2), 7, -1, [3, 1, 50], slice(56, 80)]
)
def test_selections_read_those_rows(table_file, key):
    ds = xr.open_dataset(table_file, engine="dfits", hdu=1)
    expected = Table.read(table_file, hdu=1)
    rows = np.arange(57)[key]
    for name in ("flux", "count", "name", "img", "vla"):
        got = ds[name].isel(row=key).values
        want = expected_values(expected[name])[rows]
        if name == "vla" and np.ndim(rows) == 0:
            assert got.shape == ()
            np.testing.assert_array_equal(got.item(), want)
        elif name == "vla":
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(got, want)
            assert got.shape == want.shape
    np.testing.assert_array_equal(
        ds["img"].isel(row=slice(2, 9), img_dim_1=1).values, expected["img"][2:9, :, 1]
    )


def test_chunks_follow_rows_and_pickle(table_file):
    with dask.config.set({"array.chunk-size": "1KiB"}):
        ds = xr.open_dataset(table_file, engine="dfits", hdu=1, chunks={})
    # a chunk's KiB: per row, 4 bytes of float32 values and the row's bytes it maps
    step = 1024 // (4 + fits.getheader(table_file, 1)["NAXIS1"])
    assert ds["flux"].chunks[0] == (step,) * (57 // step) + (57 % step,) * (57 % step > 0)
    assert len(ds["flux"].chunks[0]) > 2
    assert ds["vec"].data.chunks[1] == (3,)
    again = pickle.loads(pickle.dumps(ds))
    expected = Table.read(table_file, hdu=1)
    np.testing.assert_allclose(float(again["time"].sum()), expected["time"].sum())
    assert float(again["count"].mean()) == expected["count"].mean()
    assert_column_equal(again["name"].values, expected["name"])


def test_ascii_table_blank_integers_are_nan(tmp_path):
    from tests.tablefiles import write_table

    rows = [b"   12 1.5E+01", b"      2.5E-01", b"   -3 3.0D+02"]
    path = write_table(
        tmp_path / "a.fits",
        [("TFIELDS", 2), ("TTYPE1", "N"), ("TFORM1", "I5"), ("TBCOL1", 1), ("TUNIT1", "ct"),
         ("TTYPE2", "X"), ("TFORM2", "E8.1"), ("TBCOL2", 6)],
        b"".join(rows), xtension="TABLE", naxis1=13, naxis2=3,
    )  # fmt: skip
    ds = xr.open_dataset(path, engine="dfits", hdu=1)
    np.testing.assert_array_equal(ds["N"].values, [12, np.nan, -3])
    assert ds["N"].attrs["units"] == "ct"
    np.testing.assert_array_equal(ds["X"].values, [15.0, 0.25, 300.0])
    assert ds["X"].values.tolist() == fits.getdata(path, 1)["X"].tolist()


CORPUS_TABLES = [
    ("cfitsio/testprog.std", 1),
    ("cfitsio/testprog.std", 4),
    ("cfitsio/testprog.std", 5),
    ("astropy/tdim.fits", 1),
    ("astropy/btable.fits", 1),
    ("astropy/variable_length_table.fits", 1),
    ("astropy/theap-gap.fits", 1),
    ("astropy/chandra_time.fits", 1),
]


@pytest.mark.parametrize(("name", "hdu"), CORPUS_TABLES)
@pytest.mark.filterwarnings("ignore::astropy.utils.exceptions.AstropyWarning")
def test_corpus_tables_equal_astropy(name, hdu):
    import dfits
    from tests.tables.test_access import _astropy, _fitsio, check_column

    path = f"{CORPUS}/{name}"
    ds = xr.open_dataset(path, engine="dfits", hdu=hdu)
    h = dfits.open(path)[hdu]
    # astropy's FITS_rec values, TNULL of scaled integers as NaN (see tests/tables/test_access.py)
    expected = _astropy(path, hdu, h)
    assert list(ds.data_vars) == h.colnames
    for c in h.columns:
        theirs = expected[c.name]
        if theirs is None:  # astropy cannot read it (X with TDIM): fitsio is the oracle
            theirs = _fitsio(path, hdu, c.number)
        if isinstance(c.null, int) and c.dtype.kind in "iu":
            # unscaled integers with TNULL: floats with NaN through xarray
            theirs = np.where(theirs == c.null, np.nan, theirs).astype(ds[c.name].dtype)
        check_column(ds[c.name].values, theirs, f"{name}[{hdu}].{c.name}")
