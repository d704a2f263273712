"""Remote files on real servers over loopback: nginx, a scripted faulty server and moto S3."""

from __future__ import annotations

import os
import pickle
import time

import dask
import dask.array as da
import numpy as np
import pytest
from astropy.io import fits

import dfits
from tests.servers import MotoS3, Nginx, ScriptedServer

pytest.importorskip("aiohttp")
pytestmark = [pytest.mark.network, pytest.mark.timeout(120)]

CUBE_SHAPE = (100, 64, 64)  # 16 KiB planes


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(5)
    cube = rng.integers(-3000, 3000, CUBE_SHAPE).astype(np.int16)
    cube[3, 4, 5] = -32768
    hdu = fits.PrimaryHDU(cube)
    hdu.header["BSCALE"] = 0.5
    hdu.header["BZERO"] = 10.0
    hdu.header["BLANK"] = -32768
    hdu.writeto(root / "cube.fits")
    many = fits.HDUList(
        [fits.PrimaryHDU()]
        + [fits.ImageHDU(np.full((8, 8), i, np.float32), name=f"E{i}") for i in range(60)]
    )
    many.writeto(root / "many.fits")
    return root


@pytest.fixture(scope="module", params=["nginx", "python"])
def http(request, files, tmp_path_factory):
    if request.param == "nginx":
        if not Nginx.available():
            pytest.skip("nginx is not installed (./run test installs it where apt-get works)")
        server = Nginx(files, tmp_path_factory.mktemp("nginx"))
    else:
        server = ScriptedServer(files)
    with server:
        yield server


def _expected(path):
    with fits.open(path) as hl:
        return [h.data for h in hl]


def test_http_file_reads_like_the_local_file(http, files):
    url = f"{http.url}/cube.fits"
    expected = _expected(files / "cube.fits")[0]
    f = dfits.open(url, chunks=(25, 64, 64))
    hdu = f[0]
    assert hdu.dtype == expected.dtype
    np.testing.assert_array_equal(hdu.data.compute(), expected)
    total = float(da.nansum(hdu.data).compute())
    assert total == pytest.approx(np.nansum(expected, dtype=float))
    np.testing.assert_array_equal(hdu.section[7, 10:20, 30:41], expected[7, 10:20, 30:41])
    np.testing.assert_array_equal(hdu.section[:, 33, 9], expected[:, 33, 9])
    np.testing.assert_array_equal(hdu.data[50:60, ::3, 5].compute(), expected[50:60, ::3, 5])
    clone = pickle.loads(pickle.dumps(hdu.data))
    np.testing.assert_array_equal(clone[::7].compute(), expected[::7])


def test_http_headers_take_a_few_requests(http, files):
    before = len(http.gets("many.fits"))
    f = dfits.open(f"{http.url}/many.fits")
    assert len(f) == 61
    assert [h.name for h in f][1:4] == ["E0", "E1", "E2"]
    expected = _expected(files / "many.fits")
    np.testing.assert_array_equal(f["E42"].data.compute(), expected[43])
    scan = len(http.gets("many.fits")) - before - 1  # the last GET read E42's data
    assert 1 <= scan <= 3, http.gets("many.fits")


