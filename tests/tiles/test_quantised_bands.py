"""Value bands of quantised float images (``(x > t).sum()``, ``nansum(where(x > t, x, nan))``,
masked moments and extremes) run on the tiles' integers: no float chunk is written, and the
values are the float route's bit for bit."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.tiles import quantised
from tests.tiles.test_quantised import (
    MOMENT_CASES,
    MOMENT_IDS,
    REGIONS,
    boundary_tiles,
    count_floats,
    fused_equals_floats,
    write_image,
)


@pytest.fixture
def counted(monkeypatch):
    """Counts of float chunks written (placements, fused chunks read)."""
    return count_floats(monkeypatch)


def _floats_route(monkeypatch):
    """Today's route: the band passes decline, so the chunks are dequantised into floats and
    the band kernels run on them."""
    for name in ("band_sum_count", "band_moments", "band_extrema"):
        monkeypatch.setattr(quantised.QuantisedTiles, name, lambda *a: None)


def _band_requests(x, t):
    """Every band request of the cut handlers, around the threshold ``t``."""
    nan = np.nan
    return (
        (x > t).sum(), (x >= t).sum(axis=0), (x < t).sum(axis=1), da.count_nonzero(x <= t),
        ((x > t - 3) & (x < t)).sum(axis=0),
        np.nansum(da.where(x > t, x, nan), axis=0), da.where(x <= t, x, 0).sum(axis=1),
        np.nansum(da.where(x >= t, x, nan), dtype=np.float64),
        np.nanmean(da.where(x >= t, x, nan)), np.nanmean(da.where(x < t, x, nan), axis=1),
        np.nanvar(da.where(x > t, x, nan), axis=0), np.var(da.where(x > t, x, 0), axis=1),
        np.nanmax(da.where(x < t, x, nan), axis=1), np.nanmin(da.where(x >= t, x, nan), axis=0),
        da.where(x > t, x, 0).max(),
    )  # fmt: skip


def _numpy_requests(w, t):
    """The same requests in numpy on astropy's values (float64 sums)."""
    with np.errstate(invalid="ignore"):
        inside = {op: op(w, t) for op in (np.greater, np.greater_equal, np.less, np.less_equal)}
    gt, ge, lt, le = (
        inside[np.greater],
        inside[np.greater_equal],
        inside[np.less],
        inside[np.less_equal],
    )
    wide = w.astype(np.float64)
    with np.errstate(invalid="ignore"):
        band = (w > t - 3) & lt
    return (
        gt.sum(), ge.sum(axis=0), lt.sum(axis=1), le.sum(), band.sum(axis=0),
        np.where(gt, wide, 0).sum(axis=0), np.where(le, wide, 0).sum(axis=1),
        np.where(ge, wide, 0).sum(),
    )  # fmt: skip


@pytest.mark.parametrize(("method", "tile", "dtype", "chunks"), MOMENT_CASES, ids=MOMENT_IDS)
def test_bands_equal_the_float_route_bit_for_bit(
    tmp_path, monkeypatch, counted, method, tile, dtype, chunks
):
    """Thresholds equal to values in the data (ties), DITHER_2's exact zero and NaN; every
    dither, float32 and float64, edge tiles, chunks on and off tile boundaries."""
    want = write_image(tmp_path / "q.fits.fz", method, tile, dtype, (90, 77))
    x = dfits.open(tmp_path / "q.fits.fz", chunks=chunks)[1].data
    thresholds = (want[3, 4].item(), float(want[70, 70]), 0.0, np.nan)
    requests = [r for t in thresholds for r in _band_requests(x, t)]
    got = fused_equals_floats(lambda: requests, counted, lambda: _floats_route(monkeypatch))
    per = len(got) // len(thresholds)
    for i, t in enumerate(thresholds):
        g_t = got[i * per : (i + 1) * per]
        for k, ref in enumerate(_numpy_requests(want, t)):
            if k < 5:  # counts: exact
                np.testing.assert_array_equal(g_t[k], ref, err_msg=f"t={t!r}, count {k}")
            else:
                np.testing.assert_allclose(g_t[k], ref, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    ("tile", "chunks"), [((1, 20, 30), (5, 20, 30)), ((2, 10, 12), (5, 8, 30))], ids=str
)
def test_masked_moment_maps_of_quantised_cubes(tmp_path, monkeypatch, counted, tile, chunks):
    """``cube.where(cube > t).sum("freq")``, its counts and masked variance, along the
    spectral axis of a quantised cube, chunks across tile planes."""
    want = write_image(tmp_path / "c.fits.fz", 2, tile, np.float32, (12, 20, 30))
    x = dfits.open(tmp_path / "c.fits.fz", chunks=chunks)[1].data
    t = want[4, 5, 6].item()

    def requests():
        masked = da.where(x > t, x, np.nan)
        return (np.nansum(masked, axis=0), (x > t).sum(axis=0), np.nanvar(masked, axis=0),
                np.nanmax(masked, axis=0))  # fmt: skip

    got = fused_equals_floats(requests, counted, lambda: _floats_route(monkeypatch))
    np.testing.assert_array_equal(got[1], (want > t).sum(axis=0))


