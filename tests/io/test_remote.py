"""fsspec sources: exact ranges, and servers that return the wrong bytes are caught."""

from __future__ import annotations

import pickle

import fsspec
import numpy as np
import pytest
from fsspec.implementations.memory import MemoryFileSystem

import dfits
from dfits.io import FsspecSource, open_source
from dfits.io.writer import ImageWriter


@pytest.fixture
def memfile(tmp_path):
    local = tmp_path / "img.fits"
    data = np.arange(60 * 70, dtype=np.float32).reshape(60, 70)
    with ImageWriter(local, data.shape, ">f4", [("BUNIT", "Jy")]) as out:
        out.write(data)
    fs = fsspec.filesystem("memory")
    fs.pipe("/dfits-test/img.fits", local.read_bytes())
    yield "memory://dfits-test/img.fits", data
    fs.rm("/dfits-test/img.fits")


def test_open_url_reads_like_a_local_file(memfile):
    url, data = memfile
    f = dfits.open(url, chunks=(16, 70))
    assert isinstance(f.source, FsspecSource)
    hdu = f[0]
    np.testing.assert_array_equal(hdu.data.compute(), data)
    assert hdu.data.sum().compute() == data.sum(dtype=float)
    np.testing.assert_array_equal(hdu.section[5:9, 10:20], data[5:9, 10:20])
    clone = pickle.loads(pickle.dumps(hdu.data))
    np.testing.assert_array_equal(clone.compute(), data)


class RangeIgnoringFS(MemoryFileSystem):
    """A store that answers every ranged read with the whole object (HTTP 200 instead of 206)."""

    protocol = "rangeless"

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(path.replace("rangeless://", "memory://"))

    def cat_file(self, path, start=None, end=None, **kwargs):
        return super().cat_file(path)


def test_server_ignoring_range_is_reported(memfile):
    url, _ = memfile
    fsspec.register_implementation("rangeless", RangeIgnoringFS, clobber=True)
    src = open_source(url.replace("memory://", "rangeless://"))
    with pytest.raises(dfits.RemoteReadError, match=r"bytes 100\.\.200.*3 attempts"):
        src.read(100, 100)


def test_scan_progress_reports_after_its_delay(tmp_path):
    import io

    from dfits.io.writer import header_bytes
    from dfits.progress import ScanProgress

    blob = header_bytes([("SIMPLE", True), ("BITPIX", 8), ("NAXIS", 0)])
    ext = header_bytes(
        [("XTENSION", "IMAGE"), ("BITPIX", 8), ("NAXIS", 0), ("PCOUNT", 0), ("GCOUNT", 1)]
    )
    fs = fsspec.filesystem("memory")
    fs.pipe("/dfits-test/many.fits", blob + ext * 200)
    out = io.StringIO()
    from dfits.format.layout import scan

    src = open_source("memory://dfits-test/many.fits")
    layout = scan(src.read, src.size, filename=src.url, progress=ScanProgress(0.0, out))
    assert len(layout.hdus) == 201
    text = out.getvalue()
    assert "201 HDUs" in text or "hdus=201" in text
    quiet = io.StringIO()
    scan(src.read, src.size, filename=src.url, progress=ScanProgress(60.0, quiet))
    assert quiet.getvalue() == ""
    assert len(dfits.open("memory://dfits-test/many.fits", progress=False)) == 201
