"""The dfits engine: discovery, HDU selection, laziness, multi-file, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import xarray as xr
from astropy.io import fits

import dfits
from dfits.cube.errors import WCSError
from dfits.xarray.backend import DfitsBackendEntrypoint
from tests.xarray.conftest import celestial_wcs, write


def test_whole_file_compressed_gets_dfits_message(tmp_path):
    import gzip

    path = tmp_path / "c.fits.gz"
    path.write_bytes(gzip.compress(b"SIMPLE  =                    T".ljust(2880)))
    with pytest.raises(dfits.DfitsError, match=r"gzip signature.*decompress it first"):
        xr.open_dataset(path)


def test_compressed_image_through_xarray(tmp_path):
    data = np.arange(600, dtype=np.int16).reshape(20, 30)
    path = tmp_path / "c.fits.fz"
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(5, 30))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    da = xr.open_dataarray(path)
    assert da.shape == (20, 30)
    np.testing.assert_array_equal(da.values, data)
    np.testing.assert_array_equal(da[3:7, 2:5].values, data[3:7, 2:5])
    assert da.fits.header["NAXIS1"] == 30


def test_guess_can_open(tmp_path, cube):
    entry = DfitsBackendEntrypoint()
    for name in ("a.fits", "a.FIT", "a.fts", "a.fits.fz", "a.fz", "a.fits.gz", "a.fits.Z"):
        assert entry.guess_can_open(name)
    plain = tmp_path / "noext"
    with open(cube[0], "rb") as fh:
        plain.write_bytes(fh.read(2880))
    assert entry.guess_can_open(str(plain))
    other = tmp_path / "a.nc"
    other.write_bytes(b"CDF\x01")
    assert not entry.guess_can_open(str(other))
    assert not entry.guess_can_open(b"bytes")


def test_open_without_engine_is_lazy(cube, cube_data):
    path, _ = cube
    ds = xr.open_dataset(path)
    assert list(ds.data_vars) == ["primary"]
    var = ds["primary"].variable
    assert not var._in_memory
    assert ds["primary"].encoding["preferred_chunks"]["x"] == (10,)
    np.testing.assert_array_equal(
        ds["primary"].isel(freq=2, y=slice(3, 6)).values, cube_data[:, 2, 3:6].astype("f4")
    )
    np.testing.assert_array_equal(ds["primary"].values, cube_data)
    assert ds["primary"].dtype == np.float32


def test_chunks_and_pickle(cube, cube_data):
    ds = xr.open_dataset(cube[0], engine="dfits", chunks={})
    da = ds["primary"]
    assert da.chunks is not None
    again = pickle.loads(pickle.dumps(da))
    np.testing.assert_allclose(float(again.sum()), np.nansum(cube_data.astype(float)), rtol=1e-6)


def test_reshaping_operations_match_numpy(cube, cube_data):
    # operations that reshape chunks: stack, coarsen, boolean selection
    da = xr.open_dataset(cube[0], engine="dfits", chunks={})["primary"]
    ref = xr.DataArray(cube_data.astype("f4"), dims=da.dims)
    cases = [
        lambda d: d.stack(pix=("y", "x")).mean("pix"),
        lambda d: d.coarsen(y=2, x=2, boundary="trim").max(),
        lambda d: d.where(d > 0.5).count(("y", "x")),
        lambda d: d.astype("f8").std("freq"),
    ]
    for case in cases:
        np.testing.assert_allclose(case(da).values, case(ref).values, rtol=1e-6, equal_nan=True)
    assert np.array_equal(
        da.data.ravel()[da.data.ravel() > 0.9].compute(),
        ref.values.ravel()[ref.values.ravel() > 0.9],
    )


def test_header_round_trips(cube):
    da = xr.open_dataarray(cube[0], engine="dfits")
    header = da.fits.header
    assert isinstance(header, dfits.Header)
    assert header.to_astropy() == fits.getheader(cube[0])
    assert da.attrs["units"] == "Jy/beam"


@pytest.fixture
def mef(tmp_path):
    w = celestial_wcs("TAN")
    hdus = [fits.PrimaryHDU()]
    hdus += [
        fits.ImageHDU(np.full((3, 4), v, ">f4"), w.to_header(), name="SCI", ver=v) for v in (1, 2)
    ]
    hdus.append(fits.BinTableHDU.from_columns([fits.Column("a", "J", array=[1])], name="TAB"))
    path = tmp_path / "mef.fits"
    fits.HDUList(hdus).writeto(path)
    return str(path)


@pytest.mark.parametrize(("hdu", "value"), [(None, 1), (2, 2), ("SCI", 1), (("SCI", 2), 2)])
def test_hdu_selection(mef, hdu, value):
    ds = xr.open_dataset(mef, hdu=hdu)
    assert list(ds.data_vars) == ["sci"]
    assert float(ds["sci"].mean()) == value


@pytest.mark.parametrize("hdu", ["NOPE", 9, 0])
def test_bad_hdu_lists_available(mef, hdu):
    with pytest.raises(dfits.HDUNotFoundError, match="SCI"):
        xr.open_dataset(mef, hdu=hdu)


def test_table_hdu_opens_as_rows(mef):
    # the default stays the first image; a table is opened when named
    assert list(xr.open_dataset(mef).data_vars) == ["sci"]
    with pytest.raises(dfits.HDUNotFoundError, match=r"1:SCI \(3, 4\).*3:TAB table"):
        xr.open_dataset(mef, hdu=0)
    ds = xr.open_dataset(mef, hdu="TAB")
    assert ds["a"].dims == ("row",)
    assert ds["a"].values.tolist() == [1]


def test_bad_wcs_opens_with_pixel_dims(tmp_path):
    w = celestial_wcs("TAN")
    header = w.to_header()
    header["CTYPE1"], header["CTYPE2"] = "RA---XYZ", "DEC--XYZ"
    path = tmp_path / "bad.fits"
    fits.PrimaryHDU(np.arange(12, dtype=">f4").reshape(3, 4), header).writeto(path)
    with pytest.warns(dfits.DfitsWarning, match="CTYPE1"):
        da = xr.open_dataarray(path)
    assert da.dims == ("y", "x")
    assert "ra" not in da.coords
    assert float(da.sum()) == 66
    with pytest.raises(WCSError, match=r"no usable WCS.*CTYPE1"):
        _ = da.fits.wcs


@pytest.fixture
def frames(tmp_path):
    """Three 1-channel frames of one field at increasing frequency."""
    paths = []
    for i in range(3):
        w = celestial_wcs("SIN", "PC", (("FREQ", 1e9 + i * 1e6, 1e6, "Hz"),))
        paths.append(write(tmp_path / f"f{i}.fits", np.full((1, 3, 4), i, ">f4"), w))
    return paths


def test_open_mfdataset_by_coords(frames):
    ds = xr.open_mfdataset(frames[::-1], combine="by_coords")
    assert ds["primary"].dims == ("freq", "y", "x")
    np.testing.assert_array_equal(ds["freq"].values, [1e9, 1.001e9, 1.002e9])
    np.testing.assert_array_equal(ds["primary"].mean(("y", "x")).values, [0, 1, 2])
    with pytest.raises(WCSError, match="evenly spaced"):
        _ = ds["primary"].fits.wcs  # the pixel indices of three files are no single WCS


def test_open_mfdataset_nested(tmp_path):
    w = celestial_wcs("TAN")
    paths = [write(tmp_path / f"e{i}.fits", np.full((3, 4), i, ">f4"), w) for i in range(3)]
    ds = xr.open_mfdataset(paths, combine="nested", concat_dim="frame")
    assert ds["primary"].sizes["frame"] == 3
    np.testing.assert_array_equal(ds["primary"].max(("y", "x")).values, [0, 1, 2])
    assert ds["primary"].isel(frame=1).fits.wcs.wcs.crval[0] == 150.0


def test_reductions_through_fits_chunk_are_fused(tmp_path, monkeypatch):
    import dask.array as da_mod

    from dfits.stored import stored

    data = np.random.default_rng(0).standard_normal((6, 8, 10)).astype(np.float32)
    data[1, 2, 3] = np.nan
    path = tmp_path / "fused.fits"
    fits.PrimaryHDU(data).writeto(path)
    ds = xr.open_dataset(path, engine="dfits")
    arr = ds["primary"].fits.chunk()
    assert isinstance(arr.data, da_mod.Array)
    assert arr.dims == ds["primary"].dims
    assert "fits_header" in arr.attrs

    def refuse(self):
        raise AssertionError("decoded a stored chunk")

    monkeypatch.setattr(stored.StoredChunk, "decode", refuse)
    np.testing.assert_allclose(
        arr.mean(arr.dims[0]).values, np.nanmean(data, axis=0), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(float(arr.std()), np.nanstd(data.astype(float)), rtol=1e-6)
    # xarray's skipna sum and count (isnan/where graphs) stay on the stored bytes too
    np.testing.assert_allclose(
        arr.sum(arr.dims[0]).values, np.nansum(data, axis=0), rtol=1e-5, atol=1e-6
    )
    assert int(arr.count()) == data.size - 1
    # masked moment maps: ``where(x > t)`` then sum / count / mean (threshold cuts)
    masked = arr.where(arr > 0.5)
    want = np.where(data > 0.5, data, np.nan)
    np.testing.assert_allclose(
        masked.sum(arr.dims[0]).values, np.nansum(want, axis=0), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_array_equal(masked.count(arr.dims[0]).values, (data > 0.5).sum(axis=0))
    np.testing.assert_allclose(
        masked.mean(arr.dims[1:]).values, np.nanmean(want, axis=(1, 2)), rtol=1e-5
    )
    # planned for a reduction along one dimension: whole spectra per chunk
    along = ds["primary"].fits.chunk(along=arr.dims[0])
    assert along.chunks[0] == (data.shape[0],)
    np.testing.assert_allclose(
        along.mean(arr.dims[0]).values, np.nanmean(data, axis=0), rtol=1e-5, atol=1e-6
    )


# -- what xarray gets: lazily indexed arrays, numpy on load, dask only when chunked ----------
def _is_numpy(da):
    return type(da.variable._data) is np.ndarray and type(da.data) is np.ndarray


def test_load_and_compute_give_numpy(cube, cube_data):
    path = cube[0]
    loaded = xr.open_dataarray(path, engine="dfits").load()
    assert _is_numpy(loaded)
    np.testing.assert_array_equal(loaded.values, cube_data)
    lazy = xr.open_dataarray(path, engine="dfits")
    computed = lazy.compute()
    assert _is_numpy(computed)
    assert not lazy.variable._in_memory  # compute leaves the original lazy
    ds = xr.open_dataset(path, engine="dfits", sky_coords=True).load()
    assert _is_numpy(ds["primary"])
    assert type(ds["ra"].variable._data) is np.ndarray
    sub = xr.open_dataarray(path, engine="dfits").isel(freq=slice(1, 4)).load()
    assert _is_numpy(sub)
    np.testing.assert_array_equal(sub.values, cube_data[:, 1:4])


def test_chunked_open_gives_dask_that_computes_to_numpy(cube, cube_data):
    import dask.array as da_mod

    ds = xr.open_dataset(cube[0], engine="dfits", chunks={})
    arr = ds["primary"]
    assert isinstance(arr.data, da_mod.Array)
    planned = dfits.open(cube[0])[0].data.chunks
    assert arr.chunks == planned  # dfits' planned chunks, through preferred_chunks
    assert _is_numpy(arr.compute())
    assert _is_numpy(ds.load()["primary"])
    np.testing.assert_array_equal(ds["primary"].values, cube_data)


def test_selections_read_only_their_region(cube, cube_data, monkeypatch):
    from dfits.section import Section

    reads = []
    original = Section.__getitem__

    def spy(self, key):
        out = original(self, key)
        reads.append(np.asarray(out).size)
        return out

    monkeypatch.setattr(Section, "__getitem__", spy)
    da = xr.open_dataarray(cube[0], engine="dfits")
    assert reads == []  # opening reads no data
    got = da.isel(stokes=0, freq=2, y=slice(3, 6)).values
    np.testing.assert_array_equal(got, cube_data[0, 2, 3:6])
    assert reads == [got.size]


@pytest.mark.parametrize(
    "index",
    [
        {"x": [1, 3, 5], "y": [0, 2]},  # outer
        {"x": slice(None, None, -2), "freq": slice(5, 1, -1)},  # negative steps
        {"x": xr.DataArray([1, 2, 9], dims="p"), "y": xr.DataArray([3, 4, 0], dims="p")},
        {"stokes": 1, "freq": -1},
    ],
    ids=["outer", "negative-steps", "vectorized", "ints"],
)
def test_indexing_matches_numpy(cube, cube_data, index):
    da = xr.open_dataarray(cube[0], engine="dfits")
    ref = xr.DataArray(cube_data.astype("f4"), dims=da.dims)
    np.testing.assert_array_equal(da.isel(index).values, ref.isel(index).values)


def test_lazy_array_pickles(cube, cube_data):
    da = xr.open_dataarray(cube[0], engine="dfits")
    again = pickle.loads(pickle.dumps(da))
    np.testing.assert_array_equal(again.isel(freq=3).values, cube_data[:, 3])


def test_warnings_point_at_the_users_open_dataset_call(tmp_path):
    path = tmp_path / "padded-badly.fits"
    w = celestial_wcs("TAN")
    header = w.to_header()
    header["CTYPE1"], header["CTYPE2"] = "RA---XYZ", "DEC--XYZ"
    fits.PrimaryHDU(np.arange(12, dtype=">f4").reshape(3, 4), header).writeto(path)
    with path.open("ab") as fh:
        fh.write(b"junk".ljust(2880))
    with pytest.warns(dfits.DfitsWarning) as record:
        xr.open_dataset(path, engine="dfits")  # both warnings point here
    first = test_warnings_point_at_the_users_open_dataset_call.__code__.co_firstlineno
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert any("after the last HDU" in m for m in messages)
    assert any("WCS unusable" in m for m in messages)
    assert {(w.filename, w.lineno) for w in record} == {(__file__, first + 9)}
