"""Sub-cubes and spectra from ``regions`` shapes and SkyCoords against spectral-cube 0.7."""

from __future__ import annotations

import warnings

import astropy.units as u
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from astropy.coordinates import Angle, SkyCoord

from dfits.cube.errors import RegionError, SpectralError

from .conftest import spectral_cube_file

spectral_cube = pytest.importorskip("spectral_cube", reason="spectral-cube is the test oracle")
regions = pytest.importorskip("regions")

CENTRE = SkyCoord(150.0003 * u.deg, 2.0002 * u.deg, frame="icrs")


def shapes() -> dict[str, object]:
    corners = SkyCoord([149.998, 150.0025, 150.001], [1.9995, 2.0, 2.004], unit="deg")
    return {
        "circle": regions.CircleSkyRegion(CENTRE, 2.6e-3 * u.deg),
        "rectangle": regions.RectangleSkyRegion(
            CENTRE, 5e-3 * u.deg, 3e-3 * u.deg, angle=Angle(30, "deg")
        ),
        "polygon": regions.PolygonSkyRegion(corners),
        "ellipse-pixels": regions.EllipsePixelRegion(
            regions.PixCoord(4.2, 3.1), width=5.0, height=3.0, angle=Angle(-15, "deg")
        ),
    }


@pytest.fixture(scope="module", params=["freq-descending-4d", "vopt-3d-blank"])
def pair(request, tmp_path_factory):
    """(DataArray with stokes dropped, spectral-cube) of one generated cube."""
    path = spectral_cube_file(tmp_path_factory.mktemp("shapes"), request.param)
    cube = xr.open_dataarray(path, engine="dfits")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-cube's Stokes and beam chatter
        sc = spectral_cube.SpectralCube.read(path)
    return (cube.isel(stokes=0) if "stokes" in cube.dims else cube), sc


def oracle(sc, region):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sc.subcube_from_regions(region if isinstance(region, list) else [region])


@pytest.mark.parametrize("name", list(shapes()))
def test_subcube_from_region_matches_spectral_cube(pair, name):
    cube, sc = pair
    region = shapes()[name]
    got = cube.fits.subcube_from_region(region)
    assert isinstance(got.data, da.Array)  # lazy: a box isel and a where
    want = oracle(sc, region)
    values = got.transpose(cube.fits.spectral_dim, "y", "x").values
    np.testing.assert_allclose(values, want.filled_data[:].value, rtol=1e-6, equal_nan=True)
    # the box keeps its WCS: the sky position of its pixels is spectral-cube's
    np.testing.assert_allclose(
        got.fits.wcs.celestial.wcs.crpix, want.wcs.celestial.wcs.crpix, atol=1e-9
    )
    spectrum = cube.fits.spectrum(region=region)
    assert spectrum.attrs["units"] == "Jy"  # Σ Jy/beam over the beam area in pixels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # spectral-cube: "requires loading the entire cube"
        total = want.sum(axis=(1, 2)).value / sc.pixels_per_beam
    np.testing.assert_allclose(spectrum.values, total, rtol=1e-5)


def test_a_list_of_shapes_is_their_union(pair):
    cube, sc = pair
    parts = [shapes()["circle"], shapes()["ellipse-pixels"]]
    got = cube.fits.subcube_from_region(parts)
    want = oracle(sc, parts)
    values = got.transpose(cube.fits.spectral_dim, "y", "x").values
    np.testing.assert_allclose(values, want.filled_data[:].value, rtol=1e-6, equal_nan=True)
    moment = got.fits.moment(0)  # the .fits accessor works on the masked box
    assert moment.dims == ("y", "x")
    assert moment.shape == values.shape[1:]


