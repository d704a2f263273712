"""Transposes: dask rechunk in memory, scratch zarr block I/O above the memory limit."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import dfits.fft as F
from dfits.fft.transpose import _tile, scratch_dir, transpose
from tests.fft.checks import check, signal


def test_tile_divides_every_inner_boundary():
    assert _tile((6, 6, 6, 2), (4, 4, 4, 4, 4)) == 2
    assert _tile((8, 8), (16,)) == 8
    assert _tile((10,)) == 10


def test_small_arrays_rechunk_in_memory(tmp_path):
    x = da.arange(64, chunks=8).reshape(8, 8)
    y = transpose(x, {0: -1, 1: 2}, memory_limit=1 << 20, block_bytes=1 << 20, scratch=tmp_path)
    assert y.chunks == ((8,), (2, 2, 2, 2))
    assert not list(tmp_path.iterdir())
    np.testing.assert_array_equal(y.compute(), np.arange(64).reshape(8, 8))


def test_big_arrays_go_through_scratch_zarr_tiles(tmp_path):
    data = np.arange(24 * 30, dtype=np.float32).reshape(24, 30)
    x = da.from_array(data, chunks=(6, 30))
    y = transpose(x, {0: -1, 1: 10}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    assert y.chunks == ((24,), (10, 10, 10))
    assert not list(tmp_path.iterdir())  # lazy: nothing written before compute
    with dask.config.set(scheduler="threads", num_workers=4):
        np.testing.assert_array_equal(y.compute(), data)
    (store,) = tmp_path.iterdir()
    import zarr

    z = zarr.open_array(str(store), mode="r")
    assert z.chunks == (6, 10)  # tiles: input rows x output columns
    np.testing.assert_array_equal(z[...], data)


@pytest.mark.parametrize(
    ("n", "chunk"), [(4096, 512), pytest.param(1499, 100, marks=pytest.mark.slow)]
)
def test_fft_through_disk_equals_numpy(tmp_path, n, chunk):
    x = signal(np.random.default_rng(0), (2, n), np.complex128)
    X = da.from_array(x, chunks=(1, chunk))
    y = F.fft(X, axis=1, block_size=8192, memory_limit=0, scratch=tmp_path)
    with dask.config.set(scheduler="threads", num_workers=2):
        check(y, np.fft.fft(x, axis=1))
    assert len(list(tmp_path.glob("transpose-*.zarr"))) >= 3  # every transpose went to disk
    check(F.ifft(y, axis=1, block_size=8192, memory_limit=0, scratch=tmp_path), x)


def test_default_scratch_is_one_temporary_directory_per_process():
    assert scratch_dir(None) == scratch_dir(None)
    assert "dfits-fft-" in scratch_dir(None)
    assert scratch_dir("/some/where") == "/some/where"


def test_memory_limit_parses_sizes():
    x = da.from_array(signal(np.random.default_rng(1), 4096, np.complex128), chunks=256)
    in_memory = F.fft(x, block_size="8KiB", memory_limit="1 GiB")
    assert not any("transpose-" in str(k) for k in dict(in_memory.dask))
    check(in_memory, np.fft.fft(x.compute()))
