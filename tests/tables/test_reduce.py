"""Several columns reduced together (``hdu.aggregate``): equal to astropy and to each column
reduced alone, and each span of rows mapped once for all of them."""

from __future__ import annotations

import pickle

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits
from dfits.array.aggregations import reduce
from tests.array.helpers import WIDE_MOMENTS, check_wide, wide_integers
from tests.profiles import examples
from tests.tablefiles import astropy_decoded, write_table

fits = pytest.importorskip("astropy.io.fits")

HOWS = ["sum", "nansum", "mean", "nanmean", "count", "std", "nanvar", "min", "nanmax"]


def _numpy(how: str, values: np.ndarray):
    values = np.asarray(values)
    if how == "count":
        return np.sum(~np.isnan(values)) if values.dtype.kind == "f" else values.size
    if how in ("sum", "nansum") and values.dtype.kind == "f":
        # dfits accumulates in float64 (numpy's float32 sum is the less exact one)
        return getattr(np, how)(values.astype(np.float64))
    return getattr(np, how)(values)


def _table(path, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n).astype(np.float32)
    d = rng.standard_normal(n) * 1e3
    if n > 5:
        e[3] = np.nan
        d[5] = np.nan
    cols = [
        fits.Column("E", "E", array=e),
        fits.Column("S", "5A", array=["ab"] * n),
        fits.Column("D", "D", array=d),
        fits.Column("B", "B", array=rng.integers(0, 256, n).astype(np.uint8)),
        fits.Column("I", "I", array=rng.integers(-(2**15), 2**15, n).astype(np.int16)),
        fits.Column("J", "J", null=-1, array=rng.integers(-1, 50, n).astype(np.int32)),
        fits.Column("K", "K", array=rng.integers(-(2**40), 2**40, n)),
        fits.Column("U", "J", array=rng.integers(0, 2**32, n, dtype=np.uint32)),
        fits.Column("CUBE", "6E", dim="(3,2)", array=rng.normal(size=(n, 2, 3))),
        fits.Column("L", "L", array=rng.integers(0, 2, n).astype(bool)),
    ]
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]).writeto(path)
    return path


@pytest.mark.parametrize("how", HOWS)
def test_aggregate_equals_astropy_and_each_column(tmp_path, how):
    path = _table(tmp_path / "t.fits", 1000)
    hdu = dfits.open(path)[1]
    names = ["E", "D", "B", "I", "J", "K", "U", "CUBE"]
    (got,) = dask.compute(hdu.aggregate(how, names, rows_per_chunk=300))
    assert list(got) == names
    with fits.open(path) as ref:
        for name in names:
            column = hdu.columns[hdu.colnames.index(name)]
            want = _numpy(how, astropy_decoded(ref[1].data, column))  # J: TNULL -1 is NaN
            alone = reduce(hdu.column(name, 300), how).compute()
            assert got[name].dtype == alone.dtype, name
            rtol = 1e-5 if got[name].dtype == np.float32 else 1e-10
            np.testing.assert_allclose(got[name], want, rtol=rtol, err_msg=name)
            np.testing.assert_allclose(got[name], alone, rtol=rtol, err_msg=name)


def test_default_columns_are_the_numeric_ones(tmp_path):
    path = _table(tmp_path / "t.fits", 50)
    hdu = dfits.open(path)[1]
    assert list(hdu.aggregate("max")) == ["E", "D", "B", "I", "J", "K", "U", "CUBE"]


def test_each_span_is_mapped_once_for_all_columns(tmp_path, monkeypatch):
    """The file's bytes are read once: one map per span, together exactly the rows."""
    from dfits.io.local import LocalSource

    path = _table(tmp_path / "t.fits", 3000)
    hdu = dfits.open(path)[1]
    row = hdu._table().row_bytes
    mapped = []
    real = LocalSource.map

    def spy(self, offset, nbytes, **kw):
        mapped.append((offset, nbytes))
        return real(self, offset, nbytes, **kw)

    monkeypatch.setattr(LocalSource, "map", spy)
    sums = hdu.aggregate("sum", ["E", "D", "J", "CUBE", "U"], rows_per_chunk=700)
    dask.compute(sums)
    assert len(mapped) == 5  # spans of 700 rows: 700 x 4 + 200
    assert sorted(mapped) == [
        (hdu.layout.data_offset + a * row, min(700, 3000 - a) * row) for a in range(0, 3000, 700)
    ]


