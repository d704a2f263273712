"""dask.distributed with worker processes: same answers, tiny tasks, survives a killed worker."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time

import dask
import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.array import weighted_sums
from dfits.io.writer import ImageWriter
from tests.clusters import process_cluster

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster():
    with process_cluster() as pair:
        yield pair


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    path = tmp_path_factory.mktemp("dist") / "cube.fits"
    rng = np.random.default_rng(11)
    data = rng.standard_normal((64, 48, 40)).astype(np.float32)
    data[5, 6, 7] = np.nan
    with ImageWriter(path, data.shape, ">f4", [("BUNIT", "Jy/beam")]) as out:
        out.write(data)
    return str(path), data


REDUCTIONS = {
    "sum": lambda x: da.nansum(x),
    "mean0": lambda x: da.nanmean(x, axis=0),
    "std": lambda x: da.nanstd(x),
    "moment1": lambda x: (
        da.nansum(x * np.arange(x.shape[0])[:, None, None], axis=0) / da.nansum(x, axis=0)
    ),
    "moment1-fused": lambda x: _fused_moment1(x),
    "slice-var": lambda x: da.nanvar(x[10:30, 5:20], axis=(1, 2)),
    "max": lambda x: da.nanmax(x, axis=(1, 2)),
}


def _fused_moment1(x):
    sums = weighted_sums(x, 0, np.arange(x.shape[0], dtype=float))
    return sums[1] / sums[0]


def _slow_passthrough(block):
    time.sleep(0.05)
    return block


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_process_cluster_matches_local(cluster, cube, name):
    _, client = cluster
    path, _ = cube
    x = dfits.open(path, chunks=(8, 48, 40))[0].data
    expr = REDUCTIONS[name](x)
    local = expr.compute(scheduler="threads")
    remote = client.compute(expr).result()
    np.testing.assert_allclose(remote, local, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    "expr",
    [lambda x: x, lambda x: x > 0, lambda x: da.isnan(x[:, 1:])],
    ids=["values", "cut", "nan-mask-of-a-slice"],
)
def test_p2p_rechunk_ships_stored_chunks_as_arrays(cluster, cube, expr):
    # P2P takes a memoryview of each shard it sends, which a Python class cannot export
    # before Python 3.12: stored shards must reach it as the plain arrays numpy's views copy
    # to. A small chunk-size keeps P2P from first concatenating the chunks (into arrays).
    _, client = cluster
    path, data = cube
    x = dfits.open(path, chunks=(8, 48, 40))[0].data
    with dask.config.set({"array.chunk-size": "16KiB"}):
        y = expr(x).rechunk((64, 48, 5), method="p2p")
    assert not any(k.startswith("rechunk-merge") for k in y.dask.layers)
    got = client.compute(y).result()
    np.testing.assert_array_equal(got, expr(da.from_array(data, chunks=8)).compute())


def test_large_partials_cross_workers_as_plain_arrays(cluster, tmp_path):
    # 256 KiB moment-map partials: SumPartials on the worker that made them, plain arrays
    # once shipped to the other one; either way the combine adds them and the result is numpy
    _, client = cluster
    path = tmp_path / "maps.fits"
    data = np.random.default_rng(12).standard_normal((16, 256, 256)).astype(np.float32)
    data[3, 4, 5] = np.nan
    with ImageWriter(path, data.shape, ">f4", []) as out:
        out.write(data)
    x = dfits.open(str(path), chunks=(2, 256, 256))[0].data
    for expr, want in (
        (x.sum(axis=0), data.astype(float).sum(axis=0)),
        (da.nanmean(x, axis=0), np.nanmean(data.astype(float), axis=0)),
        # noise maps: broadcast and read-only counts, tiled combine steps on either side
        (x.std(axis=0), data.astype(float).std(axis=0)),
        (da.nanvar(x, axis=0, ddof=1), np.nanvar(data.astype(float), axis=0, ddof=1)),
        # peak-channel maps: (value, index) pairs here, structured arrays once shipped
        (x.argmax(axis=0), np.argmax(data, axis=0)),
        (da.nanargmin(x, axis=0), np.nanargmin(data, axis=0)),
    ):
        got = client.compute(expr).result()
        assert type(got) is np.ndarray
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_tasks_are_small(cube):
    path, _ = cube
    x = dfits.open(path, chunks=(8, 48, 40))[0].data
    graph = dict(x.__dask_graph__())
    sizes = [len(pickle.dumps(task)) for task in graph.values()]
    # a chunk here is 61 KB of data; a task is a path, offsets and a decode spec
    assert max(sizes) < 1024


def test_killed_worker_is_recomputed_exactly(cluster, cube):
    _, client = cluster
    path, data = cube
    x = dfits.open(path, chunks=(1, 48, 40))[0].data
    # 64 chunks of ≥ 50 ms each: the kill lands while tasks are running. The pass-through
    # keeps stored chunks stored, so the reduction still runs the fused kernels.
    expr = da.nansum(x.map_blocks(_slow_passthrough, dtype=x.dtype), axis=(1, 2))
    expected = expr.compute(scheduler="threads")
    np.testing.assert_allclose(expected, np.nansum(data, axis=(1, 2), dtype=float), atol=1e-4)
    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))

    state = {}

    def kill_soon():
        time.sleep(0.5)
        state["running_at_kill"] = not future.done()
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_soon)
    future = client.compute(expr)
    killer.start()
    result = future.result(timeout=120)
    killer.join()
    assert state["running_at_kill"], "the computation finished before the worker was killed"
    # pure tasks: the lost ones are recomputed from lineage, bit for bit
    np.testing.assert_array_equal(result, expected)
    client.wait_for_workers(2, timeout=60)