@pytest.mark.parametrize("region", REGIONS, ids=str)
def test_band_passes_at_block_boundaries_equal_the_float_kernels(tmp_path, region):
    """Past every block of the band kernels' steps (2048-value row blocks, 256-row blocks of
    the column step), a whole chunk and a window, float64 and float32 sums, counts alone
    and sums alone: each band pass equals the float kernel on the dequantised chunk."""
    from dfits import kernels

    tiles, spec, u = boundary_tiles(tmp_path, region)
    t = float(u.view(np.float32)[5, 6])
    for band in ((t, np.inf), (-np.inf, t), (t - 2.0, t), (np.inf, -np.inf)):
        lo, hi = band
        for axes in ((0, 1), (0,), (1,)):
            for dtype, counts, sums in ((None, True, True), (np.float32, False, True),
                                        (None, True, False)):  # fmt: skip
                got = tiles.band_sum_count(spec, axes, band, dtype, counts, sums)
                ref = kernels.band_sum_count(
                    u, spec, axes, lo=lo, hi=hi, dtype=dtype, counts=counts, sums=sums
                )
                for a, b in zip(got, ref, strict=True):
                    np.testing.assert_array_equal(a, b)
                    assert a is None or a.dtype == b.dtype
            got = tiles.band_moments(spec, axes, band)
            ref = kernels.band_moments(u, spec, axes, lo=lo, hi=hi)
            for a, b in zip(got, ref, strict=True):
                np.testing.assert_array_equal(a, b)
            for want_max in (False, True):
                got = tiles.band_extrema(spec, axes, want_max, band)
                ref = kernels.extrema(u, spec, axes, want_max=want_max, with_index=False,
                                      band=band)  # fmt: skip
                np.testing.assert_array_equal(got[1], ref[1])
                np.testing.assert_array_equal(got[2], ref[2])
                np.testing.assert_array_equal(got[0][got[1] > 0], ref[0][ref[1] > 0])


@pytest.mark.parametrize(
    ("tile", "chunks", "window"),
    [((2, 10, 12), (5, 8, 30), True), ((1, 20, 30), (6, 20, 30), False)],
    ids=["window", "whole"],
)
def test_axes_on_both_sides_of_a_kept_one(tmp_path, monkeypatch, counted, tile, chunks, window):
    """A cube's sums, extremes, variances and bands over ``(0, 2)``: the last axis kept, then
    folded, or split by planes, as the float route does; no float chunk, the float route's
    values bit for bit (whole tiles' plain sums and extremes are
    :mod:`dfits.kernels.tilereduce`'s, not compared)."""
    want = write_image(tmp_path / "c.fits.fz", 1, tile, np.float32, (12, 20, 30))
    x = dfits.open(tmp_path / "c.fits.fz", chunks=chunks)[1].data
    t = want[4, 5, 6].item()
    ax = (0, 2)

    def requests():
        masked = da.where(x > t, x, np.nan)
        bands = (
            (x > t).sum(axis=ax), np.nansum(masked, axis=ax), da.where(x <= t, x, 0).sum(axis=ax),
            np.nanmean(masked, axis=ax), np.nanmax(masked, axis=ax), np.nanmin(masked, axis=ax),
            np.nanvar(masked, axis=ax), np.nanstd(x, axis=ax), x.var(axis=ax),
        )  # fmt: skip
        if not window:
            return bands
        return (*bands, x.sum(axis=ax), np.nansum(x, axis=ax, dtype=np.float64),
                np.nanmean(x, axis=ax), np.nanmax(x, axis=ax), x.min(axis=ax))  # fmt: skip

    got = fused_equals_floats(requests, counted, lambda: _all_floats(monkeypatch))
    np.testing.assert_array_equal(got[0], (want > t).sum(axis=ax))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got[4], np.nanmax(np.where(want > t, want, np.nan), axis=ax))


def test_axes_the_float_route_splits_by_planes(tmp_path, monkeypatch):
    """A 4-D image's reductions over axes the float route splits along the first axis (each
    plane one kernel pass: ``(0, 2)``, ``(0, 2, 3)``) or folds (``(1, 3)``, ``(0, 1, 3)``):
    no float chunk, the float route's values bit for bit. Moments over ``(1, 3)`` and
    ``(0, 1, 3)``, which it splits otherwise, read the floats."""
    want = write_image(tmp_path / "f.fits.fz", 1, (1, 2, 3, 10), np.float32, (4, 6, 8, 10))
    x = dfits.open(tmp_path / "f.fits.fz", chunks=(3, 4, 5, 10))[1].data
    t = want[1, 1, 1, 1].item()

    def requests():
        masked = da.where(x > t, x, np.nan)
        out = []
        for ax in ((0, 2), (0, 2, 3), (1, 3), (0, 1, 3)):
            out += [np.nansum(x, axis=ax), np.nanmax(x, axis=ax), (x > t).sum(axis=ax),
                    np.nanvar(masked, axis=ax), np.nansum(masked, axis=ax),
                    np.nanmin(masked, axis=ax)]  # fmt: skip
            if 0 in ax and 2 in ax:
                out.append(np.nanstd(x, axis=ax))
        return out

    got = fused_equals_floats(requests, count_floats(monkeypatch), lambda: _all_floats(monkeypatch))
    assert len(got) == 26
    declined = count_floats(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        dask.compute(np.nanstd(x, axis=(1, 3)))
    assert declined["place"] == 8  # each of the 8 chunks read into floats


def _all_floats(monkeypatch):
    """Every fused pass declines: the chunks are read into floats."""
    _floats_route(monkeypatch)
    for name in ("sum_count", "extrema", "moments"):
        monkeypatch.setattr(quantised.QuantisedTiles, name, lambda *a: None)
