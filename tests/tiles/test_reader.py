"""Tile-compressed images read through dfits equal astropy (and funpack) value for value."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import dfits
from dfits.errors import DataError, DfitsError, HeaderError

COMPRESSED = [
    "astropy/comp.fits",
    "astropy/compressed_float_bzero.fits",
    "astropy/compressed_image.fits",
    "astropy/compressed_with_nan.fits",
    "astropy/double_ext.fits",
    "astropy/m13_gzip.fits",
    "astropy/m13_hcomp.fits",
    "astropy/m13_plio.fits",
    "astropy/m13_rice.fits",
    "fitsio/test_gzip_compressed_image.fits.fz",
    "fitsio/test_rice_dither2_seed42.fits.fz",
    "nom-tam-fits/m13real_rice.fits",
]


def astropy_data(path: Path, index: int = 1) -> np.ndarray:
    from astropy.io import fits

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as f:
            return np.array(f[index].data)


def check(path: Path, index: int = 1) -> dfits.file.HDU:
    """``hdu.data``, a strided ``section`` and the sum equal astropy's, dtype included."""
    hdu = dfits.open(path)[index]
    want = astropy_data(path, index)
    got = hdu.data.compute()
    assert hdu.kind == "compressed_image"
    assert (hdu.shape, hdu.dtype) == (want.shape, want.dtype)
    assert type(got) is np.ndarray
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaNs in the same places
    cut = tuple(slice(n // 3, n // 3 + 7, 2) for n in want.shape)
    np.testing.assert_array_equal(hdu.section[cut], want[cut])
    total = hdu.data.sum(dtype=np.float64).compute()
    np.testing.assert_allclose(total, np.sum(want, dtype=np.float64), rtol=1e-12)
    return hdu


@pytest.mark.parametrize("name", COMPRESSED)
def test_corpus_equals_astropy(corpus, name):
    check(corpus / name)


def test_corpus_lossless_equals_the_uncompressed_original(corpus):
    m13 = astropy_data(corpus / "astropy/m13.fits", 0)
    for name in ("m13_rice", "m13_gzip", "m13_plio", "m13_hcomp"):
        np.testing.assert_array_equal(
            dfits.open(corpus / f"astropy/{name}.fits")[1].section[:], m13
        )


def test_info_and_repr_show_the_image(corpus, capsys):
    f = dfits.open(corpus / "astropy/m13_rice.fits")
    rows = f.info(output=False)
    assert rows[1][3:] == ("compressed_image", f[1].header.ncards, (300, 300), "int16")
    f.info()
    assert "compressed_image    25  (300, 300)             int16" in capsys.readouterr().out
    assert "(300, 300) int16" in repr(f[1])
    assert f[1].is_image


# -- files astropy writes: algorithm x BITPIX x quantisation x tile shape -----------------
def _image(bitpix: int, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(abs(bitpix) + len(shape))
    if bitpix < 0:
        data = rng.normal(100.0, 5.0, shape).astype(f"f{-bitpix // 8}")
        data.flat[::17] = 0.0  # exact zeros: SUBTRACTIVE_DITHER_2 keeps them
        data.flat[5::23] = np.nan  # blanks: ZBLANK
        return data
    hi = {8: 255, 16: 30000, 32: 2**31 - 1}[bitpix]
    lo = 0 if bitpix == 8 else -hi
    return rng.integers(lo, hi, shape, endpoint=True).astype(
        "u1" if bitpix == 8 else f"i{bitpix // 8}"
    )


CASES = [
    # (algorithm, bitpix, quantize method, shape, tile shape)
    ("RICE_1", 16, None, (37, 45), (1, 45)),
    ("RICE_1", 32, None, (20, 33), (7, 10)),
    ("RICE_1", 8, None, (3, 11, 13), (2, 4, 5)),
    ("GZIP_1", 16, None, (30, 21), (8, 8)),
    ("GZIP_2", 32, None, (19, 23), (5, 23)),
    ("GZIP_2", -64, None, (17, 9), (4, 9)),
    ("GZIP_1", -32, None, (11, 40), (3, 16)),
    ("PLIO_1", 16, None, (25, 31), (1, 31)),
    ("NOCOMPRESS", 16, None, (9, 10), (4, 4)),
    ("RICE_1", -32, -1, (40, 50), (1, 50)),
    ("RICE_1", -32, 1, (40, 50), (6, 7)),
    ("RICE_1", -32, 2, (40, 50), (1, 50)),
    ("RICE_1", -64, 2, (12, 9, 10), (1, 4, 10)),
    ("GZIP_2", -32, 1, (33, 20), (10, 20)),
]


def _case_id(case: tuple) -> str:
    algorithm, bitpix, q, _, tile = case
    qn = {None: "lossless", -1: "nodither", 1: "dither1", 2: "dither2"}[q]
    return f"{algorithm}-{bitpix}-{qn}-{'x'.join(map(str, tile))}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_astropy_written_equals_astropy(tmp_path, case):
    from astropy.io import fits

    algorithm, bitpix, q, shape, tile = case
    data = _image(bitpix, shape)
    if algorithm == "PLIO_1":
        data = np.abs(data) % 4000
    kw: dict = {"compression_type": algorithm, "tile_shape": tile}
    if q is None and bitpix < 0:
        kw["quantize_level"] = 0.0  # lossless floats (GZIP only)
    elif q is not None:
        kw.update(quantize_method=q, quantize_level=4.0, dither_seed=17)
    path = tmp_path / "c.fits"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(data, **kw)]).writeto(path)
    hdu = check(path)
    if q is None:
        np.testing.assert_array_equal(hdu.data.compute(), data)  # lossless: the original


def test_scaled_integers_with_blank(tmp_path):
    from astropy.io import fits

    data = _image(16, (20, 30))
    data[3, 4] = -32768
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(4, 30))
    hdu.header["BSCALE"] = 0.5
    hdu.header["BZERO"] = 3.0
    hdu.header["BLANK"] = -32768
    path = tmp_path / "s.fits"
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    got = check(path)
    assert np.isnan(got.section[3, 4])


