"""Chaos under memory pressure (issue 34): a worker held to a ``memory_limit`` by its nanny.

A reduction over a file several times larger than the worker's limit completes exactly, since
only chunk × threads is ever resident. A chunk larger than the limit gets the worker killed
by its nanny, again on each retry, and the client gets distributed's ``KilledWorker`` naming
the dfits task, in bounded time: never a hang, never a wrong value.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import dfits
from tests.clusters import process_cluster
from tests.format import fitsgen as fg

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.distributed, pytest.mark.timeout(600)]

GIB = 1 << 30
ROWS, COLS = 2048, 262144  # float32: 2 GiB against a 1 GB worker
#: (row, column, value): a few values in a file of holes (zeros)
PLACED = [(5, 7, 3.0), (1500, 0, -2.0), (ROWS - 1, COLS - 1, 11.0)]


def _sparse_image(path: Path) -> Path:
    head = fg.header(fg.image_cards((ROWS, COLS), -32))
    size = ROWS * COLS * 4
    with open(path, "wb") as out:
        out.write(head)
        out.truncate(len(head) + -(-size // 2880) * 2880)
        for row, col, value in PLACED:
            out.seek(len(head) + (row * COLS + col) * 4)
            out.write(np.array(value, ">f4").tobytes())
    return path


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    path = _sparse_image(tmp_path_factory.mktemp("pressure") / "sparse.fits")
    if os.stat(path).st_blocks * 512 > GIB // 4:
        pytest.skip("this filesystem does not keep holes: the file would really be 2 GiB")
    return path


@pytest.fixture(scope="module")
def client():
    with process_cluster(n_workers=1, memory_limit="1GB") as (_, c):
        yield c


def test_reduction_larger_than_the_worker_limit_completes(client, sparse):
    with dfits.open(sparse, chunks=(64, -1)) as f:  # 64 MiB chunks
        total = client.compute(f[0].data.sum()).result(timeout=400)
    assert float(total) == sum(v for _, _, v in PLACED)


def test_chunk_larger_than_the_worker_limit_fails_clearly(client, sparse):
    # one 2 GiB chunk: the nanny kills the worker past 95 % of its limit, each time
    with dfits.open(sparse, chunks=(-1, -1)) as f:
        future = client.compute(f[0].data.sum())
        with pytest.raises(distributed.KilledWorker) as err:
            future.result(timeout=400)
    assert "died" in str(err.value)