@pytest.mark.parametrize("how", ["sum", "nanmean", "max"])
def test_scaled_columns_with_tnull(tmp_path, how):
    """TSCAL/TZERO with TNULL (NaN after scaling) and an int8 offset column."""
    n = 40
    j = np.arange(n, dtype=">i4") - 7
    j[[3, 9]] = -99
    b = np.arange(n, dtype=np.uint8) * 5
    data = np.zeros(n, [("X", ">i4"), ("Y", "u1")])
    data["X"], data["Y"] = j, b
    keys = [("TFIELDS", 2), ("TTYPE1", "X"), ("TFORM1", "J"), ("TSCAL1", 0.5),
            ("TZERO1", 100.0), ("TNULL1", -99), ("TTYPE2", "Y"), ("TFORM2", "B"),
            ("TZERO2", -128)]  # fmt: skip
    path = write_table(tmp_path / "s.fits", keys, data.tobytes(), naxis1=5, naxis2=n)
    hdu = dfits.open(path)[1]
    (got,) = dask.compute(hdu.aggregate(how, rows_per_chunk=16))
    with fits.open(path) as ref:
        # astropy's values, with TNULL as NaN after scaling (dfits' documented rule)
        x = np.where(ref[1].data.field("X") == -99 * 0.5 + 100, np.nan, ref[1].data["X"])
        y = ref[1].data["Y"]
    for name, values in (("X", x), ("Y", y)):
        np.testing.assert_allclose(got[name], _numpy(how, values), rtol=1e-12, err_msg=name)
        assert got[name].dtype == reduce(hdu.column(name), how).dtype


def test_ascii_table_columns_reduce_together(tmp_path):
    """ASCII columns (parsed, not the fused kernel) reduce together too."""
    rows = [b"  12  1.5E+00", b"  -3  2.5E-01", b"   7 -1.0E+01"]
    path = write_table(
        tmp_path / "a.fits",
        [("TFIELDS", 2), ("TTYPE1", "N"), ("TFORM1", "I4"), ("TBCOL1", 1),
         ("TTYPE2", "X"), ("TFORM2", "E9.2"), ("TBCOL2", 5)],
        b"".join(rows), xtension="TABLE", naxis1=13, naxis2=3,
    )  # fmt: skip
    hdu = dfits.open(path)[1]
    (got,) = dask.compute(hdu.aggregate("sum", rows_per_chunk=2))
    assert got["N"] == 16
    assert got["X"] == pytest.approx(1.5 + 0.25 - 10.0)


def test_zero_rows_and_bad_requests(tmp_path):
    path = _table(tmp_path / "t.fits", 0)
    hdu = dfits.open(path)[1]
    (got,) = dask.compute(hdu.aggregate("sum", ["E", "J"]))
    assert got["E"] == 0
    assert got["J"] == 0
    assert np.isnan(dask.compute(hdu.aggregate("mean", ["D"]))[0]["D"])
    for how in ("max", "nanmin", "nanmax"):
        with pytest.raises(ValueError, match="zero-size"):
            hdu.aggregate(how, ["E"])
    full = dfits.open(_table(tmp_path / "u.fits", 5))[1]
    with pytest.raises(TypeError, match=r"'S'.*numbers"):
        full.aggregate("sum", ["E", "S"])
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        full.aggregate("median", ["E"])
    with pytest.raises(KeyError, match="NOPE"):
        full.aggregate("sum", ["NOPE"])
    assert full.aggregate("sum", []) == {}


def test_results_pickle_and_run_in_processes(tmp_path):
    path = _table(tmp_path / "t.fits", 500)
    hdu = dfits.open(path)[1]
    sums = pickle.loads(pickle.dumps(hdu.aggregate("nansum", ["E", "D", "K"], rows_per_chunk=128)))
    (got,) = dask.compute(sums, scheduler="processes", num_workers=2)
    with fits.open(path) as ref:
        for name, value in got.items():
            np.testing.assert_allclose(value, np.nansum(ref[1].data[name].astype(np.float64)),
                                       rtol=1e-6)  # fmt: skip


def test_remote_table_reduces_from_one_request_per_span(tmp_path):
    """Over HTTP each span's rows come in one ranged request; the sums equal the local ones."""
    from tests.servers import Nginx

    if not Nginx.available():
        pytest.skip("nginx is not installed (./run test installs it where apt-get works)")
    root = tmp_path / "served"
    root.mkdir()
    _table(root / "t.fits", 900)
    local = dfits.open(root / "t.fits")[1]
    (want,) = dask.compute(local.aggregate("nansum", ["E", "D", "K"], rows_per_chunk=300))
    with Nginx(root, tmp_path / "nginx") as http:
        hdu = dfits.open(f"{http.url}/t.fits")[1]
        before = len(http.gets("t.fits"))
        (got,) = dask.compute(hdu.aggregate("nansum", ["E", "D", "K"], rows_per_chunk=300))
        requests = http.gets("t.fits")[before:]
    assert got == want
    assert len([r for r in requests if r.status == 206]) == 3, requests


