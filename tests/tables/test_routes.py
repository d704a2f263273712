"""Every route to a table column gives the same values (issue 43: one decode semantics).

A generated binary table holds every column kind (:data:`tests.tables.generated.BINARY`), a
generated ASCII table every ASCII kind with blank fields; astropy's ``hdu.data`` is the
oracle (TNULLn cells and blank integer fields as NaN, :func:`tests.tablefiles.astropy_decoded`)
and its ``Table`` masks are the oracle of the nulls. The routes: ``hdu[name]`` and
``hdu.column``, numpy/dask reductions of them, ``hdu.aggregate``, ``to_pandas``,
``to_dask_dataframe``, ``to_arrow`` and xarray. :data:`TYPES` is the mapping that
``docs/tables.md`` prints: numpy (dask, xarray), pandas and Arrow types of each kind.
"""

from __future__ import annotations

import warnings

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits
from tests.profiles import examples
from tests.tablefiles import astropy_decoded
from tests.tables.generated import ASCII, BINARY, write_ascii, write_binary
from tests.tables.test_access import check_column

fits = pytest.importorskip("astropy.io.fits")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
xr = pytest.importorskip("xarray")
Table = pytest.importorskip("astropy.table").Table

_CELLS = "object"
#: kind -> (numpy dtype of hdu.column, pandas dtype, Arrow type)
TYPES = {
    "B": ("uint8", "uint8", "uint8"),
    "I": ("int16", "int16", "int16"),
    "J": ("int32", "int32", "int32"),
    "K": ("int64", "int64", "int64"),
    "E": ("float32", "float32", "float"),
    "D": ("float64", "float64", "double"),
    "nB": ("float64", "UInt8", "uint8"),
    "nI": ("float64", "Int16", "int16"),
    "nJ": ("float64", "Int32", "int32"),
    "nK": ("float64", "Int64", "int64"),
    "sI": ("float64", "float64", "double"),
    "sJ": ("float64", "float64", "double"),
    "sK": ("float64", "float64", "double"),
    "sE": ("float64", "float64", "double"),
    "uI": ("uint16", "uint16", "uint16"),
    "uJ": ("uint32", "uint32", "uint32"),
    "uK": ("uint64", "uint64", "uint64"),
    "i8": ("int8", "int8", "int8"),
    "L": ("bool", "bool", "bool"),
    "X": ("bool", _CELLS, "fixed_size_list<item: bool>[11]"),
    "A": ("<U6", "str", "string"),
    "Ad": ("<U4", _CELLS, "fixed_size_list<item: string>[3]"),
    "E3": ("float32", _CELLS, "fixed_size_list<item: float>[3]"),
    "nJd": ("float64", _CELLS, "fixed_size_list<item: int32>[6]"),
    "sIa": ("float64", _CELLS, "fixed_size_list<item: double>[2]"),
    "C": ("complex64", "complex64", "fixed_size_list<item: float>[2]"),
    "M": ("complex128", "complex128", "fixed_size_list<item: double>[2]"),
    "PJ": ("object", _CELLS, "list<item: int32>"),
    "QD": ("object", _CELLS, "list<item: double>"),
    "PA": ("object", "str", "string"),
    "PEd": ("object", _CELLS, "list<item: float>"),
    "PL": ("object", _CELLS, "list<item: bool>"),
    "aI": ("float64", "Int32", "int32"),
    "aIb": ("float64", "Int16", "int16"),
    "aK": ("float64", "Int64", "int64"),
    "aF": ("float64", "float64", "double"),
    "aE": ("float64", "float64", "double"),
    "aD": ("float64", "float64", "double"),
    "aA": ("<U5", "str", "string"),
    "saI": ("float64", "float64", "double"),
    "saF": ("float64", "float64", "double"),
}

#: nulls of these are Arrow nulls (TNULLn, blank ASCII numbers); other NaN stay NaN
_NULLS = {"nB", "nI", "nJ", "nK", "sI", "sJ", "nJd", "sIa", "aI", "aIb", "aK", "aF", "aE", "aD",
          "saI", "saF"}  # fmt: skip
#: astropy's Table masks these (TNULLn on unscaled integers): the oracle of the nulls
_MASKED = ("nB", "nI", "nJ", "nK", "nJd")
HOWS = ["sum", "nansum", "mean", "nanmean", "count", "nanstd", "min", "nanmax"]


def test_every_kind_is_listed():
    assert set(TYPES) == set(BINARY) | set(ASCII)


def _numpy(how: str, values: np.ndarray):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN and empty columns
        if how == "count":
            return np.sum(~np.isnan(values)) if values.dtype.kind == "f" else values.size
        if how in ("sum", "nansum") and values.dtype.kind == "f":
            # dfits accumulates in float64 (numpy's float32 sum is the less exact one)
            return getattr(np, how)(values.astype(np.float64)).astype(values.dtype)
        return getattr(np, how)(values)


def _close(got, want, dtype, what: str) -> None:
    rtol = 1e-5 if dtype == np.float32 else 1e-9
    if np.asarray(want).dtype.kind in "iub":
        assert got == want, what
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=what)


