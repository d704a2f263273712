"""Remote and cluster figures: loopback HTTP against the local file, astropy over fsspec, and
dask.distributed scaling.

    python benchmarks/remote.py [--runs 5] [--tmpdir DIR] [--cases http,cluster] [--cluster-gib 1]

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


def report(http: dict | None, cluster: dict | None) -> str:
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tmpdir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--cases", default="http,cluster")
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
    print(report(http, cluster))
    return 0


if __name__ == "__main__":
    sys.exit(main())
