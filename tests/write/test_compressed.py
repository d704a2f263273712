"""Tile-compressed output: every algorithm × dtype reads back the same in astropy, funpack and
dfits; integers bit-identical, floats quantised with the dither the readers undo."""

from __future__ import annotations

import io
import shutil
import subprocess

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.io import fits

import dfits
from dfits.format.imagehdu import parse_storage
from dfits.format.ztable import parse_compression
from dfits.write.compressed import aligned_chunks

ALGORITHMS = ["RICE_1", "GZIP_1", "GZIP_2", "NOCOMPRESS"]


def _funpack(path):
    """The image funpack decodes (cfitsio), or a skip where it is not installed."""
    tool = shutil.which("funpack")
    if tool is None:
        pytest.skip("funpack not installed (apt-get install libcfitsio-bin)")
    out = subprocess.run([tool, "-S", str(path)], capture_output=True, check=True).stdout
    with fits.open(io.BytesIO(out)) as hl:
        return [h.data.copy() for h in hl if h.data is not None]


def _fitsverify(path):
    tool = shutil.which("fitsverify")
    if tool is None:
        pytest.skip("fitsverify not installed (apt-get install fitsverify)")
    out = subprocess.run([tool, "-q", str(path)], capture_output=True, text=True, check=False)
    assert "verification OK" in out.stdout, out.stdout + out.stderr


def _table_header(path):
    with fits.open(path, disable_image_compression=True) as hl:
        return hl[1].header.copy()


