"""dfits.open end to end: every image in the corpus and generated files equal astropy's."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from astropy.io import fits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dfits
from dfits.io.writer import ImageWriter
from tests.conftest import CORPUS

COMPRESSED_SUFFIXES = (".gz", ".Z", ".bz2")


def _corpus_files():
    if not CORPUS.is_dir():
        return []
    return sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix != ".md" and not p.name.endswith(COMPRESSED_SUFFIXES)
    )


def _astropy_images(path):
    """(index, native data) for every image HDU astropy reads without complaint.

    An entry ``(index, None)`` marks an image whose data astropy itself fails to read.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hl = fits.open(path, disable_image_compression=True, memmap=False)
        except Exception:
            return None
        out = []
        with hl:
            for i, h in enumerate(hl):
                if (
                    isinstance(h, fits.PrimaryHDU | fits.ImageHDU)
                    and not isinstance(h, fits.GroupsHDU)
                    and h.header.get("NAXIS", 0) > 0
                ):
                    try:
                        data = h.data
                    except Exception:
                        out.append((i, None))
                        continue
                    if data is None:
                        continue
                    out.append((i, data.astype(data.dtype.newbyteorder("="))))
    return out


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_images_equal_astropy(path):
    images = _astropy_images(path)
    if images is None:
        pytest.skip("astropy cannot open this file either (bad-input cases: tests/format)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dfits.DfitsWarning)
        try:
            f = dfits.open(path)
        except dfits.DfitsError as err:
            if any(ref is None for _, ref in images):
                return  # astropy cannot read the data either; dfits says why at open
            pytest.fail(f"dfits refused a file astropy reads: {err}")
    for index, ref in images:
        if ref is None:
            continue
        hdu = f[index]
        assert hdu.is_image
        assert hdu.shape == ref.shape
        assert hdu.dtype == ref.dtype, (hdu.dtype, ref.dtype)
        got = hdu.data.compute()
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, ref)
        if ref.size:
            np.testing.assert_array_equal(hdu.section[...], ref)
            if ref.dtype.kind == "f":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    np.testing.assert_allclose(da.nanmax(hdu.data).compute(), np.nanmax(ref))
                    # dfits sums exact float64 values; astropy rounds each scaled value to
                    # the physical float type first, so allow that rounding per element
                    atol = ref.size * np.finfo(ref.dtype).eps * np.nanmax(np.abs(ref))
                    np.testing.assert_allclose(
                        da.nansum(hdu.data).compute(),
                        np.nansum(ref, dtype=float),
                        rtol=1e-6,
                        atol=atol,
                    )
            else:
                assert hdu.data.sum().compute() == ref.sum()


# -- generated files: every BITPIX, scaling, unsigned, BLANK ---------------------------------

GENERATED = {
    "u8": (np.uint8, {}),
    "i8-offset": (np.uint8, {"BZERO": -128}),
    "i16": (np.int16, {}),
    "i16-blank": (np.int16, {"BLANK": -32768}),
    "i16-blank0-scaled": (np.int16, {"BSCALE": 0.25, "BZERO": 100.0, "BLANK": 0}),
    "u16": (np.int16, {"BZERO": 32768}),
    "i32-scaled": (np.int32, {"BSCALE": 1.5, "BZERO": -3.0, "BLANK": 17}),
    "u32": (np.int32, {"BZERO": 2**31}),
    "i64-blank-min": (np.int64, {"BLANK": -(2**63)}),
    "u64": (np.int64, {"BZERO": 2**63}),
    "f32": (np.float32, {}),
    "f64-scaled": (np.float64, {"BSCALE": 2.0, "BZERO": 1.0}),
}


def _write(path, stored, cards):
    hdu = fits.PrimaryHDU()
    hdu.header["BITPIX"] = {1: 8, 2: 16, 4: 32, 8: 64}[stored.itemsize] * (
        -1 if stored.dtype.kind == "f" else 1
    )
    with ImageWriter(
        path, stored.shape, stored.dtype.newbyteorder(">"), list(cards.items())
    ) as out:
        out.write(stored)


