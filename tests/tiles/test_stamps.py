"""Stamps of compressed images: cheap per call, and equal to astropy wherever they fall.

A stamp (``hdu.section[a:b, c:d]``) decodes its tiles as one group; a cover of whole tiles
of the nominal shape is placed by a reshape (:func:`dfits.tiles.places.side_by_side`), a
cover cut by the image's edge by the placing kernel. Random stamps of every algorithm, of
quantised floats and of images whose edge tiles are cut equal astropy's values; the few-tile
Python paths of :mod:`dfits.tiles.places` equal the numpy paths they stand beside.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dfits
from dfits.kernels import tilegroup
from dfits.tiles import places

fits = pytest.importorskip("astropy.io.fits")

# (algorithm, tile, dtype): 100 x 90 is no multiple of any tile, so edge tiles are cut
CASES = {
    "rice": ("RICE_1", (16, 16), "i2"),
    "rice-i4": ("RICE_1", (16, 16), "i4"),
    "rice-rows": ("RICE_1", (1, 90), "i2"),
    "gzip1": ("GZIP_1", (16, 16), "i4"),
    "gzip2": ("GZIP_2", (8, 32), "i2"),
    "plio": ("PLIO_1", (16, 16), "i2"),
    "hcompress": ("HCOMPRESS_1", (16, 16), "i2"),
    "nocompress": ("NOCOMPRESS", (16, 16), "i2"),
    "rice-quantised": ("RICE_1", (16, 16), "f4"),
    "gzip-quantised": ("GZIP_1", (16, 16), "f4"),
}
SHAPE = (100, 90)


@pytest.fixture(scope="module", params=sorted(CASES))
def image(request, tmp_path_factory):
    algorithm, tile, dtype = CASES[request.param]
    data = np.random.default_rng(5).normal(500, 40, SHAPE).clip(0, 4000).astype(dtype)
    if dtype == "f4":
        data[5, 7] = np.nan
    path = tmp_path_factory.mktemp("stamps") / f"{request.param}.fits"
    kw = {"quantize_method": 2} if dtype == "f4" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = fits.CompImageHDU(data, compression_type=algorithm, tile_shape=tile, **kw)
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
        with fits.open(path) as f:
            want = np.array(f[1].data)
    return path, want


def _stamps(n: int = 40, side: int = 20) -> list[tuple[slice, slice]]:
    """Random stamps, the image's corners and edges among them (cut edge tiles)."""
    rng = np.random.default_rng(7)
    out = [
        (slice(0, side), slice(0, side)),
        (slice(SHAPE[0] - side, SHAPE[0]), slice(SHAPE[1] - side, SHAPE[1])),
        (slice(32, 48), slice(16, 48)),  # whole tiles of 16 x 16
        (slice(96, 100), slice(80, 90)),  # one cut tile
    ]
    for _ in range(n):
        y, x = int(rng.integers(0, SHAPE[0] - side)), int(rng.integers(0, SHAPE[1] - side))
        out.append((slice(y, y + side), slice(x, x + side)))
    return out


def test_random_stamps_equal_astropy(image):
    path, want = image
    with dfits.open(path) as f:
        section = f[1].section
        for cut in _stamps():
            got = section[cut]
            assert got.dtype == want.dtype
            assert got.flags.c_contiguous
            assert got.flags.writeable
            np.testing.assert_array_equal(got, want[cut], err_msg=str(cut))
        # reopened for each stamp, as a cut-out service does
        for cut in _stamps(5):
            np.testing.assert_array_equal(dfits.open(path)[1].section[cut], want[cut])


def test_a_cover_of_whole_tiles_is_placed_without_the_kernel(tmp_path, monkeypatch):
    data = np.random.default_rng(8).normal(0, 30, (128, 128)).astype("i2")
    path = tmp_path / "s.fits"
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(32, 32))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    calls = []
    real = tilegroup.place_group
    monkeypatch.setattr(tilegroup, "place_group", lambda *a, **k: calls.append(1) or real(*a, **k))
    section = dfits.open(path)[1].section
    for y, x in [(10, 20), (40, 70), (0, 0), (64, 96)]:
        np.testing.assert_array_equal(section[y : y + 24, x : x + 24], data[y : y + 24, x : x + 24])
    assert calls == []


def test_few_spans_are_grouped_as_numpy_groups_many(monkeypatch):
    """:func:`places.fetch_spans`: the same reads, bytes and starts whichever path groups."""
    heap = np.random.default_rng(0).integers(0, 256, 1 << 21).astype(np.uint8).tobytes()

    class Source:
        mappable = True

        def __init__(self):
            self.reads = []

        def read_exact(self, offset, nbytes):
            self.reads.append((offset, nbytes))
            return heap[offset : offset + nbytes]

    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(1, 20))
        counts = rng.integers(0, 3000, n)
        offsets = rng.integers(0, (1 << 20) if trial % 2 else 200_000, n)
        spans = np.stack([counts, np.sort(offsets) if trial % 3 else offsets], 1)
        got = []
        for few in (32, 0):
            monkeypatch.setattr(places, "_FEW", few)
            source = Source()
            blob, starts = places.fetch_spans(source, 100, spans.astype(np.int64))
            assert not blob.flags.writeable
            for k, (count, offset) in enumerate(spans.tolist()):
                assert bytes(blob[starts[k] : starts[k] + count]) == heap[100 + offset :][:count]
            got.append((source.reads, bytes(blob), starts.tolist()))
        assert got[0] == got[1]


def test_tile_rows_are_the_grid_cells_met():
    from types import SimpleNamespace

    rng = np.random.default_rng(2)
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(1, 40, int(rng.integers(1, 4))))
        tile = tuple(int(rng.integers(1, n + 1)) for n in shape)
        grid = tuple(-(-n // t) for n, t in zip(shape, tile, strict=True))
        region = []
        for n in shape:
            a = int(rng.integers(0, n + 1))
            region.append(slice(a, int(rng.integers(a, n + 1))))
        tiles = SimpleNamespace(tile=tile, grid=grid, shape=shape)
        ranges = [
            np.arange(s.start // t, (s.stop - 1) // t + 1)
            for s, t in zip(region, tile, strict=True)
        ]
        if any(s.stop <= s.start for s in region):
            want = np.empty(0, np.int64)
        else:
            want = np.ravel_multi_index(np.meshgrid(*ranges, indexing="ij"), grid).reshape(-1)
        got = places.tile_rows(tiles, tuple(region))
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
