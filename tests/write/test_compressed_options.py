"""Tile-compressed output, the options and algorithms of issue 46: names as astropy writes
them, GZIP levels and the Rice block size, ZHECKSUM/ZDATASUM, PLIO_1 and HCOMPRESS_1 (funpack,
astropy and dfits read every one back alike), bad options named."""

from __future__ import annotations

import io

import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

import dfits
from tests.write.zchecks import (
    as_cfitsio,
    check_file,
    fitsverify,
    funpack,
    read_back,
    table_header,
    values_of,
)


def test_names_as_astropy_writes_them(tmp_path):
    from dfits.format.imagehdu import user_cards
    from dfits.write.images import ImageItem

    values = values_of("int16", (6, 10))
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
    assert table_header(path)["EXTNAME"] == "COMPRESSED_IMAGE"
    out = io.StringIO()
    f.info(output=out)
    lines = out.getvalue().splitlines()[1:]
    # the columns line up on every row, the long default name included
    for column in ("Ver", "Cards", "Dimensions"):
        at = lines[0].index(column) + (len(column) - 1 if column != "Dimensions" else 0)
        assert all(line[at] != " " for line in lines[1:]), (column, lines)
    fitsverify(path)


@pytest.mark.parametrize("algorithm", ["GZIP_1", "GZIP_2"])
def test_compression_level(tmp_path, algorithm):
    values = np.arange(20 * 300, dtype="i4").reshape(20, 300) // 7
    sizes = {}
    for level in (None, 1, 9):
        path = tmp_path / f"{level}.fits"
        dfits.to_fits(values, path, compression=algorithm, compression_level=level)
        check_file(path, values, lossless=True)
        np.testing.assert_array_equal(funpack(path)[0], values)
        sizes[level] = path.stat().st_size
    # the default is fpack's level 1; level 9 packs tighter
    assert sizes[None] == sizes[1] >= sizes[9]


def test_rice_blocksize_16(tmp_path):
    values = values_of("int16", (20, 100))
    path = tmp_path / "b16.fits"
    dfits.to_fits(values, path, compression="RICE_1", rice_blocksize=16)
    assert table_header(path)["ZVAL1"] == 16
    check_file(path, values, lossless=True)
    np.testing.assert_array_equal(funpack(path)[0], values)


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
    values = values_of(dtype, (37, 53))
    x = da.from_array(values, chunks=(10, 53))  # several chunks: partial sums combined
    packed, plain = tmp_path / "z.fits", tmp_path / "plain.fits"
    cards = {"OBJECT": "M 1"}
    dfits.to_fits(x, packed, compression="GZIP_2", header=cards, quantize_level=0)
    # the uncompressed image HDU dfits writes for the same values and cards
    dfits.to_fits([values], plain, header=cards)
    table = table_header(packed)
    with fits.open(plain, checksum=True) as hl:
        assert table["ZDATASUM"] == hl[1].header["DATASUM"]
        assert table["ZHECKSUM"] == hl[1].header["CHECKSUM"]
    with fits.open(packed, checksum=True) as hl:
        # astropy reads them as the image's CHECKSUM/DATASUM; the decoded values sum to it
        image = fits.ImageHDU(hl[1].data, header=hl[1].header)
        assert hl[1].header["DATASUM"] == table["ZDATASUM"]
        assert str(image._calculate_datasum()) == table["ZDATASUM"]
    fitsverify(packed)


def test_no_zsums_without_checksum(tmp_path):
    path = tmp_path / "n.fits"
    dfits.to_fits(values_of("int16", (8, 8)), path, compression="RICE_1", checksum=False)
    table = table_header(path)
    assert "ZDATASUM" not in table
    assert "ZHECKSUM" not in table