def _values(dtype, shape=(37, 53), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(100, 20, shape).astype(dtype)
    if x.dtype.kind == "f" and x.shape[0] > 8:
        x[3, 4] = np.nan  # → ZBLANK
        x[5, :] = 7.0  # a constant row tile: no noise, stored exactly (GZIP_COMPRESSED_DATA)
        x[7, 1] = 0.0  # exact under SUBTRACTIVE_DITHER_2
        x[8, 2:] = np.inf  # a tile with infinities: exactly, too
    elif x.dtype.kind == "i":
        x.reshape(-1)[:3] = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max, 0
    return x


def _as_cfitsio(values):
    """What cfitsio (funpack) reads for floats: infinities are nulls to it, so NaN."""
    return np.where(np.isinf(values), np.nan, values)


def _read_back(path, hdu=1):
    with fits.open(path, checksum=True) as hl:
        ours = hl[hdu].data
        assert isinstance(hl[hdu], fits.CompImageHDU)
        theirs = ours.copy()
    return theirs, dfits.open(path)[hdu].data.compute()


def _check_file(path, values, lossless):
    astropy_values, dfits_values = _read_back(path)
    np.testing.assert_array_equal(dfits_values, astropy_values)
    assert dfits_values.dtype == values.dtype
    if lossless:
        np.testing.assert_array_equal(dfits_values, values)
    _fitsverify(path)
    assert all(h.ok and h.checksum.status == "ok" for h in dfits.verify_checksum(path))
    with fits.open(path, disable_image_compression=True) as hl:  # astropy agrees
        assert all((h.verify_checksum(), h.verify_datasum()) == (1, 1) for h in hl)
    return dfits_values


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_every_algorithm_reads_back_alike(tmp_path, algorithm, dtype):
    values = _values(dtype)
    path = tmp_path / "x.fits"
    # chunks that cut through rows: rechunked to whole row tiles
    x = da.from_array(values, chunks=(10, 20))
    dfits.to_fits(x, path, compression=algorithm, dither_seed=17)
    assert _table_header(path)["ZCMPTYPE"] == algorithm
    got = _check_file(path, values, lossless=values.dtype.kind != "f")
    if algorithm != "NOCOMPRESS":  # cfitsio has no NOCOMPRESS decoder ("unknown algorithm")
        np.testing.assert_array_equal(_funpack(path)[0], _as_cfitsio(got))
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
    values = _values(dtype, (20, 30))
    path = tmp_path / "x.fits"
    dfits.to_fits(values, path, compression="GZIP_2")
    _check_file(path, values, lossless=True)
    if dtype != "int64":  # cfitsio decodes no 64-bit integer tiles (status 410)
        np.testing.assert_array_equal(_funpack(path)[0], values)


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1"])
def test_partial_edge_tiles(tmp_path, algorithm):
    values = _values("int32", (3, 41, 29))
    path = tmp_path / "edges.fits"
    x = da.from_array(values, chunks=(2, 17, 29))
    dfits.to_fits(x, path, compression=algorithm, tile_shape=(2, 8, 10))
    h = _table_header(path)
    assert (h["ZTILE1"], h["ZTILE2"], h["ZTILE3"], h["NAXIS2"]) == (10, 8, 2, 3 * 6 * 2)
    _check_file(path, values, lossless=True)
    np.testing.assert_array_equal(_funpack(path)[0], values)


def test_float64_and_float_tiles(tmp_path):
    values = _values("float64", (16, 40))
    path = tmp_path / "f8.fits"
    dfits.to_fits(values, path, compression="RICE_1", tile_shape=(4, 40), dither_seed=5000)
    got = _check_file(path, values, lossless=False)
    np.testing.assert_array_equal(_funpack(path)[0], _as_cfitsio(got))


@pytest.mark.parametrize("algorithm", ["GZIP_1", "GZIP_2"])
def test_level_zero_keeps_floats_exact(tmp_path, algorithm):
    values = _values("float32", (9, 33))
    path = tmp_path / "exact.fits"
    dfits.to_fits(values, path, compression=algorithm, quantize_level=0)
    _check_file(path, values, lossless=True)
    np.testing.assert_array_equal(_funpack(path)[0], values)


@pytest.mark.parametrize("method", ["NO_DITHER", "SUBTRACTIVE_DITHER_1"])
def test_other_dithers_and_a_fixed_scale(tmp_path, method):
    values = _values("float32", (12, 50))
    path = tmp_path / "q.fits"
    dfits.to_fits(values, path, compression="RICE_1", quantize_method=method,
                  quantize_level=-0.25)  # fmt: skip
    got = _check_file(path, values, lossless=False)
    np.testing.assert_array_equal(_funpack(path)[0], _as_cfitsio(got))
    finite = np.isfinite(values) & (values != 7.0)
    assert np.abs(got[finite] - values[finite]).max() <= 0.125 + 1e-4


def test_dataset_header_and_wcs(tmp_path):
    dims = ("y", "x")
    img = xr.DataArray(_values("float32", (6, 10)), dims=dims,
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
    _fitsverify(path)


def test_accessor_and_delayed(tmp_path):
    values = _values("int16", (8, 8))
    path = tmp_path / "acc.fits"
    graph = xr.DataArray(values, dims=("y", "x")).fits.to_fits(
        path, compression="GZIP_1", compute=False
    )
    assert not path.exists()
    graph.compute()
    _check_file(path, values, lossless=True)


def test_same_input_same_bytes(tmp_path):
    x = da.from_array(_values("float32", (30, 40)), chunks=(7, 40))
    a, b = tmp_path / "a.fits", tmp_path / "b.fits"
    dfits.to_fits(x, a, compression="RICE_1", dither_seed=3)
    dfits.to_fits(x.rechunk((13, 40)), b, compression="RICE_1", dither_seed=3)
    # heap order follows the chunks, so the bytes may differ; the decoded values may not
    np.testing.assert_array_equal(_read_back(a)[1], _read_back(b)[1])
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

    x = da.from_array(_values("float32", (20, 30)), chunks=(5, 30))
    graph = dfits.to_fits(x, tmp_path / "x.fits", compression="RICE_1", compute=False)
    assert pickle.loads(pickle.dumps(graph.dask))


@pytest.mark.slow
def test_on_a_process_cluster(tmp_path):
    from tests.clusters import process_cluster

    values = _values("float32", (64, 50))
    path = tmp_path / "cluster.fits"
    with process_cluster():
        dfits.to_fits(da.from_array(values, chunks=(8, 50)), path, compression="RICE_1")
    got = _check_file(path, values, lossless=False)
    np.testing.assert_array_equal(_funpack(path)[0], _as_cfitsio(got))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dfits-part")]


def test_names_as_astropy_writes_them(tmp_path):
    from dfits.format.imagehdu import user_cards
    from dfits.write.images import ImageItem

    values = _values("int16", (6, 10))
    source, path = tmp_path / "src.fits", tmp_path / "names.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.ImageHDU(values, name="SCI")]).writeto(source)
    own = ImageItem(values, user_cards({"EXTNAME": "OWN"}), None)
    dfits.to_fits([values, dfits.open(source)[1], own], path, compression="GZIP_1")
    with fits.open(path) as hl:
        want = [h.name for h in hl]
    # no name: astropy's default; a source HDU's EXTNAME kept; a caller's EXTNAME card kept
    assert want == ["PRIMARY", "COMPRESSED_IMAGE", "SCI", "OWN"]
    f = dfits.open(path)
    assert [h.name for h in f] == want
    assert [f[name].index for name in want] == [0, 1, 2, 3]
    assert _table_header(path)["EXTNAME"] == "COMPRESSED_IMAGE"
    out = io.StringIO()
    f.info(output=out)
    lines = out.getvalue().splitlines()[1:]
    # the columns line up on every row, the long default name included
    for column in ("Ver", "Cards", "Dimensions"):
        at = lines[0].index(column) + (len(column) - 1 if column != "Dimensions" else 0)
        assert all(line[at] != " " for line in lines[1:]), (column, lines)
    _fitsverify(path)


@pytest.mark.parametrize("algorithm", ["GZIP_1", "GZIP_2"])
def test_compression_level(tmp_path, algorithm):
    values = np.arange(20 * 300, dtype="i4").reshape(20, 300) // 7
    sizes = {}
    for level in (None, 1, 9):
        path = tmp_path / f"{level}.fits"
        dfits.to_fits(values, path, compression=algorithm, compression_level=level)
        _check_file(path, values, lossless=True)
        np.testing.assert_array_equal(_funpack(path)[0], values)
        sizes[level] = path.stat().st_size
    # the default is fpack's level 1; level 9 packs tighter
    assert sizes[None] == sizes[1] >= sizes[9]


def test_rice_blocksize_16(tmp_path):
    values = _values("int16", (20, 100))
    path = tmp_path / "b16.fits"
    dfits.to_fits(values, path, compression="RICE_1", rice_blocksize=16)
    assert _table_header(path)["ZVAL1"] == 16
    _check_file(path, values, lossless=True)
    np.testing.assert_array_equal(_funpack(path)[0], values)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"compression": "LZ4"}, "compression 'LZ4'"),
        ({"compression": "GZIP_1", "compression_level": 12}, "compression_level 12"),
        ({"compression": "GZIP_1", "compression_level": "fast"}, "compression_level 'fast'"),
        ({"compression": "RICE_1", "compression_level": 5}, "compression_level 5"),
        ({"compression": "RICE_1", "rice_blocksize": 64}, "rice_blocksize 64"),
        ({"compression": "RICE_1", "quantize_method": "X"}, "quantize_method 'X'"),
    ],
    ids=["algorithm", "level", "level-type", "level-rice", "blocksize", "method"],
)
def test_bad_options_name_the_option(tmp_path, options, named):
    path = tmp_path / "x.fits"
    with pytest.raises(dfits.DfitsError, match=named):
        dfits.to_fits(np.ones((4, 4), "i2"), path, **options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "float32"])
