"""Reductions of quantised float images run on the tiles' integers and equal astropy's values
reduced with numpy; no float chunk is written for them."""

from __future__ import annotations

import math

import dask
import numpy as np
import pytest

import dfits
from dfits.kernels import tilegroup
from dfits.tiles import quantised


def write(path, method: int, tile: tuple[int, int], dtype=np.float32):
    from astropy.io import fits

    rng = np.random.default_rng(method + 3)
    data = rng.normal(100, 5, (90, 77)).astype(dtype)
    data[5, 7] = np.nan
    data[40, :3] = np.nan
    data[60:62, 10:20] = 0.0  # DITHER_2's exact zeros
    hdu = fits.CompImageHDU(
        data, compression_type="RICE_1", quantize_method=method, quantize_level=4.0,
        tile_shape=tile, dither_seed=42,
    )  # fmt: skip
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    with fits.open(path) as f:
        return np.array(f[1].data)


@pytest.fixture
def counted(monkeypatch):
    """Counts of float chunks written: the tile reader's placements and fused chunks read."""
    return count_floats(monkeypatch)


def count_floats(monkeypatch) -> dict[str, int]:
    """Counts of ``place_group`` calls and of fused chunks read, kept up to date."""
    calls = {"place": 0, "fetch": 0}
    place, fetch = tilegroup.place_group, quantised.QuantisedTiles.fetch

    def spy_place(*args, **kwargs):
        calls["place"] += 1
        return place(*args, **kwargs)

    def spy_fetch(self):
        calls["fetch"] += 1
        return fetch(self)

    monkeypatch.setattr(tilegroup, "place_group", spy_place)
    monkeypatch.setattr(quantised.QuantisedTiles, "fetch", spy_fetch)
    return calls


CASES = [(-1, (1, 77)), (1, (1, 77)), (2, (1, 77)), (2, (10, 11))]


