"""Chaos on a process cluster (issue 34): a file changed under a lazy array fails loudly.

A file truncated or replaced between ``dfits.open`` and ``compute`` must raise
:class:`~dfits.TruncatedFileError` or :class:`~dfits.FileChangedError` from the worker that
reads it (re-raised on the client), never hand back zeros or the new file's values. A worker
killed mid-reduction: ``test_distributed.py::test_killed_worker_is_recomputed_exactly``.
"""

from __future__ import annotations

import os

import dask.array as da
import numpy as np
import pytest

import dfits
from dfits.io.writer import ImageWriter
from tests.clusters import process_cluster

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.distributed, pytest.mark.timeout(240)]

SHAPE = (32, 64, 64)


@pytest.fixture(scope="module")
def client():
    # fresh worker processes: none has this test's files in its descriptor cache yet
    with process_cluster() as (_, c):
        yield c


def _write(path, value: float) -> None:
    with ImageWriter(path, SHAPE, ">f4", []) as out:
        out.write(np.full(SHAPE, value, np.float32))


def _truncate(path) -> None:
    os.truncate(path, os.path.getsize(path) // 2)


def _replace(path) -> None:
    # same size and layout, other values: only the file's identity tells them apart
    other = path.with_name("other.fits")
    _write(other, 2.0)
    os.replace(other, path)


@pytest.mark.parametrize("change", [_truncate, _replace], ids=["truncated", "replaced"])
def test_file_changed_after_open_raises_from_the_worker(client, tmp_path, change):
    path = tmp_path / "cube.fits"
    _write(path, 1.0)
    with dfits.open(path, chunks=(4, 64, 64)) as f:
        x = f[0].data
        change(path)
        future = client.compute(da.nansum(x))
        with pytest.raises((dfits.FileChangedError, dfits.TruncatedFileError), match=r"cube\.fits"):
            future.result(timeout=120)
        assert future.status == "error"