# -- files fpack writes, checked against astropy and funpack ------------------------------
FPACK = shutil.which("fpack")
FUNPACK = shutil.which("funpack")
needs_fpack = pytest.mark.skipif(
    not (FPACK and FUNPACK), reason="fpack/funpack not installed (apt-get install libcfitsio-bin)"
)


@needs_fpack
@pytest.mark.parametrize(
    ("flags", "bitpix", "shape"),
    [
        (["-r"], 16, (40, 50)),
        (["-r", "-t", "7,9"], 32, (20, 30)),
        (["-g2"], 16, (25, 26)),
        (["-g", "-t", "10,10"], 8, (24, 30)),
        (["-p"], 16, (30, 40)),
        (["-d", "-t", "8,8"], 16, (20, 20)),
        (["-r", "-qz42", "4"], -32, (30, 40)),
        (["-r", "-q17", "2", "-t", "10,10"], -32, (30, 40)),
        (["-g2", "-q0", "4"], -64, (16, 18)),
        (["-g", "-q", "0"], -32, (16, 18)),
    ],
    ids=lambda v: "".join(v) if isinstance(v, list) else None,
)
def test_fpack_written_equals_astropy_and_funpack(tmp_path, flags, bitpix, shape):
    from astropy.io import fits

    data = _image(bitpix, shape)
    if "-p" in flags:
        data = np.abs(data) % 4000
    if bitpix < 0:
        data = np.nan_to_num(data)
    raw = tmp_path / "raw.fits"
    fits.PrimaryHDU(data).writeto(raw)
    packed = tmp_path / "raw.fits.fz"
    subprocess.run([FPACK, *flags, "-O", str(packed), str(raw)], check=True, timeout=60)
    hdu = check(packed)
    unpacked = tmp_path / "unpacked.fits"
    subprocess.run([FUNPACK, "-O", str(unpacked), str(packed)], check=True, timeout=60)
    want = astropy_data(unpacked, 0)
    np.testing.assert_array_equal(hdu.data.compute(), want)


