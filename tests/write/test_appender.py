"""dfits.append: HDUs added in place; the old HDUs never re-read or rewritten; faults roll back."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.write.appender import journal_path
from tests.processes import kill_when_started


def _fitsverify(path):
    tool = shutil.which("fitsverify")
    if tool is None:
        pytest.skip("fitsverify not installed (apt-get install fitsverify)")
    out = subprocess.run([tool, "-q", str(path)], capture_output=True, text=True, check=False)
    assert "verification OK" in out.stdout, out.stdout + out.stderr


@pytest.fixture
def mef(tmp_path):
    """A file astropy wrote: a primary image and one extension."""
    path = tmp_path / "m.fits"
    hl = fits.HDUList([fits.PrimaryHDU(np.arange(6, dtype="i2").reshape(2, 3))])
    hl.append(fits.ImageHDU(np.linspace(0, 1, 10).astype("f4"), name="OLD"))
    hl.writeto(path, checksum=True)
    return path


def test_appended_hdus_read_back_in_astropy_and_dfits(mef):
    old = mef.read_bytes()
    values = np.random.default_rng(2).standard_normal((9, 7))
    dfits.append(mef, da.from_array(values, chunks=(4, 3)), header={"EXTNAME": "NEW"})
    dfits.append(mef, [np.arange(5, dtype="u2"), np.ones((2, 2), "i8")])
    assert mef.read_bytes()[: len(old)] == old
    with fits.open(mef, checksum=True) as hl:
        assert [h.name for h in hl] == ["PRIMARY", "OLD", "NEW", "", ""]
        np.testing.assert_array_equal(hl["NEW"].data, values)
        np.testing.assert_array_equal(hl[3].data, np.arange(5, dtype="u2"))
        np.testing.assert_array_equal(hl[4].data, np.ones((2, 2), "i8"))
    f = dfits.open(mef)
    np.testing.assert_array_equal(f["NEW"].data.compute(), values)
    assert [h.checksum.status for h in dfits.verify_checksum(mef)] == ["ok"] * 5
    assert not os.path.exists(journal_path(str(mef)))
    _fitsverify(mef)


def test_appending_to_a_missing_file_writes_it(tmp_path):
    path = tmp_path / "new.fits"
    dfits.append(path, np.ones((3, 3), "f4"))
    dfits.append(path, np.zeros(4, "i4"))
    with fits.open(path, checksum=True) as hl:
        assert len(hl) == 2
        np.testing.assert_array_equal(hl[0].data, np.ones((3, 3), "f4"))
        np.testing.assert_array_equal(hl[1].data, np.zeros(4, "i4"))


def test_named_dataarray_gets_its_extname(mef):
    xr = pytest.importorskip("xarray")
    dfits.append(mef, xr.DataArray(np.ones((2, 2)), dims=("y", "x"), name="flux"))
    assert fits.getheader(mef, 2)["EXTNAME"] == "FLUX"


def _io_of_one_append(path: Path, monkeypatch) -> tuple[int, list[tuple[int, int]]]:
    """Bytes read from ``path`` and the ``(offset, n)`` written to it by one append."""
    read, written = [0], []
    real_pread, real_read, real_pwrite = os.pread, os.read, os.pwrite
    target = os.stat(path).st_ino

    def mine(fd):
        return os.fstat(fd).st_ino == target

    def pread(fd, n, offset):
        out = real_pread(fd, n, offset)
        read[0] += len(out) if mine(fd) else 0
        return out

    def read_(fd, n):
        out = real_read(fd, n)
        read[0] += len(out) if mine(fd) else 0
        return out

    def pwrite(fd, data, offset):
        n = real_pwrite(fd, data, offset)
        if mine(fd):
            written.append((offset, n))
        return n

    with monkeypatch.context() as m:
        m.setattr(os, "pread", pread)
        m.setattr(os, "read", read_)
        m.setattr(os, "pwrite", pwrite)
        dfits.append(path, da.arange(4000.0, chunks=1000).reshape(40, 100))
    return read[0], written


@pytest.mark.parametrize("count", [1, 300])
def test_append_neither_reads_nor_rewrites_earlier_hdus(tmp_path, monkeypatch, count):
    path = tmp_path / "many.fits"
    hdus = [fits.PrimaryHDU()] + [fits.ImageHDU(np.full(3, i, "i2")) for i in range(count)]
    fits.HDUList(hdus).writeto(path)
    size = path.stat().st_size
    nread, written = _io_of_one_append(path, monkeypatch)
    assert nread == 8  # the SIMPLE card's keyword, whatever the file holds
    assert min(offset for offset, _ in written) == size
    # one header block and the data, each byte once: nothing of the old HDUs
    assert sum(n for _, n in written) == 2880 + 4000 * 8
    assert len(fits.open(path)) == count + 2


def test_not_fits_refused_unchanged(tmp_path):
    path = tmp_path / "x.fits"
    path.write_bytes(b"NOT FITS" * 360)
    with pytest.raises(dfits.NotFITSError, match="not a FITS file"):
        dfits.append(path, np.ones(3))
    assert path.read_bytes() == b"NOT FITS" * 360


def test_unpadded_file_refused_unchanged(mef):
    blob = mef.read_bytes()[:-100]
    mef.write_bytes(blob)
    with pytest.raises(dfits.HeaderError, match="not a multiple of 2880"):
        dfits.append(mef, np.ones(3))
    assert mef.read_bytes() == blob


def test_unstorable_dtype_touches_nothing(mef):
    old = mef.read_bytes()
    with pytest.raises(dfits.UnsupportedError, match="complex"):
        dfits.append(mef, np.zeros(3, complex))
    assert mef.read_bytes() == old
    assert not os.path.exists(journal_path(str(mef)))


def test_missing_directory(tmp_path):
    with pytest.raises(dfits.MissingFileError, match="no directory"):
        dfits.append(tmp_path / "nope" / "x.fits", np.ones(3))


def test_failed_chunk_cuts_the_file_back(mef):
    old = mef.read_bytes()

    def boom(b, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            raise RuntimeError("chunk failed")
        return b

    x = da.ones((40, 10), chunks=(10, 10)).map_blocks(boom, dtype=float)
    with pytest.raises(RuntimeError, match="chunk failed"):
        dfits.append(mef, x)
    assert mef.read_bytes() == old
    assert not os.path.exists(journal_path(str(mef)))


def test_disk_full_at_byte_n(mef, monkeypatch):
    old = mef.read_bytes()
    real = os.pwrite
    limit = len(old) + 2880 + 1000

    def pwrite(fd, data, offset):
        if offset + len(data) > limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    with pytest.raises(OSError, match="No space") as err:
        dfits.append(mef, da.ones((100, 100), chunks=(10, 100)))
    assert err.value.errno == errno.ENOSPC
    assert mef.read_bytes() == old


_KILLED = """
import sys, dask.array as da, dfits
def stuck(b, block_info=None):
    if block_info[0]["chunk-location"][0] == 3:
        print("started", flush=True)
        sys.stdin.read()  # blocks until the test kills this process: no timing involved
    return b