def test_zhecksum_zdatasum_are_the_uncompressed_image_sums(tmp_path, dtype):
    values = _values(dtype, (37, 53))
    x = da.from_array(values, chunks=(10, 53))  # several chunks: partial sums combined
    packed, plain = tmp_path / "z.fits", tmp_path / "plain.fits"
    cards = {"OBJECT": "M 1"}
    dfits.to_fits(x, packed, compression="GZIP_2", header=cards, quantize_level=0)
    # the uncompressed image HDU dfits writes for the same values and cards
    dfits.to_fits([values], plain, header=cards)
    table = _table_header(packed)
    with fits.open(plain, checksum=True) as hl:
        assert table["ZDATASUM"] == hl[1].header["DATASUM"]
        assert table["ZHECKSUM"] == hl[1].header["CHECKSUM"]
    with fits.open(packed, checksum=True) as hl:
        # astropy reads them as the image's CHECKSUM/DATASUM; the decoded values sum to it
        image = fits.ImageHDU(hl[1].data, header=hl[1].header)
        assert hl[1].header["DATASUM"] == table["ZDATASUM"]
        assert str(image._calculate_datasum()) == table["ZDATASUM"]
    _fitsverify(packed)


def test_no_zsums_without_checksum(tmp_path):
    path = tmp_path / "n.fits"
    dfits.to_fits(_values("int16", (8, 8)), path, compression="RICE_1", checksum=False)
    table = _table_header(path)
    assert "ZDATASUM" not in table
    assert "ZHECKSUM" not in table


