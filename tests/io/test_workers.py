"""Small workers (issue 51 item 2): two 600 MiB dask workers reduce a 512 MiB remote image.

nginx serves a sparse float32 image (holes read as zeros, a few values placed), and a process
``LocalCluster`` of two one-thread workers held to ``memory_limit="600MiB"`` reduces it by the
dask route (``dfits.open(url)[0].data``) and the xarray route (``engine="dfits"``,
``chunks={}``). Neither may pause a worker, warn of unmanaged memory or get a worker
restarted, and ``import dfits`` must add next to nothing to a worker.

A worker holds about 290 MiB once it has run a remote dfits task, nearly all of it libraries
(docs/cold-start.md splits it by library). The 70 % spill line of a 600 MiB worker (420 MiB)
leaves about 130 MiB for a task's chunks, so the image is planned in 32 MiB chunks, as
docs/cold-start.md advises for small workers: a dask-route task holds one chunk of stored
bytes, an xarray-route task about 2.25 (the bytes, the decoded chunk, then xarray's skipna
mask and zero-filled copy).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.format import fitsgen as fg
from tests.servers import Nginx

distributed = pytest.importorskip("distributed")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.distributed,
    pytest.mark.network,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not Nginx.available(), reason="nginx is not installed"),
]

MIB = 1 << 20
ROWS, COLS = 16384, 8192  # float32: 512 MiB
#: (row, column, value): the first element, one in the middle, the last
PLACED = [(0, 0, 1.5), (8191, 5, -2.0), (ROWS - 1, COLS - 1, 3.0)]
LIMIT = 600 * MIB
#: distributed's spill fraction: above it, with nothing to spill, it warns of unmanaged memory
SPILL = 0.7
#: what the warnings and restarts we must not see say in the worker and nanny logs
BAD = ("Pausing worker", "Unmanaged memory", "exceeded 95% memory", "Restarting")


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field))


def _rss() -> int:
    return _status("VmRSS:")


def _peak() -> int:
    return _status("VmHWM:")


def _import_dfits() -> None:
    import dfits  # noqa: F401


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("workers")
    path = root / "big.fits"
    head = fg.header(fg.image_cards((ROWS, COLS), -32))
    with open(path, "wb") as out:
        out.write(head)
        out.truncate(len(head) + -(-ROWS * COLS * 4 // 2880) * 2880)  # holes: zeros, no disk
        for row, col, value in PLACED:
            out.seek(len(head) + (row * COLS + col) * 4)
            out.write(np.array(value, ">f4").tobytes())
    with Nginx(root, tmp_path_factory.mktemp("nginx")) as http:
        yield f"{http.url}/big.fits"


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="600MiB",
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _bad_lines(c) -> list[str]:
    logs = {**c.get_worker_logs(), **c.get_worker_logs(nanny=True)}
    return [msg for lines in logs.values() for _, msg in lines if any(b in msg for b in BAD)]


def test_small_workers_reduce_a_remote_image_by_both_routes(served, client, capsys) -> None:
    import dask
    import xarray as xr

    import dfits

    start = client.run(_rss)
    client.run(_import_dfits)
    imported = client.run(_rss)
    for w in start:
        assert imported[w] - start[w] < 8 * MIB, "import dfits grew a worker"
    want = sum(v for *_, v in PLACED)
    with dask.config.set({"array.chunk-size": "32MiB"}):
        x = dfits.open(served)[0].data
        assert x.chunks[0][0] * COLS * 4 == 32 * MIB
        assert float(x.sum().compute()) == want
        after_dask = client.run(_rss)
        a = xr.open_dataarray(served, engine="dfits", chunks={})
        assert a.chunks == x.chunks
        assert float(a.sum().compute()) == want
        assert float(a.max().compute()) == 3.0
    after_xarray, peak = client.run(_rss), client.run(_peak)
    assert _bad_lines(client) == []
    assert len(client.scheduler_info()["workers"]) == 2
    for w, value in peak.items():
        assert value < SPILL * LIMIT, f"{w} peaked at {value / MIB:.0f} MiB"
    with capsys.disabled():
        for w in start:
            print(
                f"\nworker RSS MiB: start {start[w] / MIB:.0f}, import dfits "
                f"{imported[w] / MIB:.0f}, after the dask route {after_dask[w] / MIB:.0f}, "
                f"after the xarray route {after_xarray[w] / MIB:.0f}, peak {peak[w] / MIB:.0f}"
            )