@pytest.mark.parametrize(("method", "tile"), CASES, ids=[f"q{m}-{t[0]}x{t[1]}" for m, t in CASES])
def test_fused_reductions_equal_astropy_and_write_no_floats(tmp_path, counted, method, tile):
    want = write(tmp_path / "q.fits.fz", method, tile)
    x = dfits.open(tmp_path / "q.fits.fz", chunks=(30, 77))[1].data
    good = want[~np.isnan(want)].astype(np.float64)
    with dask.config.set(scheduler="synchronous"):
        got = dask.compute(
            np.nanmax(x), np.nanmin(x), x.max(), x.min(), np.nanmax(x, axis=0),
            np.nanmin(x, axis=1), np.nansum(x, dtype=np.float64), x.sum(dtype=np.float64),
            np.nanmean(x, dtype=np.float64), np.nansum(x, axis=0, dtype=np.float64),
            np.nansum(x, axis=1, dtype=np.float64), np.nanmean(x, axis=0),
        )  # fmt: skip
    assert counted == {"place": 0, "fetch": 0}
    # extremes are astropy's float32 values, bit for bit
    assert got[0] == np.nanmax(want)
    assert got[1] == np.nanmin(want)
    assert np.isnan(got[2])
    assert np.isnan(got[3])
    np.testing.assert_array_equal(got[4], np.nanmax(want, axis=0))
    np.testing.assert_array_equal(got[5], np.nanmin(want, axis=1))
    # sums accumulate in float64: within a few ulps of the exactly rounded sum
    exact = math.fsum(good)
    assert abs(got[6] - exact) <= 1e-13 * abs(exact)
    assert np.isnan(got[7])
    assert abs(got[8] - exact / good.size) <= 1e-13 * abs(exact / good.size)
    wide = np.where(np.isnan(want), 0.0, want.astype(np.float64))
    np.testing.assert_allclose(got[9], wide.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(got[10], wide.sum(axis=1), rtol=1e-13)
    assert got[11].dtype == np.float32
    np.testing.assert_allclose(got[11], np.nanmean(want.astype(np.float64), axis=0), rtol=1e-6)


def test_other_requests_dequantise_once_to_astropy_values(tmp_path, counted):
    want = write(tmp_path / "q.fits.fz", 2, (1, 77))
    x = dfits.open(tmp_path / "q.fits.fz", chunks=(30, 77))[1].data
    with dask.config.set(scheduler="synchronous"):
        std, values, cut = dask.compute(np.nanstd(x), x, x[3:50:2, 5])
    assert counted["fetch"] == 3  # once per chunk, which the three results share
    np.testing.assert_array_equal(values, want)
    np.testing.assert_array_equal(cut, want[3:50:2, 5])
    assert std == pytest.approx(np.nanstd(want.astype(np.float64)), rel=1e-6)


def test_float64_images_and_scaled_views(tmp_path, counted):
    want = write(tmp_path / "q.fits.fz", 1, (1, 77), np.float64)
    x = dfits.open(tmp_path / "q.fits.fz", chunks=(30, 77))[1].data
    assert x.dtype == np.float64
    with dask.config.set(scheduler="synchronous"):
        top, scaled = dask.compute(np.nanmax(x), np.nanmax(x * 2.0))
    assert top == np.nanmax(want)
    assert scaled == np.nanmax(want * 2.0)  # a scaled view reads the floats: still right


class _Source:
    """A pending source that is not tiles: the passes find its fused methods by name."""

    shape = (2, 3)

    def __init__(self, spec) -> None:
        self.spec, self.asked = spec, []

    def fetch(self):
        raise AssertionError("a fused pass read the values")

    def narrow(self, index):
        return None

    def sum_count(self, spec, axes, skipna):
        self.asked.append("sum_count")
        return (np.int64(6), np.float64(21.0)) if spec == self.spec else None

    def extrema(self, spec, axes, want_max):
        self.asked.append("extrema")
        return np.float32(6.0 if want_max else 1.0), np.int64(6), np.int64(0)


def test_passes_ask_any_unread_source_through_the_protocol(tmp_path):
    from dfits.stored import passes
    from dfits.stored.stored import StoredChunk

    write(tmp_path / "q.fits.fz", 1, (1, 77))
    spec = dfits.open(tmp_path / "q.fits.fz")[1]._block(raw=False).spec
    src = _Source(spec)
    chunk = StoredChunk(None, spec, src)
    assert passes.sum_count(chunk, (0, 1), True) == (6, 21.0)
    assert passes.total(chunk, (0, 1), True, np.float32) == 21.0  # memoised: not asked again
    assert passes.extrema(chunk, (0, 1), True)[0] == 6.0
    assert src.asked == ["sum_count", "extrema"]


def test_quantised_tiles_decline_a_rescaled_chunk(tmp_path):
    from dataclasses import replace

    write(tmp_path / "q.fits.fz", 2, (10, 11))
    reader = dfits.open(tmp_path / "q.fits.fz")[1]._block(raw=False)
    chunk = reader.read((slice(0, 90), slice(0, 77)))
    tiles = chunk.unread
    assert isinstance(tiles, quantised.QuantisedTiles)
    n, total = tiles.sum_count(chunk.spec, (0, 1), True)
    values = np.asarray(chunk, np.float64)
    assert n == np.isfinite(values).sum()
    assert total == pytest.approx(np.nansum(values), rel=1e-12)
    other = replace(chunk.spec, mode="scaled", bscale=2.0)
    assert tiles.sum_count(other, (0, 1), True) is None
    assert tiles.extrema(other, (0,), False) is None


# -- moments and moment maps: dequantised block by block in the kernels ----------------------


def write_image(path, method: int, tile: tuple[int, ...], dtype, shape: tuple[int, ...]):
    """A quantised image with NaN (ZBLANK), DITHER_2's exact zeros and edge tiles; astropy's
    values of it."""
    from astropy.io import fits

    rng = np.random.default_rng(method + 7)
    data = rng.normal(100, 5, shape).astype(dtype)
    flat = data.reshape(-1, shape[-1])
    flat[5, 7] = flat[40 % len(flat), :3] = np.nan
    flat[len(flat) // 2, 10:20] = 0.0
    hdu = fits.CompImageHDU(
        data, compression_type="RICE_1", quantize_method=method, quantize_level=4.0,
        tile_shape=tile, dither_seed=42,
    )  # fmt: skip
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    with fits.open(path) as f:
        return np.array(f[1].data)


def _floats_route(monkeypatch):
    """Today's route: the moment passes decline, so the chunks are dequantised into floats
    and the float kernels run on them."""
    monkeypatch.setattr(quantised.QuantisedTiles, "moments", lambda *a: None)
    monkeypatch.setattr(quantised.QuantisedTiles, "weighted_sums", lambda *a: None)
    monkeypatch.setattr(quantised.QuantisedTiles, "indexed", lambda *a: None)


def fused_equals_floats(requests, counted, to_floats) -> tuple:
    """The results of ``requests()`` computed fused, with no float chunk written, after
    checking that the float route (``to_floats()`` makes the fused passes decline) gives
    them bit for bit, dtypes included."""
    with dask.config.set(scheduler="synchronous"), np.errstate(invalid="ignore"):
        got = dask.compute(*requests())
    assert counted == {"place": 0, "fetch": 0}
    to_floats()
    with dask.config.set(scheduler="synchronous"), np.errstate(invalid="ignore"):
        floats = dask.compute(*requests())
    assert counted["fetch"] > 0
    for k, (g, f) in enumerate(zip(got, floats, strict=True)):
        assert np.asarray(g).dtype == np.asarray(f).dtype, k
        np.testing.assert_array_equal(g, f, err_msg=f"request {k}")
    return got


def _moment_requests(x):
    from dfits.array import reduce, weighted_sums

    w = np.linspace(-1.0, 2.0, x.shape[0])
    return (
        reduce(x, "std"), reduce(x, "nanstd"), reduce(x, "nanvar", axis=0),
        reduce(x, "var", axis=-1), reduce(x, "nanstd", axis=tuple(range(1, x.ndim))),
        reduce(x, "nanmean", axis=0), weighted_sums(x, 0, w),
        weighted_sums(x, 0, w, threshold=99.0), reduce(x, "nanargmax", axis=0),
        x.argmin(axis=1), reduce(x, "nanargmin"),
    )  # fmt: skip


MOMENT_CASES = [
    (method, tile, dtype, chunks)
    for method in (-1, 1, 2)
    for tile, chunks in (((1, 77), (30, 77)), ((10, 12), (30, 36)), ((10, 12), (25, 40)))
    for dtype in (np.float32, np.float64)
]


MOMENT_IDS = [
    f"q{m}-{t[0]}x{t[1]}-{np.dtype(d).name}-c{c[0]}x{c[1]}" for m, t, d, c in MOMENT_CASES
]


@pytest.mark.parametrize(("method", "tile", "dtype", "chunks"), MOMENT_CASES, ids=MOMENT_IDS)
def test_moments_equal_the_float_route_bit_for_bit(
    tmp_path, monkeypatch, counted, method, tile, dtype, chunks
):
    """Variances, standard deviations, moment-map sums and arg-extremes of every dither,
    float32 and float64, edge tiles, chunks on and off tile boundaries: no float chunk is
    written, and
    the values are those of the float chunk's kernels bit for bit, and astropy's reduced by
    numpy within float64 rounding."""
    want = write_image(tmp_path / "q.fits.fz", method, tile, dtype, (90, 77))
    x = dfits.open(tmp_path / "q.fits.fz", chunks=chunks)[1].data
    with dask.config.set(scheduler="synchronous"):
        got = dask.compute(*_moment_requests(x))
    assert counted == {"place": 0, "fetch": 0}
    _floats_route(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        floats = dask.compute(*_moment_requests(x))
    assert counted["fetch"] > 0
    for k, (g, f) in enumerate(zip(got, floats, strict=True)):
        assert g.dtype == f.dtype
        if k != 5:  # a mean read off floats is summed by the float kernel: not this pass
            np.testing.assert_array_equal(g, f)
    wide = want.astype(np.float64)
    rtol = 1e-6 if dtype == np.float32 else 1e-12  # results in the image's type, as numpy's
    np.testing.assert_allclose(got[0], np.nan)
    np.testing.assert_allclose(got[1], np.nanstd(wide), rtol=rtol)
    np.testing.assert_allclose(got[2], np.nanvar(wide, axis=0), rtol=rtol)
    np.testing.assert_allclose(got[3], np.var(wide, axis=-1), rtol=rtol)
    np.testing.assert_allclose(got[4], np.nanstd(wide, axis=1), rtol=rtol)
    np.testing.assert_allclose(got[5], np.nanmean(wide, axis=0), rtol=rtol)
    kept = np.where(np.isnan(wide), 0.0, wide)
    np.testing.assert_allclose(got[6][0], kept.sum(axis=0), rtol=1e-13)
    w = np.linspace(-1.0, 2.0, x.shape[0])[:, None]
    np.testing.assert_allclose(got[6][2], (kept * w * w).sum(axis=0), rtol=1e-13)
    np.testing.assert_array_equal(got[8], np.nanargmax(want, axis=0))
    np.testing.assert_array_equal(got[9], np.argmin(want, axis=1))
    assert got[10] == np.nanargmin(want)
    cut = np.where(wide >= 99.0, wide, 0.0)
    np.testing.assert_allclose(got[7][1], (cut * w).sum(axis=0), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize(
    ("tile", "chunks"), [((1, 20, 30), (5, 20, 30)), ((2, 10, 12), (5, 8, 30))], ids=str
)
def test_cube_moment_maps_and_std_of_quantised_cubes(tmp_path, monkeypatch, counted, tile, chunks):
    """Moment maps 0, 1 and 2 (one weighted pass; moment 2's count is a sum pass) and
    ``std`` along the spectral axis of a quantised cube, chunks across tile planes."""
    from dfits.cube.moments import moment_map

    want = write_image(tmp_path / "c.fits.fz", 2, tile, np.float32, (12, 20, 30))
    x = dfits.open(tmp_path / "c.fits.fz", chunks=chunks)[1].data
    v = np.linspace(1.0, 2.0, 12)

    def requests():
        from dfits.array import reduce

        return (moment_map(x, 0, v, 0), moment_map(x, 0, v, 1), reduce(x, "nanstd", axis=0))

    got = fused_equals_floats(requests, counted, lambda: _floats_route(monkeypatch))
    kept = np.where(np.isnan(want), 0.0, want.astype(np.float64))
    width = np.abs(np.gradient(v))[:, None, None]
    np.testing.assert_allclose(got[0], (kept * width).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.nanstd(want.astype(np.float64), axis=0), rtol=1e-6)


def boundary_tiles(tmp_path, region):
    """``(tiles, spec, u)``: the quantised tiles of ``region`` of a 300 × 2500 image (rows
    past the kernels' blocks, offset data, a NaN run), its spec and its dequantised chunk
    (the stored view the float kernels read)."""
    from astropy.io import fits

    data = (1e4 + np.random.default_rng(5).normal(0, 5, (300, 2500))).astype(np.float32)
    data[7, 100:] = np.nan
    hdu = fits.CompImageHDU(data, quantize_method=2, tile_shape=(10, 300), quantize_level=16)
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(tmp_path / "b.fits.fz")
    reader = dfits.open(tmp_path / "b.fits.fz")[1]._block(raw=False)
    tiles, spec = reader.read(region).unread, reader.spec
    u = quantised.QuantisedTiles(
        tiles.packed, tiles.shapes, tiles.firsts, tiles.quant, tiles.shape, spec, tiles.origin
    ).fetch()
    return tiles, spec, u


REGIONS = [(slice(0, 300), slice(0, 2500)), (slice(3, 297), slice(5, 2490))]


@pytest.mark.parametrize("region", REGIONS, ids=str)
def test_block_boundaries_equal_the_float_kernels(tmp_path, region):
    """Past every block of the kernels' steps (8192-value row blocks, 2048-column tiles,
    64- and 256-row blocks of the column steps), offset data, a whole chunk and a window:
    each fused pass equals the float kernel on the dequantised chunk bit for bit."""
    from dfits import kernels

    tiles, spec, u = boundary_tiles(tmp_path, region)
    window = region[0].start > 0  # whole tiles are summed by tilereduce, in its own order
    for axes in ((0, 1), (0,), (1,)):
        for skipna in (False, True):
            pairs = [
                (tiles.moments(spec, axes, skipna), kernels.moments(u, spec, axes, skipna=skipna))
            ]
            if window:
                total, n = kernels.sum_count(u, spec, axes, skipna=skipna)
                pairs.append((tiles.sum_count(spec, axes, skipna), (n, total)))
            for got, floats in pairs:
                for a, b in zip(got, floats, strict=True):
                    np.testing.assert_array_equal(a, b)
        for want_max in (False, True):
            val, idx, nanidx = tiles.indexed(spec, axes, want_max)
            fval, fidx, fnan = kernels.extrema(u, spec, axes, want_max=want_max)
            np.testing.assert_array_equal(idx, fidx)
            np.testing.assert_array_equal(nanidx, fnan)
            np.testing.assert_array_equal(val[idx >= 0], fval[fidx >= 0])
    w = np.linspace(-1.0, 1.0, u.shape[0])
    np.testing.assert_array_equal(
        tiles.weighted_sums(spec, 0, w, None), kernels.weighted_sums(u, spec, 0, w)
    )