def test_zsums_of_quantised_floats_are_the_original_values(tmp_path):
    values = values_of("float32", (20, 40))
    packed, plain = tmp_path / "q.fits", tmp_path / "plain.fits"
    dfits.to_fits(values, packed, compression="RICE_1")
    dfits.to_fits([values], plain)
    with fits.open(plain) as hl:
        # lossy: the sums say what was quantised (fpack copies the original's), as the
        # convention's ZDATASUM is the uncompressed HDU's
        assert table_header(packed)["ZDATASUM"] == hl[1].header["DATASUM"]
    assert funpack(packed)[0].shape == values.shape


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8", "int8"])
def test_plio_reads_back_alike(tmp_path, dtype):
    rng = np.random.default_rng(5)
    top = {"int16": 30000, "int32": 2**24 - 1, "uint8": 255, "int8": 127}[dtype]
    low = -128 if dtype == "int8" else 0
    runs = rng.choice([low, 0, 1, 7, top, 4100, 5000], size=400)
    values = np.repeat(runs, rng.integers(1, 30, 400))[: 37 * 53].reshape(37, 53).astype(dtype)
    path = tmp_path / "p.fits"
    dfits.to_fits(da.from_array(values, chunks=(10, 20)), path, compression="PLIO_1")
    table = table_header(path)
    assert table["ZCMPTYPE"] == "PLIO_1"
    assert table["TFORM1"].startswith("1PI")
    check_file(path, values, lossless=True)
    np.testing.assert_array_equal(funpack(path)[0], values)


def test_plio_refuses_what_it_cannot_hold(tmp_path):
    path = tmp_path / "p.fits"
    with pytest.raises(dfits.DataError, match=r"tile 2: PLIO_1 holds values 0\.\.16777215"):
        dfits.to_fits(np.array([[0, 1], [-1, 2]], "i4"), path, compression="PLIO_1")
    with pytest.raises(dfits.UnsupportedError, match="PLIO_1 codes integers"):
        dfits.to_fits(np.ones((2, 2), "f4"), path, compression="PLIO_1")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint16", "uint8", "float32"])
def test_hcompress_reads_back_alike(tmp_path, dtype):
    values = values_of(dtype, (37, 53))
    path = tmp_path / "h.fits"
    dfits.to_fits(da.from_array(values, chunks=(20, 53)), path, compression="HCOMPRESS_1",
                  dither_seed=3)  # fmt: skip
    table = table_header(path)
    assert (table["ZCMPTYPE"], table["ZTILE2"], table["ZNAME1"]) == ("HCOMPRESS_1", 16, "SCALE")
    got = check_file(path, values, lossless=values.dtype.kind != "f")
    np.testing.assert_array_equal(funpack(path)[0], as_cfitsio(got))


def test_hcompress_lossy_scale_and_tiles(tmp_path):
    values = values_of("int32", (40, 64))
    path = tmp_path / "h.fits"
    dfits.to_fits(values, path, compression="HCOMPRESS_1", hcompress_scale=8,
                  tile_shape=(12, 30))  # fmt: skip
    astropy_values, dfits_values = read_back(path)
    np.testing.assert_array_equal(dfits_values, astropy_values)
    np.testing.assert_array_equal(funpack(path)[0], dfits_values)
    assert 0 < np.abs(dfits_values - values).max() <= 8 * 4  # lossy, near
    assert table_header(path)["ZVAL1"] == -8.0  # absolute, in cfitsio's sign convention
    # the default tile grows past 16 rows rather than leave a last tile of one row
    dfits.to_fits(values[:33], tmp_path / "d.fits", compression="HCOMPRESS_1")
    assert table_header(tmp_path / "d.fits")["ZTILE2"] == 17
    check_file(tmp_path / "d.fits", values[:33], lossless=True)
    image, cube = np.ones((40, 64), "i2"), np.ones((4, 4, 4), "i2")
    for bad in [(2, 2, 4), (13, 30), (1, 64)]:  # 3-D; a last tile of 1 row; 1-D tiles
        with pytest.raises(dfits.errors.OptionError, match="tile_shape"):
            dfits.to_fits(cube if len(bad) == 3 else image, tmp_path / "x.fits",
                          compression="HCOMPRESS_1", tile_shape=bad)  # fmt: skip
    with pytest.raises(dfits.UnsupportedError, match="2-D"):
        dfits.to_fits(np.ones(10, "i2"), tmp_path / "x.fits", compression="HCOMPRESS_1")
    with pytest.raises(dfits.errors.OptionError, match="hcompress_scale -1"):
        dfits.to_fits(values, tmp_path / "x.fits", compression="HCOMPRESS_1", hcompress_scale=-1)
