"""Quick-look axes from the WCS: a spectral axis anywhere, Stokes between, bad input named."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.errors import DataError, DfitsError, SpectralError, UnsupportedError
from dfits.io.writer import ImageWriter
from dfits.jupyter.axes import Axes, view_axes
from dfits.jupyter.figures import plot_channel_maps, quicklook

RA = [("CTYPE{}", "RA---SIN"), ("CRVAL{}", 83.8), ("CDELT{}", -1.0e-4), ("CRPIX{}", 5.0),
      ("CUNIT{}", "deg")]  # fmt: skip
DEC = [("CTYPE{}", "DEC--SIN"), ("CRVAL{}", -5.4), ("CDELT{}", 1.0e-4), ("CRPIX{}", 4.0),
       ("CUNIT{}", "deg")]  # fmt: skip
FREQ = [("CTYPE{}", "FREQ"), ("CRVAL{}", 230.5e9), ("CDELT{}", -0.5e6), ("CRPIX{}", 1.0),
        ("CUNIT{}", "Hz")]  # fmt: skip
STOKES = [("CTYPE{}", "STOKES"), ("CRVAL{}", 1.0), ("CDELT{}", 1.0), ("CRPIX{}", 1.0)]
WIDTH = 0.5e6  # |CDELT| of FREQ: moment 0 is Σ I·|Δν| in Hz, as .fits.moment(0)


def _cards(*axes):
    """WCS cards for FITS axes 1, 2, ... (fastest first) from the templates above."""
    out = [(k.format(i), v) for i, axis in enumerate(axes, 1) for k, v in axis]
    return [*out, ("BUNIT", "Jy/beam"), ("RESTFRQ", 230.5e9)]


def _write(path, data, cards):
    with ImageWriter(path, data.shape, data.dtype.newbyteorder(">"), cards) as out:
        out.write(data)
    return path


def _data(shape, seed=0):
    data = np.random.default_rng(seed).normal(1.0, 0.3, shape).astype(np.float32)
    data.flat[::7] = np.nan  # scattered flags: moment 0 counts the finite channels
    return data


def _image(fig):
    return next(ax for ax in fig.axes if ax.images).images[0].get_array().filled(np.nan)


def _spectrum(fig):
    (ax,) = [ax for ax in fig.axes if ax.lines]
    return ax.lines[0].get_ydata()


def _moment0(cube, axis):
    """Σ I·|Δν| along ``axis`` of astropy's data, NaN where no channel is finite."""
    cube = cube.astype(np.float64)
    with np.errstate(invalid="ignore"):
        image = np.nansum(cube, axis=axis) * WIDTH
    image[~np.isfinite(cube).any(axis=axis)] = np.nan
    return image


