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