def _stored(dtype, shape, rng, cards):
    if np.dtype(dtype).kind == "f":
        data = rng.standard_normal(shape).astype(dtype)
        if data.size:
            data.flat[0] = np.nan
        return data
    info = np.iinfo(dtype)
    data = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if "BLANK" in cards and data.size:
        data.flat[:: max(1, data.size // 7)] = cards["BLANK"]
    return data


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_encodings_equal_astropy(tmp_path, name):
    dtype, cards = GENERATED[name]
    rng = np.random.default_rng(1)
    stored = _stored(dtype, (13, 17, 5), rng, cards)
    path = tmp_path / f"{name}.fits"
    _write(path, stored, cards)
    with fits.open(path) as hl:
        ref = hl[0].data
        ref = ref.astype(ref.dtype.newbyteorder("="))
    blank0 = cards.get("BLANK") == 0 and "BSCALE" in cards
    if blank0:
        # astropy skips BLANK = 0 (``if self._blank:``); dfits applies it, as the standard says
        ref[stored == 0] = np.nan
    hdu = dfits.open(path)[0]
    assert hdu.dtype == ref.dtype
    got = hdu.data.compute()
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(hdu.section[2:9:3, ::-4, 1], ref[2:9:3, ::-4, 1])
    assert hdu.section[3, 4, 2] == ref[3, 4, 2] or (
        np.isnan(hdu.section[3, 4, 2]) and np.isnan(ref[3, 4, 2])
    )


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(list(GENERATED)),
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple),
    chunk=st.integers(1, 9),
)
def test_hypothesis_shapes_and_chunks(tmp_path, name, shape, chunk):
    dtype, cards = GENERATED[name]
    stored = _stored(dtype, shape, np.random.default_rng(len(shape)), cards)
    path = tmp_path / f"h-{name}-{'x'.join(map(str, shape))}.fits"
    _write(path, stored, cards)
    with fits.open(path) as hl:
        ref = hl[0].data.astype(hl[0].data.dtype.newbyteorder("="))
    if cards.get("BLANK") == 0 and "BSCALE" in cards:
        ref[stored == 0] = np.nan
    x = dfits.open(path, chunks=chunk)[0].data
    np.testing.assert_array_equal(x.compute(), ref)
    if ref.dtype.kind == "f":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_allclose(
                da.nanmean(x, axis=0).compute(),
                np.nanmean(ref.astype(float), axis=0),
                rtol=1e-5,
                atol=1e-6,
                equal_nan=True,
            )
    else:
        np.testing.assert_array_equal(x.sum(axis=-1).compute(), ref.sum(axis=-1))


# -- the file object ------------------------------------------------------------------------


@pytest.fixture
def mef(corpus):
    return dfits.open(corpus / "astropy" / "j94f05bgq_flt.fits")


def test_lookup_by_index_name_and_version(mef):
    with fits.open(mef.filename) as hl:
        names = [(h.name, h.ver) for h in hl]
    assert len(mef) == len(names)
    assert [(h.name, h.ver) for h in mef] == names
    assert mef["SCI"] is mef[1]
    assert mef["sci", 2].index == next(i for i, n in enumerate(names) if n == ("SCI", 2))
    assert mef[-1].index == len(mef) - 1
    assert ("ERR", 1) in mef
    assert "NOPE" not in mef


def test_missing_hdu_lists_what_exists(mef):
    with pytest.raises(dfits.HDUNotFoundError, match=r"no HDU named 'NOPE'.*0:PRIMARY"):
        mef["NOPE"]
    with pytest.raises(KeyError):
        mef["SCI", 9]
    with pytest.raises(IndexError, match="no HDU 99"):
        mef[99]


@pytest.fixture
def two_hdus(tmp_path):
    path = tmp_path / "two.fits"
    sci = fits.ImageHDU(np.arange(12, dtype=">f4").reshape(3, 4), name="SCI")
    fits.HDUList([fits.PrimaryHDU(), sci]).writeto(path)
    return dfits.open(path)