def _astropy_as_mapped(want: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """astropy's values in dfits' dtype where the two differ by design, values equal."""
    if name == "i8":
        # astropy's tables give B with TZERO = -128 as float64; dfits int8, as for images
        assert np.array_equal(want, want.astype(np.int8)), name
        return want.astype(np.int8)
    if dtype.kind == "U":
        # astropy widens an ASCII A field to the next TBCOLn; its text is the same
        want = np.char.rstrip(want.astype(str))
        assert np.char.str_len(want).max(initial=0) <= dtype.itemsize // 4, name
        return want.astype(dtype)
    return want


def _routes_numpy(hdu, chunk: int, path, seed: int | None) -> dict[str, np.ndarray]:
    """hdu[name] and hdu.column equal astropy's decoded values, in the mapped dtype."""
    out = {}
    with fits.open(path) as ref:
        data = ref[1].data
        for c in hdu.columns:
            values = hdu.column(c.name, rows_per_chunk=chunk).compute()
            assert str(values.dtype) == TYPES[c.name][0] == str(c.dtype), c.name
            if data is None or len(data) == 0:
                want = np.zeros((0, *c.shape), values.dtype)
            elif c.code in "PQ":
                want = list(data[c.name])
            else:
                want = _astropy_as_mapped(astropy_decoded(data, c), values.dtype, c.name)
            check_column(values, want, c.name)
            check_column(hdu[c.name].compute(), want, c.name)
            out[c.name] = values
    if seed is not None:
        # the same columns alone: astropy's Table cannot read a scaled K (its bzero64 bug)
        alone = write_binary(path.with_name("masks.fits"), seed, len(out["B"]), list(_MASKED))
        table = Table.read(alone, hdu=1)
        for name in _MASKED:
            # astropy's Table masks exactly the cells dfits gives as NaN
            np.testing.assert_array_equal(
                np.ma.getmaskarray(table[name]), np.isnan(out[name]), err_msg=name
            )
    return out


def _routes_reduce(hdu, values: dict, chunk: int) -> None:
    """hdu.aggregate and numpy's reductions of hdu[name] equal numpy on the decoded column."""
    names = [c.name for c in hdu.columns if c.code not in "PQ" and c.dtype.kind in "biuf"]
    n = hdu._table().nrows
    for how in HOWS:
        if how in ("min", "nanmax") and n == 0:
            continue
        (got,) = dask.compute(hdu.aggregate(how, names, rows_per_chunk=chunk))
        for name in names:
            want = _numpy(how, values[name])
            _close(got[name], want, values[name].dtype, f"aggregate {how} {name}")
            if how != "count":
                alone = getattr(np, how)(hdu.column(name, rows_per_chunk=chunk)).compute()
                assert alone.dtype == got[name].dtype, (how, name)
                _close(alone, want, values[name].dtype, f"{how}(hdu[{name!r}])")


_MOMENTS = ("mean", "nanmean", "var", "nanvar", "std", "nanstd")


@pytest.mark.parametrize("chunk", [1, 3, None], ids=lambda c: f"rows{c}")
@pytest.mark.parametrize("how", _MOMENTS)
def test_moments_of_wide_integers_are_numpys(tmp_path, how, chunk):
    """Means and spreads of K and unsigned K columns whose sum passes 2**63: numpy
    accumulates them in float64, where 64-bit integer partial sums would wrap."""
    signed = np.array([2**62, 2**62, 2**62, -5, 2**63 - 1], np.int64)
    unsigned = np.array([2**63, 2**64 - 1, 2**63 + 7, 2**62, 1], np.uint64)
    cols = [
        fits.Column("K", "K", array=signed),
        fits.Column("uK", "K", bzero=2**63, array=unsigned),
    ]
    fits.BinTableHDU.from_columns(cols).writeto(tmp_path / "k.fits")
    hdu = dfits.open(tmp_path / "k.fits")[1]
    got = dask.compute(hdu.aggregate(how, ["K", "uK"], rows_per_chunk=chunk))[0]
    for name, values in (("K", signed), ("uK", unsigned)):
        want = getattr(np, how)(values)
        np.testing.assert_allclose(got[name], want, rtol=1e-12, err_msg=name)
        column = hdu.column(name, rows_per_chunk=chunk)
        np.testing.assert_allclose(getattr(np, how)(column).compute(), want, rtol=1e-12)
        np.testing.assert_allclose(
            getattr(column, how.removeprefix("nan"))().compute(),
            getattr(np, how.removeprefix("nan"))(values),
            rtol=1e-12,
        )
    # the sums themselves wrap, as numpy's do
    sums = dask.compute(hdu.aggregate("sum", ["K", "uK"], rows_per_chunk=chunk))[0]
    assert sums["K"] == np.sum(signed)
    assert sums["uK"] == np.sum(unsigned)


def _check_cells(series, values: np.ndarray, name: str) -> None:
    assert len(series) == len(values), name
    for got, want in zip(series, values, strict=True):
        if isinstance(want, str):  # a PA cell: one string
            assert isinstance(got, str), name
            assert got == want, name
            continue
        check_column(np.asarray(got), np.asarray(want), name)


def _routes_pandas(hdu, values: dict, chunk: int) -> None:
    """to_pandas and to_dask_dataframe: the mapped dtypes, nulls where numpy has NaN."""
    frame = hdu.to_pandas()
    lazy = hdu.to_dask_dataframe(rows_per_partition=chunk).compute()
    assert list(lazy.dtypes) == list(frame.dtypes)
    for name, want in values.items():
        series = frame[name]
        assert str(series.dtype) == TYPES[name][1], (name, series.dtype)
        if series.dtype == object:
            _check_cells(series, want, name)
            _check_cells(lazy[name], want, name)
            continue
        if str(series.dtype)[:3] in ("Int", "UIn"):
            np.testing.assert_array_equal(series.isna().to_numpy(), np.isnan(want), name)
        got = series.to_numpy(
            dtype=None if name in ("A", "aA", "PA") else want.dtype, na_value=np.nan
        )
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=name)
        pd.testing.assert_series_equal(lazy[name], series, check_index=False)