def test_tnull_cells_are_nan_in_every_reduction(tmp_path):
    """Issue 43's repro: an unscaled J with TNULLn reduces as the float64 column with NaN
    (its nulls were summed as -999 and counted)."""
    cols = [fits.Column("N", "J", null=-999, array=np.array([5, -999], np.int32))]
    fits.BinTableHDU.from_columns(cols).writeto(tmp_path / "n.fits")
    hdu = dfits.open(tmp_path / "n.fits")[1]
    assert hdu.columns[0].dtype == np.float64
    assert np.isnan(hdu["N"].sum().compute())
    assert np.nansum(hdu["N"]).compute() == 5
    (got,) = dask.compute({h: hdu.aggregate(h, ["N"])["N"] for h in ("count", "nansum", "sum")})
    assert got["count"] == 1
    assert got["nansum"] == 5
    assert np.isnan(got["sum"])


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_wide_integer_columns_reduce_as_numpy(tmp_path, data):
    """K and unsigned K columns (TZERO = 2**63) whose sums pass 2**63: hdu.aggregate (the
    fused row pass for K, blocks for unsigned K), numpy calls and methods on hdu[name], and
    reduce of the column give numpy's value of the decoded column."""
    n = data.draw(st.integers(1, 12), label="rows")
    signed = np.array(data.draw(st.lists(wide_integers(np.int64), min_size=n, max_size=n)))
    unsigned = data.draw(st.lists(wide_integers(np.uint64), min_size=n, max_size=n))
    unsigned = np.array(unsigned, np.uint64)
    chunk = data.draw(st.integers(1, n), label="rows_per_chunk")
    path = tmp_path / f"wide-{abs(hash((signed.tobytes(), unsigned.tobytes())))}.fits"
    cols = [fits.Column("K", "K", array=signed), fits.Column("U", "K", bzero=2**63, array=unsigned)]
    fits.BinTableHDU.from_columns(cols).writeto(path, overwrite=True)
    hdu = dfits.open(path)[1]
    for how in ("sum", "nansum", *WIDE_MOMENTS):
        (got,) = dask.compute(hdu.aggregate(how, ["K", "U"], rows_per_chunk=chunk))
        for name, values in (("K", signed), ("U", unsigned)):
            column = hdu.column(name, rows_per_chunk=chunk)
            assert column.dtype == values.dtype
            check_wide(got[name], values, how, what=f"aggregate {how} {name}")
            check_wide(getattr(np, how)(column).compute(), values, how, what=f"np.{how} {name}")
            check_wide(reduce(column, how).compute(), values, how, what=f"reduce {how} {name}")
            if not how.startswith("nan"):
                check_wide(getattr(column, how)().compute(), values, how, what=f".{how} {name}")


#: numeric kinds (tests.tables.generated) that no kernel reads: their fields decode in numpy
#: (scaled or TNULL B/I and scaled E/D: kernels would compute them in float32, astropy's
#: tables in float64; L and X are bits). Every other numeric kind reduces from its kernels;
#: of these, aggregate's sums and counts of FUSED_KINDS take the fused row pass too.
DECODED_KINDS = {"nB", "nI", "sI", "sE", "sIa", "L", "X"}
#: TNULLn B and I: their exact int64 sums in the row pass (test_fused_kinds_equal_...)
FUSED_KINDS = {"nB", "nI"}


# (the ``counted`` fixture, fused row sums included: tests/conftest.py)


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    from dfits.tables.fields import kernel_spec
    from tests.tables.generated import write_binary

    hdu = dfits.open(write_binary(tmp_path_factory.mktemp("kinds") / "t.fits", 0, 1000))[1]
    numeric = [c for c in hdu.columns if c.code not in "PQ" and c.dtype.kind in "biuf"]
    assert {c.name for c in numeric if kernel_spec(c) is None} == DECODED_KINDS
    return hdu, [c for c in numeric if kernel_spec(c) is not None]