def test_spectrum_at_a_skycoord_in_any_frame(pair):
    cube, sc = pair
    galactic = CENTRE.transform_to("galactic")
    got = cube.fits.spectrum_at(galactic)
    iy, ix = sc.wcs.celestial.world_to_array_index(CENTRE)
    np.testing.assert_allclose(got.values, sc[:, int(iy), int(ix)].value, rtol=1e-6)
    same = cube.fits.spectrum_at((CENTRE.ra, CENTRE.dec.deg))
    np.testing.assert_array_equal(same.values, got.values)
    aperture = cube.fits.spectrum(galactic, radius=2.6e-3 * u.deg)
    by_degrees = cube.fits.spectrum(CENTRE.ra.deg, CENTRE.dec.deg, 2.6e-3)
    np.testing.assert_allclose(aperture.values, by_degrees.values, rtol=1e-6)
    assert aperture.attrs["npix"] == by_degrees.attrs["npix"] > 1


def test_regions_outside_the_image_and_bad_shapes_raise(pair):
    cube, _ = pair
    far = SkyCoord(151.0 * u.deg, 2.0 * u.deg)
    with pytest.raises(RegionError, match="contains no pixel centre"):
        cube.fits.subcube_from_region(regions.CircleSkyRegion(far, 1e-3 * u.deg))
    with pytest.raises(RegionError, match="outside the image"):
        cube.fits.spectrum_at(far)
    with pytest.raises(RegionError, match="one sky position"):
        cube.fits.spectrum_at(SkyCoord([150, 150], [2, 2], unit="deg"))
    with pytest.raises(RegionError, match="not a regions shape"):
        cube.fits.subcube_from_region([shapes()["circle"], "circle"])


def test_a_spectral_range_in_the_meta_makes_a_slab(tmp_path):
    path = spectral_cube_file(tmp_path, "freq-ascending-3d")
    cube = xr.open_dataarray(path, engine="dfits")
    cube = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = spectral_cube.SpectralCube.read(path)
        sc = sc.with_spectral_unit(u.km / u.s, velocity_convention="radio")
    meta = regions.RegionMeta({"range": [-1.5 * u.km / u.s, 2000 * u.m / u.s]})
    region = regions.CircleSkyRegion(CENTRE, 2.6e-3 * u.deg, meta=meta)
    got = cube.fits.subcube_from_region(region)
    want = oracle(sc, region)
    assert 1 < got.sizes["vrad"] < cube.sizes["vrad"]
    np.testing.assert_allclose(got["vrad"].values, want.spectral_axis.to_value("km/s"), atol=1e-9)
    np.testing.assert_allclose(got.values, want.filled_data[:].value, rtol=1e-6, equal_nan=True)
    bad = regions.CircleSkyRegion(
        CENTRE, 2.6e-3 * u.deg, meta=regions.RegionMeta({"range": [1 * u.GHz, 1 * u.kg]})
    )
    with pytest.raises(SpectralError, match=r"freq-ascending-3d\.fits.*slab bound 1.0 kg"):
        cube.fits.subcube_from_region(bad)
    mixed = [region, regions.CircleSkyRegion(CENTRE, 1e-3 * u.deg, meta=bad.meta)]
    with pytest.raises(RegionError, match="spectral ranges"):
        cube.fits.subcube_from_region(mixed)  # km/s and GHz lows cannot be ordered
    other = regions.RegionMeta({"range": [-1 * u.km / u.s, 1 * u.km / u.s], "veltype": "OPTICAL"})
    with pytest.raises(RegionError, match="veltype"):
        cube.fits.subcube_from_region(regions.CircleSkyRegion(CENTRE, 1e-3 * u.deg, meta=other))


def test_moments_of_a_subcube_see_its_mask(pair):
    """The subcube's values are new (NaN outside the region): the accessor must not read the
    file again through the encoding it was opened with (it once did: the mask was lost)."""
    cube, sc = pair
    region = shapes()["circle"]
    got = cube.fits.subcube_from_region(region)
    assert "dfits_source" not in got.encoding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = oracle(sc, region).moment0().value
    m0 = got.fits.moment(0).values
    valid = np.isfinite(want)
    np.testing.assert_allclose(np.abs(m0[valid]), np.abs(want[valid]), rtol=1e-5)
    assert (m0[~valid] == 0).all()  # no valid channel: 0 here (nansum), NaN in spectral-cube
