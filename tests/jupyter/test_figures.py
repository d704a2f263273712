"""Quick-look figures: built from decimated or full reads, saved as PNG, not blank."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pytest

import dfits
from dfits.jupyter.figures import decimation, plot_channel_maps, quicklook, touched_bytes
from dfits.section import Section
from tests.jupyter.conftest import CUBE_SHAPE


def _check_png(fig, path):
    fig.savefig(path, dpi=60)
    pixels = matplotlib.image.imread(path)
    assert pixels.std() > 0
    image = fig.axes[0].images[0].get_array()
    assert np.nanstd(np.asarray(image, dtype=float)) > 0


@pytest.mark.parametrize(
    ("shape", "limit"),
    [
        ((64, 256, 256), 2**20),
        ((512, 4096, 4096), 256 * 2**20),
        ((300, 1000, 700), 10 * 2**20),
        ((4000, 4000), 2**20),
        ((2, 1, 2048, 2048), 2**20),
    ],
)
def test_decimation_bound(shape, limit):
    steps = decimation(shape, 4, limit)
    assert touched_bytes(shape, 4, steps) <= limit
    assert steps[-1] == steps[-2]  # square pixels


def test_decimation_keeps_small_cubes_whole():
    assert decimation(CUBE_SHAPE, 4) == (1, 1, 1)


def test_quicklook_decimated(cube_path, tmp_path, monkeypatch):
    reads = []
    original = Section.__getitem__

    def spy(self, index):
        reads.append(index)
        return original(self, index)

    monkeypatch.setattr(Section, "__getitem__", spy)
    hdu = dfits.open(cube_path)[0]
    fig = quicklook(hdu, max_bytes=16 * 1024)
    assert reads
    assert all(isinstance(s, slice) for s in reads[0])
    steps = tuple(s.step for s in reads[0])
    assert steps != (1, 1, 1)
    assert touched_bytes(CUBE_SHAPE, 4, steps) <= 16 * 1024
    assert any("decimated" in t.get_text() for t in fig.texts)
    assert fig.axes[0].__class__.__name__ == "WCSAxes"  # celestial WCS from the header
    _check_png(fig, tmp_path / "ql.png")


def test_quicklook_full_matches_numpy(cube_path, tmp_path):
    hdu = dfits.open(cube_path)[0]
    fig = quicklook(hdu, full=True)
    assert any("full resolution" in t.get_text() for t in fig.texts)
    cube = hdu.section[:, :, :]
    image = np.asarray(fig.axes[0].images[0].get_array(), dtype=float)
    # Σ I·Δν with the demo cube's CDELT3 = 0.5 MHz, as .fits.moment(0)
    np.testing.assert_allclose(image, np.nansum(cube, axis=0) * 0.5e6, rtol=1e-4, atol=1e2)
    spectrum = fig.axes[-1].lines[0].get_ydata()
    np.testing.assert_allclose(spectrum[2:], np.nanmean(cube[2:], axis=(1, 2)), rtol=1e-4)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert any(t.startswith("moment 0: Σ I·Δv [") for t in labels), labels  # the v, issue 45
    _check_png(fig, tmp_path / "full.png")


def test_channel_maps(cube_path, tmp_path):
    hdu = dfits.open(cube_path)[0]
    fig = plot_channel_maps(hdu, 6)
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 6
    _check_png(fig, tmp_path / "maps.png")
    full = plot_channel_maps(hdu, 4, full=True, ncols=4)
    assert len([ax for ax in full.axes if ax.images]) == 4


def test_image_without_wcs(tmp_path):
    from dfits.io.writer import ImageWriter

    path = tmp_path / "img.fits"
    yy, xx = np.mgrid[0:40, 0:50]
    with ImageWriter(path, (40, 50), ">i2", [("BSCALE", 0.5), ("BZERO", 10.0)]) as out:
        out.write(((xx + yy) % 17).astype(np.int16))
    fig = quicklook(dfits.open(path)[0])
    assert fig.axes[0].__class__.__name__ == "Axes"
    _check_png(fig, tmp_path / "img.png")


def test_no_pyplot_figures(cube_path):
    import matplotlib

    quicklook(dfits.open(cube_path)[0])
    assert matplotlib.get_backend() is not None
    pyplot = __import__("sys").modules.get("matplotlib.pyplot")
    assert pyplot is None or not pyplot.get_fignums()


def test_hdu_method_and_package_names_draw_the_same_figures(cube_path):
    import dfits.jupyter

    hdu = dfits.open(cube_path)[0]
    fig = hdu.quicklook(max_bytes=16 * 1024)  # registered by dfits.jupyter at import dfits
    assert fig.__class__.__name__ == "Figure"
    assert dfits.jupyter.quicklook is quicklook  # the function, not the module
    assert dfits.jupyter.plot_channel_maps is plot_channel_maps


def test_decimation_shows_at_most_shown_pixels_per_image_axis():
    from dfits.jupyter.decimate import SHOWN

    assert decimation((8192, 8192), 2) == (1, 1)  # 128 MiB: within the byte budget
    assert decimation((8192, 8192), 2, shown=SHOWN) == (16, 16)
    # the display bound thins the image plane only, never the channels
    assert decimation((16, 2048, 2048), 4, shown=SHOWN) == (1, 4, 4)
    # nor leaves an axis fewer than its 32 kept samples: a long thin image stays whole
    assert decimation((40, 20000), 4, shown=SHOWN) == (1, 1)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "rice"])
def test_quicklook_of_a_large_image_shows_its_decimated_values(tmp_path, compressed):
    # 1100 x 1300 pixels within the byte budget, but more than a figure shows: read ::4
    from astropy.io import fits

    data = np.random.default_rng(1).normal(1000, 30, (1100, 1300)).astype(np.int16)
    path = tmp_path / "big.fits"
    if compressed:
        hdus = [fits.PrimaryHDU(), fits.CompImageHDU(data, compression_type="RICE_1")]
        fits.HDUList(hdus).writeto(path)
    else:
        fits.writeto(path, data)
    with dfits.open(path) as f:
        fig = f[-1].quicklook()
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_array_equal(image, data[::4, ::4])
    assert any("section[::4, ::4]" in t.get_text() for t in fig.texts)
    _check_png(fig, tmp_path / "big.png")
