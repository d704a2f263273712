"""Soak (issue 34): open/compute/close cycles leave descriptors, threads and memory flat.

The short version runs by default; the 10,000-cycle one is slow. Growth is measured after a
warm-up (kernels compiled, dask's pools started), so only a per-cycle leak can exceed it.
"""

from __future__ import annotations

import os
import resource
import threading

import numpy as np
import pytest

import dfits
from dfits.io.writer import ImageWriter

pytestmark = [
    pytest.mark.timeout(1800),
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count fds"),
]


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _state() -> tuple[int, int, int]:
    return len(os.listdir("/proc/self/fd")), threading.active_count(), _rss()


@pytest.mark.parametrize(
    "cycles", [100, pytest.param(10_000, marks=pytest.mark.slow)], ids=["short", "long"]
)
def test_open_compute_close_cycles_stay_flat(tmp_path, cycles):
    paths = []
    for i in range(8):  # several files, so the descriptor cache turns over
        paths.append(tmp_path / f"f{i}.fits")
        with ImageWriter(paths[-1], (16, 32), ">i2", [("BSCALE", 0.5), ("BLANK", -1)]) as out:
            out.write(np.arange(512, dtype=np.int16).reshape(16, 32) + i)

    def cycle(k: int) -> None:
        i = k % len(paths)
        with dfits.open(paths[i], chunks=(4, 32)) as f:
            total = float(f[0].data.sum().compute())
            assert total == 0.5 * (511 * 512 / 2 + 512 * i)

    for k in range(50):
        cycle(k)
    fds, threads, rss = _state()
    for k in range(cycles):
        cycle(k)
    fds_after, threads_after, rss_after = _state()
    assert fds_after <= fds + 2
    assert threads_after <= threads + 2
    assert rss_after - rss <= 32 * 2**20, (rss, rss_after)