def test_zsums_of_quantised_floats_are_the_original_values(tmp_path):
    values = _values("float32", (20, 40))
    packed, plain = tmp_path / "q.fits", tmp_path / "plain.fits"
    dfits.to_fits(values, packed, compression="RICE_1")
    dfits.to_fits([values], plain)
    with fits.open(plain) as hl:
        # lossy: the sums say what was quantised (fpack copies the original's), as the
        # convention's ZDATASUM is the uncompressed HDU's
        assert _table_header(packed)["ZDATASUM"] == hl[1].header["DATASUM"]
    assert _funpack(packed)[0].shape == values.shape


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8", "int8"])
def test_plio_reads_back_alike(tmp_path, dtype):
    rng = np.random.default_rng(5)
    top = {"int16": 30000, "int32": 2**24 - 1, "uint8": 255, "int8": 127}[dtype]
    low = -128 if dtype == "int8" else 0
    runs = rng.choice([low, 0, 1, 7, top, 4100, 5000], size=400)
    values = np.repeat(runs, rng.integers(1, 30, 400))[: 37 * 53].reshape(37, 53).astype(dtype)
    path = tmp_path / "p.fits"
    dfits.to_fits(da.from_array(values, chunks=(10, 20)), path, compression="PLIO_1")
    table = _table_header(path)
    assert table["ZCMPTYPE"] == "PLIO_1"
    assert table["TFORM1"].startswith("1PI")
    _check_file(path, values, lossless=True)
    np.testing.assert_array_equal(_funpack(path)[0], values)


def test_plio_refuses_what_it_cannot_hold(tmp_path):
    path = tmp_path / "p.fits"
    with pytest.raises(dfits.DataError, match=r"tile 2: PLIO_1 holds values 0\.\.16777215"):
        dfits.to_fits(np.array([[0, 1], [-1, 2]], "i4"), path, compression="PLIO_1")
    with pytest.raises(dfits.UnsupportedError, match="PLIO_1 codes integers"):
        dfits.to_fits(np.ones((2, 2), "f4"), path, compression="PLIO_1")
    assert list(tmp_path.iterdir()) == []


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
    first = _values("float32", (30, 40))
    dfits.to_fits([first], path)
    ints = _values("int16", (37, 53))
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
    _fitsverify(path)
    funpacked = _funpack(path)
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


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint16", "uint8", "float32"])
def test_hcompress_reads_back_alike(tmp_path, dtype):
    values = _values(dtype, (37, 53))
    path = tmp_path / "h.fits"
    dfits.to_fits(da.from_array(values, chunks=(20, 53)), path, compression="HCOMPRESS_1",
                  dither_seed=3)  # fmt: skip
    table = _table_header(path)
    assert (table["ZCMPTYPE"], table["ZTILE2"], table["ZNAME1"]) == ("HCOMPRESS_1", 16, "SCALE")
    got = _check_file(path, values, lossless=values.dtype.kind != "f")
    np.testing.assert_array_equal(_funpack(path)[0], _as_cfitsio(got))


def test_hcompress_lossy_scale_and_tiles(tmp_path):
    values = _values("int32", (40, 64))
    path = tmp_path / "h.fits"
    dfits.to_fits(values, path, compression="HCOMPRESS_1", hcompress_scale=8,
                  tile_shape=(12, 30))  # fmt: skip
    astropy_values, dfits_values = _read_back(path)
    np.testing.assert_array_equal(dfits_values, astropy_values)
    np.testing.assert_array_equal(_funpack(path)[0], dfits_values)
    assert 0 < np.abs(dfits_values - values).max() <= 8 * 4  # lossy, near
    # the default tile grows past 16 rows rather than leave a last tile of one row
    dfits.to_fits(values[:33], tmp_path / "d.fits", compression="HCOMPRESS_1")
    assert _table_header(tmp_path / "d.fits")["ZTILE2"] == 17
    _check_file(tmp_path / "d.fits", values[:33], lossless=True)
    image, cube = np.ones((40, 64), "i2"), np.ones((4, 4, 4), "i2")
    for bad in [(2, 2, 4), (13, 30), (1, 64)]:  # 3-D; a last tile of 1 row; 1-D tiles
        with pytest.raises(dfits.errors.OptionError, match="tile_shape"):
            dfits.to_fits(cube if len(bad) == 3 else image, tmp_path / "x.fits",
                          compression="HCOMPRESS_1", tile_shape=bad)  # fmt: skip
    with pytest.raises(dfits.UnsupportedError, match="2-D"):
        dfits.to_fits(np.ones(10, "i2"), tmp_path / "x.fits", compression="HCOMPRESS_1")
    with pytest.raises(dfits.errors.OptionError, match="hcompress_scale -1"):
        dfits.to_fits(values, tmp_path / "x.fits", compression="HCOMPRESS_1", hcompress_scale=-1)
