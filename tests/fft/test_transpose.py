"""Transposes: dask rechunk in memory, block I/O through a scratch file above the memory limit."""

from __future__ import annotations

import contextlib
import os
import tracemalloc

import dask
import dask.array as da
import numpy as np
import pytest
from dask.callbacks import Callback
from dask.utils import key_split

import dfits.fft as F
from dfits.fft import transpose as transpose_module
from dfits.fft.transpose import _all, _read, _tile, scratch_dir, store_path, transpose
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


def test_big_arrays_go_through_a_scratch_file_of_tiles(tmp_path):
    data = np.arange(24 * 30, dtype=np.float32).reshape(24, 30)
    x = da.from_array(data, chunks=(6, 30))
    y = transpose(x, {0: -1, 1: 10}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    assert y.chunks == ((24,), (10, 10, 10))
    assert not list(tmp_path.iterdir())  # lazy: nothing written before compute
    with dask.config.set(scheduler="threads", num_workers=4):
        np.testing.assert_array_equal(y.compute(), data)
    (store,) = tmp_path.iterdir()
    # tiles (input rows x output columns: 6 x 10) one after another in C order of the grid
    stored = np.fromfile(store, dtype=np.float32)
    tiles = [data[r : r + 6, c : c + 10].ravel() for r in range(0, 24, 6) for c in (0, 10, 20)]
    np.testing.assert_array_equal(stored, np.concatenate(tiles))


def test_tiles_at_the_edges_are_partial_and_packed(tmp_path):
    data = np.arange(7 * 5 * 3, dtype=np.complex64).reshape(7, 5, 3)
    x = da.from_array(data, chunks=(2, 5, 3))
    y = transpose(x, {0: -1, 1: 2}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    np.testing.assert_array_equal(y.compute(), data)
    (store,) = tmp_path.iterdir()
    assert store.stat().st_size == data.nbytes


@pytest.mark.parametrize(
    ("n", "chunk"), [(4096, 512), pytest.param(1499, 100, marks=pytest.mark.slow)]
)
def test_fft_through_disk_equals_numpy(tmp_path, n, chunk):
    x = signal(np.random.default_rng(0), (2, n), np.complex128)
    X = da.from_array(x, chunks=(1, chunk))
    y = F.fft(X, axis=1, block_size=8192, memory_limit=0, scratch=tmp_path)
    with dask.config.set(scheduler="threads", num_workers=2):
        check(y, np.fft.fft(x, axis=1))
    # every transpose went to disk; each store was deleted once the next pass had read it but
    # the last of each six-step (Bluestein runs three: its two transforms and the inverse)
    assert len(list(tmp_path.glob("transpose-*.tiles"))) == (1 if n == 4096 else 3)
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


class _CountStores(Callback):
    """The most bytes of chunks in ``directory``'s stores after any task, and the stores seen
    (an empty store, created early by its own task, holds no data)."""

    def __init__(self, directory):
        super().__init__()
        self.directory, self.most, self.seen = directory, 0, set()

    def _posttask(self, key, result, dsk, state, id):
        stores = list(self.directory.glob("transpose-*.tiles"))
        self.seen |= {p.name for p in stores}
        self.most = max(self.most, sum(_chunk_bytes(p) for p in stores))


def _chunk_bytes(store) -> int:
    # bytes on disk, not the sparse file's size
    with contextlib.suppress(FileNotFoundError):
        return store.stat().st_blocks * 512
    return 0


def test_each_scratch_store_is_deleted_once_the_next_pass_has_read_it(tmp_path):
    # the disk holds at most two stores at once (the one read, the one written), not three:
    # input + 2 stores + output is 3 x 8N bytes at any moment instead of 5 x 8N
    x = signal(np.random.default_rng(2), 1 << 14, np.complex64)
    y = F.fft(da.from_array(x, chunks=1 << 11), block_size=4096, memory_limit=0, scratch=tmp_path)
    counter = _CountStores(tmp_path)
    with dask.config.set(scheduler="threads", num_workers=2), counter:
        check(y, np.fft.fft(x))
    assert len(counter.seen) == 3  # the natural order's three transposes all went to disk
    assert x.nbytes < counter.most <= 2 * x.nbytes + 8192  # two full stores at most, not three
    assert len(list(tmp_path.glob("transpose-*.tiles"))) == 1  # the last one: the caller's


def test_a_released_store_fails_loudly_rather_than_reading_stale_bytes(tmp_path):
    x = da.from_array(np.arange(64.0).reshape(8, 8), chunks=(2, 8))
    y = transpose(x, {0: -1, 1: 2}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    np.testing.assert_array_equal(y.compute(), np.arange(64.0).reshape(8, 8))
    path = store_path(x, y.chunks, tmp_path)
    assert _all(np.ones(1, dtype=bool), (path,))
    assert not list(tmp_path.iterdir())
    info = {None: {"array-location": [(0, 8), (0, 2)]}}
    layout = {"shape": (8, 8), "tiles": (2, 2), "dtype": "<f8"}
    with pytest.raises(FileNotFoundError):
        _read(path, layout, True, block_info=info)


@pytest.mark.parametrize("min_run", [8, 1 << 30])
def test_tiles_go_straight_from_and_into_the_blocks_or_through_one_copy(
    tmp_path, monkeypatch, min_run
):
    # min_run 8: every tile row (3 or 10 values) is an iovec of the block itself; 1 << 30:
    # every strided tile is gathered into one buffer first. The same store, the same values.
    monkeypatch.setattr(transpose_module, "MIN_RUN", min_run)
    data = np.arange(24 * 30, dtype=np.float32).reshape(24, 30)
    x = da.from_array(data, chunks=(6, 30))
    y = transpose(x, {0: -1, 1: 10}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    back = transpose(y, {0: 6, 1: -1}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    with dask.config.set(scheduler="threads", num_workers=4):
        np.testing.assert_array_equal(y.compute(), data)
        np.testing.assert_array_equal(back.compute(), data)
    store = store_path(x, y.chunks, tmp_path)
    tiles = [data[r : r + 6, c : c + 10].ravel() for r in range(0, 24, 6) for c in (0, 10, 20)]
    np.testing.assert_array_equal(np.fromfile(store, dtype=np.float32), np.concatenate(tiles))


def test_more_rows_than_one_pwritev_takes_and_short_writes_are_completed(tmp_path, monkeypatch):
    monkeypatch.setattr(transpose_module, "MIN_RUN", 8)
    real = os.pwritev

    def short(fd, buffers, offset):  # the kernel may write less than asked: half, here
        assert len(buffers) <= 1024  # Linux's IOV_MAX
        whole = b"".join(bytes(memoryview(b).cast("B")) for b in buffers)
        return real(fd, [whole[: max(1, len(whole) // 2)]], offset)

    monkeypatch.setattr(transpose_module.os, "pwritev", short)
    data = np.arange(2500 * 4, dtype=np.float64).reshape(2500, 4)
    x = da.from_array(data, chunks=(2500, 4))  # one block, a tile of 2500 rows of 2 values
    y = transpose(x, {0: 1250, 1: 2}, memory_limit=0, block_bytes=1 << 20, scratch=tmp_path)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(y.compute(), data)


def test_a_pass_through_disk_holds_its_block_and_one_more_at_most(tmp_path):
    # the block read back, the library's work buffer and small tables; not the tile copies,
    # the transform's result, a block of twiddles and a joined copy of the output (6 blocks)
    x = signal(np.random.default_rng(4), 1 << 16, np.complex64)
    block = 1 << 15  # 32 KiB: 16 blocks
    y = F.fft(da.from_array(x, chunks=4096), block_size=block, memory_limit=0, scratch=tmp_path)
    peaks = _TaskPeaks()
    with dask.config.set(scheduler="sync"), peaks:
        check(y, np.fft.fft(x))
    passes = {k: v for k, v in peaks.peaks.items() if "finalize" not in key_split(k)}
    assert max(passes.values()) <= 2.5 * block, passes  # compute()'s join is the caller's


class _TaskPeaks(Callback):
    """The most bytes numpy held at once inside each task, beyond what it held before."""

    def __init__(self):
        super().__init__()
        self.peaks: dict = {}

    def __enter__(self):
        tracemalloc.start()
        return super().__enter__()

    def __exit__(self, *exc):
        tracemalloc.stop()
        return super().__exit__(*exc)

    def _pretask(self, key, dsk, state):
        tracemalloc.reset_peak()
        self.before = tracemalloc.get_traced_memory()[0]

    def _posttask(self, key, result, dsk, state, id):
        self.peaks[key] = tracemalloc.get_traced_memory()[1] - self.before


def test_every_pass_writes_each_byte_once_and_reads_it_once(tmp_path, monkeypatch):
    # the pass structure, counted: three stores in the natural order, each written in full
    # once and read in full once, whichever way the tiles' rows go (in place or gathered)
    x = signal(np.random.default_rng(6), 1 << 16, np.complex64)
    counts: dict = {}
    paths: dict = {}
    real_open, real_pwritev, real_preadv = os.open, os.pwritev, os.preadv

    def opened(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        paths[fd] = str(path)
        return fd

    def count(kind, call):
        def counted(fd, buffers, offset, *args):
            done = call(fd, buffers, offset, *args)
            key = (paths[fd], kind)
            counts[key] = counts.get(key, 0) + done
            return done

        return counted

    monkeypatch.setattr(transpose_module.os, "open", opened)
    monkeypatch.setattr(transpose_module.os, "pwritev", count("write", real_pwritev))
    monkeypatch.setattr(transpose_module.os, "preadv", count("read", real_preadv))
    for min_run in (8, 1 << 30):
        monkeypatch.setattr(transpose_module, "MIN_RUN", min_run)
        counts.clear()
        scratch = tmp_path / str(min_run)
        y = F.fft(da.from_array(x, chunks=4096), block_size=8192, memory_limit=0, scratch=scratch)
        with dask.config.set(scheduler="threads", num_workers=2):
            check(y, np.fft.fft(x))
        stores = {path for path, _ in counts}
        assert len(stores) == 3
        assert all(counts[(p, "write")] == counts[(p, "read")] == x.nbytes for p in stores)


def test_twins_of_one_input_computed_together_keep_their_own_stores(tmp_path):
    # the natural and the transposed order (and the inverse) of one input release their
    # stores at different points: sharing a store, one chain deleted it under the other's
    # readers (FileNotFoundError, every time, on the threaded scheduler)
    x = signal(np.random.default_rng(7), 1 << 14, np.complex128)
    X = da.from_array(x, chunks=1 << 11)
    kw = {"block_size": 4096, "memory_limit": 0, "scratch": tmp_path}
    natural, transposed = F.fft(X, **kw), F.fft(X, order="transposed", **kw)
    inverse = F.ifft(X, **kw)
    with dask.config.set(scheduler="threads", num_workers=4):
        got, split, back = dask.compute(natural, transposed, inverse)
    want = np.fft.fft(x)
    check(got, want)
    check(split.swapaxes(0, 1).reshape(-1), want)
    check(back, np.fft.ifft(x))
