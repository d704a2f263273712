"""Concurrent readers of one local file (issue 34): threads, processes, and close() racing.

Every read equals the reference; nothing deadlocks (pytest-timeout); the process's open
descriptors stay bounded however many times the file is opened and closed meanwhile.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import dfits
from dfits.io.writer import ImageWriter

pytestmark = pytest.mark.timeout(240)

SHAPE = (40, 64, 96)


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    path = tmp_path_factory.mktemp("concurrent") / "cube.fits"
    data = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    with ImageWriter(path, SHAPE, ">f4", []) as out:
        out.write(data)
    return str(path), data


def _boxes(seed: int, n: int) -> list[tuple[slice, ...]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lo = [int(rng.integers(0, s)) for s in SHAPE]
        out.append(tuple(slice(a, a + int(rng.integers(1, 9))) for a in lo))
    return out


def _read_boxes(path: str, seed: int, n: int) -> list[tuple[np.ndarray, float]]:
    """Sections and chunk sums of random boxes, through one FitsFile shared by the caller."""
    with dfits.open(path, chunks=(4, 32, 96)) as f:
        hdu = f[0]
        x = hdu.data
        return [
            (hdu.section[box], float(x[box].sum().compute(scheduler="sync")))
            for box in _boxes(seed, n)
        ]


def _check(data: np.ndarray, seed: int, got: list[tuple[np.ndarray, float]]) -> None:
    for box, (section, total) in zip(_boxes(seed, len(got)), got, strict=True):
        np.testing.assert_array_equal(section, data[box])
        assert total == pytest.approx(float(data[box].sum(dtype=np.float64)), rel=1e-5, abs=1e-5)


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count fds")
@pytest.mark.parametrize(
    "boxes", [3, pytest.param(24, marks=pytest.mark.slow)], ids=["short", "long"]
)
def test_threads_with_close_racing_reads(cube, boxes):
    path, data = cube
    before = _fds()
    stop = threading.Event()
    cycles = []

    def open_close() -> None:
        # other FitsFiles of the same path opening, reading and closing all the while
        while not stop.is_set():
            with dfits.open(path) as g:
                np.testing.assert_array_equal(g[0].section[0, 0, :4], data[0, 0, :4])
            cycles.append(1)

    racer = threading.Thread(target=open_close)
    racer.start()
    try:
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda s: (s, _read_boxes(path, s, boxes)), range(16)))
    finally:
        stop.set()
        racer.join()
    for seed, got in results:
        _check(data, seed, got)
    assert cycles, "the close() racer never ran"
    assert _fds() <= before + 4


def _process_reads(path: str, seed: int) -> list[tuple[np.ndarray, float]]:
    with ThreadPoolExecutor(16) as pool:
        parts = list(pool.map(lambda k: _read_boxes(path, seed * 100 + k, 3), range(16)))
    return [item for part in parts for item in part]


@pytest.mark.slow
def test_processes_times_threads(cube):
    # 4 processes x 16 threads (issue 34); spawned, not forked copies of this one's threads
    path, data = cube
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=context) as pool:
        results = list(pool.map(_process_reads, [path] * 4, range(4)))
    for seed, got in enumerate(results):
        for k in range(16):
            _check(data, seed * 100 + k, got[3 * k : 3 * k + 3])