# -- chunks, pickling, laziness ------------------------------------------------------------
def test_chunks_are_whole_tiles_and_tasks_pickle(tmp_path):
    import dask
    from astropy.io import fits

    data = _image(16, (50, 64))
    path = tmp_path / "t.fits"
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(7, 10))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    with dask.config.set({"array.chunk-size": "2KiB"}):
        x = dfits.open(path)[1].data
        y = dfits.open(path)[1].to_dask(reduce_axis=0)
    for chunks in (x.chunks, y.chunks):
        bounds = [np.cumsum(c)[:-1] for c in chunks]
        assert all(b % 7 == 0 for b in bounds[0])  # every boundary between whole tiles
        assert all(b % 10 == 0 for b in bounds[1])
    assert x.npartitions > 1
    np.testing.assert_array_equal(x.compute(), data)
    z = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(z[10:40, 3:59].compute(), data[10:40, 3:59])
    # explicit chunks are kept as given: tiles on a boundary are decoded by both tasks
    w = dfits.open(path, chunks=(16, 64))[1].data
    assert w.chunks[0][:2] == (16, 16)
    np.testing.assert_array_equal(w.compute(), data)
    assert x.mean().compute() == pytest.approx(data.mean(), rel=1e-12)
    np.testing.assert_array_equal(np.nanmax(x, axis=0).compute(), data.max(axis=0))


def test_a_region_reads_only_its_tiles(corpus):
    hdu = dfits.open(corpus / "astropy/m13_rice.fits")[1]
    reader = hdu._block(raw=False)
    assert reader.rows((slice(10, 12), slice(0, 300))).tolist() == [10, 11]
    assert reader.rows((slice(0, 0), slice(0, 300))).tolist() == []


# -- bad input -----------------------------------------------------------------------------
def _tile_file(tmp_path: Path, algorithm: str) -> tuple[Path, int, list[tuple[int, int]]]:
    """A small compressed image, its heap's offset and its tiles' (count, offset)."""
    from astropy.io import fits

    path = tmp_path / f"{algorithm}.fits"
    data = _image(16, (12, 40))
    if algorithm == "PLIO_1":
        data = np.abs(data) % 4000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = fits.CompImageHDU(data, compression_type=algorithm, tile_shape=(4, 40))
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    layout = dfits.open(path)[1].layout
    reader = dfits.open(path)[1]._block(raw=False)
    spans = [tuple(map(int, s)) for s in reader.descriptors.spans["COMPRESSED_DATA"]]
    return path, layout.data_offset + layout.tiles.heap_start, spans


