"""The column reader: generated tables equal astropy; reductions run on the stored field."""

from __future__ import annotations

import pickle
import struct
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits
from dfits.errors import DataError
from dfits.stored.stored import StoredChunk
from tests.profiles import examples
from tests.tablefiles import astropy_decoded, write_table

fits = pytest.importorskip("astropy.io.fits")

# (TFORM-making dtype, strategy of values) for the column types astropy writes from numpy
_KINDS = {
    "B": np.uint8, "I": np.int16, "J": np.int32, "K": np.int64, "E": np.float32,
    "D": np.float64, "L": np.bool_, "C": np.complex64, "M": np.complex128,
    "uI": np.uint16, "uJ": np.uint32, "uK": np.uint64,
}  # fmt: skip


def _column_values(kind: str, n: int, repeat: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(_KINDS[kind])
    shape = (n,) if repeat == 1 else (n, repeat)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 1e3
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    values = values.astype(dtype)
    if dtype.kind == "f" and values.size:
        values.flat[0] = np.nan
    return values


@settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kinds=st.lists(st.sampled_from(sorted(_KINDS)), min_size=1, max_size=5),
    nrows=st.sampled_from([0, 1, 7, 300]),
    repeat=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_generated_tables_equal_astropy(tmp_path, kinds, nrows, repeat, seed):
    cols = [
        fits.Column(f"c{i}_{k}", array=_column_values(k, nrows, repeat, seed + i),
                    format=f"{repeat}{k[-1]}")
        for i, k in enumerate(kinds)
    ]  # fmt: skip
    cols.append(
        fits.Column("name", format="6A", array=np.array(["ab  ", " x", ""] * nrows)[:nrows])
    )
    path = tmp_path / f"t{seed}.fits"
    fits.BinTableHDU.from_columns(cols).writeto(path, overwrite=True)
    hdu = dfits.open(path)[1]
    with fits.open(path) as ref:
        for c in hdu.columns:
            ours = hdu.column(c.name, rows_per_chunk=64).compute()
            theirs = np.asarray(ref[1].data[c.name])
            assert ours.dtype == theirs.dtype.newbyteorder("="), c.name
            np.testing.assert_array_equal(ours, theirs, err_msg=c.name)
            if nrows and ours.dtype.kind in "iuf":
                total = np.nansum(hdu.column(c.name, 64)).compute()
                # the kernels accumulate float32 in float64: closer than numpy's float32 sum
                rtol = 1e-5 if ours.dtype == np.float32 else 1e-12
                np.testing.assert_allclose(total, np.nansum(theirs), rtol=rtol)


def test_reductions_run_on_the_stored_strided_field(tmp_path):
    rng = np.random.default_rng(1)
    e = rng.standard_normal(1000).astype(np.float32)
    d = rng.standard_normal(1000)
    j = rng.integers(-1000, 1000, 1000).astype(np.int32)
    pad = np.array(["x"] * 1000)
    cols = [fits.Column("E", "E", array=e), fits.Column("D", "D", array=d),
            fits.Column("PAD", "7A", array=pad), fits.Column("J", "J", array=j)]  # fmt: skip
    path = tmp_path / "r.fits"
    fits.BinTableHDU.from_columns(cols).writeto(path)
    hdu = dfits.open(path)[1]
    chunk = hdu._reader("E").read((slice(0, 10),))
    assert isinstance(chunk, StoredChunk)
    assert chunk.u.strides == (4 + 8 + 7 + 4,)  # the field, strided by the row
    x = hdu.column("E", rows_per_chunk=128)
    np.testing.assert_allclose(x.sum().compute(), e.sum(dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(hdu["D"].std().compute(), d.std())
    assert hdu["J"].max().compute() == j.max()
    assert hdu["J"].sum().compute() == j.sum()
    np.testing.assert_allclose(np.nanmean(hdu["D"]).compute(), d.mean())
    assert pickle.loads(pickle.dumps(x)).sum().compute() == x.sum().compute()


def _vla_file(tmp_path, offset: int):
    rows = struct.pack(">ii", 2, 0) + struct.pack(">ii", 1, offset)
    heap = struct.pack(">iii", 5, 6, 7)
    keys = [("TFIELDS", 1), ("TTYPE1", "V"), ("TFORM1", "1PJ(2)")]
    return write_table(tmp_path / "v.fits", keys, rows + heap, naxis1=8, naxis2=2, pcount=12)


def test_vla_reads_and_descriptor_outside_heap_is_an_error(tmp_path):
    values = dfits.open(_vla_file(tmp_path, 8))[1].column("V").compute()
    assert [v.tolist() for v in values] == [[5, 6], [7]]
    hdu = dfits.open(_vla_file(tmp_path, 12))[1]
    with pytest.raises(DataError, match=r"column 1 \('V'\), row 2: the array descriptor"):
        hdu.column("V").compute()


def test_ascii_field_not_a_number(tmp_path):
    keys = [("TFIELDS", 2), ("TTYPE1", "X"), ("TFORM1", "F8.2"), ("TBCOL1", 1),
            ("TTYPE2", "N"), ("TFORM2", "I4"), ("TBCOL2", 9), ("TNULL2", "-99")]  # fmt: skip
    data = b"    1.25 -99" + b"   2.5D1   7" + b"        1 2 "
    path = write_table(tmp_path / "a.fits", keys, data, xtension="TABLE", naxis1=12, naxis2=3)
    hdu = dfits.open(path)[1]
    np.testing.assert_array_equal(hdu["X"].compute(), [1.25, 25.0, np.nan])
    frame = hdu.to_pandas(["X"])
    assert frame["X"].isna().tolist() == [False, False, True]
    with pytest.raises(
        DataError, match=r"column 2 \('N'\), row 3: field b'1 2 ' .* not an integer"
    ):
        hdu["N"].compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as ref:
            assert ref[1].data["X"][:2].tolist() == [1.25, 25.0]


def test_zero_rows_and_zero_width(tmp_path):
    keys = [("TFIELDS", 2), ("TTYPE1", "Z"), ("TFORM1", "0D"), ("TTYPE2", "J"), ("TFORM2", "J")]
    path = write_table(tmp_path / "z.fits", keys, b"\0\0\0\1" * 3, naxis1=4, naxis2=3)
    hdu = dfits.open(path)[1]
    assert hdu["Z"].compute().shape == (3, 0)
    assert hdu["J"].compute().tolist() == [1, 1, 1]
    empty = write_table(tmp_path / "e.fits", keys, b"", naxis1=4, naxis2=0)
    h0 = dfits.open(empty)[1]
    assert h0["J"].compute().shape == (0,)
    assert len(h0.to_pandas()) == 0
    assert h0.to_arrow().num_rows == 0


def test_reader_protocol(tmp_path):
    from dfits.array.reader import Reader

    path = _vla_file(tmp_path, 8)
    assert isinstance(dfits.open(path)[1]._reader("V"), Reader)


def test_remote_column_fetches_only_its_fields(tmp_path):
    """Over HTTP (nginx, multi-range answers) one column of wide rows costs its own bytes,
    not the rows': each row's 8-byte field is a range of its own once runs are not merged."""
    import dask
    import xarray as xr

    from tests.servers import Nginx

    if not Nginx.available():
        pytest.skip("nginx is not installed (./run test installs it where apt-get works)")
    n = 1500
    rng = np.random.default_rng(3)
    flux = rng.normal(size=n)
    cols = [
        fits.Column("ID", "J", array=np.arange(n)),
        fits.Column("FLUX", "D", array=flux),
        fits.Column("PAD", "2000A", array=["x" * 2000] * n),
    ]
    root = tmp_path / "served"
    root.mkdir()
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]).writeto(root / "t.fits")
    data_bytes = n * 2012
    with Nginx(root, tmp_path / "nginx") as http, dask.config.set({"dfits.remote.gap": 0}):
        hdu = dfits.open(f"{http.url}/t.fits")[1]
        ds = xr.open_dataset(f"{http.url}/t.fits", engine="dfits", hdu=1)
        before = len(http.gets("t.fits"))
        total = hdu.column("FLUX", rows_per_chunk=500).sum().compute()
        got = http.gets("t.fits")[before:]
        # through xarray's lazy indexing: only those rows' fields
        values = ds["FLUX"][100:110].values
        tail = http.gets("t.fits")[before + len(got) :]
        # a row slice of the dask column: the slice reaches the read, not the whole chunk
        mark = len(http.gets("t.fits"))
        part = hdu.column("FLUX", rows_per_chunk=500)[100:110].sum().compute()
        sliced = http.gets("t.fits")[mark:]
    assert total == pytest.approx(flux.sum(), rel=1e-12)
    np.testing.assert_array_equal(values, flux[100:110])
    sent = sum(r.sent for r in got)
    # 1500 ranges of 8 bytes, each with its multipart part header (~100 bytes): about
    # 160 KB, against 3 MB of rows
    assert n * 8 <= sent < data_bytes // 10, (sent, len(got))
    assert all(r.status == 206 for r in got)
    assert len(tail) == 1
    assert 10 * 8 <= tail[0].sent < 10 * 200, tail
    assert part == pytest.approx(flux[100:110].sum(), rel=1e-12)
    assert len(sliced) == 1
    assert 10 * 8 <= sliced[0].sent < 10 * 200, sliced


def test_vla_tdim_shapes_arrays_as_astropy(tmp_path):
    path = tmp_path / "vt.fits"
    cols = [
        fits.Column("V", "PJ()", dim="(3,2)", array=[np.arange(6), np.arange(12), np.arange(0)]),
        fits.Column("W", "PE()", dim="(4,1)", array=[np.ones(4, "f4"), np.ones(9, "f4"), []]),
        fits.Column("F", "PI()", dim="(5)", array=[np.arange(5), np.arange(2), [7]]),
    ]
    fits.BinTableHDU.from_columns(cols).writeto(path)
    hdu = dfits.open(path)[1]
    with fits.open(path) as ref:
        for name in ("V", "W", "F"):
            ours = hdu.column(name).compute()
            for a, b in zip(ours, ref[1].data[name], strict=True):
                assert a.shape == b.shape, name
                np.testing.assert_array_equal(a, b)
    assert hdu.to_arrow(["V"]).schema.field("V").metadata[b"array_shape"] == b"(-1, 3)"
    assert hdu.to_arrow(["V"]).column("V").to_pylist()[1] == list(range(12))
    # an array whose length TDIM cannot shape: a DataError naming column, row and TDIM
    raw = path.read_bytes().replace(b"TDIM1   = '(3,2)", b"TDIM1   = '(5,2)")
    assert raw != path.read_bytes()
    (tmp_path / "bad.fits").write_bytes(raw)
    with pytest.raises(DataError, match=r"column 1 \('V'\), row 1: an array of 6 .*TDIM1"):
        dfits.open(tmp_path / "bad.fits")[1].column("V").compute()


def _mixed_table(path, n: int):
    rng = np.random.default_rng(8)
    vla = np.empty(n, dtype=object)
    for i in range(n):
        vla[i] = np.arange(i % 4, dtype=np.int32)
    cols = [
        fits.Column("J", "J", null=-1, array=rng.integers(-1, 50, n)),
        fits.Column("D", "D", array=rng.normal(size=n)),
        fits.Column("CUBE", "6E", dim="(3,2)", array=rng.normal(size=(n, 2, 3))),
        fits.Column("S", "6A", array=[f"s{i}" for i in range(n)]),
        fits.Column("L", "L", array=rng.integers(0, 2, n).astype(bool)),
        fits.Column("BITS", "12X", array=rng.integers(0, 2, (n, 12)).astype(bool)),
        fits.Column("V", "PJ()", array=vla),
        fits.Column("U", "J", array=rng.integers(0, 2**32, n, dtype=np.uint32)),
        fits.Column("PAD", "300A", array=["x" * 300] * n),
    ]
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(cols)]).writeto(path)
    return path


