"""dfits.to_fits and dfits.append of arrays and dfits HDUs: read back equal in astropy and dfits,
without importing xarray."""

from __future__ import annotations

import inspect
import io
import os
import shutil
import subprocess
import sys

import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

import dfits


def _fitsverify(path):
    tool = shutil.which("fitsverify")
    if tool is None:
        pytest.skip("fitsverify not installed (apt-get install fitsverify)")
    out = subprocess.run([tool, "-q", str(path)], capture_output=True, text=True, check=False)
    assert "verification OK" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("dtype", ["f8", "f4", "i2", "u2", "i1", "u1", "i4", "u4", "i8", "u8"])
def test_dask_array_round_trip(tmp_path, dtype):
    values = (np.random.default_rng(0).standard_normal((7, 13, 5)) * 100).astype(dtype)
    path = tmp_path / "x.fits"
    dfits.to_fits(da.from_array(values, chunks=(3, 4, 2)), path, header={"OBJECT": "M 1"})
    with fits.open(path, checksum=True) as hl:
        np.testing.assert_array_equal(hl[0].data, values)
        assert hl[0].data.dtype.newbyteorder("=") == values.dtype
        assert hl[0].header["OBJECT"] == "M 1"
    np.testing.assert_array_equal(dfits.open(path)[0].data.compute(), values)
    assert all(h.ok and h.checksum.status == "ok" for h in dfits.verify_checksum(path))
    _fitsverify(path)


def test_compute_false_returns_delayed(tmp_path):
    path = tmp_path / "later.fits"
    job = dfits.to_fits(da.ones((4, 4), chunks=2), path, compute=False)
    assert not path.exists()
    assert job.compute() == str(path)
    np.testing.assert_array_equal(fits.getdata(path), np.ones((4, 4)))


def test_no_checksum(tmp_path):
    path = tmp_path / "plain.fits"
    dfits.to_fits(np.ones(3), path, checksum=False)
    assert "CHECKSUM" not in fits.getheader(path)
    assert [h.checksum.status for h in dfits.verify_checksum(path)] == ["absent"]


@pytest.mark.slow
@pytest.mark.distributed
def test_local_cluster_writes_the_file(tmp_path):
    distributed = pytest.importorskip("distributed")
    values = np.arange(40 * 30, dtype="f8").reshape(40, 30)
    path = tmp_path / "dist.fits"
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster),
    ):
        dfits.to_fits(da.from_array(values, chunks=(7, 11)), path)
    with fits.open(path, checksum=True) as hl:
        np.testing.assert_array_equal(hl[0].data, values)
    assert all(h.ok for h in dfits.verify_checksum(path))


@pytest.mark.parametrize(
    ("bitpix", "bscale", "bzero"), [(16, 0.01, 5.0), (32, 1e-6, 0.0), (8, 0.1, -12.0)]
)
def test_quantised_floats_read_back_as_astropy_reads_them(tmp_path, bitpix, bscale, bzero):
    rng = np.random.default_rng(bitpix)
    values = rng.uniform(-10, 10, (11, 17)).astype("f4")
    values[3, 4:9] = np.nan
    path = tmp_path / "q.fits"
    x = da.from_array(values, chunks=(4, 6))
    dfits.to_fits(x, path, bitpix=bitpix, bscale=bscale, bzero=bzero, header={"BUNIT": "K"})
    header = fits.getheader(path)  # astropy drops BSCALE/BZERO from it once data is scaled
    with fits.open(path, checksum=True) as hl:
        ours = hl[0].data
    raw = fits.getdata(path, do_not_scale_image_data=True)
    assert (header["BITPIX"], header["BSCALE"], header["BZERO"]) == (bitpix, bscale, bzero)
    blank = 255 if bitpix == 8 else -(1 << (bitpix - 1))
    assert header["BLANK"] == blank
    np.testing.assert_array_equal(raw == blank, np.isnan(values))
    np.testing.assert_array_equal(dfits.open(path)[0].data.compute(), ours)
    ok = ~np.isnan(values)
    assert np.all(np.abs(ours[ok] - values[ok]) <= bscale / 2 * (1 + 1e-6) + 1e-6 * abs(bzero))
    assert all(h.ok for h in dfits.verify_checksum(path))
    _fitsverify(path)


def test_quantise_needs_bitpix_and_floats(tmp_path):
    with pytest.raises(ValueError, match="pass bitpix"):
        dfits.to_fits(np.ones(3), tmp_path / "a.fits", bscale=2.0)
    with pytest.raises(dfits.UnsupportedError, match="takes floats"):
        dfits.to_fits(np.ones(3, "i4"), tmp_path / "a.fits", bitpix=16)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.distributed
def test_killed_worker_leaves_the_old_file_and_a_retry_is_bit_identical(tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    values = np.arange(60 * 20, dtype="f8").reshape(60, 20)
    path, marker = tmp_path / "k.fits", str(tmp_path / "killed-once")
    path.write_bytes(b"old file")

    def kill(block, always, block_info=None):
        import os
        import signal

        if block_info[0]["chunk-location"][0] == 2 and (always or not os.path.exists(marker)):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-write
        return block

    x = da.from_array(values, chunks=(10, 20))
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        distributed.Client(cluster),
    ):
        with pytest.raises(distributed.KilledWorker):
            dfits.to_fits(x.map_blocks(kill, True, dtype="f8"), path, overwrite=True)
        assert path.read_bytes() == b"old file"
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dfits-part")]
        os.unlink(marker)
        # killed once, the task is retried on another worker: the same file as no kill gives
        dfits.to_fits(x.map_blocks(kill, False, dtype="f8"), path, overwrite=True)
    assert os.path.exists(marker)
    reference = tmp_path / "ref.fits"
    dfits.to_fits(x, reference)
    assert path.read_bytes() == reference.read_bytes()