def test_http_spectrum_requests_follow_runs_not_bytes(http, files):
    url = f"{http.url}/cube.fits"
    expected = _expected(files / "cube.fits")[0]
    hdu = dfits.open(url)[0]
    multi = isinstance(http, Nginx)
    # The default gap (256 KiB) > the 16 KiB planes, but a part of a multi-range request costs
    # 1/64 of a request: nginx gets the 100 runs of 2 bytes in 2 requests, never the 1.6 MB
    # between them. The Python server refuses multi-range requests (once per process, then
    # it is known): there the whole spectrum is one request.
    if not multi:
        hdu.section[:, 21, 30]  # the refusal, if this process has not met it yet
    before = len(http.gets("cube.fits"))
    np.testing.assert_array_equal(hdu.section[:, 20, 30], expected[:, 20, 30])
    got = http.gets("cube.fits")[before:]
    if multi:
        assert [r.status for r in got] == [206, 206]
        assert sum(r.sent for r in got) < 100 * 200
    else:
        assert len(got) == 1
    # A gap smaller than a plane: 100 runs of 2 bytes. nginx answers multi-range requests
    # (64 ranges each): 2 requests. The Python server does not: one refused multi-range
    # request (answered 200, body not read), then one request per channel. Either way an
    # aperture of 10 rows is still one range per channel (rows coalesced), never 100 x 10.
    with dask.config.set({"dfits.remote.gap": 1024}):
        hdu = dfits.open(url)[0]
        before = len(http.gets("cube.fits"))
        np.testing.assert_array_equal(hdu.section[:, 20, 30], expected[:, 20, 30])
        got = http.gets("cube.fits")[before:]
        if multi:
            assert [r.status for r in got] == [206, 206]
            assert sum(r.sent for r in got) < 100 * 200  # 2 bytes a part, plus part headers
        else:
            refused = [r for r in got if "," in r.range]
            assert len(refused) <= 2  # both batches may be in flight before one is refused
            assert {r.status for r in refused} <= {200}
            singles = [r for r in got if "," not in r.range]
            assert len(singles) == 100
            assert sum(r.sent for r in singles) == 200
        before = len(http.gets("cube.fits"))
        spec = hdu.data[:, 10:20, 30:40].sum(axis=(1, 2)).compute()
        np.testing.assert_allclose(spec, np.nansum(expected[:, 10:20, 30:40], axis=(1, 2)))
        got = http.gets("cube.fits")[before:]
        assert len(got) == (2 if multi else 100)


def test_http_file_changed_after_open_is_an_error(http, tmp_path):
    path = http.root / "changing.fits"
    fits.PrimaryHDU(np.arange(100, dtype=np.float32)).writeto(path, overwrite=True)
    try:
        hdu = dfits.open(f"{http.url}/changing.fits")[0]
        np.testing.assert_array_equal(hdu.section[:10], np.arange(10))
        time.sleep(1.1)  # ETags built from whole-second mtimes (nginx) must change
        fits.PrimaryHDU(np.arange(100, dtype=np.float32) * 2).writeto(path, overwrite=True)
        os.utime(path)
        with pytest.raises(dfits.FileChangedError, match=r"changing\.fits.*changed"):
            hdu.data.compute()
    finally:
        path.unlink()


def test_missing_url_names_the_url(http):
    with pytest.raises(FileNotFoundError, match=r"nothere\.fits"):
        dfits.open(f"{http.url}/nothere.fits")


# -- a server that misbehaves on purpose ----------------------------------------------------
@pytest.fixture
def faulty(files):
    with ScriptedServer(files) as server:
        yield server


def _source(server, name="cube.fits", **settings):
    with dask.config.set({f"dfits.remote.{k}": v for k, v in settings.items()}):
        return dfits.open(f"{server.url}/{name}").source


def test_transient_statuses_and_resets_are_retried(faulty, files):
    src = _source(faulty)
    data = (files / "cube.fits").read_bytes()
    faulty.faults = [503, 429, "reset", "short"]
    assert src.read(5000, 3000) == data[5000:8000]
    assert faulty.faults == []
    # open's header read, the four failures, the good answer (aiohttp itself may retry a
    # reset on a reused connection once, which is why 4 faults fit in 4 attempts)
    assert len(faulty.gets("cube.fits")) == 6


def test_persistent_failure_names_url_range_and_attempts(faulty):
    src = _source(faulty, retries=3)
    faulty.faults = [503] * 3
    with pytest.raises(dfits.RemoteReadError) as info:
        src.read(5000, 3000)
    text = str(info.value)
    assert f"{faulty.url}/cube.fits" in text
    assert "bytes 5000..8000" in text
    assert "after 3 attempts" in text
    assert text.count("503") == 3