_ROW_INDICES = [
    slice(100, 110),
    slice(37, 38),
    slice(None, None, 7),
    slice(-5, None),
    slice(None, None, -3),
    slice(250, 90, -4),
    slice(5, 5),
    123,
    -1,
    [3, 1, 7, 299],
]


@pytest.mark.parametrize("index", _ROW_INDICES, ids=str)
def test_column_slices_equal_astropy(tmp_path, index):
    """Any row index of any column type gives astropy's values (the slice reaches the read)."""
    path = _mixed_table(tmp_path / "m.fits", 300)
    hdu = dfits.open(path)[1]
    with fits.open(path) as ref:
        data = ref[1].data
        for name in hdu.colnames:
            got = hdu.column(name, rows_per_chunk=64)[index].compute()
            column = hdu.columns[hdu.colnames.index(name)]
            want = data[name][index] if name == "V" else astropy_decoded(data, column)[index]
            if name == "V":
                want = [want] if isinstance(index, int) else want
                got = [got] if isinstance(index, int) else got
                assert [list(g) for g in got] == [list(w) for w in want], name
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)


def test_column_row_slice_maps_only_its_rows(tmp_path, monkeypatch):
    """A local row slice maps the span of its own rows, not its chunk's."""
    from dfits.io.local import LocalSource

    path = _mixed_table(tmp_path / "m.fits", 3000)
    hdu = dfits.open(path)[1]
    row = hdu._table().row_bytes
    mapped = []
    real = LocalSource.map

    def spy(self, offset, nbytes, **kw):
        mapped.append(nbytes)
        return real(self, offset, nbytes, **kw)

    monkeypatch.setattr(LocalSource, "map", spy)
    x = hdu.column("D")  # one chunk of 3000 rows by default
    assert x.numblocks == (1,)
    with fits.open(path) as ref:
        data = ref[1].data
        want = data["D"]
        np.testing.assert_array_equal(x[1000:1010].compute(), want[1000:1010])
        assert sum(mapped) <= 10 * row, mapped
        mapped.clear()
        assert x[2000:2004].sum().compute() == pytest.approx(want[2000:2004].sum())
        assert sum(mapped) <= 4 * row, mapped
        mapped.clear()
        np.testing.assert_array_equal(hdu["S"][5].compute(), data["S"][5])
        assert sum(mapped) <= row, mapped
        mapped.clear()
        x.sum().compute()
        assert sum(mapped) > 2999 * row  # the whole column does map every row


