"""Whole tables to pandas: the numeric columns swapped out of the rows together, equal to
astropy (and fitsio) on every column type, on several threads and spans."""

from __future__ import annotations

import numpy as np
import pytest

import dfits
from dfits.tables import rowdecode

fits = pytest.importorskip("astropy.io.fits")
pd = pytest.importorskip("pandas")


def _table(path, n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    f4 = rng.standard_normal(n).astype(np.float32)
    f4[:: max(n // 3, 1)] = np.nan
    cols = [
        fits.Column("B", "B", array=rng.integers(0, 256, n).astype(np.uint8)),
        fits.Column("I8", "B", bzero=-128, array=rng.integers(-128, 128, n).astype(np.int8)),
        fits.Column("I", "I", array=rng.integers(-(2**15), 2**15, n).astype(np.int16)),
        fits.Column("UI", "I", bzero=2**15, array=rng.integers(0, 2**16, n).astype(np.uint16)),
        fits.Column("J", "J", array=rng.integers(-(2**31), 2**31, n).astype(np.int32)),
        fits.Column("UJ", "J", bzero=2**31, array=rng.integers(0, 2**32, n, dtype=np.uint32)),
        fits.Column("K", "K", array=rng.integers(-(2**62), 2**62, n)),
        fits.Column("UK", "K", bzero=2**63, array=rng.integers(0, 2**64, n, dtype=np.uint64)),
        fits.Column("E", "E", array=f4),
        fits.Column("D", "D", array=rng.standard_normal(n)),
        fits.Column("NJ", "J", null=-1, array=rng.integers(-1, 3, n).astype(np.int32)),
        fits.Column("S", "3A", array=["ab"] * n),
        fits.Column("V2", "2D", array=rng.standard_normal((n, 2))),
    ]
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]).writeto(path)
    return path


@pytest.mark.parametrize("threads", [1, 2])
def test_to_pandas_equals_astropy_on_every_spans_and_threads(tmp_path, monkeypatch, threads):
    from astropy.table import Table

    path = _table(tmp_path / "t.fits", 1001)
    monkeypatch.setattr(rowdecode, "SPAN_BYTES", 97 * 100)  # several spans, uneven cuts
    monkeypatch.setattr(rowdecode, "_THREADED", 0)  # small blocks split between threads too
    got = dfits.open(path)[1].to_pandas(threads=threads)
    want = Table.read(path, hdu=1).to_pandas()
    for name in want.columns:
        if name == "S":  # astropy's to_pandas keeps bytes; dfits str (documented)
            assert got[name].tolist() == [v.decode() for v in want[name]]
            continue
        if name == "V2":
            np.testing.assert_array_equal(np.stack(got[name].to_list()), fits.getdata(path)[name])
            continue
        g, w = got[name], want[name]
        if name == "NJ":  # nullable integers: pandas' missing value where TNULL
            assert g.isna().tolist() == w.isna().tolist()
            assert g.dropna().tolist() == w.dropna().tolist()
            continue
        if name == "I8":  # astropy gives float64 values here; dfits int8 (chosen before)
            assert g.dtype == np.int8
        else:
            assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g.to_numpy(), w.to_numpy(), err_msg=name)


def test_to_pandas_equals_fitsio(tmp_path):
    fitsio = pytest.importorskip("fitsio")
    path = _table(tmp_path / "t.fits", 300)
    got = dfits.open(path)[1].to_pandas(threads=2)
    data = fitsio.read(str(path), ext=1)
    for name in ("B", "I", "UI", "J", "UJ", "K", "UK", "E", "D"):
        np.testing.assert_array_equal(got[name].to_numpy(), data[name], err_msg=name)
    assert got["I8"].tolist() == data["I8"].astype(np.int8).tolist()


def test_decodable_columns_and_dask_partitions(tmp_path):
    path = _table(tmp_path / "t.fits", 50)
    hdu = dfits.open(path)[1]
    picked = [r.column.name for r in hdu._readers(None) if rowdecode.decodable(r)]
    assert picked == ["B", "I8", "I", "UI", "J", "UJ", "K", "UK", "E", "D", "NJ"]
    lazy = hdu.to_dask_dataframe(rows_per_partition=7).compute()
    eager = hdu.to_pandas()
    # every column, dtypes included: the array cells stay arrays (dask's convert-string off)
    pd.testing.assert_frame_equal(lazy.drop(columns=["V2"]), eager.drop(columns=["V2"]))
    assert lazy["V2"].dtype == object
    for a, b in zip(lazy["V2"], eager["V2"], strict=True):
        np.testing.assert_array_equal(a, b)
    empty = hdu.to_pandas(threads=2).iloc[0:0]
    assert list(empty.dtypes) == list(eager.dtypes)


