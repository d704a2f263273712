"""Spectral-cube workflows in km/s: dfits' ``.fits`` accessor against spectral-cube 0.7.

    python benchmarks/spectral.py --shape 256,1024,1024 [--runs 3] [--tmpdir DIR]
        [--cases moment01,sigma,slab0] [--tools dfits,spectral-cube,spectral-cube-dask]

Cases, each counting the whole call (open, ``with_spectral_unit("km/s", "radio")``, the maps):
``moment01``: moment-0 (Σ I·Δv, Jy/beam·km/s) and moment-1 (km/s) maps; ``sigma``: the
line width σ (dfits' ``moment(2)``, spectral-cube's ``linewidth_sigma``); ``slab0``:
moment-0 of a spectral slab (the middle half of the band, bounds in km/s).
Tools: ``dfits`` (``xr.open_dataarray(engine="dfits")`` and the accessor), ``spectral-cube``
(``SpectralCube.read``, eager) and ``spectral-cube-dask`` (``use_dask=True``).

Methodology: the cube is ``dfits.demo.make_cube``'s float32 (channel, y, x) cube with a FREQ
axis and RESTFRQ, generated once in ``--tmpdir`` and read whole before every run so it is in
the page cache. Every run is a fresh ``python`` process that imports its tools (untimed),
then times the case twice: ``first`` (a fresh process: Numba compilation or its on-disk
cache included) and ``again`` (warm, same process). Peak RSS is the process's ``ru_maxrss``.
Rounds are interleaved across tools; tables give medians. Each tool's maps are checked
against spectral-cube's eager ones (rtol 1e-4 where both are finite).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CASES = ("moment01", "sigma", "slab0")
TOOLS = ("dfits", "spectral-cube", "spectral-cube-dask")

WORKER = r"""
import json, resource, sys, time
import numpy as np
tool, case, path, out = sys.argv[1:5]
import astropy.units as u
if tool == "dfits":
    import dask, xarray as xr, dfits
    def run():
        cube = xr.open_dataarray(path, engine="dfits")
        v = cube.fits.with_spectral_unit("km/s", velocity_convention="radio")
        if case == "slab0":
            vals = v["vrad"].values
            n = vals.size
            v = v.fits.spectral_slab(vals[n // 4] * u.km / u.s, vals[3 * n // 4] * u.km / u.s)
        maps = {"moment01": [v.fits.moment(0), v.fits.moment(1)], "sigma": [v.fits.moment(2)],
                "slab0": [v.fits.moment(0)]}[case]
        return [np.asarray(m) for m in dask.compute(*[m.data for m in maps])]
else:
    import warnings
    warnings.simplefilter("ignore")
    from spectral_cube import SpectralCube
    def run():
        sc = SpectralCube.read(path, use_dask=tool.endswith("dask"))
        sc = sc.with_spectral_unit(u.km / u.s, velocity_convention="radio")
        if case == "slab0":
            ax = sc.spectral_axis
            n = ax.size
            sc = sc.spectral_slab(ax[n // 4], ax[3 * n // 4])
        if case == "moment01":
            maps = [sc.moment0().to(u.Jy / u.beam * u.km / u.s), sc.moment1().to(u.km / u.s)]
        elif case == "sigma":
            maps = [sc.linewidth_sigma().to(u.km / u.s)]
        else:
            maps = [sc.moment0().to(u.Jy / u.beam * u.km / u.s)]
        return [np.asarray(m.value) for m in maps]
t0 = time.perf_counter(); first = run(); t1 = time.perf_counter(); run(); t2 = time.perf_counter()
np.save(out, np.stack(first))
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first": t1 - t0, "again": t2 - t1, "rss_mib": rss}))
"""


def cube_path(tmpdir: Path, shape: tuple[int, int, int]) -> Path:
    from dfits.demo import make_cube

    path = tmpdir / f"spectral-{'x'.join(map(str, shape))}.fits"
    if not path.exists():
        make_cube(str(path), shape=shape)
    return path


def cache(path: Path) -> None:
    """Read the file whole so every run starts from a warm page cache."""
    with open(path, "rb") as f:
        while f.read(64 * 2**20):
            pass


def run_once(tool: str, case: str, path: Path, out: Path) -> dict:
    cache(path)
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, tool, case, str(path), str(out)],
        capture_output=True, text=True, check=False, env=os.environ.copy(),
    )  # fmt: skip
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def agrees(got: np.ndarray, want: np.ndarray) -> bool:
    both = np.isfinite(got) & np.isfinite(want)
    return got.shape == want.shape and bool(np.allclose(got[both], want[both], rtol=1e-4))


def measure(path: Path, cases, tools, runs: int, tmpdir: Path) -> dict:
    """``{case: {tool: {"first": [...], "again": [...], "rss_mib": [...], "ok": bool}}}``."""
    results: dict = {}
    for case in cases:
        table = results.setdefault(case, {t: {"first": [], "again": [], "rss_mib": []}
                                          for t in tools})  # fmt: skip
        for r in range(runs):
            for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
                got = run_once(tool, case, path, tmpdir / f"{case}-{tool}.npy")
                if "error" in got:
                    table[tool]["error"] = got["error"]
                    continue
                for key in ("first", "again", "rss_mib"):
                    table[tool][key].append(got[key])
        oracle = tmpdir / f"{case}-spectral-cube.npy"
        for tool in tools:
            mine = tmpdir / f"{case}-{tool}.npy"
            if oracle.exists() and mine.exists():
                table[tool]["ok"] = agrees(np.load(mine), np.load(oracle))
    return results


def report(results: dict, shape, nbytes: int) -> str:
    lines = [f"cube {shape} float32, {nbytes / 2**20:.0f} MiB; medians of fresh processes", ""]
    lines += ["| case | tool | first (s) | again (s) | peak RSS (MiB) | agrees |", "|---" * 6 + "|"]
    for case, table in results.items():
        for tool, row in table.items():
            if not row["first"]:
                lines.append(f"| {case} | {tool} | n/a | n/a | n/a | {row.get('error', '')} |")
                continue
            med = {k: statistics.median(row[k]) for k in ("first", "again", "rss_mib")}
            lines.append(
                f"| {case} | {tool} | {med['first']:.2f} | {med['again']:.2f} | "
                f"{med['rss_mib']:.0f} | {row.get('ok', '')} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="256,1024,1024")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--tmpdir", default=None)
    a = p.parse_args(argv)
    shape = tuple(int(s) for s in a.shape.split(","))
    tmpdir = Path(a.tmpdir or tempfile.mkdtemp(prefix="dfits-spectral-"))
    tmpdir.mkdir(parents=True, exist_ok=True)
    path = cube_path(tmpdir, shape)
    cases = [c for c in a.cases.split(",") if c]
    tools = [t for t in a.tools.split(",") if t]
    results = measure(path, cases, tools, a.runs, tmpdir)
    text = report(results, shape, int(np.prod(shape)) * 4)
    print(text)
    return text


if __name__ == "__main__":
    main()