def test_short_bodies_are_never_returned(faulty):
    src = _source(faulty, retries=2)
    faulty.faults = ["short", "short"]
    with pytest.raises(dfits.RemoteReadError, match=r"bytes 0\.\.20000 failed after 2 attempts"):
        src.read(0, 20000)


def test_server_ignoring_range_fails_at_once(faulty):
    src = _source(faulty, retries=4)
    faulty.ignore_range = True
    before = len(faulty.gets("cube.fits"))
    with pytest.raises(dfits.RemoteReadError, match="ignores Range"):
        src.read(100000, 100)
    assert len(faulty.gets("cube.fits")) - before == 1  # not retried: it would only repeat


def test_stalled_server_times_out(faulty):
    src = _source(faulty, retries=2, timeout=0.5)
    faulty.stall_seconds = 5
    faulty.faults = ["stall", "stall"]
    t0 = time.monotonic()
    with pytest.raises(dfits.RemoteReadError, match="after 2 attempts"):
        src.read(0, 100)
    assert time.monotonic() - t0 < 4


def test_unreachable_server_is_a_dfits_error():
    from tests.servers import free_port

    with (
        dask.config.set({"dfits.remote.retries": 2}),
        pytest.raises(dfits.RemoteReadError, match=r"127\.0\.0\.1.*cannot stat"),
    ):
        dfits.open(f"http://127.0.0.1:{free_port()}/x.fits")


# -- S3 -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    with MotoS3() as server:
        yield server


def test_s3_file_reads_like_the_local_file(s3, files):
    url = s3.put("cube.fits", (files / "cube.fits").read_bytes())
    expected = _expected(files / "cube.fits")[0]
    f = dfits.open(url, storage_options=s3.storage_options, chunks=(30, 64, 64))
    hdu = f[0]
    np.testing.assert_array_equal(hdu.data.compute(), expected)
    np.testing.assert_array_equal(hdu.section[:, 1, 2], expected[:, 1, 2])
    np.testing.assert_array_equal(hdu.section[9, 5:15, ::4], expected[9, 5:15, ::4])
    clone = pickle.loads(pickle.dumps(hdu.data))
    np.testing.assert_array_equal(clone[40:45].compute(), expected[40:45])


def test_s3_object_replaced_after_open_is_an_error(s3):
    data = np.arange(1000, dtype=np.float64)
    buf = fits.HDUList([fits.PrimaryHDU(data)])
    import io

    raw = io.BytesIO()
    buf.writeto(raw)
    url = s3.put("replaced.fits", raw.getvalue())
    hdu = dfits.open(url, storage_options=s3.storage_options)[0]
    assert hdu.section[10] == 10
    other = io.BytesIO()
    fits.HDUList([fits.PrimaryHDU(data + 1)]).writeto(other)
    s3.put("replaced.fits", other.getvalue())
    with pytest.raises(dfits.FileChangedError, match=r"replaced\.fits.*changed"):
        hdu.data.sum().compute()


@pytest.mark.parametrize("mode", ["parts", "merge"])
def test_multi_range_answers_are_cut_into_the_runs(faulty, files, mode):
    faulty.multirange = mode
    expected = _expected(files / "cube.fits")[0]
    with dask.config.set({"dfits.remote.gap": 1024}):
        hdu = dfits.open(f"{faulty.url}/cube.fits")[0]
        before = len(faulty.gets("cube.fits"))
        np.testing.assert_array_equal(hdu.section[:, 20, 30], expected[:, 20, 30])
        np.testing.assert_array_equal(hdu.section[5:90, 3:7, 9:60], expected[5:90, 3:7, 9:60])
    got = faulty.gets("cube.fits")[before:]
    assert len(got) == 2 + 2  # 100 runs, then 85 runs: two multi-range requests each
    assert all("," in r.range for r in got)
