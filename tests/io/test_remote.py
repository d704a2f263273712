"""fsspec sources: exact ranges, and servers that return the wrong bytes are caught."""

from __future__ import annotations

import pickle
import re

import dask
import dask.array as da
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
    with pytest.raises(dfits.RemoteReadError, match=r"bytes 100\.\.200.*ignores Range"):
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


@pytest.fixture(scope="module")
def remote_cube(tmp_path_factory):
    local = tmp_path_factory.mktemp("rc") / "cube.fits"
    data = np.arange(6 * 7 * 8, dtype=np.int16).reshape(6, 7, 8)
    with ImageWriter(local, data.shape, ">i2", [("BSCALE", 2.0), ("BZERO", 1.0)]) as out:
        out.write(data)
    fs = fsspec.filesystem("memory")
    fs.pipe("/dfits-test/cube.fits", local.read_bytes())
    yield "memory://dfits-test/cube.fits", data * 2.0 + 1.0
    fs.rm("/dfits-test/cube.fits")


def _basic_index(shape):
    from hypothesis import strategies as st

    def item(n):
        return st.one_of(
            st.integers(-n, n - 1),
            st.builds(
                slice,
                st.none() | st.integers(-n - 1, n + 1),
                st.none() | st.integers(-n - 1, n + 1),
                st.none() | st.integers(-3, 3).filter(bool),
            ),
        )

    return st.tuples(*(item(n) for n in shape))


def test_remote_slices_of_chunks_read_only_their_region(remote_cube):
    from hypothesis import given, settings

    url, ref = remote_cube

    @settings(max_examples=60, deadline=None)
    @given(index=_basic_index(ref.shape), chunks=st_chunks())
    def check(index, chunks):
        hdu = dfits.open(url, chunks=chunks)[0]
        # against dask over numpy: dask's slicing differs from numpy's in corners
        # (``x[-9::-1]`` of 8 elements is everything reversed, numpy gives nothing)
        expected = da.from_array(ref, chunks=chunks)[index].compute()
        np.testing.assert_array_equal(hdu.data[index].compute(), expected)
        np.testing.assert_array_equal(hdu.section[index], ref[index])
        if np.ndim(expected):
            assert hdu.data[index].sum().compute() == expected.sum()

    check()


def st_chunks():
    from hypothesis import strategies as st

    return st.sampled_from([(6, 7, 8), (2, 7, 8), (1, 3, 8), (4, 2, 3)])


@pytest.mark.parametrize(
    ("url", "error", "message"),
    [
        ("nosuchproto://x/y.fits", dfits.UnsupportedError, r"nosuchproto://x/y\.fits.*Protocol"),
        ("memory://", dfits.MissingFileError, r"a directory"),
        ("memory://dfits-test/nothere.fits", dfits.MissingFileError, r"nothere\.fits.*no such"),
    ],
)
def test_bad_urls_are_dfits_errors_naming_the_url(url, error, message):
    with pytest.raises(error, match=message):
        dfits.open(url)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:9/x.fits", "http://127.0.0.1:9/x.fits"])
def test_unreachable_url_is_a_remote_read_error_naming_it(url):
    # port 9 (discard) is closed on the loopback: the connection is refused at once
    with (
        dask.config.set({"dfits.remote.retries": 1}),
        pytest.raises(dfits.RemoteReadError, match=re.escape(repr(url))),
    ):
        dfits.open(url)
