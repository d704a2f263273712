"""dfits.open of file objects: through their path or URL, or held in memory (BytesIO)."""

from __future__ import annotations

import io
import pickle

import fsspec
import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.io import FsspecSource, LocalSource, MemorySource
from dfits.io.memory import _restore


def _mef() -> bytes:
    rng = np.random.default_rng(5)
    sci = fits.ImageHDU(rng.normal(size=(5, 7)).astype(">f4"), name="SCI")
    ints = fits.ImageHDU(rng.integers(-100, 100, (4, 3)).astype(">i2"), name="INT")
    ints.header["BLANK"] = -100
    ints.header["BSCALE"], ints.header["BZERO"] = 0.5, 3.0
    out = io.BytesIO()
    fits.HDUList([fits.PrimaryHDU(), sci, ints]).writeto(out)
    return out.getvalue()


def _check_equal_astropy(f, blob: bytes) -> None:
    with fits.open(io.BytesIO(blob)) as hl:
        assert len(f) == len(hl)
        for ours, ref in zip(f, hl, strict=True):
            if ref.data is None:
                assert ours.data is None
                continue
            np.testing.assert_array_equal(ours.data.compute(), ref.data)
            np.testing.assert_array_equal(ours.section[1:3], ref.data[1:3])


def test_bytesio_reads_like_astropy():
    blob = _mef()
    stream = io.BytesIO(blob)
    stream.seek(100)  # read whole, whatever the position
    f = dfits.open(stream)
    assert isinstance(f.source, MemorySource)
    assert "BytesIO" in f.filename
    _check_equal_astropy(f, blob)
    # pickles as a key, not as the bytes; in this process the key finds them again
    x = f["SCI"].data
    assert len(pickle.dumps(x)) < len(blob)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)).compute(), x.compute())


def test_in_memory_bytes_elsewhere_are_a_clear_error():
    f = dfits.open(io.BytesIO(_mef()))
    elsewhere = _restore(f.source.path, "a key of another process", f.source.size)
    with pytest.raises(dfits.UnsupportedError, match=r"BytesIO.*only in the process"):
        elsewhere.read(0, 10)


def test_os_and_fsspec_files_are_read_through_their_path(tmp_path):
    blob = _mef()
    path = tmp_path / "mef.fits"
    path.write_bytes(blob)
    with path.open("rb") as fh:
        f = dfits.open(fh)
    assert isinstance(f.source, LocalSource)
    _check_equal_astropy(f, blob)
    fsspec.filesystem("memory").pipe("/dfits-test/fileobj.fits", blob)
    with fsspec.open("memory://dfits-test/fileobj.fits", "rb") as fh:
        g = dfits.open(fh)
    assert isinstance(g.source, FsspecSource)
    _check_equal_astropy(g, blob)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (42, r"cannot open <builtins.int object> \(int\)"),
        (io.StringIO("SIMPLE  =                    T"), r"reads str, not bytes"),
    ],
    ids=["not-a-file", "text-stream"],
)
def test_objects_that_are_not_binary_files_are_refused(obj, message):
    with pytest.raises(dfits.UnsupportedError, match=message):
        dfits.open(obj)


def test_bad_bytes_in_a_file_object_name_it():
    with pytest.raises(dfits.NotFITSError, match=r"BytesIO object.*not a FITS file"):
        dfits.open(io.BytesIO(b"hello, not FITS"))
