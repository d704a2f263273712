"""Stepped reads of compressed images decode only the tiles holding a selected pixel, once.

``hdu.section[::8, ::8]`` (what quicklook's decimation asks for) goes through
:meth:`dfits.tiles.reader.TileReader.gather`: values equal astropy's for every algorithm,
and a decode counter shows each met tile decoded exactly once, the others not at all.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dfits
from dfits.kernels import codecs, tilegroup

fits = pytest.importorskip("astropy.io.fits")

SHAPE = (64, 96)
CASES = {
    "rice-rows": ("RICE_1", (1, 96), "i2"),
    "rice-square": ("RICE_1", (8, 16), "i2"),
    "gzip1": ("GZIP_1", (4, 32), "i4"),
    "gzip2": ("GZIP_2", (1, 96), "i2"),
    "plio": ("PLIO_1", (2, 96), "i2"),
    "hcompress": ("HCOMPRESS_1", (16, 16), "i2"),
    "rice-quantised": ("RICE_1", (1, 96), "f4"),
    "gzip-quantised": ("GZIP_1", (8, 16), "f4"),
}
INDICES = [
    (slice(None, None, 8), slice(None, None, 8)),
    (slice(3, None, 5), slice(None, None, -7)),
    (7, slice(1, None, 3)),
    (slice(None, None, 20),),
    (Ellipsis, slice(2, 90, 17)),
    (slice(None, None, 9), None, 4),
]


@pytest.fixture(scope="module", params=sorted(CASES))
def image(request, tmp_path_factory):
    algorithm, tile, dtype = CASES[request.param]
    rng = np.random.default_rng(3)
    data = rng.normal(500, 40, SHAPE).clip(0, 4000).astype(dtype)
    if dtype == "f4":
        data[5, 7] = np.nan
    path = tmp_path_factory.mktemp("gather") / f"{request.param}.fits"
    kw = {"quantize_method": 2} if dtype == "f4" else {}
    hdu = fits.CompImageHDU(data, compression_type=algorithm, tile_shape=tile, **kw)
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fits.open(path) as f:
            want = np.array(f[1].data)
    return path, tile, want


@pytest.fixture
def decodes(monkeypatch):
    """Tiles decoded, in one list: a Rice group counts each of its tiles."""
    seen: list[int] = []

    def spy(module, name, count):
        real = getattr(module, name)

        def run(*args, **kwargs):
            seen.append(count(args))
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, run)

    spy(tilegroup, "rice_group", lambda a: len(a[1]))
    spy(codecs, "decode_tile", lambda a: 1)
    spy(codecs, "raw_tile", lambda a: 1)
    return seen


def _met(index, tile) -> int:
    """Tiles holding a pixel that ``index`` selects (numpy's own indexing of tile numbers)."""
    rows = np.arange(SHAPE[0])[:, None] // tile[0] * 10**6 + np.arange(SHAPE[1]) // tile[1]
    return np.unique(rows[index]).size


@pytest.mark.parametrize("index", INDICES)
def test_stepped_sections_equal_astropy_and_decode_each_met_tile_once(image, index, decodes):
    path, tile, want = image
    with dfits.open(path) as f:
        got = f[1].section[index]
    np.testing.assert_array_equal(got, want[index])
    assert got.dtype == want.dtype
    assert sum(decodes) == _met(index, tile)


def test_a_decimated_quicklook_decodes_only_the_rows_it_shows(image, decodes):
    pytest.importorskip("matplotlib")
    from dfits.jupyter.figures import _plan, quicklook

    path, tile, _ = image
    with dfits.open(path) as f:
        hdu = f[1]
        steps = _plan(hdu, False, 4096)[1]
        quicklook(hdu, max_bytes=4096)
        tiles = hdu.section.block.tiles.nrows
    assert steps != (1, 1)
    # each tile holding a shown pixel decoded once, and no other
    assert sum(decodes) == _met(tuple(slice(None, None, s) for s in steps), tile) < tiles


@pytest.fixture
def groups(monkeypatch):
    """Calls of the tile-by-tile path and of the one placement of a group."""
    from dfits.tiles.reader import TileReader

    calls = {"tile": 0, "place": 0}

    def spy(owner, name, key):
        real = getattr(owner, name)

        def run(*args, **kwargs):
            calls[key] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, run)

    spy(TileReader, "_tile", "tile")
    spy(tilegroup, "place_group", "place")
    return calls


@pytest.mark.parametrize("index", [(slice(3, 21), slice(5, 40)), (slice(30, 64), slice(60, 96))])
def test_every_algorithms_stamp_decodes_as_one_group(image, index, decodes, groups):
    path, tile, want = image
    with dfits.open(path) as f:
        got = f[1].section[index]
        chunk = f[1].data[index].compute()
    np.testing.assert_array_equal(got, want[index])
    np.testing.assert_array_equal(chunk, want[index])
    assert groups["tile"] == 0  # no tile went through the per-tile path
    assert groups["place"] <= 2  # at most one placing pass each (none for row tiles)
    assert sum(decodes) == 2 * _met(index, tile)  # the section's tiles, then the chunk's


def test_a_row_tile_stamp_costs_two_reads_one_decode_call_and_no_placing(tmp_path, monkeypatch):
    """The per-call work of a stamp of fpack's row tiles, counted: one read of the table
    rows, one of the heap bytes, one Rice group call, no placing pass over the tiles."""
    from dfits.tiles import places

    data = np.random.default_rng(1).normal(0, 30, (256, 512)).astype("i2")
    path = tmp_path / "rows.fits"
    fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(data, compression_type="RICE_1")]).writeto(
        path
    )
    calls = {"ranges": 0, "group": 0, "place": 0}
    for owner, name, key in [
        (places, "read_ranges", "ranges"),
        (tilegroup, "rice_group", "group"),
        (tilegroup, "place_group", "place"),
    ]:
        real = getattr(owner, name)

        def run(*args, _real=real, _key=key, **kwargs):
            calls[_key] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, run)
    with dfits.open(path) as f:
        section = f[1].section
        for y, x in [(10, 100), (100, 7), (192, 448)]:
            np.testing.assert_array_equal(
                section[y : y + 64, x : x + 64], data[y : y + 64, x : x + 64]
            )
    assert calls == {"ranges": 6, "group": 3, "place": 0}


@pytest.mark.parametrize("scaled", [False, True])
def test_a_stamp_of_unscaled_values_loads_no_decode_kernel(tmp_path, monkeypatch, scaled):
    """Decoded tiles are native: unless BSCALE/BZERO/BLANK apply, a stamp is a copy of
    them, and no decode kernel is called (or loaded, in a fresh process)."""
    import dfits.kernels as decoding

    data = np.random.default_rng(2).normal(0, 30, (64, 128)).astype("i2")
    hdu = fits.CompImageHDU(data, compression_type="RICE_1")
    if scaled:
        hdu.header["BZERO"] = 10.0
    path = tmp_path / "s.fits"
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    calls = []
    real = decoding.decode
    monkeypatch.setattr(decoding, "decode", lambda *a, **k: calls.append(1) or real(*a, **k))
    with dfits.open(path) as f:
        got = f[1].section[5:40:2, 3:70]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fits.getdata(path, 1)[5:40:2, 3:70]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    assert got.flags.c_contiguous
    assert got.flags.writeable
    assert len(calls) == (1 if scaled else 0)
