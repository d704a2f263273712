"""Sky regions on a celestial WCS: units, boxes clipped to the image, apertures, masks."""

from __future__ import annotations

import astropy.units as u
import numpy as np
import pytest
import xarray as xr

from dfits.cube.errors import RegionError
from dfits.cube.regions import aperture_mask, cutout_slices, region_mask, to_degrees, to_pixel
from tests.cube.conftest import celestial_wcs


@pytest.fixture
def w2():
    return celestial_wcs("TAN")


def test_to_degrees_takes_numbers_and_quantities():
    assert to_degrees(1.5) == 1.5
    assert to_degrees(36 * u.arcsec) == pytest.approx(0.01)


def test_to_pixel_inverts_the_wcs(w2):
    ra, dec = w2.pixel_to_world_values(3.0, 2.0)
    assert to_pixel(w2, ra, dec) == pytest.approx((3.0, 2.0))


def test_cutout_is_clipped_and_misses_raise(w2):
    ra, dec = w2.pixel_to_world_values(0.0, 0.0)
    box = cutout_slices(w2, ra, dec, 0.005, 0.005, 6, 8)
    assert (box["x"].start, box["y"].start) == (0, 0)
    assert max(box["x"].stop, box["y"].stop) <= 4
    far_ra, far_dec = w2.pixel_to_world_values(100.0, 100.0)
    with pytest.raises(RegionError, match="misses the image"):
        cutout_slices(w2, far_ra, far_dec, 0.001, 0.001, 6, 8)


def test_aperture_is_a_disc(w2):
    ra, dec = w2.pixel_to_world_values(4.0, 3.0)
    mask = aperture_mask(w2, ra, dec, 1.5e-3, 7, 9)
    assert mask.shape == (7, 9)
    assert mask[3, 4]
    assert mask.sum() == 9  # pixel scale 1e-3 deg: the centre and its 8 neighbours
    assert not aperture_mask(w2, ra, dec, 1e-4, 7, 9)[0].any()


def test_region_mask_accepts_transposed_dataarrays():
    m = np.zeros((3, 4), bool)
    m[1, 2] = True
    assert region_mask(xr.DataArray(m.T, dims=("x", "y")), 3, 4).tolist() == m.tolist()
    with pytest.raises(RegionError, match=r"is not \(y, x\) = \(4, 3\)"):
        region_mask(m, 4, 3)


# -- aperture sums in Jy, against spectral-cube -----------------------------------------------


def _relabel(path, out, **cards):
    """A copy of the FITS file ``path`` with ``cards`` set (None removes one)."""
    from astropy.io import fits

    with fits.open(path) as hdus:
        for key, value in cards.items():
            if value is None:
                hdus[0].header.remove(key, ignore_missing=True)
            else:
                hdus[0].header[key] = value
        hdus.writeto(out, overwrite=True)
    return str(out)


@pytest.fixture(scope="module")
def jy_beam(tmp_path_factory):
    from tests.cube.conftest import spectral_cube_file

    return spectral_cube_file(tmp_path_factory.mktemp("flux"), "freq-ascending-3d")


def _box():
    mask = np.zeros((8, 9), bool)
    mask[2:6, 3:7] = True
    mask[2, 3] = False
    return mask


def _spectral_cube_sum(path, unit=None):
    import warnings

    spectral_cube = pytest.importorskip("spectral_cube")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(path)
        if unit is not None:
            sc = sc.to(unit)
        per_pixel = sc.to(u.Jy / u.pix)
        values = per_pixel.filled_data[:].value[:, _box()]
    return np.nansum(values, axis=1), sc


def test_a_sum_over_an_aperture_of_jy_per_beam_is_jy(jy_beam):
    cube = xr.open_dataarray(jy_beam, engine="dfits")
    got = cube.fits.spectrum(region=_box())
    assert got.attrs["units"] == "Jy"
    want, sc = _spectral_cube_sum(jy_beam)
    np.testing.assert_allclose(got.values, want, rtol=1e-6)  # float32 cube
    # by hand: Σ Jy/beam over the pixels / (beam solid angle / pixel solid angle)
    plain = np.nansum(cube.values[:, _box()].astype(float), axis=1) / sc.pixels_per_beam
    np.testing.assert_allclose(got.values, plain, rtol=1e-9)
    mean = cube.fits.spectrum(region=_box(), how="mean")
    assert mean.attrs["units"] == "Jy / beam"
    np.testing.assert_allclose(mean.values, np.nanmean(cube.values[:, _box()], 1), rtol=1e-6)


def test_kelvin_sums_to_jy_through_the_frequency(jy_beam, tmp_path):
    import warnings

    spectral_cube = pytest.importorskip("spectral_cube")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(jy_beam).to(u.K)
        path = str(tmp_path / "kelvin.fits")
        sc.write(path)
    got = xr.open_dataarray(path, engine="dfits").fits.spectrum(region=_box())
    assert got.attrs["units"] == "Jy"
    want, _ = _spectral_cube_sum(path, u.Jy / u.beam)  # spectral-cube: K → Jy/beam → Jy/pix
    np.testing.assert_allclose(got.values, want, rtol=1e-6)


@pytest.mark.parametrize(("bunit", "factor"), [("Jy/pixel", 1.0), ("mJy/pixel", 1e-3)])
def test_jy_per_pixel_sums_as_it_is(jy_beam, tmp_path, bunit, factor):
    path = _relabel(jy_beam, tmp_path / "pix.fits", BUNIT=bunit)
    cube = xr.open_dataarray(path, engine="dfits")
    got = cube.fits.spectrum(region=_box())
    assert got.attrs["units"] == "Jy"
    want = np.nansum(cube.values[:, _box()].astype(float), axis=1) * factor
    np.testing.assert_allclose(got.values, want, rtol=1e-9)


def test_jy_per_sr_sums_through_the_pixel_solid_angle(jy_beam, tmp_path):
    from astropy.io import fits
    from astropy.wcs import WCS
    from astropy.wcs.utils import proj_plane_pixel_area

    path = _relabel(jy_beam, tmp_path / "sr.fits", BUNIT="MJy/sr")
    cube = xr.open_dataarray(path, engine="dfits")
    sr = (proj_plane_pixel_area(WCS(fits.getheader(path)).celestial) * u.deg**2).to(u.sr)
    want = np.nansum(cube.values[:, _box()].astype(float), axis=1) * 1e6 * sr.value
    np.testing.assert_allclose(cube.fits.spectrum(region=_box()).values, want, rtol=1e-9)


def test_multibeam_cubes_divide_each_channel_by_its_beam(tmp_path):
    from tests.cube.beamfiles import multibeam_file

    path = multibeam_file(tmp_path)
    got = xr.open_dataarray(path, engine="dfits").fits.spectrum(region=_box())
    want, sc = _spectral_cube_sum(path)
    assert len(set(np.round(sc.pixels_per_beam, 6))) > 1
    np.testing.assert_allclose(got.values, want, rtol=1e-6)


def test_a_jy_per_beam_cube_without_a_beam_names_what_is_missing(jy_beam, tmp_path):
    from dfits.errors import DfitsError

    path = _relabel(jy_beam, tmp_path / "nobeam.fits", BMAJ=None, BMIN=None, BPA=None)
    cube = xr.open_dataarray(path, engine="dfits")
    with pytest.raises(DfitsError, match=r"nobeam\.fits.*HDU 0.*BMAJ/BMIN.*BEAMS table"):
        cube.fits.spectrum(region=_box())
    assert cube.fits.spectrum(region=_box(), how="mean").attrs["units"] == "Jy / beam"
