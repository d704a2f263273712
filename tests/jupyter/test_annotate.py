"""Quick-look annotations: spectral axis from the WCS, moment-0 units, blank NaN, the beam."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.io.writer import ImageWriter
from dfits.jupyter.annotate import channel_width, spectral_axis
from dfits.jupyter.figures import plot_channel_maps, quicklook
from tests.conftest import CORPUS

WFPC = CORPUS / "fitsrs" / "HST_WFPC_II.fits"

WCS_CARDS = [
    ("CTYPE1", "RA---SIN"), ("CRVAL1", 83.8), ("CDELT1", -1.0e-4), ("CRPIX1", 9.0),
    ("CUNIT1", "deg"), ("CTYPE2", "DEC--SIN"), ("CRVAL2", -5.4), ("CDELT2", 1.0e-4),
    ("CRPIX2", 7.0), ("CUNIT2", "deg"), ("CTYPE3", "FREQ"), ("CRVAL3", 230.5e9),
    ("CDELT3", -0.5e6), ("CRPIX3", 1.0), ("CUNIT3", "Hz"), ("BUNIT", "Jy/beam"),
    ("RESTFRQ", 230.5e9),
]  # fmt: skip


def _write(path, data, cards):
    with ImageWriter(path, data.shape, data.dtype.newbyteorder(">"), cards) as out:
        out.write(data)
    return path


def _colorbar_label(fig):
    return [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]


def _image(fig):
    return next(ax for ax in fig.axes if ax.images).images[0].get_array()


@pytest.fixture
def nan_cube(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.normal(1.0, 0.2, (6, 12, 16)).astype(np.float32)
    data[:, 3, 4] = np.nan  # no finite channel: blank in moment 0
    data[:2, 5, 6] = np.nan  # partly flagged: the finite channels count
    data[0, 0, 0] = 1e30  # one wild value must not set the stretch of everything
    data[0, 0, 0] = np.nan
    return _write(tmp_path / "nan.fits", data, WCS_CARDS)


@pytest.mark.parametrize("full", [False, True])
def test_moment0_integrates_like_astropy_with_nan_blank(nan_cube, full):
    fig = quicklook(dfits.open(nan_cube)[0], full=full)
    image = _image(fig)
    data = fits.getdata(nan_cube).astype(np.float64)
    want = np.nansum(data, axis=0) * 0.5e6  # Σ I·|Δν| in Hz, as .fits.moment(0)
    want[~np.isfinite(data).any(axis=0)] = np.nan
    assert np.ma.is_masked(image)
    assert image.mask[3, 4]
    assert image.mask.sum() == 1
    np.testing.assert_allclose(image.filled(np.nan), want, rtol=1e-5)
    assert "Jy/beam Hz" in _colorbar_label(fig)[0]
    lo, hi = fig.axes[0].images[0].get_clim()
    assert np.isfinite([lo, hi]).all()
    assert lo > 0


def test_blank_integers_are_masked_like_astropy_nan(tmp_path):
    data = np.arange(2 * 10 * 12, dtype=np.int16).reshape(2, 10, 12)
    data[:, 2, 3] = -999
    path = _write(tmp_path / "blank.fits", data, [*WCS_CARDS, ("BLANK", -999)])
    image = _image(quicklook(dfits.open(path)[0]))
    want = fits.getdata(path).astype(np.float64)  # astropy: BLANK → NaN
    assert np.isnan(want[:, 2, 3]).all()
    assert image.mask[2, 3]
    assert image.mask.sum() == 1
    total = np.nansum(want, 0) * 0.5e6
    total[2, 3] = np.nan
    np.testing.assert_allclose(image.filled(np.nan), total, rtol=1e-6)


def test_channel_maps_blank_nan(nan_cube):
    fig = plot_channel_maps(dfits.open(nan_cube)[0], 3)
    for ax in (ax for ax in fig.axes if ax.images):
        assert ax.images[0].get_array().mask[3, 4]
    assert "Jy/beam" in _colorbar_label(fig)[0]


def test_hst_chips_are_no_channels():
    if not WFPC.exists():
        pytest.skip(f"corpus file {WFPC} missing")
    hdu = dfits.open(WFPC)[0]
    assert spectral_axis(hdu.header, 3) is None
    fig = quicklook(hdu)
    assert [ax for ax in fig.axes if ax.lines] == []  # no "spectrum"
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 1
    assert "plane 0" in images[0].get_title()
    want = fits.getdata(WFPC)[0].astype(np.float64)
    np.testing.assert_allclose(images[0].images[0].get_array().filled(np.nan), want)
    with pytest.raises(ValueError, match="spectral axis"):
        plot_channel_maps(hdu)


def test_spectral_axis_found_from_the_wcs(tmp_path):
    stokes_last = [*WCS_CARDS, ("CTYPE4", "STOKES"), ("CRVAL4", 1.0), ("CDELT4", 1.0)]
    path = _write(tmp_path / "s.fits", np.ones((1, 4, 5, 6), np.float32), stokes_last)
    hdu = dfits.open(path)[0]
    assert spectral_axis(hdu.header, 4) == 1
    assert channel_width(hdu.header, 3) == (0.5e6, "Hz")
    fig = quicklook(hdu)
    assert len([ax for ax in fig.axes if ax.lines]) == 1


def _beam_cube(tmp_path):
    data = np.ones((4, 14, 18), np.float32)
    beam = [("BMAJ", 6e-4), ("BMIN", 3e-4), ("BPA", 30.0)]
    return _write(tmp_path / "beam.fits", data, [*WCS_CARDS, *beam])


def test_beam_ellipse_drawn(tmp_path):
    from matplotlib.patches import Ellipse

    fig = quicklook(dfits.open(_beam_cube(tmp_path))[0])
    (beam,) = [p for p in fig.axes[0].patches if isinstance(p, Ellipse)]
    assert (beam.width, beam.height, beam.angle) == pytest.approx((3.0, 6.0, 30.0))
    fig.savefig(tmp_path / "beam.png")
    plain = quicklook(dfits.open(_write(tmp_path / "nb.fits", np.ones((2, 8, 8)), WCS_CARDS))[0])
    assert not [p for p in plain.axes[0].patches if isinstance(p, Ellipse)]


def test_xarray_quicklooks_keep_units_and_beam(tmp_path):
    import xarray as xr
    from matplotlib.patches import Ellipse

    arr = xr.open_dataarray(_beam_cube(tmp_path), engine="dfits")
    fig = arr.fits.quicklook()
    assert "Jy/beam Hz" in _colorbar_label(fig)[0]
    assert any(isinstance(p, Ellipse) for p in fig.axes[0].patches)
    assert "mean [Jy/beam]" in [ax.get_ylabel() for ax in fig.axes]
    maps = arr.fits.plot_channel_maps(2, unit="km/s", velocity_convention="radio")
    assert _colorbar_label(maps) == ["mean [Jy/beam]"]
    assert all(
        "km / s" in ax.get_title() or "km/s" in ax.get_title() for ax in maps.axes if ax.images
    )
    np.testing.assert_allclose(_image(fig).filled(np.nan), arr.fits.moment(0).values, rtol=1e-6)


@pytest.mark.parametrize("full", [False, True])
def test_xarray_quicklook_moment0_in_km_s(tmp_path, full):
    import xarray as xr

    arr = xr.open_dataarray(_beam_cube(tmp_path), engine="dfits")
    fig = arr.fits.quicklook(full=full, unit="km/s", velocity_convention="radio")
    want = arr.fits.with_spectral_unit("km/s", "radio").fits.moment(0)
    assert "Jy/beam km / s" in _colorbar_label(fig)[0] or "Jy/beam km/s" in _colorbar_label(fig)[0]
    np.testing.assert_allclose(_image(fig).filled(np.nan), want.values, rtol=1e-6)
    spectrum_axes = [ax for ax in fig.axes if ax.lines]
    assert "km" in spectrum_axes[0].get_xlabel()
