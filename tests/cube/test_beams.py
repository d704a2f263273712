"""Beams (BMAJ/BMIN/BPA, CASA BEAMS tables) and Jy/beam ↔ K against spectral-cube 0.7."""

from __future__ import annotations

import warnings

import astropy.units as u
import numpy as np
import pytest
import xarray as xr
from astropy.io import fits

from dfits.cube.beams import cube_beams, to_unit
from dfits.cube.errors import BeamError

from .beamfiles import multibeam_file
from .conftest import SPECTRAL_CUBES, spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")
radio_beam = pytest.importorskip("radio_beam", reason="beams are radio_beam objects")


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-cube's Stokes and beam chatter
        return spectral_cube.SpectralCube.read(path)


def _open(path):
    da = xr.open_dataarray(path, engine="dfits")
    return da.isel(stokes=0) if "stokes" in da.dims else da


@pytest.mark.parametrize("kind", sorted(SPECTRAL_CUBES))
def test_header_beam_and_kelvin_match(tmp_path, kind):
    path = spectral_cube_file(tmp_path, kind)
    da, sc = _open(path), _read(path)
    assert da.fits.beam == sc.beam
    assert len(da.fits.beams) == da.sizes[da.fits.spectral_dim]
    assert (da.fits.beams.major == sc.beam.major).all()
    kelvin = da.fits.to_unit("K")
    assert kelvin.chunks is not None  # lazy
    assert kelvin.attrs["units"] == "K"
    want = sc.to(u.K)
    np.testing.assert_allclose(
        kelvin.values, want.unmasked_data[:].value, rtol=2e-7, equal_nan=True
    )
    # per channel: the factor follows each channel's frequency
    ratio = np.divide(kelvin.values, da.values, where=da.values != 0, out=np.full(da.shape, np.nan))
    factor = np.nanmedian(ratio, axis=(1, 2))
    assert np.ptp(factor) > 0
    back = kelvin.fits.to_unit("Jy/beam")
    np.testing.assert_allclose(back.values, da.values, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(
        da.fits.to_unit("mJy/beam").values, 1e3 * da.values, rtol=1e-6, equal_nan=True
    )


def test_multibeam_table_matches_spectral_cube(tmp_path):
    path = multibeam_file(tmp_path)
    da, sc = _open(path), _read(path)
    assert type(sc).__name__ == "VaryingResolutionSpectralCube"
    beams = da.fits.beams
    assert isinstance(beams, radio_beam.Beams)
    for ours, theirs in (
        (beams.major, sc.beams.major),
        (beams.minor, sc.beams.minor),
        (beams.pa, sc.beams.pa),
    ):
        np.testing.assert_allclose(ours.to_value(u.deg), theirs.to_value(u.deg), rtol=1e-7)
    with pytest.raises(BeamError, match="one beam per channel"):
        _ = da.fits.beam
    kelvin = da.fits.to_unit("K").values
    np.testing.assert_allclose(kelvin, sc.to(u.K).unmasked_data[:].value, rtol=2e-7)
    # a slab keeps its channels' beams; a velocity axis reads the same table
    slab = da.isel(freq=slice(3, 6))
    np.testing.assert_array_equal(slab.fits.beams.major, beams.major[3:6])
    velo = da.fits.with_spectral_unit("km/s", velocity_convention="radio")
    np.testing.assert_array_equal(velo.fits.beams.major, beams.major)
    np.testing.assert_allclose(velo.fits.to_unit("K").values, kelvin, rtol=1e-6)


def test_multibeam_stokes_planes_have_their_own_beams(tmp_path):
    path = multibeam_file(tmp_path, npol=2)
    da = xr.open_dataarray(path, engine="dfits")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stokes = spectral_cube.StokesSpectralCube.read(path)
    for plane, name in ((0, "I"), (1, "Q")):
        got = da.isel(stokes=plane).fits.beams.major
        np.testing.assert_allclose(got, stokes[name].beams.major, rtol=1e-7)
    with pytest.raises(BeamError, match="one Stokes plane"):
        _ = da.fits.beams


def test_no_beam_and_bad_beams(tmp_path):
    path = spectral_cube_file(tmp_path, "freq-ascending-3d", beam=False)
    da = _open(path)
    assert da.fits.beam is None
    assert da.fits.beams is None
    with pytest.raises(BeamError, match=r"freq-ascending-3d\.fits', HDU 0.*needs a beam"):
        da.fits.to_unit("K")
    with pytest.raises(BeamError, match="units"):
        da.fits.to_unit("not a unit")
    bad = tmp_path / "bad.fits"
    with fits.open(path) as hdus:
        hdus[0].header["BMAJ"], hdus[0].header["BMIN"] = -1.0, 1e-3
        hdus.writeto(bad)
    with pytest.raises(BeamError, match=r"bad\.fits.*BMAJ=-1\.0"):
        cube_beams(_open(bad))
    # a header without a file (in memory) still has its beam
    filed = _open(spectral_cube_file(tmp_path, "vrad-3d"))
    mem = filed.load().copy()
    mem.encoding = {}
    assert cube_beams(mem).major.to_value(u.deg) == pytest.approx(3e-3)
    sr = _read(spectral_cube_file(tmp_path, "vrad-3d")).to(u.Jy / u.sr).unmasked_data[:].value
    np.testing.assert_allclose(to_unit(mem, "Jy/sr").values, sr, rtol=2e-7)


def test_beam_table_missing_a_channel(tmp_path):
    path = multibeam_file(tmp_path)
    with fits.open(path) as hdus:
        hdus[1] = fits.BinTableHDU(hdus[1].data[:-1], hdus[1].header)
        hdus.writeto(tmp_path / "short.fits")
    da = _open(tmp_path / "short.fits")
    with pytest.raises(BeamError, match=r"BEAMS table: no row for channel\(s\) \[12\]"):
        _ = da.fits.beams
    np.testing.assert_array_equal(da.isel(freq=slice(0, 12)).fits.beams.major.size, 12)