def test_info_prints_a_table_and_returns_none_like_astropy(two_hdus, capsys):
    assert two_hdus.info() is None  # a notebook cell ending in f.info() shows the table once
    out = capsys.readouterr().out
    assert "SCI" in out
    assert "Dimensions" in out
    rows = two_hdus.info(output=False)
    assert capsys.readouterr().out == ""
    with fits.open(two_hdus.filename) as hl:
        ref = hl.info(output=False)
    # dfits lists shapes in numpy order (hdu.shape); astropy's table in FITS order
    assert [(r[0], r[1], r[2], r[4], r[5]) for r in rows] == [
        (r[0], r[1], r[2], r[4], r[5][::-1]) for r in ref
    ]


def test_dataless_hdu_data_is_none_like_astropy(two_hdus):
    with fits.open(two_hdus.filename) as hl:
        assert hl[0].data is None
    primary = two_hdus[0]
    assert primary.shape == ()
    assert primary.data is None
    assert primary.raw is None
    assert primary.to_dask() is None
    assert two_hdus[1].data is not None


def test_non_image_data_is_a_clear_error(corpus):
    f = dfits.open(corpus / "astropy" / "btable.fits")
    table = f[1]
    assert table.kind == "bintable"
    # a table's data is its columns (tests/tables/test_data.py); it has no image array
    assert table.data.names == table.colnames
    with pytest.raises(dfits.UnsupportedError, match=r"HDU 1.*bintable"):
        table.raw  # noqa: B018
    with pytest.raises(dfits.UnsupportedError, match=r"HDU 1.*bintable"):
        table.to_dask()


def test_bscale_zero_raises_on_data_access(tmp_path):
    path = tmp_path / "bscale0.fits"
    with ImageWriter(path, (4, 4), ">i2", [("BSCALE", 0.0)]) as out:
        out.write(np.zeros((4, 4), np.int16))
    hdu = dfits.open(path)[0]
    assert hdu.header["BSCALE"] == 0.0
    with pytest.raises(dfits.DataError, match="BSCALE"):
        hdu.data  # noqa: B018


def test_data_pickles_and_names_are_deterministic(tmp_path):
    path = tmp_path / "p.fits"
    with ImageWriter(path, (64, 32), ">f4") as out:
        out.write(np.arange(64 * 32, dtype=np.float32).reshape(64, 32))
    a = dfits.open(path, chunks=(16, 32))[0].data
    b = dfits.open(path, chunks=(16, 32))[0].data
    assert a.name == b.name
    assert dfits.open(path, chunks=(8, 32))[0].data.name != a.name
    graph = dict(a.__dask_graph__())
    assert max(len(pickle.dumps(t)) for t in graph.values()) < 1000
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).compute(), a.compute())


