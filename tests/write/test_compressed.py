"""Tile-compressed output: every algorithm × dtype reads back the same in astropy, funpack and
dfits; integers bit-identical, floats quantised with the dither the readers undo."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.io import fits

import dfits
from dfits.format.imagehdu import parse_storage
from dfits.format.ztable import parse_compression
from dfits.write.compressed import aligned_chunks
from tests.write.zchecks import (
    as_cfitsio,
    check_file,
    fitsverify,
    funpack,
    read_back,
    table_header,
    values_of,
)

ALGORITHMS = ["RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_every_algorithm_reads_back_alike(tmp_path, algorithm, dtype):
    values = values_of(dtype)
    path = tmp_path / "x.fits"
    # chunks that cut through rows: rechunked to whole row tiles
    x = da.from_array(values, chunks=(10, 20))
    dfits.to_fits(x, path, compression=algorithm, dither_seed=17)
    assert table_header(path)["ZCMPTYPE"] == algorithm
    got = check_file(path, values, lossless=values.dtype.kind != "f")
    if algorithm != "NOCOMPRESS":  # cfitsio has no NOCOMPRESS decoder ("unknown algorithm")
        np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(got))
    if values.dtype.kind == "f":
        finite = np.isfinite(values)
        assert np.isnan(got[3, 4])
        np.testing.assert_array_equal(got[5], values[5])  # exactly: the fallback tile
        np.testing.assert_array_equal(got[8], values[8])
        assert got[7, 1] == 0.0
        # dithered quantisation errs by at most half a level (noise / 16, noise 20)
        assert np.nanmax(np.abs(got[finite] - values[finite])) < 20 / 16


@pytest.mark.parametrize("dtype", ["uint16", "int8", "uint8", "uint32", "int64"])
def test_offset_and_wide_integers_are_lossless(tmp_path, dtype):
    values = values_of(dtype, (20, 30))
    path = tmp_path / "x.fits"
    dfits.to_fits(values, path, compression="GZIP_2")
    check_file(path, values, lossless=True)
    if dtype != "int64":  # cfitsio decodes no 64-bit integer tiles (status 410)
        np.testing.assert_array_equal(funpack(path)[0], values)


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1"])
def test_partial_edge_tiles(tmp_path, algorithm):
    values = values_of("int32", (3, 41, 29))
    path = tmp_path / "edges.fits"
    x = da.from_array(values, chunks=(2, 17, 29))
    dfits.to_fits(x, path, compression=algorithm, tile_shape=(2, 8, 10))
    h = table_header(path)
    assert (h["ZTILE1"], h["ZTILE2"], h["ZTILE3"], h["NAXIS2"]) == (10, 8, 2, 3 * 6 * 2)
    check_file(path, values, lossless=True)
    np.testing.assert_array_equal(funpack(path)[0], values)


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1", "GZIP_2"])
def test_float64_and_float_tiles(tmp_path, algorithm):
    values = values_of("float64", (16, 40))
    path = tmp_path / "f8.fits"
    dfits.to_fits(values, path, compression=algorithm, tile_shape=(4, 40), dither_seed=5000)
    got = check_file(path, values, lossless=False)
    np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(got))


@pytest.mark.parametrize("algorithm", ["GZIP_1", "GZIP_2"])
def test_level_zero_keeps_floats_exact(tmp_path, algorithm):
    values = values_of("float32", (9, 33))
    path = tmp_path / "exact.fits"
    dfits.to_fits(values, path, compression=algorithm, quantize_level=0)
    check_file(path, values, lossless=True)
    np.testing.assert_array_equal(funpack(path)[0], values)


@pytest.mark.parametrize("method", ["NO_DITHER", "SUBTRACTIVE_DITHER_1"])
def test_other_dithers_and_a_fixed_scale(tmp_path, method):
    values = values_of("float32", (12, 50))
    path = tmp_path / "q.fits"
    dfits.to_fits(values, path, compression="RICE_1", quantize_method=method,
                  quantize_level=-0.25)  # fmt: skip
    got = check_file(path, values, lossless=False)
    np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(got))
    finite = np.isfinite(values) & (values != 7.0)
    assert np.abs(got[finite] - values[finite]).max() <= 0.125 + 1e-4


def test_dataset_header_and_wcs(tmp_path):
    dims = ("y", "x")
    img = xr.DataArray(values_of("float32", (6, 10)), dims=dims,
                       coords={"x": np.arange(10) * 2.0 + 1}, attrs={"units": "Jy"})  # fmt: skip
    ds = xr.Dataset({"sci": img, "dq": img.fillna(0).astype("i2")})
    path = tmp_path / "ds.fits"
    dfits.to_fits(ds, path, compression="RICE_1", header={"OBJECT": "M 1"})
    with fits.open(path) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "SCI", "DQ"]
        assert hl["SCI"].header["BUNIT"] == "Jy"
        assert hl["SCI"].header["OBJECT"] == "M 1"
        assert hl["SCI"].header["CDELT1"] == 2.0
        np.testing.assert_array_equal(hl["DQ"].data, ds["dq"].values)
    f = dfits.open(path)
    assert f["SCI"].header["OBJECT"] == "M 1"
    assert f["DQ"].dtype == np.int16
    fitsverify(path)


def test_accessor_and_delayed(tmp_path):
    values = values_of("int16", (8, 8))
    path = tmp_path / "acc.fits"
    graph = xr.DataArray(values, dims=("y", "x")).fits.to_fits(
        path, compression="GZIP_1", compute=False
    )
    assert not path.exists()
    graph.compute()
    check_file(path, values, lossless=True)


def test_same_input_same_bytes(tmp_path):
    x = da.from_array(values_of("float32", (30, 40)), chunks=(7, 40))
    a, b = tmp_path / "a.fits", tmp_path / "b.fits"
    dfits.to_fits(x, a, compression="RICE_1", dither_seed=3)
    dfits.to_fits(x.rechunk((13, 40)), b, compression="RICE_1", dither_seed=3)
    # heap order follows the chunks, so the bytes may differ; the decoded values may not
    np.testing.assert_array_equal(read_back(a)[1], read_back(b)[1])
    dfits.to_fits(x, b, compression="RICE_1", dither_seed=3, overwrite=True)
    assert a.read_bytes() == b.read_bytes()


def test_aligned_chunks_keep_their_size():
    spec = parse_compression((1000, 4096), parse_storage("f4", "x"), "x", compression="RICE_1")
    # row tiles over column chunks: whole rows, fewer of them
    assert aligned_chunks(((100,) * 10, (512,) * 8), spec) == (12, 4096)
    assert aligned_chunks(((250,) * 4, (4096,)), spec) == (250, 4096)
    square = parse_compression((100, 100), parse_storage("i2", "x"), "x",
                               compression="GZIP_1", tile_shape=(16, 16))  # fmt: skip
    assert aligned_chunks(((30, 30, 30, 10), (100,)), square) == (32, 100)


def test_bad_choices_raise_before_writing(tmp_path):
    path = tmp_path / "x.fits"
    with pytest.raises(dfits.UnsupportedError, match="LZW_1"):
        dfits.to_fits(np.ones((4, 4)), path, compression="LZW_1")
    with pytest.raises(dfits.UnsupportedError, match="64-bit"):
        dfits.to_fits(np.ones((4, 4), "i8"), path, compression="RICE_1")
    with pytest.raises(dfits.UnsupportedError, match="quantisation"):
        dfits.to_fits(np.ones((4, 4)), path, compression="RICE_1", quantize_level=0)
    with pytest.raises(ValueError, match="tile_shape"):
        dfits.to_fits(np.ones((4, 4)), path, compression="RICE_1", tile_shape=(0, 4))
    with pytest.raises(ValueError, match="dither_seed"):
        dfits.to_fits(np.ones((4, 4)), path, compression="RICE_1", dither_seed=10001)
    with pytest.raises(dfits.UnsupportedError, match="complex"):
        dfits.to_fits(np.ones(4, complex), path, compression="RICE_1")
    with pytest.raises(dfits.HeaderError, match="NAXIS1"):
        dfits.to_fits(np.ones((4, 4)), path, compression="RICE_1", header={"NAXIS1": 5})
    assert list(tmp_path.iterdir()) == []


def test_graph_pickles(tmp_path):
    """Tasks carry the plan (paths, tile specs, cards), never a handle: they pickle."""
    import pickle

    x = da.from_array(values_of("float32", (20, 30)), chunks=(5, 30))
    graph = dfits.to_fits(x, tmp_path / "x.fits", compression="RICE_1", compute=False)
    assert pickle.loads(pickle.dumps(graph.dask))


@pytest.mark.slow
def test_on_a_process_cluster(tmp_path):
    from tests.clusters import process_cluster

    values = values_of("float32", (64, 50))
    path = tmp_path / "cluster.fits"
    with process_cluster():
        dfits.to_fits(da.from_array(values, chunks=(8, 50)), path, compression="RICE_1")
    got = check_file(path, values, lossless=False)
    np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(got))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dfits-part")]


def test_chunks_spread_over_the_threads(tmp_path):
    """A numpy image in one chunk is cut into whole-tile slabs, about four per thread, so every
    thread compresses; the heap stays in tile order, so the bytes do not depend on it."""
    import dask

    from dfits.format.imagehdu import parse_storage
    from dfits.write.compressed import LEAST_CHUNK, spread_chunks

    spec = parse_compression((4096, 512), parse_storage("f4", "x"), "x", compression="RICE_1")
    # 8 chunks of 1 MiB (LEAST_CHUNK), not the 32 that 8 threads would want
    assert spread_chunks((4096, 512), spec, 4, threads=8) == (512, 512)
    assert spread_chunks((4096, 512), spec, 4, threads=1) == (1024, 512)
    tiny = spread_chunks((4096, 512), spec, 4, threads=1000)
    assert tiny[0] * 512 * 4 >= LEAST_CHUNK
    values = np.random.default_rng(1).integers(-(2**40), 2**40, (3000, 1000))  # 24 MB
    paths, counts = [], []
    for threads in (1, 8):
        paths.append(path := tmp_path / f"t{threads}.fits")
        with dask.config.set(num_workers=threads):
            graph = dfits.to_fits(values, path, compression="GZIP_2", compute=False)
            keys = dict(graph.__dask_graph__())
            counts.append(sum(str(k).startswith("_write") for k in keys))
            graph.compute()
    assert counts == [4, 17]  # slabs of 750 and 187 rows
    assert paths[0].read_bytes() == paths[1].read_bytes()
    np.testing.assert_array_equal(dfits.open(paths[1])[1].data.compute(), values)


def test_append_compressed(tmp_path):
    path = tmp_path / "a.fits"
    first = values_of("float32", (30, 40))
    dfits.to_fits([first], path)
    ints = values_of("int16", (37, 53))
    dfits.append(path, da.from_array(ints, chunks=(10, 53)), compression="RICE_1",
                 header={"EXTNAME": "RICE"})  # fmt: skip
    mask = ints.astype("i4") & 0xFF
    dfits.append(path, [mask], compression="PLIO_1")  # astropy's and fpack's default name
    # (two unnamed ones would share it, which fitsverify warns of, for fpack's files too)
    dfits.append(path, mask * 3, compression="PLIO_1", header={"EXTNAME": "M3"})
    names = ["PRIMARY", "", "RICE", "COMPRESSED_IMAGE", "M3"]
    with fits.open(path, checksum=True) as hl:
        assert [h.name for h in hl] == names
        assert [type(h).__name__ for h in hl][2:] == ["CompImageHDU"] * 3
        np.testing.assert_array_equal(hl[1].data, first)
        np.testing.assert_array_equal(hl["RICE"].data, ints)
    f = dfits.open(path)
    assert [h.kind for h in f][2:] == ["compressed_image"] * 3
    np.testing.assert_array_equal(f[2].data.compute(), ints)
    assert [h.name for h in f] == names
    np.testing.assert_array_equal(f[4].data.compute(), mask * 3)
    assert all(h.ok and h.checksum.status == "ok" for h in dfits.verify_checksum(path))
    fitsverify(path)
    funpacked = funpack(path)
    np.testing.assert_array_equal(funpacked[-1], mask * 3)
    assert not [p.name for p in tmp_path.iterdir() if p.name != "a.fits"]


def test_failed_compressed_append_leaves_the_file(tmp_path):
    path = tmp_path / "a.fits"
    dfits.to_fits(np.ones((4, 5), "i2"), path)
    before = path.read_bytes()
    bad = np.full((40, 50), 7, "i4")
    bad[33, 3] = -1  # PLIO cannot hold it: the chunk task holding that tile fails
    with pytest.raises(dfits.DataError, match="appended image 1, tile 34"):
        dfits.append(path, da.from_array(bad, chunks=(5, 50)), compression="PLIO_1")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.fits"]  # no journal, link or scratch
    with pytest.raises(dfits.errors.OptionError, match="compression_level"):
        dfits.append(path, bad, compression="RICE_1", compression_level=3)
    assert path.read_bytes() == before