@pytest.mark.parametrize("how", ["sum", "nanmean", "count", "std", "nanvar", "max", "nanmin"])
def test_aggregate_is_one_pass_per_span_and_column_without_decode(every_kind, counted, how):
    """hdu.aggregate: per span, one fused row pass for the sums of the plain one-element
    fields, and one kernel pass per block for each other column; nothing decodes."""
    from dfits.tables.fields import kernel_spec
    from dfits.tables.reduce import _summable

    hdu, kernel_columns = every_kind
    names = [c.name for c in kernel_columns]
    dask.compute(hdu.aggregate(how, names, rows_per_chunk=300))
    spans = 4  # 1000 rows in spans of 300
    assert not {"decode", "chunk.decode"} & set(counted), counted
    sums = how in ("sum", "nanmean", "count")
    assert counted.pop("field_sums", 0) == (spans if sums else 0)
    rest = [c for c in kernel_columns if not sums or not _summable(hdu._reader(c.name))]
    if how == "count":  # values that cannot be missing are counted without a pass
        rest = [c for c in rest if kernel_spec(c).has_missing]
    assert sum(counted.values()) == spans * len(rest), (counted, [c.name for c in rest])


@pytest.mark.parametrize("how", ["nansum", "nanmean", "count", "std", "nanmax", "argmin"])
def test_column_reductions_are_one_pass_per_chunk_without_decode(every_kind, counted, how):
    """reduce of hdu[name]: one kernel pass per chunk of every column a kernel reads (a
    count of values that cannot be missing: none); nothing decodes."""
    from dfits.tables.fields import kernel_spec

    hdu, kernel_columns = every_kind
    for c in kernel_columns:
        x = hdu.column(c.name, rows_per_chunk=300)
        counted.clear()
        reduce(x, how).compute()
        assert not {"decode", "chunk.decode"} & set(counted), (c.name, counted)
        if how == "count" and not kernel_spec(c).has_missing:  # integers, scaled or not
            assert counted == {}, c.name
            continue
        assert list(counted.values()) == [x.npartitions], (c.name, counted)


# -- one span route: hdu.aggregate maps each span through tables.rowdecode.spans ----------


@pytest.fixture(scope="module")
def kind_tables(tmp_path_factory):
    """A generated binary and ASCII table of every kind (60 rows) and astropy's decoded
    values of each numeric column, in dfits' dtypes."""
    from tests.tables.generated import write_ascii, write_binary
    from tests.tables.test_routes import _astropy_as_mapped

    root = tmp_path_factory.mktemp("spans")
    out = {}
    for kind, write in (("binary", write_binary), ("ascii", write_ascii)):
        path = write(root / f"{kind}.fits", 7, 60)
        hdu = dfits.open(path)[1]
        numeric = [c for c in hdu.columns if c.code not in "PQ" and c.dtype.kind in "biuf"]
        with fits.open(path) as ref:
            decoded = {c: _astropy_as_mapped(astropy_decoded(ref[1].data, c), c.dtype, c.name)
                       for c in numeric}  # fmt: skip
        # native byte order: the tolerance of float32 results is chosen by dtype
        want = {c.name: v.astype(v.dtype.newbyteorder("=")) for c, v in decoded.items()}
        out[kind] = (path, want)
    assert {"L", "X", "E3", "nJd", "sIa", "nB", "sK", "uK", "i8"} <= set(out["binary"][1])
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("chunk", [1, 7, 1000])
@pytest.mark.parametrize("table", ["binary", "ascii"])
def test_every_kind_reduces_from_one_map_per_span(kind_tables, monkeypatch, table, chunk, threads):
    """Every numeric kind (cells, TDIM, bits, logicals, TNULLn, scaled, unsigned, int8, ASCII
    fields) equals numpy on astropy's values, and each span of rows is mapped exactly once
    for all columns (rowdecode.spans), whatever the span and the number of threads."""
    from dfits.io.local import LocalSource
    from tests.tables.test_routes import _close
    from tests.tables.test_routes import _numpy as numpy_of

    path, want = kind_tables[table]
    hdu = dfits.open(path)[1]
    row, n = hdu._table().row_bytes, hdu._table().nrows
    mapped, real = [], LocalSource.map
    monkeypatch.setattr(LocalSource, "map", lambda self, at, size, **kw: (
        mapped.append((at, size)), real(self, at, size, **kw))[1])  # fmt: skip
    spans = [
        (hdu.layout.data_offset + a * row, min(chunk, n - a) * row) for a in range(0, n, chunk)
    ]
    for how in ("sum", "nanmean", "count", "nanstd", "min", "nanmax"):
        mapped.clear()
        with dask.config.set(scheduler="threads", num_workers=threads):
            (got,) = dask.compute(hdu.aggregate(how, list(want), rows_per_chunk=chunk))
        assert sorted(mapped) == spans, how
        for name, values in want.items():
            _close(got[name], numpy_of(how, values), values.dtype, f"{table} {how} {name}")


