"""Whole tables: pandas and Arrow types (nullable integers, lists, complex pairs), and the dask
DataFrame equal to the eager one."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import dfits
from tests.tablefiles import write_table

fits = pytest.importorskip("astropy.io.fits")
pd = pytest.importorskip("pandas")


@pytest.fixture
def mixed(tmp_path):
    n = 5
    vla = np.empty(n, dtype=object)
    for i in range(n):
        vla[i] = np.arange(i, dtype=np.int32)
    cols = [
        fits.Column("J", "J", null=-1, array=np.array([1, -1, 3, -1, 5])),
        fits.Column("I8", "B", bzero=-128, array=np.array([-128, -1, 0, 1, 127], np.int8)),
        fits.Column("V3", "3E", array=np.arange(15, dtype=np.float32).reshape(5, 3)),
        fits.Column("VL", "PJ()", array=vla),
        fits.Column("C", "C", array=np.arange(5) + 1j),
        fits.Column("L", "L", array=[True, False, True, False, True]),
        fits.Column("S", "5A", array=["a ", "bb", "", "c  d", "e"]),
    ]
    path = tmp_path / "m.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]).writeto(path)
    return path


def test_pandas_types_and_values(mixed):
    hdu = dfits.open(mixed)[1]
    frame = hdu.to_pandas()
    assert {k: str(v) for k, v in frame.dtypes.items()} == {
        "J": "Int32", "I8": "int8", "V3": "object", "VL": "object", "C": "complex64",
        "L": "bool", "S": frame.dtypes["S"].name,
    }  # fmt: skip
    assert pd.api.types.is_string_dtype(frame["S"])
    # TNULL on an unscaled integer: pandas' missing value, the others kept
    assert frame["J"].isna().tolist() == [False, True, False, True, False]
    assert frame["J"].dropna().tolist() == [1, 3, 5]
    assert frame["S"].tolist() == ["a", "bb", "", "c  d", "e"]  # trailing blanks stripped
    assert [list(v) for v in frame["VL"]] == [list(range(i)) for i in range(5)]
    assert np.stack(frame["V3"].to_list()).tolist() == np.arange(15).reshape(5, 3).tolist()
    lazy = hdu.to_dask_dataframe(rows_per_partition=2)
    assert lazy.npartitions == 3
    got = lazy.compute()
    pd.testing.assert_series_equal(got["J"], frame["J"])
    pd.testing.assert_series_equal(got["C"], frame["C"])
    assert got["S"].tolist() == frame["S"].tolist()


def test_arrow_types_and_values(mixed):
    pa = pytest.importorskip("pyarrow")
    table = dfits.open(mixed)[1].to_arrow()
    types = {f.name: f.type for f in table.schema}
    assert types["J"] == pa.int32()
    assert types["I8"] == pa.int8()
    assert types["V3"] == pa.list_(pa.float32(), 3)
    assert types["VL"] == pa.list_(pa.int32())
    assert types["C"] == pa.list_(pa.float32(), 2)  # (real, imaginary): Arrow has no complex
    assert types["S"] == pa.string()
    got = table.to_pydict()
    assert got["J"] == [1, None, 3, None, 5]
    assert got["C"] == [[float(i), 1.0] for i in range(5)]
    assert got["VL"] == [list(range(i)) for i in range(5)]
    assert table.schema.field("V3").metadata[b"tform"] == b"3E"


def test_scaled_tnull_is_nan_and_reductions_skip_it(tmp_path):
    """TNULLn on a scaled J column: NaN after scaling (as astropy's Table masks it), and the
    fused reductions (mean, min, max, count of values) leave it out."""
    stored = [10, -99, 20, 30, -99, 40]
    keys = [("TFIELDS", 1), ("TTYPE1", "X"), ("TFORM1", "J"), ("TSCAL1", 0.5),
            ("TZERO1", 100.0), ("TNULL1", -99)]  # fmt: skip
    data = b"".join(struct.pack(">i", v) for v in stored)
    path = write_table(tmp_path / "s.fits", keys, data, naxis1=4, naxis2=len(stored))
    hdu = dfits.open(path)[1]
    want = np.array([np.nan if v == -99 else v * 0.5 + 100 for v in stored])
    x = hdu.column("X", rows_per_chunk=4)
    np.testing.assert_array_equal(x.compute(), want)
    assert np.nanmean(x).compute() == pytest.approx(np.nanmean(want))
    assert np.nanmin(x).compute() == np.nanmin(want)
    assert np.nanmax(x).compute() == np.nanmax(want)
    assert int((~np.isnan(x)).sum().compute()) == 4
    assert np.isnan(x.sum().compute())
    assert np.isnan(x[0:2].mean().compute())
    assert x[2:4].mean().compute() == pytest.approx(want[2:4].mean())


@pytest.fixture(params=["binary", "ascii"])
def every_kind(request, tmp_path):
    from tests.tables.generated import write_ascii, write_binary

    writer = write_binary if request.param == "binary" else write_ascii
    return writer(tmp_path / f"{request.param}.fits", seed=7, nrows=41)


def test_parquet_holds_the_arrow_table_of_every_kind(every_kind, tmp_path):
    """Parquet stores what ``to_arrow`` gives (lists for array cells, never their text),
    with each field's FITS metadata; dask reads it back as lists."""
    pq = pytest.importorskip("pyarrow.parquet")
    dd = pytest.importorskip("dask.dataframe")
    hdu = dfits.open(every_kind)[1]
    out = tmp_path / "t.parquet"
    hdu.to_parquet(out, rows_per_group=8)
    back = pq.read_table(out)
    want = hdu.to_arrow()
    # Parquet names a list's item "element" (its nested-type rule): the same types otherwise
    assert [f.metadata for f in back.schema] == [f.metadata for f in want.schema]
    back = back.cast(want.schema)
    for name in want.column_names:  # repr: NaN equals NaN, every float exactly
        assert repr(back[name].to_pylist()) == repr(want[name].to_pylist()), name
    assert pq.ParquetFile(out).metadata.num_row_groups == 6
    lazy = dd.read_parquet(out).compute()
    for c in hdu.columns:
        if (c.code in "PQ" and c.form.element != "A") or (c.shape and c.dtype.kind != "U"):
            cell = lazy[c.name].iloc[0]
            assert not isinstance(cell, str), c.name  # a list of values, not its repr
    assert sorted(tmp_path.iterdir()) == sorted([every_kind, out])  # no temporary file left


def test_parquet_failure_keeps_the_old_file(tmp_path):
    from tests.tables.generated import write_binary

    path = write_binary(tmp_path / "t.fits", seed=3, nrows=20, kinds=["E", "PJ"])
    raw = bytearray(path.read_bytes())
    table = dfits.open(path)[1]
    # row 15's descriptor points far outside the heap: its row group cannot be read
    at = table.layout.data_offset + 14 * table._table().row_bytes + 4 + 4
    raw[at : at + 4] = struct.pack(">i", 10**6)
    path.write_bytes(bytes(raw))
    out = tmp_path / "t.parquet"
    out.write_bytes(b"the good old file")
    with pytest.raises(dfits.DataError, match="row 15"):
        dfits.open(path)[1].to_parquet(out, rows_per_group=4)
    assert out.read_bytes() == b"the good old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.fits", "t.parquet"]