def test_raw_is_stored_big_endian(tmp_path):
    path = tmp_path / "raw.fits"
    with ImageWriter(path, (3, 4), ">i2", [("BSCALE", 2.0), ("BZERO", 5.0)]) as out:
        out.write(np.arange(12, dtype=np.int16).reshape(3, 4))
    hdu = dfits.open(path)[0]
    raw = hdu.raw.compute()
    assert raw.dtype == np.dtype(">i2")
    np.testing.assert_array_equal(raw, np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(hdu.data.compute(), np.arange(12).reshape(3, 4) * 2 + 5)


def test_file_changed_after_open_is_detected(tmp_path):
    path = tmp_path / "changing.fits"
    with ImageWriter(path, (8, 8), ">f8") as out:
        out.write(np.ones((8, 8)))
    x = dfits.open(path)[0].data
    with open(path, "ab") as fh:
        fh.write(b"\0" * 2880)
    with pytest.raises(dfits.FileChangedError, match="changed since it was opened"):
        x.sum().compute()


def test_default_chunks_follow_the_file(tmp_path):
    path = Path(tmp_path) / "cube.fits"
    with ImageWriter(path, (64, 128, 128), ">f4") as out:
        out.write(np.zeros((64, 128, 128), np.float32))
    import dask

    with dask.config.set({"array.chunk-size": "1MiB"}):
        x = dfits.open(path)[0].data
    assert x.chunks[1:] == ((128,), (128,))
    assert set(x.chunks[0][:-1]) == {16}


@pytest.mark.parametrize("bitpix", [-32, 16])
def test_planned_chunks_read_the_same_from_maps_split_at_their_gaps(tmp_path, monkeypatch, bitpix):
    """Row-split chunks of a moment-map plan, mapped with their gaps split off (as large
    files' runs are), give astropy's values; the split itself is tested in tests/io."""
    import dask

    from dfits.io import local

    monkeypatch.setattr(local, "_SPLIT_MIN_RUN", 1024)
    split, calls = local._split_gaps, []

    def spy(m, start, runs):
        calls.append(runs.length)
        split(m, start, runs)

    monkeypatch.setattr(local, "_split_gaps", spy)
    path = Path(tmp_path) / "cube.fits"
    rng = np.random.default_rng(11)
    if bitpix == -32:
        data = rng.standard_normal((80, 64, 256)).astype(np.float32)
        data[3, 40, 7] = np.nan
        header = {}
    else:
        data = rng.integers(-1000, 1000, (80, 64, 256)).astype(np.int16)
        data[5, 50, 9] = -32768
        header = {"BSCALE": 0.5, "BZERO": 10.0, "BLANK": -32768}
    hdu = fits.PrimaryHDU(data)
    for key, value in header.items():
        hdu.header[key] = value
    hdu.writeto(path)
    expected = fits.getdata(path).astype(np.float64)
    with dask.config.set({"array.chunk-size": "256KiB"}):
        x = dfits.open(path)[0].to_dask(reduce_axis=0)
    assert len(x.chunks[1]) > 1  # rows split: each chunk is one strided run per plane
    np.testing.assert_allclose(
        da.nansum(x, axis=0).compute(), np.nansum(expected, axis=0), rtol=1e-5, atol=1e-4
    )
    np.testing.assert_allclose(
        da.nanstd(x, axis=0).compute(), np.nanstd(expected, axis=0), rtol=1e-4
    )
    np.testing.assert_array_equal(np.isnan(x.sum(axis=0).compute()), np.isnan(expected.sum(0)))
    np.testing.assert_array_equal(x.compute(), fits.getdata(path))
    assert calls
    assert max(calls) >= 1024  # some maps had runs long enough to split


def test_to_dask_plans_chunks_for_a_reduction(tmp_path):
    import dask

    path = Path(tmp_path) / "cube.fits"
    data = np.random.default_rng(5).random((80, 64, 128)).astype(np.float32)
    with ImageWriter(path, data.shape, ">f4") as out:
        out.write(data)
    with dask.config.set({"array.chunk-size": "64KiB"}):
        hdu = dfits.open(path)[0]
        assert hdu.data.chunks[0][0] == 2  # 2-plane slabs: float64 partials outweigh the data
        x = hdu.to_dask(reduce_axis=0)
        assert x.chunks[0] == (64, 16)
        assert x.chunks[2] == (128,)
        np.testing.assert_allclose(
            x.sum(axis=0).compute(), data.sum(axis=0, dtype=float), rtol=1e-6
        )
        np.testing.assert_array_equal(x.compute(), data)
        # explicit chunks win, at open or here
        assert dfits.open(path, chunks=(5, -1, -1))[0].to_dask(reduce_axis=0).chunks[0][0] == 5
        assert hdu.to_dask((7, -1, -1), reduce_axis=0).chunks[0][0] == 7
        with pytest.raises(np.exceptions.AxisError):
            hdu.to_dask(reduce_axis=3)


def test_warnings_point_at_the_users_open_call(tmp_path):
    path = tmp_path / "junk-after.fits"
    with ImageWriter(path, (4,), ">i2", []) as out:
        out.write(np.arange(4, dtype=np.int16))
    with path.open("ab") as fh:
        fh.write(b"not an HDU".ljust(2880))
    with pytest.warns(dfits.DfitsWarning, match="after the last HDU") as record:
        dfits.open(path)
    (w,) = record
    assert (w.filename, w.lineno) == (__file__, _line_of("dfits.open(path)"))


def _line_of(text: str) -> int:
    """The line of this file holding ``text`` (once)."""
    lines = Path(__file__).read_text().splitlines()
    (n,) = [i for i, line in enumerate(lines, 1) if line.strip() == text]
    return n
