"""Soak (issue 34): open/compute/close cycles leave descriptors, threads and memory flat.

Local files and the same files over loopback HTTP (nginx). The short versions run by default;
the 10,000-cycle ones are slow. Growth is measured after a warm-up (kernels compiled, dask's
pools and fsspec's event loop started, HTTP connections pooled), so only a per-cycle leak can
exceed it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import dfits
from dfits.io.writer import ImageWriter
from tests.servers import Nginx

pytestmark = [
    pytest.mark.timeout(1800),
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count fds"),
]


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _state() -> tuple[int, int, int]:
    return len(os.listdir("/proc/self/fd")), threading.active_count(), _rss()


@contextlib.contextmanager
def _served(source: str, root, prefix) -> Iterator[str]:
    """Where the files in ``root`` are read from: the folder itself or an nginx URL."""
    if source == "local":
        yield str(root)
        return
    if not Nginx.available():
        pytest.skip("nginx is not installed (./run test installs it where apt-get works)")
    with Nginx(root, prefix) as http:
        yield http.url


@pytest.mark.parametrize("source", ["local", "http"])
@pytest.mark.parametrize(
    "cycles", [100, pytest.param(10_000, marks=pytest.mark.slow)], ids=["short", "long"]
)
def test_open_compute_close_cycles_stay_flat(tmp_path, cycles, source):
    root = tmp_path / "files"
    root.mkdir()
    names = []
    for i in range(8):  # several files, so the descriptor cache turns over
        names.append(f"f{i}.fits")
        with ImageWriter(
            root / names[-1], (16, 32), ">i2", [("BSCALE", 0.5), ("BLANK", -1)]
        ) as out:
            out.write(np.arange(512, dtype=np.int16).reshape(16, 32) + i)

    with _served(source, root, tmp_path / "nginx") as where:

        def cycle(k: int) -> None:
            i = k % len(names)
            with dfits.open(f"{where}/{names[i]}", chunks=(4, 32)) as f:
                total = float(f[0].data.sum().compute())
                assert total == 0.5 * (511 * 512 / 2 + 512 * i)

        for k in range(50):
            cycle(k)
        fds, threads, rss = _state()
        for k in range(cycles):
            cycle(k)
        fds_after, threads_after, rss_after = _state()
    # HTTP: the pooled keep-alive connections may differ by a few sockets from one moment
    # to the next; a leak of one per cycle would still be 100 or 10,000
    slack = 2 if source == "local" else 8
    assert fds_after <= fds + slack, (fds, fds_after)
    assert threads_after <= threads + 2, (threads, threads_after)
    assert rss_after - rss <= 32 * 2**20, (rss, rss_after)


@pytest.mark.parametrize(
    "cycles", [100, pytest.param(10_000, marks=pytest.mark.slow)], ids=["short", "long"]
)
def test_open_read_write_append_close_cycles_stay_flat(tmp_path, cycles):
    # issue 51: the writers too (to_fits replacing a file, append growing one, a file opened,
    # reduced and closed between them) leave descriptors, threads and memory flat
    names = [str(tmp_path / f"w{i}.fits") for i in range(4)]
    grown = str(tmp_path / "grown.fits")
    values = np.arange(512, dtype=np.float32).reshape(16, 32)

    def cycle(k: int) -> None:
        path = names[k % len(names)]
        dfits.to_fits(values + k, path, overwrite=True, fsync=False)
        with dfits.open(path, chunks=(4, 32)) as f:
            assert float(f[0].data.sum().compute()) == float((values + k).sum())
            assert f[0].section[1, 2] == values[1, 2] + k
        if k % 100 == 0:  # a fresh file now and then, so the appends stay small
            dfits.to_fits(values, grown, overwrite=True, fsync=False)
        dfits.append(grown, values[:2] + k, fsync=False)
        with dfits.open(grown) as g:
            assert float(g[len(g) - 1].data.sum().compute()) == float((values[:2] + k).sum())

    for k in range(50):
        cycle(k)
    fds, threads, rss = _state()
    began = time.monotonic()
    for k in range(cycles):
        cycle(k)
    seconds = time.monotonic() - began
    fds_after, threads_after, rss_after = _state()
    print(
        f"\nsoak with writers: {cycles} cycles in {seconds:.1f} s; descriptors {fds} -> "
        f"{fds_after}; threads {threads} -> {threads_after}; RSS {rss / 2**20:.1f} -> "
        f"{rss_after / 2**20:.1f} MiB ({(rss_after - rss) / 2**20:+.1f})"
    )
    assert fds_after <= fds + 2, (fds, fds_after)
    assert threads_after <= threads + 2, (threads, threads_after)
    assert rss_after - rss <= 32 * 2**20, (rss, rss_after)
