"""Faults while writing tile-compressed files: the target is the old file or absent, and no
temporary or scratch file survives a clean failure."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.io import rangelock
from dfits.write import tilewriter
from dfits.write.compressed import write_compressed
from dfits.write.images import ImageItem
from tests.processes import kill_when_started

OLD = b"old file, must survive"


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".dfits-part")]


@pytest.fixture
def old(tmp_path):
    path = tmp_path / "out.fits"
    path.write_bytes(OLD)
    return path


def _ramp(shape=(40, 30), chunks=(10, 30)):
    return da.arange(np.prod(shape), chunks=-1).reshape(shape).rechunk(chunks).astype("i4")


def test_failed_chunk_leaves_old_file_and_no_scratch(old):
    def boom(b, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            raise RuntimeError("chunk failed")
        return b

    x = _ramp().map_blocks(boom, dtype="i4")
    with pytest.raises(RuntimeError, match="chunk failed"):
        dfits.to_fits(x, old, compression="RICE_1", overwrite=True)
    assert old.read_bytes() == OLD
    assert not _leftovers(old.parent)


@pytest.mark.parametrize("where", ["scratch", "heap copy"])
def test_disk_full(old, monkeypatch, where):
    """ENOSPC while a chunk writes its scratch heap, or while the assembly copies it."""
    if where == "scratch":
        real = os.pwrite

        def pwrite(fd, data, offset):
            if "-1-2.dfits-part" in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(fd, data, offset)

        monkeypatch.setattr(os, "pwrite", pwrite)
    else:

        def copy_file_range(*args):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "copy_file_range", copy_file_range)
    with pytest.raises(OSError, match="No space") as err:
        dfits.to_fits(_ramp(), old, compression="GZIP_2", overwrite=True)
    assert err.value.errno == errno.ENOSPC
    assert old.read_bytes() == OLD
    assert not _leftovers(old.parent)


def test_copy_falls_back_where_the_kernel_cannot(tmp_path, monkeypatch):
    def copy_file_range(*args):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", copy_file_range)
    path = tmp_path / "x.fits"
    x = _ramp()
    dfits.to_fits(x, path, compression="RICE_1")
    np.testing.assert_array_equal(dfits.open(path)[1].data.compute(), x.compute())


def test_retried_chunk_and_late_straggler(tmp_path):
    """A retried chunk rewrites its scratch whole; one that runs after the write was
    abandoned removes its own scratch file."""
    path = tmp_path / "x.fits"
    x = _ramp()
    graph = write_compressed(
        [ImageItem(x)], path, compression="RICE_1", compute=False, overwrite=True
    )
    graph.compute()
    first = path.read_bytes()
    graph.compute()  # every task again, as retries would: the same bytes
    assert path.read_bytes() == first
    p = tilewriter.plan(str(tmp_path / "y.fits"), graph_plan_hdus(x), overwrite=False)
    tilewriter.create(p)
    block = x.blocks[1].compute()
    a = tilewriter.write_chunk(p, 1, 1, block, (10, 0))
    b = tilewriter.write_chunk(p, 1, 1, block, (10, 0))
    assert (a.nbytes, a.checksum) == (b.nbytes, b.checksum)
    tilewriter.abort(p)
    with pytest.raises(FileNotFoundError, match="abandoned"):
        tilewriter.write_chunk(p, 1, 2, x.blocks[2].compute(), (20, 0))
    assert not _leftovers(tmp_path)


@pytest.mark.skipif(not rangelock.supported(), reason="no OFD locks on this platform")
def test_abort_waits_for_the_chunk_task_in_flight(tmp_path, monkeypatch):
    """dask returns at the first failed task while others still run: abort returns only
    once those have finished, so no scratch file is left, nor made after it returns."""
    x = _ramp()
    p = tilewriter.plan(str(tmp_path / "y.fits"), graph_plan_hdus(x), overwrite=False)
    tilewriter.create(p)
    started, release = threading.Event(), threading.Event()
    encode = tilewriter.int_batches  # the ramp is int: the integer tiles kernel

    def slow(*args):
        started.set()
        release.wait(5)
        yield from encode(*args)

    monkeypatch.setattr(tilewriter, "int_batches", slow)
    outcome: list[BaseException] = []

    def task():
        try:
            tilewriter.write_chunk(p, 1, 0, x.blocks[0].compute(), (0, 0))
        except BaseException as err:
            outcome.append(err)

    worker = threading.Thread(target=task)
    worker.start()
    assert started.wait(5)
    assert _leftovers(tmp_path)  # the task's scratch file, being written
    threading.Timer(0.3, release.set).start()
    tilewriter.abort(p)  # waits for the task: it finds the file gone and removes its own
    assert release.is_set()
    assert not _leftovers(tmp_path)
    worker.join(5)
    assert isinstance(outcome[0], FileNotFoundError)
    assert not _leftovers(tmp_path)


def graph_plan_hdus(x):
    from dfits.write.compressed import _hdus

    hdus, _ = _hdus([ImageItem(x)], "y.fits", True, {"compression": "RICE_1"})
    return hdus


# Chunk 3 waits until another chunk's scratch heap exists, says so, and blocks until killed.
_KILLED = """
import glob, os, sys, time, dask.array as da, dfits
def stuck(b, block_info=None):
    if block_info[0]["chunk-location"][0] == 3:
        folder = os.path.dirname(os.path.abspath(sys.argv[1]))
        deadline = time.monotonic() + 120
        while not glob.glob(os.path.join(folder, ".*-1-0.dfits-part")):
            assert time.monotonic() < deadline, "no scratch file"
            time.sleep(0.01)
        print("started", flush=True)
        sys.stdin.read()
    return b
x = da.ones((80, 10), chunks=(10, 10), dtype="i2").map_blocks(stuck, dtype="i2")
dfits.to_fits(x, sys.argv[1], overwrite=True, compression="RICE_1")
"""


def test_killed_writer_leaves_the_old_file(old):
    kill_when_started(_KILLED, str(old))
    assert old.read_bytes() == OLD
    assert len(_leftovers(old.parent)) >= 2  # the temporary file and a scratch heap...
    dfits.to_fits(np.zeros((3, 3)), old, overwrite=True, compression="GZIP_1")
    assert not _leftovers(old.parent)  # ...removed by the next write to the target


def test_small_buffer_flushes_often(tmp_path, monkeypatch):
    """A chunk's compressed bytes go to its scratch file whenever BUFFER fill up: the sums of
    the pieces, placed at their offsets, still make the right CHECKSUM."""
    monkeypatch.setattr(tilewriter, "BUFFER", 301)
    x = _ramp((60, 37), (20, 37)).astype("f4") * 0.37
    path = tmp_path / "x.fits"
    dfits.to_fits(x, path, compression="GZIP_1", quantize_level=0)
    np.testing.assert_array_equal(dfits.open(path)[1].data.compute(), x.compute())
    assert all(h.checksum.status == "ok" for h in dfits.verify_checksum(path))


def test_two_writers_one_path(tmp_path):
    import threading

    path = tmp_path / "both.fits"
    values = {k: np.full((50, 50), k, "i2") for k in (1, 2)}
    errors = []

    def write(k):
        try:
            dfits.to_fits(values[k], path, compression="RICE_1", overwrite=True)
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = dfits.open(path)[1].data.compute()
    assert any(np.array_equal(got, v) for v in values.values())  # one whole file, not a mix
    assert not _leftovers(tmp_path)