@pytest.mark.parametrize("which", ["binary", "ascii"])
@pytest.mark.parametrize("span_rows", [1, 7, 1000])
def test_every_kind_alike_whatever_the_spans(tmp_path, monkeypatch, which, span_rows):
    """Every route of several columns (``read``, ``to_pandas``, ``to_arrow``, their
    ``where=`` forms and ``hdu.where``) gives, over spans of any size, what one column at a
    time gives over one span, for every column kind of the generated tables."""
    pa = pytest.importorskip("pyarrow")
    from tests.tables.generated import write_ascii, write_binary

    write = write_binary if which == "binary" else write_ascii
    path = write(tmp_path / "t.fits", seed=11, nrows=53)
    hdu = dfits.open(path)[1]
    names = hdu.colnames
    expr = "(E > 0) | isnan(D)" if which == "binary" else "(aF > 0) | (aI < 100)"
    want_rows = hdu.where(expr)
    single = {n: hdu.to_pandas([n]) for n in names}
    arrow = {n: hdu.to_arrow([n]) for n in names}
    read = {n: hdu.read([n])[n] for n in names}
    monkeypatch.setattr(rowdecode, "SPAN_BYTES", span_rows * hdu.layout.shape[1])
    monkeypatch.setattr(rowdecode, "_THREADED", 0)  # small blocks split between threads too
    assert list(hdu.where(expr)) == list(want_rows)
    for threads in (1, 2):
        frame = hdu.to_pandas(threads=threads)
        table = hdu.to_arrow()
        got = hdu.read(threads=threads)
        kept = hdu.to_pandas(where=expr, threads=threads)
        kept_arrow = hdu.to_arrow(where=expr)
        kept_read = hdu.read(where=expr, threads=threads)
        assert list(kept.index) == list(want_rows)
        for n in names:
            one = single[n][n]
            assert frame[n].dtype == one.dtype == kept[n].dtype, n
            if one.dtype == object:
                for a, b in zip(frame[n], one, strict=True):
                    np.testing.assert_array_equal(a, b, err_msg=n)
                for a, b in zip(kept[n], one.loc[want_rows], strict=True):
                    np.testing.assert_array_equal(a, b, err_msg=n)
            else:
                pd.testing.assert_series_equal(frame[n], one)
                pd.testing.assert_series_equal(kept[n], one.loc[want_rows], check_index_type=False)
            assert table[n].type == arrow[n][n].type, n
            # repr: NaN is equal to itself there
            assert repr(table[n].to_pylist()) == repr(arrow[n][n].to_pylist()), n
            taken = arrow[n][n].take(pa.array(want_rows)).to_pylist()
            assert repr(kept_arrow[n].to_pylist()) == repr(taken), n
            for g, w in ((got[n], read[n]), (kept_read[n], read[n][want_rows])):
                assert g.dtype == w.dtype, n
                if w.dtype == object:
                    for a, b in zip(g, w, strict=True):
                        np.testing.assert_array_equal(a, b, err_msg=n)
                else:
                    np.testing.assert_array_equal(g, w, err_msg=n)


@pytest.mark.parametrize("route", ["to_pandas", "to_arrow", "read"])
def test_each_span_of_rows_is_mapped_once_for_every_column(tmp_path, monkeypatch, route):
    """Memory follows the span, not the table: every column of a span is decoded from one
    map of its rows (a map per column of the whole table held 14x the catalogue's rows
    resident through to_arrow), and variable-length arrays map only their span's heap."""
    from dfits.io.local import LocalSource
    from tests.tables.generated import write_binary

    path = write_binary(tmp_path / "t.fits", seed=3, nrows=50)
    hdu = dfits.open(path)[1]
    nrows, row_bytes = hdu.layout.shape
    monkeypatch.setattr(rowdecode, "SPAN_BYTES", 20 * row_bytes)
    maps, mapped = [], LocalSource.map

    def counting_map(self, offset, nbytes, **kwargs):
        maps.append((offset, nbytes))
        return mapped(self, offset, nbytes, **kwargs)

    getattr(hdu, route)()  # once first: the PL column's look for 0x00/0x01 bytes is memoised
    monkeypatch.setattr(LocalSource, "map", counting_map)
    getattr(hdu, route)()
    data = hdu.layout.data_offset
    rows = [(o, n) for o, n in maps if o < data + nrows * row_bytes]
    assert rows == [(data + a * row_bytes, (min(a + 20, nrows) - a) * row_bytes)
                    for a in range(0, nrows, 20)]  # fmt: skip
    heaps = len(maps) - len(rows)  # one map of the span's heap per variable-length column
    assert heaps <= 3 * sum(c.code in "PQ" for c in hdu.columns)


def test_remote_tables_read_alike_on_every_route(tmp_path):
    """A file that cannot be mapped (fsspec) reads each column through its own gathers:
    every route equals the mapped file's, filtered or not."""
    fsspec = pytest.importorskip("fsspec")
    from tests.tables.generated import write_binary

    path = write_binary(tmp_path / "t.fits", seed=7, nrows=61)
    fsspec.filesystem("memory").pipe("/dfits-rowdecode.fits", path.read_bytes())
    here, there = dfits.open(path)[1], dfits.open("memory://dfits-rowdecode.fits")[1]
    assert not there._file.source.mappable
    expr = "(E > 0) | isnan(D)"
    assert list(here.where(expr)) == list(there.where(expr))
    for kw in ({}, {"where": expr}):
        a, b = here.to_pandas(**kw), there.to_pandas(**kw)
        assert list(a.index) == list(b.index)
        for n in a.columns:
            if a[n].dtype == object:
                for x, y in zip(a[n], b[n], strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=n)
            else:
                pd.testing.assert_series_equal(a[n], b[n])
        assert repr(here.to_arrow(**kw).to_pylist()) == repr(there.to_arrow(**kw).to_pylist())
        ra, rb = here.read(**kw), there.read(**kw)
        for n, values in ra.items():
            if values.dtype == object:
                for x, y in zip(values, rb[n], strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=n)
            else:
                np.testing.assert_array_equal(values, rb[n], err_msg=n)
