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