@pytest.mark.parametrize("algorithm", ["RICE_1", "GZIP_1", "GZIP_2", "PLIO_1"])
def test_corrupt_tile_names_hdu_tile_and_algorithm(tmp_path, algorithm):
    path, heap, spans = _tile_file(tmp_path, algorithm)
    first = astropy_data(path)[0:4]
    count, offset = spans[1]
    blob = bytearray(path.read_bytes())
    if algorithm == "PLIO_1":
        # a line list has no check but its structure: claim more words than it holds
        blob[heap + offset + 4 : heap + offset + 6] = b"\x7f\xff"
    else:
        # garble the middle of tile 1's stream
        for k in range(count // 3, count):
            blob[heap + offset + k] ^= 0x5A
    path.write_bytes(bytes(blob))
    hdu = dfits.open(path)[1]
    np.testing.assert_array_equal(hdu.section[0:4], first)  # tile 0 is still read
    with pytest.raises(DataError, match=rf"HDU 1.*tile 1 .*{algorithm}"):
        hdu.data.compute()


def test_truncated_tile_stream(tmp_path):
    path, _, spans = _tile_file(tmp_path, "RICE_1")
    # shorten tile 2's descriptor: its stream now ends early
    layout = dfits.open(path)[1].layout
    blob = bytearray(path.read_bytes())
    row = layout.data_offset + 2 * layout.tiles.row_bytes
    blob[row : row + 4] = np.array([spans[2][0] // 2], ">i4").tobytes()
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError, match=r"tile 2 .*RICE_1"):
        dfits.open(path)[1].section[9, 3]


def test_descriptor_outside_the_heap_names_row_and_offset(tmp_path):
    path, _, _ = _tile_file(tmp_path, "GZIP_1")
    want = astropy_data(path)
    layout = dfits.open(path)[1].layout
    blob = bytearray(path.read_bytes())
    row = layout.data_offset + 1 * layout.tiles.row_bytes + 4
    blob[row : row + 4] = np.array([10**6], ">i4").tobytes()
    path.write_bytes(bytes(blob))
    hdu = dfits.open(path)[1]
    x = hdu.data  # the table is read lazily: by each read, for its own tiles
    # tiles 0 and 2 are still read; any read meeting tile 1 (rows 4..7) names it
    np.testing.assert_array_equal(hdu.section[0:4], want[0:4])
    np.testing.assert_array_equal(x[8:12].compute(), want[8:12])
    for read in (lambda: x.compute(), lambda: hdu.section[5, 3], lambda: x[4:5].sum().compute()):
        with pytest.raises(HeaderError, match=r"row 2 \(tile 1\).*heap offset 1000000"):
            read()


def test_hostile_z_keyword_keeps_the_file_readable(tmp_path):
    path, _, _ = _tile_file(tmp_path, "RICE_1")
    blob = path.read_bytes()
    at = blob.index(b"ZBITPIX =")
    path.write_bytes(blob[:at] + b"ZBITPIX =                   13".ljust(80) + blob[at + 80 :])
    f = dfits.open(path)
    assert f[1].kind == "compressed_image"
    f[0].header  # noqa: B018
    with pytest.raises(DfitsError, match="ZBITPIX = 13"):
        f[1].data  # noqa: B018


# -- remote --------------------------------------------------------------------------------
def test_remote_section_fetches_only_its_tiles(tmp_path, corpus):
    from tests.servers import ScriptedServer

    shutil.copy(corpus / "astropy/m13_rice.fits", tmp_path / "m.fits")
    want = astropy_data(tmp_path / "m.fits")
    with ScriptedServer(tmp_path) as server:
        hdu = dfits.open(f"{server.url}/m.fits")[1]
        before = len(server.gets("m.fits"))
        np.testing.assert_array_equal(hdu.section[100:103, 5:9], want[100:103, 5:9])
        gets = server.gets("m.fits")[before:]
        np.testing.assert_array_equal(hdu.data.compute(), want)
    # the table rows, then the three tiles' bytes (coalesced: they follow each other)
    assert len(gets) == 2
    assert sum(r.sent for r in gets) < 3200  # 2,400 bytes of table rows; a 69,120-byte file


@pytest.mark.parametrize("zbitpix", [16, 32, 64])
def test_integer_image_with_zscale_reduces_as_astropy(tmp_path, zbitpix):
    """An integer image whose table has ZSCALE/ZZERO columns: astropy dequantises each tile
    and truncates the floats into the integers; every chunking and every reduction agrees
    (a chunk off tile boundaries once reduced the dequantised floats and handed their bits
    back as integers: found by the fuzzer, seed 5501 case 2448)."""
    from astropy.io import fits

    rng = np.random.default_rng(7)
    values = rng.normal(1000, 40, (60, 70)).astype(np.float32)
    path = tmp_path / "zint.fits"
    hdu = fits.CompImageHDU(values, compression_type="RICE_1", quantize_level=4.0)
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    raw = bytearray(path.read_bytes())
    at = raw.index(b"ZBITPIX =")
    raw[at : at + 80] = f"ZBITPIX = {zbitpix:>20d}".ljust(80).encode()
    path.write_bytes(bytes(raw))
    want = astropy_data(path)
    assert want.dtype.kind == "i"
    for chunks in (None, (7, 70), (25, 25)):
        x = dfits.open(path, chunks=chunks)[1].data
        assert x.dtype == want.dtype
        np.testing.assert_array_equal(x.compute(), want)
        window = x[10:50, 3:66]
        for how in ("max", "min", "sum", "nanmax", "argmax"):
            got = getattr(np, how)(window).compute()
            assert got == getattr(np, how)(want[10:50, 3:66]), (chunks, how)
        np.testing.assert_allclose(x.std().compute(), want.std(), rtol=1e-12)