def test_variable_length_columns_do_not_reduce(kind_tables):
    hdu = dfits.open(kind_tables["binary"][0])[1]
    with pytest.raises(TypeError, match=r"'PJ'.*numbers"):
        hdu.aggregate("sum", ["E", "PJ"])


def test_spans_hand_a_reduction_the_whole_rows_of_each_span(kind_tables):
    """rowdecode.spans with ``reduce``: the task's rows are one span, given whole (read-only,
    as stored) with their first row number; an empty range gives empty rows; no filter."""
    from dfits.tables import rowdecode

    path, _ = kind_tables["binary"]
    hdu = dfits.open(path)[1]
    readers = hdu._readers(["E", "X"])
    stored = np.fromfile(path, np.uint8)[hdu.layout.data_offset :]
    row = readers[0].row_bytes
    got = list(rowdecode.spans(readers, 3, 50, reduce=lambda rows, first: [rows.copy(), first]))
    assert [(s.first, s.stop, s.rows) for s in got] == [(3, 50, None)]
    rows, first = got[0].parts
    assert first == 3
    np.testing.assert_array_equal(rows, stored[3 * row : 50 * row].reshape(47, row))
    (empty,) = rowdecode.spans(readers, 9, 9, reduce=lambda rows, first: [rows.shape, first])
    assert empty.parts == [(0, row), 9]
    rule = hdu._filter("E > 0")
    with pytest.raises(ValueError, match="no row filter"):
        next(rowdecode.spans(readers, 0, 9, keep=rule, reduce=lambda rows, first: []))


@pytest.mark.parametrize("chunk", [1, 7, 300])
@pytest.mark.parametrize("how", ["sum", "nansum", "mean", "nanmean", "count"])
def test_fused_kinds_equal_their_decoded_route(tmp_path_factory, monkeypatch, how, chunk):
    """aggregate's sums of FUSED_KINDS (TNULLn B/I: one row pass, no decode) equal, bit for
    bit, those of the route that decodes them into float64 with NaN and sums in numpy; the
    kinds not fused (every other numeric kind) are in the comparison too."""
    from dfits.tables import reduce as reducing
    from dfits.tables.columns import ColumnReader
    from tests.tables.generated import write_binary

    path = write_binary(tmp_path_factory.mktemp("fused") / "t.fits", 11, 40)
    hdu = dfits.open(path)[1]
    names = [c.name for c in hdu.columns if c.code not in "PQ" and c.dtype.kind in "biuf"]
    assert set(names) >= FUSED_KINDS | DECODED_KINDS
    assert {n for n in names if reducing._null_field(hdu.columns[hdu.colnames.index(n)])} == (
        FUSED_KINDS
    )
    decoded, real = [], ColumnReader.values_at
    monkeypatch.setattr(ColumnReader, "values_at", lambda self, *a, **k: (
        decoded.append(self.column.name), real(self, *a, **k))[1])  # fmt: skip
    (fused,) = dask.compute(hdu.aggregate(how, names, rows_per_chunk=chunk))
    assert not FUSED_KINDS & set(decoded), decoded  # fused: never decoded
    monkeypatch.setattr(reducing, "_null_field", lambda c: False)  # today's decoded route
    decoded.clear()
    (want,) = dask.compute(hdu.aggregate(how, names, rows_per_chunk=chunk))
    assert set(decoded) >= FUSED_KINDS
    for name in names:
        got, exp = np.asarray(fused[name]), np.asarray(want[name])
        assert (got.dtype, got.tobytes()) == (exp.dtype, exp.tobytes()), (name, got, exp)


@pytest.mark.parametrize("how", ["sum", "nansum", "nanmean", "count"])
def test_fused_kinds_of_a_tile_compressed_table(tmp_path, how):
    """A ZTABLE's TNULLn B/I (and the other one-element kinds) reduce as the plain table's,
    bit for bit: the row pass reads its decompressed rows the same way."""
    from tests.tables.generated import write_binary
    from tests.tables.test_tiled import ALGORITHMS, compress_table

    src = write_binary(tmp_path / "t.fits", 5, 53)
    names = ["nB", "nI", "B", "I", "nJ", "sI", "E", "uJ"]
    chosen = {name: ALGORITHMS[i % 4] for i, name in enumerate(names)}
    tiled = dfits.open(compress_table(src, tmp_path / "t.fz", 10, chosen))[1]
    plain = dfits.open(src)[1]
    got, want = dask.compute(tiled.aggregate(how, names), plain.aggregate(how, names))
    for name in names:
        g, w = np.asarray(got[name]), np.asarray(want[name])
        assert (g.dtype, g.tobytes()) == (w.dtype, w.tobytes()), (name, g, w)
