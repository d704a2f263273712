"""Tables read by dfits equal astropy's on every table of the corpus (and fitsio's)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import dfits
from tests.tablefiles import astropy_decoded

astropy_fits = pytest.importorskip("astropy.io.fits")

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")


def _tables():
    out = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix in (".gz", ".Z", ".bz2", ".md") or not path.is_file():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                f = dfits.open(path)
            except dfits.DfitsError:
                continue
            out.extend(
                pytest.param(path, h.index, id=f"{path.parent.name}/{path.name}-{h.index}")
                for h in f
                if h.kind in ("bintable", "table") and h.header.get("ZTABLE") is not True
            )
    return out


TABLES = _tables()


def check_column(ours: np.ndarray, theirs, name: str) -> None:
    if isinstance(theirs, list) or ours.dtype.kind == "O":
        assert len(ours) == len(theirs), name
        for a, b in zip(ours, theirs, strict=True):
            check_column(np.asarray(a), np.asarray(b), name)
        return
    theirs = np.asarray(theirs)
    if theirs.dtype.kind in "SU":
        if ours.ndim == 0 and theirs.ndim == 1:
            # a PA cell: dfits gives the row's string, astropy an array of its characters
            # (joined before stripping: a blank inside the string is one of them)
            assert str(ours) == "".join(theirs.astype(str)).rstrip(" \x00"), name
            return
        theirs = np.char.rstrip(theirs.astype(str))
    assert ours.dtype == theirs.dtype.newbyteorder("="), (name, ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (name, ours.shape, theirs.shape)
    np.testing.assert_array_equal(ours, theirs, err_msg=name)


def _astropy(path, index, hdu):
    """astropy's values per column, with TNULLn (and blank ASCII integer fields) as NaN
    (as its ``Table`` masks them); None for a column astropy cannot read (then fitsio is
    the oracle)."""
    out = {}
    with astropy_fits.open(path) as ref:
        data = ref[index].data
        for c in hdu.columns:
            if data is None:
                out[c.name] = np.zeros((0, *c.shape), c.dtype)
                continue
            try:
                values = np.array(data[c.name]) if c.code not in "PQ" else list(data[c.name])
            except (ValueError, IndexError):
                out[c.name] = None
                continue
            if c.code not in "PQ":
                values = astropy_decoded(data, c)  # TNULLn and blank ASCII integers: NaN
            out[c.name] = values
    return out


def _fitsio(path, index, number):
    fitsio = pytest.importorskip("fitsio")
    data = fitsio.read(str(path), ext=index)
    return data[data.dtype.names[number - 1]]


@pytest.mark.parametrize(("path", "index"), TABLES)
def test_corpus_columns_equal_astropy(path, index):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = dfits.open(path)[index]
        try:
            expected = _astropy(path, index, hdu)
        except ValueError:  # astropy cannot read this HDU at all (bt12.fits: no TTYPEn)
            expected = dict.fromkeys(hdu.colnames)
        for c in hdu.columns:
            ours = hdu.column(c.name).compute()
            theirs = expected[c.name]
            if theirs is None:
                theirs = _fitsio(path, index, c.number)
            check_column(ours, theirs, f"{path.name}[{index}].{c.name}")


def test_dataframe_dtypes_and_parquet(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = CORPUS / "cfitsio" / "testprog.std"
    hdu = dfits.open(path)[1]
    frame = hdu.to_dask_dataframe(["Avalue", "Lvalue", "Ivalue", "Jvalue"], rows_per_partition=6)
    assert frame.npartitions == 4
    eager = hdu.to_pandas(["Avalue", "Lvalue", "Ivalue", "Jvalue"])
    lazy = frame.compute()
    # the same dtypes: dask's convert-string does not turn pandas' str into Arrow strings
    assert list(lazy.dtypes) == list(eager.dtypes)
    assert pd.api.types.is_string_dtype(lazy["Avalue"])
    assert pd.api.types.is_string_dtype(eager["Avalue"])
    assert str(eager["Lvalue"].dtype) == "bool"
    with astropy_fits.open(path) as ref:
        assert lazy["Avalue"].tolist() == [s.rstrip() for s in ref[1].data["Avalue"]]
    dd.to_parquet(frame, tmp_path / "pq")
    back = dd.read_parquet(tmp_path / "pq").compute()
    np.testing.assert_array_equal(back["Jvalue"].to_numpy(), lazy["Jvalue"].to_numpy())


@pytest.mark.parametrize(("path", "index"), TABLES)
def test_column_rows_match_astropy_coldefs(path, index):
    from dfits.listing import column_rows, columns_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = dfits.open(path)[index]
        with astropy_fits.open(path) as ref:
            coldefs = ref[index].columns
            # no TTYPEn (bt12.fits): astropy's name is None, Table's and dfits' col<n>
            theirs = [
                (c.name or f"col{i + 1}", c.format, c.unit or "") for i, c in enumerate(coldefs)
            ]
    rows = column_rows(hdu.columns)
    assert [(r[0], r[2]) for r in rows] == [(n, u) for n, _, u in theirs]
    # TFORM as written: astropy normalises '1E' to 'E', 'PJ(3)' to 'PJ(3)'
    assert [r[1].lstrip("1") for r in rows] == [f.lstrip("1") for _, f, _ in theirs]
    assert [r[3] for r in rows if "object" not in r[3]] == [
        str(c.dtype) for c in hdu.columns if c.code not in "PQ"
    ]
    text = columns_text(hdu.columns).splitlines()
    assert len(text) == len(rows) + 1
    assert all(line.split()[0] == r[0].split()[0] for line, r in zip(text[1:], rows, strict=True))


@pytest.mark.parametrize(("path", "index"), TABLES)
def test_corpus_read_equals_the_columns(path, index):
    """``hdu.read()``, every column in one pass, equals each ``hdu.column``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = dfits.open(path)[index]
        got = hdu.read()
        for c in hdu.columns:
            want = hdu.column(c.name).compute()
            assert got[c.name].dtype == want.dtype, c.name
            if want.dtype == object:  # one array or str per row
                assert len(got[c.name]) == len(want), c.name
                for a, b in zip(got[c.name], want, strict=True):
                    assert type(a) is type(b), c.name
                    np.testing.assert_array_equal(a, b, err_msg=c.name)
            else:
                np.testing.assert_array_equal(got[c.name], want, err_msg=c.name)
