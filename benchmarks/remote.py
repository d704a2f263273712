"""Remote and cluster figures: loopback HTTP against the local file, astropy over fsspec, and
dask.distributed scaling.

    python benchmarks/remote.py [--runs 5] [--tmpdir DIR] [--cases http,cluster,ceiling]
                                [--cluster-gib 1]

``http``: the 1 GiB float32 cube of ``compare.py`` (256 x 1024 x 1024) is served by nginx on
127.0.0.1 (the Python range server of the tests when nginx is missing). Each timed run is a
fresh process; right before it the file is read into the page cache. Cases:

* ``sum``: ``dfits.open(...).data.sum().compute()`` on the local path and on the URL;
* ``cutout``: a 40 x 128 x 128 cut-out, dfits ``hdu.section`` against astropy's
  ``fits.open(url, use_fsspec=True)[0].section`` (astropy reads through fsspec's block cache);
* ``spectrum``: 100 channels at one pixel, through ``hdu.section`` and through the dask array;
  the requests each one sent are counted from the server's log.

``cluster``: moment-1 (intensity-weighted mean channel, in float64) of the same cube on a
``LocalCluster`` of 1 then 2 single-threaded worker processes, interleaved; written two ways:
``dask`` as a user would in plain dask (``Σ I·v / Σ I`` with float64 temporaries) and ``fused``
through :func:`dfits.array.weighted_sums` on ``hdu.to_dask(reduce_axis=0)`` (one pass of the
fused kernel per chunk, on chunks planned for the reduction: what ``.fits.moment(1)`` runs);
and the pickled size of the graph's chunk tasks.

``ceiling``: what this machine allows any client, to read the figures above against. The same
1 GiB file read over loopback HTTP from nginx by bare blocking sockets (a ranged GET, then
``recv_into`` a preallocated buffer: no HTTP library, no copy) with one and two threads, against
a read of the page cache through ``mmap`` (summing one byte per page would miss the copy cost,
so the mapped bytes are summed with numpy); and a cache-resident CPU loop in one and in two
processes at once (how far two worker processes can scale here at best).
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from compare import MARK, ensure_file, preread  # noqa: E402

CUT = (slice(100, 140), slice(448, 576), slice(448, 576))
PIXEL = (slice(0, 100), 517, 301)


def worker(case: str, tool: str, target: str, warm: str) -> None:
    # The same operation on the small warm-up cube first: imports, Numba compilation, the
    # HTTP session and dask's start-up are not timed.
    operation(case, tool, warm, True)
    t0 = time.perf_counter()
    value = operation(case, tool, target, False)
    dt = time.perf_counter() - t0
    print(MARK + json.dumps({"seconds": dt, "value": value}))


def operation(case: str, tool: str, target: str, small: bool) -> float:
    import numpy as np

    import dfits

    cut, pixel = (tuple(slice(0, 4) for _ in CUT), (slice(0, 4), 1, 1)) if small else (CUT, PIXEL)
    if tool == "astropy":
        from astropy.io import fits

        index = cut if case == "cutout" else pixel
        with fits.open(target, use_fsspec=True, lazy_load_hdus=True) as hl:
            out = np.asarray(hl[0].section[index], dtype=np.float64)
        return float(out.sum())
    hdu = dfits.open(target)[0]
    if case == "sum":
        return float(hdu.data.sum().compute())
    if case == "cutout":
        return float(hdu.section[cut].sum(dtype=np.float64))
    if tool == "dask":
        return float(hdu.data[pixel].compute().sum(dtype=np.float64))
    return float(hdu.section[pixel].sum(dtype=np.float64))


def run_worker(case: str, tool: str, target: str, warm: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", case, tool, target, warm]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise RuntimeError(f"{case}/{tool} failed: {proc.stderr.strip()[-2000:]}")


def http_figures(path: Path, warm: Path, runs: int) -> dict:
    from tests.servers import Nginx, ScriptedServer

    prefix = Path(tempfile.mkdtemp(prefix="dfits-nginx-"))
    server = Nginx(path.parent, prefix) if Nginx.available() else ScriptedServer(path.parent)
    plan = [
        ("sum", "dfits-local", str(path)),
        ("sum", "dfits-http", None),
        ("cutout", "dfits-http", None),
        ("cutout", "astropy", None),
        ("spectrum", "dfits-http", None),
        ("spectrum", "dask", None),
        ("spectrum", "astropy", None),
    ]
    res: dict = {f"{c}/{t}": {"times": [], "requests": [], "bytes": []} for c, t, _ in plan}
    with server:
        url = f"{server.url}/{path.name}"
        for r in range(runs):
            for case, tool, target in plan[r % len(plan) :] + plan[: r % len(plan)]:
                preread(path)
                before = len(server.gets(path.name))
                warm_target = str(warm) if target else f"{server.url}/{warm.name}"
                got = run_worker(case, tool, target or url, warm_target)
                reqs = server.gets(path.name)[before:]
                rec = res[f"{case}/{tool}"]
                rec["times"].append(got["seconds"])
                rec["value"] = got["value"]
                rec["requests"].append(len(reqs) if target is None else 0)
                rec["bytes"].append(sum(q.sent for q in reqs) if target is None else 0)
                print(f"  {case:9s} {tool:12s} {got['seconds']:8.3f} s  {len(reqs)} requests",
                      file=sys.stderr, flush=True)  # fmt: skip
        res["server"] = type(server).__name__
    return res


def moment1(x, how: str):
    import dask.array as da
    import numpy as np

    if how == "fused":
        from dfits.array import weighted_sums

        s = weighted_sums(x, 0, np.arange(x.shape[0], dtype="f8"))
        return s[1] / s[0]
    w = da.arange(x.shape[0], chunks=x.chunks[0], dtype="f8")[:, None, None]
    v = x.astype("f8")
    return (v * w).sum(axis=0) / v.sum(axis=0)


def cluster_figures(path: Path, runs: int) -> dict:
    from distributed import Client, LocalCluster

    import dfits

    hdu = dfits.open(path)[0]
    x = hdu.data
    graph = dict(x.__dask_graph__())
    sizes = [len(pickle.dumps(v, protocol=5)) for v in graph.values()]
    out: dict = {"task_bytes": statistics.median(sizes), "tasks": len(sizes), "times": {}}
    out["cube"] = f"{' x '.join(map(str, x.shape))} {x.dtype}, {x.nbytes / 2**30:.0f} GiB"
    clusters = {}
    try:
        for n in (1, 2):
            clusters[n] = LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            )
        for r in range(runs):
            for n in (1, 2) if r % 2 == 0 else (2, 1):
                for how in ("dask", "fused"):
                    preread(path)
                    with Client(clusters[n]) as client:
                        client.run(lambda: None)
                        t0 = time.perf_counter()
                        hdu = dfits.open(path)[0]
                        # fused: chunks planned for the reduction, as .fits.moment() does
                        x = hdu.to_dask(reduce_axis=0) if how == "fused" else hdu.data
                        value = moment1(x, how).mean().compute()
                        dt = time.perf_counter() - t0
                    out["times"].setdefault(how, {}).setdefault(n, []).append(dt)
                    out.setdefault("value", {})[how] = float(value)
                    print(
                        f"  moment1 {how:5s} {n} worker(s) {dt:8.3f} s", file=sys.stderr, flush=True
                    )
    finally:
        for c in clusters.values():
            c.close()
    return out


def _ranged_get(host: str, port: int, name: str, start: int, buf: memoryview) -> None:
    """One ``Range`` GET into ``buf`` over a bare socket (HTTP/1.1, ``Connection: close``)."""
    import socket

    with socket.create_connection((host, port), timeout=60) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        stop = start + len(buf) - 1
        sock.sendall(
            f"GET /{name} HTTP/1.1\r\nHost: {host}\r\nRange: bytes={start}-{stop}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        header, _, body = head.partition(b"\r\n\r\n")
        if not header.startswith(b"HTTP/1.1 206"):
            raise RuntimeError(f"no 206 for bytes {start}-{stop}: {header[:60]!r}")
        buf[: len(body)] = body
        got = len(body)
        while got < len(buf):
            n = sock.recv_into(buf[got:], len(buf) - got)
            if not n:
                raise RuntimeError(f"short body: {got} of {len(buf)} bytes")
            got += n


def _spin(seconds: float) -> float:
    """Iterations of a cache-resident numpy loop per second."""
    import numpy as np

    a = np.linspace(0.0, 1.0, 4096)
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        np.sin(a, out=a)
        n += 1
    return n / (time.perf_counter() - t0)


def ceiling_figures(path: Path, runs: int) -> dict:
    import mmap
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
    from urllib.parse import urlsplit

    import numpy as np
    from tests.servers import Nginx

    size = path.stat().st_size
    part = 128 << 20
    parts = [(o, min(part, size - o)) for o in range(0, size, part)]
    buf = np.empty(size, np.uint8)
    view = memoryview(buf)
    out: dict = {"tcp": {1: [], 2: []}, "mmap": [], "cpu": {}}
    if not Nginx.available():
        raise RuntimeError("the ceiling case needs nginx")
    prefix = Path(tempfile.mkdtemp(prefix="dfits-nginx-"))
    with Nginx(path.parent, prefix) as server:
        url = urlsplit(server.url)
        for _ in range(runs):
            for threads in (1, 2):
                preread(path)
                t0 = time.perf_counter()
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(lambda p: _ranged_get(
                        url.hostname, url.port, path.name, p[0], view[p[0] : p[0] + p[1]]
                    ), parts))  # fmt: skip
                out["tcp"][threads].append(size / (time.perf_counter() - t0) / 1e9)
            preread(path)
            with open(path, "rb") as f:
                t0 = time.perf_counter()
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                arr = np.frombuffer(m, np.uint8)
                total = sum(
                    int(arr[o : o + n].view(np.uint64).sum()) for o, n in parts if n % 8 == 0
                )
                out["mmap"].append(size / (time.perf_counter() - t0) / 1e9)
                del arr
                m.close()
    assert total >= 0
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_spin, [0.2, 0.2]))  # start both processes before timing
        one = statistics.median(_spin(1.0) for _ in range(runs))
        two = [statistics.median(list(pool.map(_spin, [1.0, 1.0]))) for _ in range(runs)]
    out["cpu"] = {"one": one, "two_each": statistics.median(two)}
    return out


def report(http: dict | None, cluster: dict | None, ceiling: dict | None = None) -> str:
    lines = []
    if http:
        med = {k: statistics.median(v["times"]) for k, v in http.items() if isinstance(v, dict)}
        lines += [
            f"server: {http['server']} on 127.0.0.1",
            "",
            "| case | tool | median s | min s | requests | bytes sent |",
            "|---|---|---|---|---|---|",
        ]
        for key, rec in http.items():
            if not isinstance(rec, dict):
                continue
            case, tool = key.split("/")
            lines.append(
                f"| {case} | {tool} | {med[key]:.4f} | {min(rec['times']):.4f} | "
                f"{statistics.median(rec['requests']):.0f} | "
                f"{statistics.median(rec['bytes']):.0f} |"
            )
        lines += [
            "",
            f"- HTTP sum throughput / local: {med['sum/dfits-local'] / med['sum/dfits-http']:.2f}",
            f"- cut-out, dfits vs astropy+fsspec: "
            f"{med['cutout/astropy'] / med['cutout/dfits-http']:.1f}x faster",
            f"- spectrum, dfits section vs astropy+fsspec: "
            f"{med['spectrum/astropy'] / med['spectrum/dfits-http']:.1f}x faster",
        ]
    if cluster:
        lines += ["", f"cluster case on a {cluster['cube']} cube:"]
        for how, times in cluster["times"].items():
            t1, t2 = (statistics.median(times[n]) for n in (1, 2))
            lines.append(
                f"- moment-1 ({how}), 1 worker process: median {t1:.3f} s; 2 worker processes: "
                f"{t2:.3f} s; speed-up {t1 / t2:.2f}x"
            )
        lines.append(
            f"- pickled chunk task: median {cluster['task_bytes']:.0f} bytes "
            f"({cluster['tasks']} tasks)"
        )
    if ceiling:
        tcp1, tcp2 = (statistics.median(ceiling["tcp"][n]) for n in (1, 2))
        local = statistics.median(ceiling["mmap"])
        cpu = ceiling["cpu"]
        lines += [
            "",
            "ceiling of this machine:",
            f"- loopback HTTP from nginx, bare sockets: {tcp1:.2f} GB/s with 1 thread, "
            f"{tcp2:.2f} GB/s with 2 (medians)",
            f"- page cache through mmap, summed with numpy: {local:.2f} GB/s "
            f"(best HTTP / local: {max(tcp1, tcp2) / local:.2f})",
            "- cache-resident CPU loop: 2 processes at once do "
            f"{2 * cpu['two_each'] / cpu['one']:.2f}x the work of 1",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tmpdir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--cases", default="http,cluster", help="any of http,cluster,ceiling")
    ap.add_argument(
        "--cluster-gib",
        type=int,
        default=1,
        help="size of the cube for the cluster case (GiB; 256 channels, square planes)",
    )
    ap.add_argument("--worker", nargs=4, metavar=("CASE", "TOOL", "TARGET", "WARM"))
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    args.tmpdir.mkdir(parents=True, exist_ok=True)
    path = ensure_file(args.tmpdir, "cube", 2 * 2**30, False)
    cases = set(args.cases.split(","))
    warm = ensure_file(args.tmpdir, "cube", 2 * 2**30, True)
    http = http_figures(path, warm, args.runs) if "http" in cases else None
    if "cluster" in cases:
        big = (
            path
            if args.cluster_gib == 1
            else ensure_file(args.tmpdir, "cube", 2 * args.cluster_gib * 2**30, False)
        )
        cluster = cluster_figures(big, args.runs)
    else:
        cluster = None
    ceiling = ceiling_figures(path, args.runs) if "ceiling" in cases else None
    print(report(http, cluster, ceiling))
    return 0


if __name__ == "__main__":
    sys.exit(main())
