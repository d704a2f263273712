"""Cold start: the first answer in a fresh process, with an empty and with a warm kernel cache.

Each sample is a fresh interpreter (``NUMBA_CACHE_DIR`` pointing at a directory of this run):

* ``moment0``: import dfits, open a float32 cube, the first ``moment(0)`` along axis 0
  (``data.sum(axis=0)``), then the same call again in that process (the warm-process time);
* ``stats``: ``dfits stats small.fits`` end to end (a subprocess of the CLI);
* ``dfits_warm``: ``dfits warm`` (the common set) into an empty cache, once; the warm-cache
  samples then use that cache, as a user's would be after installing (with ``--no-warm``
  they use a cache filled by one untimed sample instead).

Usage: ``python benchmarks/cold_start.py --runs 5 --size 100MB --tmpdir /tmp/dfcold``.
Medians of ``--runs`` samples; the empty-cache samples each start from a new empty directory.

``--breakdown`` instead splits one-shot runs (issue 49) into phases, in fresh processes with
the kernel cache as it is (``dfits warm`` first): interpreter start, ``import dfits``, the
open, the graph, the scheduler lookup (dfits' own choice, :mod:`dfits.array.scheduler`, or
dask's ``get_scheduler``, which imports distributed), the kernels' loads (a tiny slice
computed first), the first and a second full compute, and the same cases on the eager route
(:mod:`dfits.array.eager`: no graph, no ``dask.array``); plus the imports of the whole run by
library (``-X importtime``, self times summed) and each kernel family's first use against
its second (:mod:`cold_phases`). ``--one-shot`` times issue 49's end-to-end cases against
astropy, fitsio and ``fitsinfo`` (``--scale 1``: the issue's sizes), the dfits scripts as a
user writes them (``hdu.data.sum().compute()``) and through ``reduce_hdu`` (``dfits-eager``).
``--memory`` prints what each library adds to a fresh process's resident memory, alone and in
the order a dask worker loads them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MOMENT = r"""
import json, sys, time
t0 = time.perf_counter()
import dfits
x = dfits.open(sys.argv[1])[0].data
first = x.sum(axis=0).compute()
t1 = time.perf_counter()
x.sum(axis=0).compute()
t2 = time.perf_counter()
print(json.dumps({"first": t1 - t0, "again": t2 - t1}))
"""


def write_cube(path: Path, nbytes: int) -> None:
    """A float32 cube of about ``nbytes`` (astropy writes it)."""
    from astropy.io import fits

    side = 256
    planes = max(1, nbytes // (side * side * 4))
    data = np.random.default_rng(0).standard_normal((planes, side, side)).astype(np.float32)
    fits.PrimaryHDU(data).writeto(path, overwrite=True)


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache)}


def moment_sample(cube: Path, cache: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MOMENT, str(cube)],
        env=_env(cache),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def stats_sample(small: Path, cache: Path) -> float:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "dfits.cli", "stats", "--quiet", str(small)]
    out = subprocess.run(cmd, env=_env(cache), capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr}")
    return time.perf_counter() - start


def warm_sample(cache: Path) -> float:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "dfits.cli", "warm"]
    subprocess.run(cmd, env=_env(cache), capture_output=True, check=True)
    return time.perf_counter() - start


def measure(tmpdir: Path, size: int, runs: int, with_warm: bool) -> dict:
    cube, small = tmpdir / "cube.fits", tmpdir / "small.fits"
    if not cube.exists():
        write_cube(cube, size)
    if not small.exists():
        write_cube(small, 180_000)
    res: dict = {"cold_first": [], "warm_first": [], "warm_again": [], "stats_cold": []}
    res["stats_warm"] = []
    for i in range(runs):
        empty, empty_stats = tmpdir / f"empty-{i}", tmpdir / f"empty-stats-{i}"
        for path in (empty, empty_stats):  # a --tmpdir reused from an earlier run
            shutil.rmtree(path, ignore_errors=True)
        res["cold_first"].append(moment_sample(cube, empty)["first"])
        res["stats_cold"].append(stats_sample(small, empty_stats))
    warm = tmpdir / "warm"
    shutil.rmtree(warm, ignore_errors=True)
    if with_warm:
        # the user's way: `dfits warm` (the common set) into an empty cache, timed
        res["dfits_warm"] = [warm_sample(warm)]
    else:
        moment_sample(cube, warm)  # fill it with what the samples use
        stats_sample(small, warm)
    for _ in range(runs):
        sample = moment_sample(cube, warm)
        res["warm_first"].append(sample["first"])
        res["warm_again"].append(sample["again"])
        res["stats_warm"].append(stats_sample(small, warm))
    return {k: statistics.median(v) for k, v in res.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=float, default=100e6, help="cube bytes (default 100 MB)")
    ap.add_argument("--tmpdir", type=Path)
    ap.add_argument("--no-warm", action="store_true", help="skip timing `dfits warm`")
    ap.add_argument("--breakdown", action="store_true", help="phases of the one-shot cases")
    ap.add_argument("--scale", type=float, default=1.0, help="--breakdown: files' size factor")
    ap.add_argument("--memory", action="store_true", help="resident memory by library")
    ap.add_argument("--one-shot", action="store_true", help="issue 49's end-to-end cases")
    args = ap.parse_args(argv)
    tmp = args.tmpdir or Path(tempfile.mkdtemp(prefix="dfcold-"))
    tmp.mkdir(parents=True, exist_ok=True)
    if args.breakdown or args.memory or args.one_shot:
        import cold_phases

        if args.one_shot:
            cold_phases.print_one_shot(tmp, args.scale, args.runs)
        if args.memory:
            cold_phases.print_memory()
        if args.breakdown:
            cold_phases.print_breakdown(tmp, args.scale, args.runs)
        return 0
    res = measure(tmp, int(args.size), args.runs, not args.no_warm)
    for key, value in res.items():
        print(f"{key:>12}: {value:7.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
