"""dfits.to_fits of arrays, DataArrays and Datasets: read back equal in astropy and dfits."""

from __future__ import annotations

import os
import shutil
import subprocess

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.io import fits
from astropy.wcs import WCS

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


def test_sequence_is_a_multi_extension_file(tmp_path):
    a, b = np.arange(12.0).reshape(3, 4), np.arange(5, dtype="i4")
    named = xr.DataArray(b, dims="x", name="sci")
    path = tmp_path / "mef.fits"
    dfits.to_fits([a, named], path)
    with fits.open(path, checksum=True) as hl:
        assert len(hl) == 3
        assert hl[0].data is None
        np.testing.assert_array_equal(hl[1].data, a)
        np.testing.assert_array_equal(hl["SCI"].data, b)
    _fitsverify(path)


def test_dataset_one_hdu_per_variable(tmp_path):
    x = xr.DataArray(np.ones((3, 4)), dims=("y", "x"), coords={"x": np.arange(4) * 2.0 + 10})
    ds = xr.Dataset({"flux": x.assign_attrs(units="Jy"), "err": x * 0.1})
    path = tmp_path / "ds.fits"
    dfits.to_fits(ds, path)
    with fits.open(path, checksum=True) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "FLUX", "ERR"]
        assert hl["FLUX"].header["BUNIT"] == "Jy"
        w = WCS(hl["FLUX"].header)
        np.testing.assert_allclose(w.pixel_to_world_values(np.arange(4), 0)[0], x["x"])
    _fitsverify(path)


@pytest.fixture
def cube(tmp_path):
    rng = np.random.default_rng(3)
    values = rng.standard_normal((6, 20, 30)).astype("f4")
    header = fits.Header()
    for k, v in {
        "CTYPE1": "RA---SIN", "CTYPE2": "DEC--SIN", "CTYPE3": "FREQ",
        "CRVAL1": 150.0, "CRVAL2": 2.0, "CRVAL3": 1e11, "CDELT1": -1e-3, "CDELT2": 1e-3,
        "CDELT3": 1e6, "CRPIX1": 15.0, "CRPIX2": 10.0, "CRPIX3": 1.0, "CUNIT3": "Hz",
        "BUNIT": "Jy/beam", "OBJECT": "NGC 1", "BMAJ": 1e-3, "HISTORY": "made by a test",
    }.items():  # fmt: skip
        header[k] = v
    path = tmp_path / "cube.fits"
    fits.PrimaryHDU(values, header).writeto(path)
    return path, values


def test_dataarray_from_dfits_keeps_header_and_sliced_wcs(tmp_path, cube):
    path, values = cube
    arr = xr.open_dataarray(path, engine="dfits", chunks={})
    cut = arr.isel(y=slice(5, 15), x=slice(3, 23), freq=slice(2, 5))
    out = tmp_path / "cut.fits"
    cut.fits.to_fits(out)
    with fits.open(out, checksum=True) as hl:
        h = hl[0].header
        np.testing.assert_array_equal(hl[0].data, values[2:5, 5:15, 3:23])
        assert (h["OBJECT"], h["BUNIT"], h["BMAJ"]) == ("NGC 1", "Jy/beam", 1e-3)
        assert "made by a test" in str(h["HISTORY"])
        got = WCS(h).pixel_to_world_values(0, 0, 0)
        want = WCS(fits.getheader(path)).pixel_to_world_values(3, 5, 2)
        np.testing.assert_allclose(got, want)
    back = xr.open_dataarray(out, engine="dfits")
    np.testing.assert_allclose(back["freq"], cut["freq"])
    _fitsverify(out)


def test_transposed_dataarray_goes_back_to_fits_order(tmp_path, cube):
    path, values = cube
    arr = xr.open_dataarray(path, engine="dfits", chunks={}).transpose("x", "y", "freq")
    out = tmp_path / "t.fits"
    dfits.to_fits(arr, out)
    np.testing.assert_array_equal(fits.getdata(out), values)


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


def test_a_moment_map_is_written_with_its_own_unit_and_celestial_wcs(tmp_path):
    from .conftest import spectral_cube_file

    cube = xr.open_dataarray(spectral_cube_file(tmp_path, "freq-descending-4d"), engine="dfits")
    velocity = cube.isel(stokes=0).fits.with_spectral_unit("km/s", velocity_convention="radio")
    mom0 = velocity.fits.moment(0)
    mom0.fits.to_fits(tmp_path / "mom0.fits")
    header = fits.getheader(tmp_path / "mom0.fits")
    assert header["BUNIT"] == mom0.attrs["units"] == "Jy km / (beam s)"  # not the cube's
    assert header["BMAJ"] == 3.0e-3  # the rest of the header is kept
    assert WCS(header).naxis == 2
    assert WCS(header).has_celestial
    np.testing.assert_allclose(fits.getdata(tmp_path / "mom0.fits"), mom0.values, rtol=1e-6)


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


def _spectral_results(cube):
    """The accessor's cube results, each with what its header must say."""
    import astropy.units as u
    from radio_beam import Beam

    velocity = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
    values = velocity["vrad"].values
    slab = velocity.fits.spectral_slab(values[3] * u.km / u.s, values[9] * u.km / u.s)
    b = cube.fits.beam
    wider = Beam(major=1.5 * b.major, minor=1.5 * b.minor, pa=b.pa)
    return {
        "velocity": velocity,
        "slab": slab,
        "kelvin": cube.fits.to_unit("K"),
        "convolved": velocity.fits.convolve_to(wider),
        "masked": velocity.fits.with_mask(velocity > 1.0),
    }


@pytest.mark.parametrize("name", ["velocity", "slab", "kelvin", "convolved", "masked"])
def test_spectral_results_are_written_with_a_header_that_describes_them(tmp_path, name):
    import astropy.units as u

    from .conftest import spectral_cube_file

    path = spectral_cube_file(tmp_path, "freq-descending-4d")
    cube = xr.open_dataarray(path, engine="dfits").isel(stokes=0)
    got = _spectral_results(cube)[name]
    out = got.fits.to_fits(tmp_path / f"{name}.fits")
    header = fits.getheader(out)
    data = fits.getdata(out)
    np.testing.assert_allclose(data.squeeze(), got.values, rtol=1e-6, equal_nan=True)
    assert u.Unit(header["BUNIT"]) == u.Unit(got.attrs["units"])
    w = WCS(header)
    assert w.has_celestial
    assert w.has_spectral
    dim = got.fits.spectral_dim
    spec = w.sub([w.wcs.spec + 1])
    world = spec.pixel_to_world_values(np.arange(got.sizes[dim])) * u.Unit(spec.wcs.cunit[0])
    want = got[dim].values
    np.testing.assert_allclose(world.to_value(got[dim].attrs["units"]), want, atol=1e-9)
    beam = got.fits.beam
    assert header["BMAJ"] == pytest.approx(beam.major.to_value(u.deg))
    assert header["BMIN"] == pytest.approx(beam.minor.to_value(u.deg))
