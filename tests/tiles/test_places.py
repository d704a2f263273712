"""The tile index is read lazily: a read touches only its own tiles' rows of the table.

A stamp (``hdu.section``) and a sliced dask array read the descriptor rows of the tiles they
meet, found from the tiles' places in the grid, and those tiles' heap bytes: never the whole
table of an image of many tiles. Values equal astropy's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dfits
from dfits.io.local import LocalSource
from tests.tiles.test_reader import _image, astropy_data

# 1024 tiles of 16 x 16 (a grid of 32 x 32): 8 KiB of table rows for RICE_1 integers
SHAPE, TILE = (512, 512), (16, 16)


@pytest.fixture
def reads(monkeypatch):
    """(offset, bytes) of every read of a local file, in order."""
    seen: list[tuple[int, int]] = []
    real = LocalSource.read

    def spy(self, offset, nbytes):
        seen.append((offset, nbytes))
        return real(self, offset, nbytes)

    monkeypatch.setattr(LocalSource, "read", spy)
    return seen


def _write(path, bitpix: int, **options):
    from astropy.io import fits

    data = _image(bitpix, SHAPE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=TILE, **options)
        fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path)
    return astropy_data(path)


def _table_bytes(reads, layout) -> int:
    """Bytes read from the table's rows (the tile index), not from its heap."""
    lo = layout.data_offset
    hi = lo + layout.tiles.row_bytes * layout.tiles.nrows
    return sum(max(0, min(o + n, hi) - max(o, lo)) for o, n in reads)


STAMPS = [
    (slice(100, 120), slice(150, 170)),  # 2 x 2 tiles, none whole
    (slice(96, 112), slice(32, 48)),  # exactly one tile
    (slice(500, 512), slice(0, 40)),  # the last row of tiles, 3 tiles
    (5, slice(300, 301)),  # one pixel
]


@pytest.mark.parametrize("bitpix", [16, -32])
def test_stamp_reads_only_its_tiles_rows(tmp_path, reads, bitpix):
    options = {"quantize_method": 2} if bitpix < 0 else {}
    want = _write(tmp_path / "t.fits", bitpix, **options)
    hdu = dfits.open(tmp_path / "t.fits")[1]
    layout = hdu.layout
    assert layout.tiles.nrows == 1024
    width = layout.tiles.row_bytes
    section = hdu.section
    reads.clear()  # opening and making the section read no table row
    for cut in STAMPS:
        got = section[cut]
        np.testing.assert_array_equal(got, want[cut])
        assert got.dtype == want.dtype
        touched = hdu._block(raw=False).rows(
            tuple(slice(c, c + 1) if isinstance(c, int) else c for c in cut)
        )
        # the rows of the tiles met: a run from the first to the last (tile rows 32 apart)
        span = (int(touched[-1]) - int(touched[0]) + 1) * width
        assert _table_bytes(reads, layout) == span <= (32 + 3) * width, cut
        assert len(reads) <= 3, (cut, reads)  # the rows, then each run of tile bytes
        reads.clear()


def test_sliced_dask_array_reads_only_its_tiles(tmp_path, reads):
    want = _write(tmp_path / "t.fits", 16)
    hdu = dfits.open(tmp_path / "t.fits")[1]
    x = hdu.data
    assert x.numblocks == (1, 1)  # one chunk holds every tile
    reads.clear()
    np.testing.assert_array_equal(x[100:120, 150:170].compute(), want[100:120, 150:170])
    assert _table_bytes(reads, hdu.layout) <= 34 * hdu.layout.tiles.row_bytes
    tiles = hdu.layout.tiles
    heap = sum(n for o, n in reads if o >= hdu._block(raw=False).heap_offset)
    # 4 tiles of 1024, in 2 runs 32 tiles apart: close enough in the heap to be one read
    assert heap <= 40 * (tiles.heap_stop - tiles.heap_start) // 1024
    reads.clear()
    assert x.sum().compute() == want.sum(dtype=np.int64)
    # the whole image reads the whole table, in one read
    assert _table_bytes(reads, hdu.layout) == 1024 * hdu.layout.tiles.row_bytes


def test_whole_index_equals_per_row_lookups(tmp_path):
    _write(tmp_path / "t.fits", -32, quantize_method=1)
    reader = dfits.open(tmp_path / "t.fits")[1]._block(raw=False)
    full = reader.descriptors
    rows = np.array([0, 1, 2, 40, 1000, 1023])
    part = reader.lookup(rows)
    for name, spans in full.spans.items():
        np.testing.assert_array_equal(part.spans[name], spans[rows])
    assert set(part.values) == set(full.values) == {"ZSCALE", "ZZERO"}
    for name, values in full.values.items():
        np.testing.assert_array_equal(part.values[name], values[rows])
    empty = reader.lookup(np.empty(0, np.int64))
    assert empty.spans["COMPRESSED_DATA"].shape == (0, 2)


def test_compressed_bytes_are_read_a_batch_at_a_time(tmp_path, reads, monkeypatch):
    from dfits.tiles import places

    want = _write(tmp_path / "t.fits", 16)
    hdu = dfits.open(tmp_path / "t.fits")[1]
    heap = hdu._block(raw=False).heap_offset
    monkeypatch.setattr(places, "BATCH", 4096)  # a few tiles a batch
    reads.clear()
    np.testing.assert_array_equal(hdu.data.compute(), want)
    sizes = [n for o, n in reads if o >= heap]
    assert len(sizes) > 50
    assert max(sizes) < 4096 + 2 * 1024  # a batch ends at the tile that crosses the mark
    # a broken stream in a later batch names its own tile
    tiles = hdu.layout.tiles
    spans = hdu._block(raw=False).descriptors.spans["COMPRESSED_DATA"]
    blob = bytearray((tmp_path / "t.fits").read_bytes())
    at = hdu.layout.data_offset + 700 * tiles.row_bytes
    blob[at : at + 4] = np.array([spans[700, 0] // 2], ">i4").tobytes()
    (tmp_path / "t.fits").write_bytes(bytes(blob))
    with pytest.raises(dfits.DfitsError, match=r"tile 700 .*RICE_1"):
        dfits.open(tmp_path / "t.fits")[1].data.compute()