# numpy shape, FITS axes (fastest first), the numpy spectral axis and image plane
LAYOUTS = {
    "freq-first": ((6, 7, 5), (FREQ, RA, DEC), 2, (0, 1)),
    "freq-stokes-4d": ((5, 2, 6, 7), (RA, DEC, STOKES, FREQ), 0, (2, 3)),
    "stokes-freq-4d": ((2, 5, 6, 7), (RA, DEC, FREQ, STOKES), 1, (2, 3)),
    "freq-middle": ((6, 5, 7), (RA, FREQ, DEC), 1, (0, 2)),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_view_axes_from_the_wcs(tmp_path, name):
    shape, axes, spec, plane = LAYOUTS[name]
    path = _write(tmp_path / "c.fits", _data(shape), _cards(*axes))
    view = view_axes(dfits.open(path)[0].header, shape)
    assert (view.spectral, view.plane) == (spec, plane)
    assert view.tail == (shape[spec], shape[plane[0]], shape[plane[1]])


def test_axes_index_and_arrange_round_trip():
    axes = Axes((5, 2, 6, 7), 0, (2, 3))
    assert axes.fixed == (1,)
    assert axes.index((2, 1, 3)) == (
        slice(None, None, 2),
        0,
        slice(None, None, 1),
        slice(None, None, 3),
    )
    assert axes.file_steps((2, 1, 3)) == (2, 2, 1, 3)
    freq_last = Axes((6, 7, 5), 2, (0, 1))
    cube = np.arange(6 * 7 * 5).reshape(6, 7, 5)
    np.testing.assert_array_equal(freq_last.arrange(cube), np.moveaxis(cube, 2, 0))
    assert freq_last.fits_axis(2) == 1


def test_images_and_position_velocity_planes_have_no_spectrum():
    header = fits.Header([(k.format(i), v) for i, a in enumerate((RA, FREQ), 1) for k, v in a])
    hdr = dfits.Header(header.tostring().encode("ascii"))
    assert view_axes(hdr, (5, 6)) == Axes((5, 6), None, (0, 1))  # a p-v diagram: an image
    plain = dfits.Header(fits.Header().tostring().encode("ascii"))
    assert view_axes(plain, (3, 4, 5)) == Axes((3, 4, 5), None, (1, 2))


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("name", LAYOUTS)
def test_quicklook_integrates_the_spectral_axis_wherever_it_is(tmp_path, name, full):
    shape, axes, spec, plane = LAYOUTS[name]
    path = _write(tmp_path / "c.fits", _data(shape), _cards(*axes))
    fig = quicklook(dfits.open(path)[0], full=full)
    data = fits.getdata(path)  # astropy's array: other axes at their first plane
    index = tuple(slice(None) if a in (spec, *plane) else 0 for a in range(len(shape)))
    kept = sorted((spec, *plane))
    cube = np.moveaxis(data[index], [kept.index(a) for a in (spec, *plane)], (0, 1, 2))
    np.testing.assert_allclose(_image(fig), _moment0(cube, 0), rtol=1e-5)
    want = np.nanmean(cube.astype(np.float64), axis=(1, 2))
    np.testing.assert_allclose(_spectrum(fig), want, rtol=1e-5)
    image_axes = next(ax for ax in fig.axes if ax.images)
    assert hasattr(image_axes, "coords")  # a celestial WCSAxes: the plane is RA/Dec
    assert "FREQ" in next(ax for ax in fig.axes if ax.lines).get_xlabel()


def test_decimated_freq_first_reads_strided_channels(tmp_path):
    shape = (40, 48, 64)  # numpy (dec, ra, freq): the spectrum is the fastest axis
    path = _write(tmp_path / "c.fits", _data(shape, 2), _cards(FREQ, RA, DEC))
    hdu = dfits.open(path)[0]
    fig = quicklook(hdu, max_bytes=64 * 1024)
    note = fig.texts[-1].get_text()
    assert note.startswith("decimated ")
    steps = tuple(int(s) for s in note.split()[1].split("×"))
    cube = np.moveaxis(fits.getdata(path), 2, 0)[:: steps[0], :: steps[1], :: steps[2]]
    np.testing.assert_allclose(_image(fig), _moment0(cube, 0) * steps[0], rtol=1e-5)


def test_channel_maps_of_a_freq_first_cube(tmp_path):
    shape = (6, 7, 8)
    path = _write(tmp_path / "c.fits", _data(shape, 4), _cards(FREQ, RA, DEC))
    cube = np.moveaxis(fits.getdata(path).astype(np.float64), 2, 0)
    for full in (False, True):
        fig = plot_channel_maps(dfits.open(path)[0], 4, full=full)
        panels = [ax.images[0].get_array().filled(np.nan) for ax in fig.axes if ax.images]
        groups = np.array_split(np.arange(8), 4)
        with np.errstate(invalid="ignore"):
            want = [np.nanmean(cube[g[0] : g[-1] + 1], axis=0) for g in groups]
        np.testing.assert_allclose(np.stack(panels), np.stack(want), rtol=1e-5)


def test_xarray_quicklook_of_a_freq_first_cube(tmp_path):
    import xarray as xr

    path = _write(tmp_path / "c.fits", _data((6, 7, 5)), _cards(FREQ, RA, DEC))
    arr = xr.open_dataarray(path, engine="dfits")
    fig = arr.fits.quicklook()
    np.testing.assert_allclose(_image(fig), arr.fits.moment(0).values, rtol=1e-5)


def test_bad_input_raises_dfits_errors_naming_file_and_hdu(tmp_path):
    table = tmp_path / "t.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.BinTableHDU.from_columns(
        [fits.Column("A", "E", array=np.arange(3.0))], name="EVENTS")]).writeto(table)  # fmt: skip
    with pytest.raises(UnsupportedError, match=r"t\.fits', HDU 1 \('EVENTS'\).*no image data"):
        quicklook(dfits.open(table)[1])
    line = _write(tmp_path / "line.fits", np.ones(8, np.float32), [])
    with pytest.raises(DataError, match=r"line\.fits', HDU 0.*2 or more axes.*\(8,\)"):
        quicklook(dfits.open(line)[0])
    image = _write(tmp_path / "img.fits", np.ones((4, 5), np.float32), _cards(RA, DEC))
    with pytest.raises(SpectralError, match=r"img\.fits', HDU 0.*spectral axis.*has none"):
        plot_channel_maps(dfits.open(image)[0])
    cube = _write(tmp_path / "cube.fits", _data((4, 5, 6)), _cards(RA, DEC, FREQ))
    with pytest.raises(DataError, match=r"cube\.fits.*n >= 1.*0"):
        plot_channel_maps(dfits.open(cube)[0], 0)
    with pytest.raises(DataError, match=r"cube\.fits.*max_bytes.*-1"):
        quicklook(dfits.open(cube)[0], max_bytes=-1)
    for err in (UnsupportedError, DataError, SpectralError):
        assert issubclass(err, DfitsError)
