"""Faults while writing: the target is the old file or absent, never half-written."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.errors import MissingFileError, OutputExistsError
from tests.processes import kill_when_started

OLD = b"old file, must survive"


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".dfits-part")]


@pytest.fixture
def old(tmp_path):
    path = tmp_path / "out.fits"
    path.write_bytes(OLD)
    return path


def test_missing_directory(tmp_path):
    with pytest.raises(MissingFileError, match="no directory"):
        dfits.to_fits(np.zeros(3), tmp_path / "nope" / "x.fits")


def test_refuses_to_overwrite(old):
    with pytest.raises(OutputExistsError, match="overwrite=True"):
        dfits.to_fits(np.zeros(3), old)
    assert old.read_bytes() == OLD


def test_unstorable_dtype_writes_nothing(old):
    with pytest.raises(dfits.UnsupportedError, match="complex"):
        dfits.to_fits(np.zeros(3, complex), old, overwrite=True)
    assert old.read_bytes() == OLD
    assert not _leftovers(old.parent)


def test_contradicting_header_writes_nothing(old):
    with pytest.raises(dfits.HeaderError, match="NAXIS1"):
        dfits.to_fits(np.zeros((2, 3)), old, header=[("NAXIS1", 4)], overwrite=True)
    assert old.read_bytes() == OLD


def test_disk_full_at_byte_n(old, monkeypatch):
    real = os.pwrite
    limit = 20_000

    def pwrite(fd, data, offset):
        if offset + len(data) > limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    x = da.ones((100, 100), chunks=(10, 100))
    with pytest.raises(OSError, match="No space") as err:
        dfits.to_fits(x, old, overwrite=True)
    assert err.value.errno == errno.ENOSPC
    assert old.read_bytes() == OLD
    assert not _leftovers(old.parent)


def test_failed_chunk(old):
    def boom(block):
        raise RuntimeError("chunk failed")

    x = da.ones((40, 10), chunks=(10, 10)).map_blocks(
        lambda b, block_info=None: boom(b) if block_info[0]["chunk-location"][0] == 2 else b,
        dtype=float,
    )
    with pytest.raises(RuntimeError, match="chunk failed"):
        dfits.to_fits(x, old, overwrite=True)
    assert old.read_bytes() == OLD
    assert not _leftovers(old.parent)


def test_retried_block_writes_the_same_bytes(tmp_path):
    x = da.arange(1000, chunks=100).reshape(10, 100).astype("i2")
    path = tmp_path / "a.fits"
    graph = dfits.to_fits(x, path, compute=False)
    dask.compute(graph)  # and again, as a retry would: same result
    first = path.read_bytes()
    dfits.to_fits(x, path, overwrite=True)
    assert path.read_bytes() == first


# Chunk 3 waits for the temporary file (made by a task of its own, which it does not depend
# on: under load it may run first), says so, and blocks on stdin until killed: no sleeps.
_KILLED = """
import glob, os, sys, time, dask.array as da, dfits
def stuck(b, block_info=None):
    if block_info[0]["chunk-location"][0] == 3:
        folder = os.path.dirname(os.path.abspath(sys.argv[1]))
        deadline = time.monotonic() + 120
        while not glob.glob(os.path.join(folder, ".*.dfits-part")):
            assert time.monotonic() < deadline, "no temporary file"
            time.sleep(0.01)
        print("started", flush=True)
        sys.stdin.read()
    return b
x = da.ones((80, 10), chunks=(10, 10)).map_blocks(stuck, dtype=float)
dfits.to_fits(x, sys.argv[1], overwrite=True)
"""


def test_killed_writer_leaves_the_old_file(old):
    kill_when_started(_KILLED, str(old))
    assert old.read_bytes() == OLD
    assert len(_leftovers(old.parent)) == 1  # a killed process cannot clean up...
    dfits.to_fits(np.zeros(3), old, overwrite=True)
    assert not _leftovers(old.parent)  # ...the next write to the target does


def test_two_writers_one_path(tmp_path):
    path = tmp_path / "both.fits"
    values = {1: np.full((50, 50), 1.0), 2: np.full((50, 50), 2.0)}
    errors = []

    def write(k):
        try:
            dfits.to_fits(da.from_array(values[k], chunks=10), path, overwrite=True)
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with fits.open(path, checksum=True) as hl:
        data = hl[0].data
        assert any(np.array_equal(data, v) for v in values.values())
    assert not _leftovers(tmp_path)


def test_two_writers_without_overwrite_one_wins(tmp_path):
    path = tmp_path / "one.fits"
    a = dfits.to_fits(np.ones(3), path, compute=False)
    b = dfits.to_fits(np.zeros(3), path, compute=False)
    a.compute()
    with pytest.raises(OutputExistsError, match="appeared while writing"):
        b.compute()
    np.testing.assert_array_equal(fits.getdata(path), np.ones(3))
    assert not _leftovers(tmp_path)


@pytest.mark.parametrize("durable", [True, False], ids=["fsync", "no-fsync"])
def test_fsync_flushes_only_when_asked(tmp_path, monkeypatch, durable):
    calls = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        spy = lambda fd, real=real, name=name: calls.append(name) or real(fd)  # noqa: E731
        monkeypatch.setattr(os, name, spy)
    path = tmp_path / "s.fits"
    x = da.arange(600.0, chunks=100).reshape(20, 30)
    dfits.to_fits(x, path, fsync=durable)
    assert sorted(calls) == (["fdatasync", "fsync"] if durable else [])
    np.testing.assert_array_equal(fits.getdata(path), x.compute())
    assert all(h.ok for h in dfits.verify_checksum(path))


def test_blocks_bigger_than_the_buffer_reuse_it(tmp_path, monkeypatch):
    from dfits.write import fitswriter

    monkeypatch.setattr(fitswriter, "BUFFER", 64)
    monkeypatch.setattr(fitswriter, "_local", threading.local())
    values = np.random.default_rng(1).standard_normal((9, 7, 5))
    path = tmp_path / "b.fits"
    with dask.config.set(scheduler="threads", num_workers=2):
        dfits.to_fits(da.from_array(values, chunks=(2, 7, 3)), path)
    np.testing.assert_array_equal(fits.getdata(path), values)
    assert all(h.ok for h in dfits.verify_checksum(path))
