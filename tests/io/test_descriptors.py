from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import dfits
from dfits.io import local
from dfits.io.descriptors import Descriptors
from tests.format.fitsgen import image_file


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _deleted_fds() -> list[str]:
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.endswith(" (deleted)"):
            out.append(target)
    return out


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"f{i}.fits"
        path.write_bytes(image_file((4, 5), bitpix=16))
        paths.append(str(path))
    return paths


def test_cache_is_bounded_and_least_recently_used_goes_first(files):
    cache = Descriptors(limit=3)
    before = _open_fds()
    for path in files:
        with cache.use((path, 0, 0)) as fd:
            assert os.pread(fd, 6, 0) == b"SIMPLE"
    assert len(cache) == 3
    assert _open_fds() == before + 3
    with cache.use((files[3], 0, 0)):  # touched: now the most recent
        pass
    with cache.use((files[0], 0, 0)):
        pass
    kept = {full[1][0] for full in cache._open}
    assert kept == {files[3], files[5], files[0]}
    cache.clear()
    assert _open_fds() == before


def test_a_descriptor_in_use_is_closed_only_by_its_last_user(files):
    cache = Descriptors(limit=1)
    before = _open_fds()
    with cache.use((files[0], 0, 0)) as fd:
        cache.close((files[0], 0, 0))
        with cache.use((files[1], 0, 0)):
            pass
        # still ours: dropped from the cache but open until this block ends
        assert os.pread(fd, 6, 0) == b"SIMPLE"
        assert len(cache) == 1
    cache.clear()
    assert _open_fds() == before


def test_open_section_close_cycles_hold_no_descriptors(files):
    local.descriptors.clear()
    before = _open_fds()
    for _ in range(30):
        for path in files:
            with dfits.open(path) as f:
                f[0].section[1:3, 2:4]
                f[0].data.sum().compute(scheduler="sync")
    assert _open_fds() <= before + 1


def test_many_files_open_at_once_stay_within_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(local.descriptors, "limit", 8)
    local.descriptors.clear()
    before = _open_fds()
    opened = []
    for i in range(40):
        path = tmp_path / f"g{i}.fits"
        path.write_bytes(image_file((3, 3), bitpix=-32, values=np.full((3, 3), i)))
        f = dfits.open(path)
        assert f[0].data.sum().compute(scheduler="sync") == 9 * i
        opened.append(f)
    assert _open_fds() <= before + 8
    local.descriptors.clear()


def test_deleted_files_are_released_by_close(files):
    f = dfits.open(files[2])
    f[0].section[0]
    os.unlink(files[2])
    assert any(files[2] in target for target in _deleted_fds())
    f.close()
    assert not any(files[2] in target for target in _deleted_fds())


def test_a_closed_file_reopens_on_use_and_notices_a_change(files):
    f = dfits.open(files[0])
    x = f[0].data
    f.close()
    np.testing.assert_array_equal(x.compute(), np.arange(20).reshape(4, 5))
    f.close()
    with open(files[0], "ab") as out:
        out.write(b"\0" * 2880)
    with pytest.raises(dfits.FileChangedError, match="changed since it was opened"):
        x.compute()


def test_threads_share_the_cache_safely(files):
    cache = Descriptors(limit=2)
    errors = []

    def reader(k: int) -> None:
        for i in range(300):
            path = files[(i + k) % len(files)]
            with cache.use((path, 0, 0)) as fd:
                if os.pread(fd, 6, 0) != b"SIMPLE":
                    errors.append(path)
            if i % 7 == 0:
                cache.close((path, 0, 0))

    before = _open_fds()
    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    cache.clear()
    assert _open_fds() == before