@pytest.mark.parametrize("legacy", [True, False])
def test_logical_vla_from_old_astropy_reads_as_astropy_8(tmp_path, legacy):
    """astropy <= 7.2 wrote logical arrays as 0x00/0x01 bytes: astropy 8 reads 0x01 as True
    and warns; so does dfits (a DfitsWarning). A standard column (T, F, NUL) does not warn."""
    counts = [3, 0, 2, 4]
    elements = [1, 0, 1, 0, 0, 1, 1, 1, 0] if legacy else list(b"TF\0TTFFT\0")
    heap = bytes(elements)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rows = b"".join(struct.pack(">ii", c, o) for c, o in zip(counts, offsets, strict=True))
    path = write_table(
        tmp_path / "l.fits",
        [("TFIELDS", 1), ("TTYPE1", "FLAGS"), ("TFORM1", "1PL(4)")],
        rows + heap, naxis1=8, naxis2=4, pcount=len(heap),
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fits.open(path) as ref:
            want = [np.array(v, bool) for v in ref[1].data["FLAGS"]]
    assert any("7.2" in str(w.message) for w in caught) == legacy
    hdu = dfits.open(path)[1]
    if legacy:
        with pytest.warns(dfits.DfitsWarning, match=r"FLAGS.*astropy <= 7.2"):
            got = hdu["FLAGS"].compute()
    else:
        got = hdu["FLAGS"].compute()
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    if legacy:  # every route reads the same values (the warning comes once per file)
        frame = hdu.to_pandas()
        for a, b in zip(frame["FLAGS"], want, strict=True):
            np.testing.assert_array_equal(a, b)
