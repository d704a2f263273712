"""Servers that ignore Range (``python -m http.server``): small files downloaded, large refused."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import dask
import numpy as np
import pytest
from astropy.io import fits

import dfits
from dfits.errors import RemoteDownloadWarning
from dfits.io import LocalSource
from tests.servers import free_port, wait_for_port

pytest.importorskip("aiohttp")
pytestmark = [pytest.mark.network, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``python -m http.server`` on 127.0.0.1 over a folder with a scaled cube and a table."""
    root = tmp_path_factory.mktemp("plain")
    rng = np.random.default_rng(51)
    cube = rng.integers(-3000, 3000, (20, 30, 40)).astype(np.int16)
    prim = fits.PrimaryHDU(cube)
    prim.header["BSCALE"], prim.header["BZERO"], prim.header["BLANK"] = 0.5, 10.0, -3000
    table = fits.BinTableHDU.from_columns(
        [
            fits.Column("a", "3E", array=rng.normal(size=(50, 3)).astype(np.float32)),
            fits.Column("b", "J", array=np.arange(50, dtype=np.int32), bzero=2**31),
            fits.Column("s", "8A", array=[f"row{i}" for i in range(50)]),
        ],
        name="CAT",
    )
    fits.HDUList([prim, table]).writeto(root / "cube.fits")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}", root
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture
def cache(tmp_path):
    folder = tmp_path / "cache"
    with dask.config.set({"dfits.remote.cache_dir": str(folder)}):
        yield folder


def test_small_file_is_downloaded_once_and_read_like_astropy(served, cache):
    base, root = served
    with pytest.warns(RemoteDownloadWarning) as caught:
        f = dfits.open(f"{base}/cube.fits", chunks=(5, 30, 40))
    assert len(caught) == 1
    size = (root / "cube.fits").stat().st_size
    text = str(caught[0].message)
    for part in (f"{base}/cube.fits", f"{size} bytes", "nginx", "download_limit"):
        assert part in text
    assert caught[0].filename == __file__  # the warning points at the caller
    assert isinstance(f.source, LocalSource)
    assert f.filename == f"{base}/cube.fits"
    assert [p.name for p in cache.iterdir()] == [os.path.basename(f.source.path)]
    with fits.open(root / "cube.fits") as ref:
        expected, table = ref[0].data, ref[1].data
        np.testing.assert_array_equal(f[0].data.compute(), expected)
        np.testing.assert_array_equal(f[0].section[3, 4:9, ::7], expected[3, 4:9, ::7])
        for name in ("a", "b", "s"):
            np.testing.assert_array_equal(f["CAT"].column(name).compute(), table[name])
    # tasks pickle and run in other processes, reading the cached copy
    clone = pickle.loads(pickle.dumps(f[0].data))
    got = clone.compute(scheduler="processes", num_workers=2)
    np.testing.assert_array_equal(got, expected)


def test_file_over_the_limit_is_refused_with_the_fix(served, cache):
    base, root = served
    size = (root / "cube.fits").stat().st_size
    with (
        dask.config.set({"dfits.remote.download_limit": size - 1}),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", RemoteDownloadWarning)
        with pytest.raises(dfits.RemoteReadError) as info:
            dfits.open(f"{base}/cube.fits")
    text = str(info.value)
    for part in ("ignores Range", f"{size} bytes", "nginx", "dfits.remote.download_limit"):
        assert part in text
    assert not cache.exists() or not any(cache.iterdir())  # nothing downloaded, nothing left


def test_download_over_the_limit_leaves_no_partial_file(served, cache):
    """A file of unknown size stops as soon as the body passes the limit; no file stays."""
    from dfits.io.download import download
    from dfits.io.remote import FsspecSource

    base, _ = served
    src = FsspecSource.open(f"{base}/cube.fits")
    unknown = FsspecSource(src.url, src.storage_options, None, None)
    with (
        dask.config.set({"dfits.remote.download_limit": 5000}),
        pytest.raises(dfits.RemoteReadError, match="more than the 5000 bytes"),
    ):
        download(unknown)
    assert list(cache.iterdir()) == []
    # a size other than the one reported at open is an error, and leaves nothing either
    wrong = FsspecSource(src.url, src.storage_options, src.size + 2880, None)
    with pytest.raises(dfits.RemoteReadError, match="not the"):
        download(wrong)
    assert list(cache.iterdir()) == []