x = da.ones((80, 10), chunks=(10, 10)).map_blocks(stuck, dtype=float)
dfits.append(sys.argv[1], x, fsync=False)
"""


def test_killed_appender_is_rolled_back_by_the_next_append(mef):
    old = mef.read_bytes()
    kill_when_started(_KILLED, str(mef))
    # the killed append's blocks: zeros after the last HDU until headers would have come
    blob = mef.read_bytes()
    assert blob[: len(old)] == old
    assert len(blob) > len(old)
    assert not blob[len(old) : len(old) + 2880].strip(b"\0")
    assert os.path.exists(journal_path(str(mef)))
    with pytest.warns(dfits.DfitsWarning, match="after the last HDU"):
        assert len(dfits.open(mef)) == 2  # the old HDUs stay readable meanwhile
    dfits.append(mef, np.arange(3, dtype="i4"))
    with fits.open(mef, checksum=True) as hl:
        assert len(hl) == 3
        np.testing.assert_array_equal(hl[2].data, np.arange(3, dtype="i4"))
    assert mef.read_bytes()[: len(old)] == old
    assert os.path.getsize(mef) == len(old) + 2 * 2880
    assert not os.path.exists(journal_path(str(mef)))


def test_concurrent_appenders_take_turns(mef):
    errors = []

    def work(k):
        try:
            for i in range(4):
                dfits.append(mef, np.full(3, 10 * k + i, "i2"), fsync=False)
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with fits.open(mef, checksum=True) as hl:
        got = sorted(int(h.data[0]) for h in hl[2:])
    assert got == [10, 11, 12, 13, 20, 21, 22, 23]
    assert all(h.ok for h in dfits.verify_checksum(mef))


def test_busy_file_raises_after_wait(mef):
    old = mef.read_bytes()
    with open(mef, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        with pytest.raises(dfits.FileBusyError, match="another process is appending"):
            dfits.append(mef, np.ones(3), wait=0.1)
    assert mef.read_bytes() == old
