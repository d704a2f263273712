"""Larger than RAM (issue 34): a sparse 32 GiB image reduced chunk by chunk.

The file is made with ``truncate`` (holes, no disk used) plus a few values written past 4 GiB
and past element 2**31, where 32-bit offsets would wrap. It is reduced in a child process so
that its peak resident memory can be measured on its own: it must stay within
2 × chunk × threads + 200 MB on a machine with less RAM than the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.format import fitsgen as fg

GIB = 1 << 30
ROWS, COLS = 32768, 262144  # float32: 32 GiB, 2**33 elements
CHUNK_ROWS, THREADS = 64, 2  # 64 MiB chunks
#: (row, column, value): past 4 GiB, at element 2**31 (+1), and the last element
PLACED = [(4100, 3, 7.0), (8192, 0, 11.0), (8192, 1, -5.0), (ROWS - 1, COLS - 1, 3.0)]

_CHILD = """
import json, resource, sys
import dask
import numpy as np
import dfits
path, rows, threads, placed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with dask.config.set(scheduler="threads", num_workers=threads):
    with dfits.open(path, chunks=(rows, -1)) as f:
        x = f[0].data
        # one graph: each chunk is read once for the three reductions
        total, peak, low = map(float, dask.compute(x.sum(), np.nanmax(x), x.min()))
        cells = [float(f[0].section[r, c]) for r, c, _ in json.loads(placed)]
# VmHWM, the child's own peak: Linux keeps ru_maxrss across exec, so it would count the
# pytest parent's resident pages at fork (it failed so after a long slow run)
try:
    with open("/proc/self/status") as fh:
        rss = next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"sum": total, "max": peak, "min": low, "cells": cells, "rss": rss}))
"""


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


@pytest.mark.slow
@pytest.mark.timeout(1200)  # 32 GiB through the page cache: minutes on a loaded 2-core machine
def test_sparse_32_gib_image_reduces_exactly_in_bounded_memory(tmp_path):
    path = _sparse_image(tmp_path / "sparse.fits")
    if os.stat(path).st_blocks * 512 > GIB:
        pytest.skip("this filesystem does not keep holes: the file would really be 32 GiB")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-c", _CHILD, str(path), str(CHUNK_ROWS), str(THREADS)]
    placed = json.dumps([(r, c, v) for r, c, v in PLACED])
    done = subprocess.run([*argv, placed], capture_output=True, text=True, env=env, check=True)
    got = json.loads(done.stdout)
    values = [v for _, _, v in PLACED]
    assert got["cells"] == values
    assert got["sum"] == sum(values)
    assert got["max"] == max(values)
    assert got["min"] == min(values)
    chunk = CHUNK_ROWS * COLS * 4
    assert got["rss"] <= 2 * chunk * THREADS + 200 * 2**20, got["rss"]