_LIGHT = """
import sys, numpy, dfits
path, how = sys.argv[1], sys.argv[2]
values = numpy.arange(16, dtype="f4").reshape(4, 4)
if how == "to_fits":
    dfits.to_fits(values, path)
else:
    dfits.append(path, values, header={"EXTNAME": "MORE"})
    dfits.append(path, [values.astype("i2"), values.astype("u2")])
assert "xarray" not in sys.modules, sorted(m for m in sys.modules if m.startswith("xarray"))
"""


@pytest.mark.parametrize("how", ["to_fits", "append"])
def test_writing_an_array_does_not_import_xarray(tmp_path, how):
    values = np.arange(16, dtype="f4").reshape(4, 4)
    path = tmp_path / "light.fits"
    if how == "append":
        fits.PrimaryHDU(np.ones(3, "f8")).writeto(path)
    out = subprocess.run(
        [sys.executable, "-c", _LIGHT, str(path), how], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    with fits.open(path, checksum=True) as hl:
        if how == "to_fits":
            assert len(hl) == 1
            np.testing.assert_array_equal(hl[0].data, values)
            assert hl[0].data.dtype == np.dtype(">f4")
        else:
            assert [h.name for h in hl] == ["PRIMARY", "MORE", "", ""]
            np.testing.assert_array_equal(hl[0].data, np.ones(3))
            for hdu, dtype in zip(hl[1:], ["f4", "i2", "u2"], strict=True):
                np.testing.assert_array_equal(hdu.data, values.astype(dtype))
                assert hdu.data.dtype.newbyteorder("=") == np.dtype(dtype)
    assert all(h.ok for h in dfits.verify_checksum(path))


def test_public_writers_keep_their_signature_and_docstring():
    from dfits import write

    for name in ("to_fits", "append"):
        public, plain = getattr(dfits, name), getattr(write, name)
        assert inspect.signature(public) == inspect.signature(plain)
        assert public.__doc__ == plain.__doc__


def test_the_writer_package_refuses_xarray_objects(tmp_path):
    xr = pytest.importorskip("xarray")
    from dfits import write

    arr = xr.DataArray(np.ones((2, 2)), dims=("y", "x"))
    with pytest.raises(TypeError, match=r"dfits\.to_fits"):
        write.to_fits(arr, tmp_path / "x.fits")
    with pytest.raises(TypeError, match=r"dfits\.to_fits"):
        write.to_fits([np.ones(2), arr], tmp_path / "x.fits")
    assert not list(tmp_path.iterdir())


@pytest.fixture
def mef(tmp_path):
    """A data-less primary, a scaled int16 image with BLANK, a float image, a table."""
    from tests.format import fitsgen

    extra = [("BSCALE", 0.5), ("BZERO", 10.0), ("BLANK", 3), ("BUNIT", "K"), ("EXTNAME", "SCALED")]
    scaled = fitsgen.image_hdu((3, 4), 16, primary=False, extra=extra)
    floats = fits.ImageHDU(np.linspace(0, 1, 10).astype("f4"), name="FLOATS")
    table = fits.BinTableHDU.from_columns([fits.Column("N", "J", array=np.arange(3))])
    rest = io.BytesIO()
    fits.HDUList([fits.PrimaryHDU(), floats, table]).writeto(rest)
    blob = rest.getvalue()
    # the scaled image (astropy would drop its scaling cards) after the data-less primary
    return fitsgen.write(tmp_path / "in.fits", blob[:2880] + scaled + blob[2880:])


def test_dfits_hdus_are_written_with_their_cards_and_physical_values(tmp_path, mef):
    f = dfits.open(mef)
    out = tmp_path / "out.fits"
    dfits.to_fits(list(f)[:3], out, header={"ORIGIN": "test"})
    with fits.open(mef) as src, fits.open(out, checksum=True) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "SCALED", "FLOATS"]
        assert hl[0].data is None
        for name in ("SCALED", "FLOATS"):
            np.testing.assert_array_equal(hl[name].data, src[name].data)
            assert hl[name].header["ORIGIN"] == "test"
        assert np.isnan(hl["SCALED"].data.flat[3])
        assert hl["SCALED"].header["BUNIT"] == "K"
        assert "BSCALE" not in hl["SCALED"].header  # written as the floats it meant
    single = tmp_path / "single.fits"
    dfits.to_fits(f["FLOATS"], single)
    with fits.open(single) as hl:
        assert len(hl) == 1
        np.testing.assert_array_equal(hl[0].data, fits.getdata(mef, "FLOATS"))
    _fitsverify(out)


def test_a_table_hdu_is_refused_before_anything_is_written(tmp_path, mef):
    f = dfits.open(mef)
    with pytest.raises(dfits.UnsupportedError, match="bintable HDU; only images"):
        dfits.to_fits(list(f), tmp_path / "out.fits")
    with pytest.raises(ValueError, match="without data"):
        dfits.to_fits(f[0], tmp_path / "out.fits")
    assert not (tmp_path / "out.fits").exists()