def _arrow_leaf(column) -> tuple[np.ndarray, np.ndarray]:
    """The leaf values (NaN for nulls) and null flags of an Arrow column, flattened."""
    array = column.combine_chunks()
    while pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        array = array.flatten()
    if pa.types.is_string(array.type):
        return np.array(array.to_pylist(), object), array.is_null().to_numpy(False)
    nulls = array.is_null().to_numpy(zero_copy_only=False)
    return array.to_numpy(zero_copy_only=False), nulls


def _routes_arrow(hdu, values: dict) -> None:
    """to_arrow: the mapped types, Arrow nulls for TNULLn and blank fields, values equal."""
    table = hdu.to_arrow()
    for name, want in values.items():
        column = table[name]
        assert str(column.type) == TYPES[name][2], (name, column.type)
        leaf, nulls = _arrow_leaf(column)
        if want.dtype == object:
            flat = [np.ravel(v) if not isinstance(v, str) else [v] for v in want]
            want = np.concatenate(flat) if flat else np.zeros(0)
            if name == "PA":  # one string per row
                want = np.array(list(values[name]), object)
        elif want.dtype.kind == "c":
            want = want.reshape(-1).view(want.real.dtype)
        want = want.reshape(-1)
        if name in _NULLS:
            np.testing.assert_array_equal(nulls, np.isnan(want), err_msg=name)
            leaf = np.where(nulls, np.nan, leaf.astype(np.float64))
        else:
            assert not nulls.any(), name
        np.testing.assert_array_equal(leaf.astype(want.dtype), want, err_msg=name)


def _routes_xarray(path, values: dict) -> None:
    """xarray's variables equal hdu.column, dtype and all."""
    with xr.open_dataset(path, engine="dfits", hdu=1) as ds:
        for name, want in values.items():
            got = ds[name].values
            assert got.dtype == want.dtype, (name, got.dtype)
            if want.dtype == object:
                _check_cells(got, want, name)
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)


def _all_routes(path, chunk: int, seed: int | None = None) -> None:
    """Every route agrees on the table of ``path`` (``seed``: a binary one's, to write the
    columns that astropy's Table masks alone)."""
    hdu = dfits.open(path)[1]
    values = _routes_numpy(hdu, chunk, path, seed)
    _routes_reduce(hdu, values, chunk)
    _routes_pandas(hdu, values, chunk)
    _routes_arrow(hdu, values)
    _routes_xarray(path, values)


_SETTINGS = settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_ROWS = st.sampled_from([0, 1, 2, 9, 40])


@_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nrows=_ROWS, chunk=st.integers(1, 16))
def test_binary_table_routes_agree(tmp_path, seed, nrows, chunk):
    _all_routes(write_binary(tmp_path / f"b{seed}.fits", seed, nrows), chunk, seed)


@_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nrows=_ROWS, chunk=st.integers(1, 16))
def test_ascii_table_routes_agree(tmp_path, seed, nrows, chunk):
    _all_routes(write_ascii(tmp_path / f"a{seed}.fits", seed, nrows), chunk)


def test_issue_43_repro(tmp_path):
    """The unscaled J with TNULLn of the issue: -994 and a count of 2 before."""
    cols = [fits.Column("N", "J", null=-999, array=np.array([5, -999], np.int32))]
    fits.BinTableHDU.from_columns(cols).writeto(tmp_path / "n.fits")
    hdu = dfits.open(tmp_path / "n.fits")[1]
    np.testing.assert_array_equal(hdu["N"].compute(), [5.0, np.nan])
    assert np.isnan(hdu["N"].sum().compute())
    assert np.nansum(hdu["N"]).compute() == 5
    assert hdu.aggregate("count", ["N"])["N"].compute() == 1
    assert hdu.to_pandas()["N"].tolist() == [5, pd.NA]
    assert hdu.to_arrow()["N"].to_pylist() == [5, None]
