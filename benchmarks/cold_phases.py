"""Where a one-shot run's time and a worker's memory go (issue 49 item 1, issue 51 item 2).

Run through ``cold_start.py --breakdown`` / ``--memory``. Every figure comes from a fresh
interpreter:

* :func:`phases`: one script, timed at each phase (see ``PHASES``), for the two cases of
  issue 49: the sum of an int16 RICE_1 image in 32-row tiles (8192 × 8192 at ``scale`` 1)
  and the sums of 3 of the 30 columns of a table (4 M rows, 640 MB at ``scale`` 1); with
  dfits' scheduler choice, with dask's own lookup, and on the eager route (``EAGER``: no
  graph, :func:`dfits.array.eager.reduce_hdu`);
* :func:`imports_by_library`: the same script under ``python -X importtime``, self times
  summed per top-level package;
* :func:`families`: each kernel family's first call against its second, in a process of its
  own, after numba's own first cached function (the floor every family pays once);
* :func:`memory`: the resident memory each library adds, alone and in a worker's order;
* :func:`one_shot`: issue 49's end-to-end figures: each tool's script (or command) in fresh
  processes, interleaved, from interpreter start to the answer (``ONE_SHOT``), with the
  ratios the issue sets (dfits against astropy, fitsio and ``fitsinfo``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: the columns summed in the table case (a float64, an int32 and a float32 column)
TABLE_SUMS = ["D0", "J5", "E9"]

PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
marks = {}
def mark(name):
    marks[name] = time.perf_counter() - t0
case, path, route = sys.argv[1], sys.argv[2], sys.argv[3]
import dfits
mark("import dfits")
hdu = dfits.open(path)[1]
mark("open")
if case == "image":
    exprs, tiny = [hdu.data.sum()], [hdu.data[:32].sum()]
else:
    cols = sys.argv[4].split(",")
    exprs = [hdu.column(c).sum() for c in cols]
    tiny = [hdu.column(c)[:1000].sum() for c in cols]
mark("graph (dask imported)")
import dask
if route == "dask":
    from dask.base import get_scheduler
    get = get_scheduler(collections=exprs)
else:
    from dfits.array.scheduler import scheduler
    get = scheduler(*exprs)
mark("scheduler lookup")
dask.compute(*tiny, scheduler=get)
mark("kernel loads (a tiny slice)")
first = dask.compute(*exprs, scheduler=get)
mark("first full compute")
dask.compute(*exprs, scheduler=get)
mark("second full compute")
print(json.dumps({"marks": marks, "distributed": "distributed" in sys.modules,
                  "values": [float(v) for v in first]}))
"""

#: the eager route (``route`` "eager", :mod:`dfits.array.eager`): no graph, no dask.array
EAGER = r"""
import json, sys, time
t0 = time.perf_counter()
marks = {}
def mark(name):
    marks[name] = time.perf_counter() - t0
case, path = sys.argv[1], sys.argv[2]
import dfits
mark("import dfits")
hdu = dfits.open(path)[1]
mark("open")
from dfits.array.eager import reduce_hdu
mark("eager module")
if case == "image":
    run = lambda: [reduce_hdu(hdu, "sum")]
else:
    run = lambda: [reduce_hdu(hdu, "sum", column=c) for c in sys.argv[4].split(",")]
first = run()
mark("first full compute")
run()
mark("second full compute")
print(json.dumps({"marks": marks, "distributed": "distributed" in sys.modules,
                  "dask.array": "dask.array" in sys.modules,
                  "values": [float(v) for v in first]}))
"""

FAMILY = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
import numba
import trivial_kernel
trivial_kernel.total(np.ones(3))
floor = time.perf_counter() - t0
from dfits import kernels
from dfits.format.dtypes import parse_decode_spec
spec, spec16 = parse_decode_spec(-32)[0], parse_decode_spec(16)[0]
u, u16 = np.zeros((2, 3, 4), "u4"), np.zeros((2, 3, 4), "u2")
calls = {
    "decode": lambda: kernels.decode(u, spec),
    "sum_count": lambda: kernels.sum_count(u, spec, None, skipna=False),
    "moments": lambda: kernels.moments(u, spec, None, skipna=False),
    "extrema": lambda: kernels.extrema(u, spec, None, want_max=True, with_index=False),
    "integer_sum": lambda: kernels.integer_sum(u16, spec16, None),
    "weighted_sums": lambda: kernels.weighted_sums(u, spec, 0, np.ones(2)),
}
call = calls[sys.argv[1]]
t1 = time.perf_counter(); call(); t2 = time.perf_counter(); call(); t3 = time.perf_counter()
print(json.dumps({"floor": floor, "first": t2 - t1, "second": t3 - t2}))
"""

FAMILIES = ["decode", "sum_count", "moments", "extrema", "integer_sum", "weighted_sums"]

TRIVIAL = """import numba


@numba.njit(cache=True, nogil=True)
def total(a):
    t = 0.0
    for v in a:
        t += v
    return t
"""

RSS = r"""
import importlib, json, sys
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) / 1024 for l in fh if l.startswith("VmRSS:"))
mods = sys.argv[1:]
for m in mods[:-1]:
    importlib.import_module(m)
before = rss()
importlib.import_module(mods[-1])
print(json.dumps({"before": before, "after": rss()}))
"""

#: libraries a dfits process may load, alone; then the order a remote dfits task loads them
LIBRARIES = ["numpy", "dask", "dask.array", "distributed", "numba", "fsspec", "aiohttp",
             "xarray", "pandas", "pyarrow", "scipy", "astropy.io.fits", "astropy.wcs",
             "matplotlib", "dfits", "dfits.file", "dfits.kernels"]  # fmt: skip
WORKER_ORDER = ["numpy", "dask", "distributed", "dfits", "dfits.file", "scipy", "pyarrow",
                "pandas", "xarray", "dask.array", "numba", "dfits.kernels", "fsspec",
                "aiohttp"]  # fmt: skip


def _python(*args: str, env: dict | None = None) -> str:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{args[:2]} failed: {out.stderr[-2000:]}")
    return out.stdout if out.stdout else out.stderr


def write_image(path: Path, scale: float) -> None:
    """int16, RICE_1, tiles of 32 whole rows: 8192 × 8192 at scale 1 (astropy writes it)."""
    from astropy.io import fits

    rows = max(32, int(8192 * scale) // 32 * 32)
    rng = np.random.default_rng(0)
    data = (rng.normal(1000, 30, (rows, 8192))).astype(np.int16)
    hdu = fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=(32, 8192))
    fits.HDUList([fits.PrimaryHDU(), hdu]).writeto(path, overwrite=True)


def write_table(path: Path, scale: float) -> None:
    """30 columns (10 ``D``, 10 ``J``, 10 ``E``), 4 M rows at scale 1 (640 MB)."""
    from astropy.io import fits

    rows = max(1000, int(4_000_000 * scale))
    rng = np.random.default_rng(1)
    cols = []
    for kind, fmt, dtype in (("D", "D", np.float64), ("J", "J", np.int32), ("E", "E", np.float32)):
        for i in range(10):
            values = rng.integers(0, 1000, rows).astype(dtype)
            cols.append(fits.Column(name=f"{kind}{i}", format=fmt, array=values))
    fits.BinTableHDU.from_columns(cols).writeto(path, overwrite=True)


def case_file(tmpdir: Path, case: str, scale: float) -> Path:
    path = tmpdir / f"{case}-{scale:g}.fits"
    if not path.exists():
        (write_image if case == "image" else write_table)(path, scale)
    return path


def _phase_args(case: str, path: Path, route: str) -> list[str]:
    script = EAGER if route == "eager" else PHASES
    return ["-c", script, case, str(path), route, ",".join(TABLE_SUMS)]


def phases(path: Path, case: str, route: str, runs: int) -> dict[str, float]:
    """Median seconds since interpreter start at each phase's end; ``interpreter`` is the
    median of ``python -c pass`` and ``wall`` the whole subprocess."""
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        start = time.perf_counter()
        _python("-c", "pass")
        samples.setdefault("interpreter", []).append(time.perf_counter() - start)
        start = time.perf_counter()
        out = json.loads(_python(*_phase_args(case, path, route)).strip().splitlines()[-1])
        samples.setdefault("wall", []).append(time.perf_counter() - start)
        for name, value in out["marks"].items():
            samples.setdefault(name, []).append(value)
        samples.setdefault("distributed imported", []).append(float(out["distributed"]))
        if "dask.array" in out:
            samples.setdefault("dask.array imported", []).append(float(out["dask.array"]))
    return {k: statistics.median(v) for k, v in samples.items()}


def imports_by_library(path: Path, case: str, route: str) -> dict[str, float]:
    """Seconds of import (self times summed) per top-level package over the whole run."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", *_phase_args(case, path, route)],
        capture_output=True, text=True, check=True,
    ).stderr  # fmt: skip
    totals: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (p.strip() for p in line[len("import time:") :].split("|"))
        top = name.split(".")[0]
        totals[top] = totals.get(top, 0.0) + int(self_us) / 1e6
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def families(tmpdir: Path, runs: int, names: list[str] = FAMILIES) -> dict[str, dict[str, float]]:
    """Per kernel family: median floor (numba's first cached function), first and second
    call, each family in fresh processes (the kernel cache as it is)."""
    (tmpdir / "trivial_kernel.py").write_text(TRIVIAL)
    _python("-c", FAMILY, "decode", str(tmpdir))  # compiles the trivial kernel into its cache
    out: dict[str, dict[str, float]] = {}
    for name in names:
        got = [json.loads(_python("-c", FAMILY, name, str(tmpdir)).strip()) for _ in range(runs)]
        out[name] = {k: statistics.median(g[k] for g in got) for k in ("floor", "first", "second")}
    return out


def _rss(mods: list[str]) -> float:
    got = json.loads(_python("-c", RSS, *mods).strip().splitlines()[-1])
    return got["after"] - got["before"]


def memory() -> dict[str, dict[str, float]]:
    """MiB each library adds: alone (after the interpreter), and cumulatively in a worker's
    order (what is new at each step)."""
    alone = {m: _rss([m]) for m in LIBRARIES}
    ordered = {m: _rss(WORKER_ORDER[: i + 1]) for i, m in enumerate(WORKER_ORDER)}
    return {"alone": alone, "worker order": ordered}


def print_memory() -> None:
    res = memory()
    print("| library | alone, MiB | in a worker's order, MiB |")
    print("|---|---|---|")
    for m in dict.fromkeys(WORKER_ORDER + LIBRARIES):
        order = res["worker order"].get(m)
        cell = f"{order:.1f}" if order is not None else "—"
        print(f"| `{m}` | {res['alone'][m]:.1f} | {cell} |")


def print_breakdown(tmpdir: Path, scale: float, runs: int) -> None:
    env_note = os.environ.get("NUMBA_CACHE_DIR", "default location")
    print(f"kernel cache: {env_note}; scale {scale:g}; medians of {runs} fresh processes")
    for case in ("image", "table"):
        path = case_file(tmpdir, case, scale)
        print(f"\n{case}: {path.name} ({path.stat().st_size / 1e6:.0f} MB)")
        for route in ("dfits", "dask", "eager"):
            res = phases(path, case, route, runs)
            cells = ", ".join(f"{k} {v:.3f}" for k, v in res.items())
            print(f"  scheduler by {route}: {cells}")
        top = list(imports_by_library(path, case, "dask").items())[:12]
        print("  imports (s, self times by package): " + ", ".join(f"{k} {v:.3f}" for k, v in top))
    print("\nkernel family: floor / first / second call (s)")
    for name, res in families(tmpdir, runs).items():
        print(f"  {name}: {res['floor']:.3f} / {res['first']:.3f} / {res['second']:.5f}")


#: issue 49's one-shot cases: per case, per tool, the script run as ``python -c SCRIPT PATH``
#: (``cli:`` entries are commands); each prints its answer. The ``dfits`` scripts are what a
#: user writes (a bare ``compute()``, dask's own scheduler lookup); ``dfits-eager`` asks
#: :func:`dfits.array.eager.reduce_hdu`, which computes small requests without a graph.
ONE_SHOT = {
    "image": {
        "dfits": "import sys, dfits; print(float(dfits.open(sys.argv[1])[1].data.sum().compute()))",
        "astropy": "import sys; from astropy.io import fits; "
        "print(float(fits.open(sys.argv[1])[1].data.sum()))",
        "fitsio": "import sys, fitsio; print(float(fitsio.read(sys.argv[1], ext=1).sum()))",
        "dfits-eager": "import sys, dfits; from dfits.array.eager import reduce_hdu; "
        "print(float(reduce_hdu(dfits.open(sys.argv[1])[1], 'sum')))",
    },
    "table": {
        "dfits": "import sys, dask, dfits; h = dfits.open(sys.argv[1])[1]; "
        f"print(dask.compute(*[h.column(c).sum() for c in {TABLE_SUMS!r}]))",
        "astropy": "import sys; from astropy.io import fits; d = fits.open(sys.argv[1])[1].data; "
        f"print([d[c].sum() for c in {TABLE_SUMS!r}])",
        "fitsio": "import sys, fitsio; "
        f"d = fitsio.read(sys.argv[1], ext=1, columns={TABLE_SUMS!r}); "
        f"print([d[c].sum() for c in {TABLE_SUMS!r}])",
        "dfits-eager": "import sys, dfits; from dfits.array.eager import reduce_hdu; "
        f"h = dfits.open(sys.argv[1])[1]; print([reduce_hdu(h, 'sum', column=c) "
        f"for c in {TABLE_SUMS!r}])",
    },
    "info": {"dfits": "cli:dfits info", "astropy": "cli:fitsinfo"},
    "stats": {
        "dfits": "cli:dfits stats --quiet",
        "astropy": "import sys, numpy as np; from astropy.io import fits; "
        "d = fits.getdata(sys.argv[1]); "
        "print(np.nanmin(d), np.nanmax(d), np.nanmean(d), np.nanstd(d))",
    },
}


def _one(script: str, path: Path) -> float:
    if script.startswith("cli:"):
        cmd = script[4:].split()
        cmd = [str(Path(sys.executable).with_name(cmd[0])), *cmd[1:], str(path)]
    else:
        cmd = [sys.executable, "-c", script, str(path)]
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    return time.perf_counter() - start


def write_float_image(path: Path, nbytes: int) -> None:
    """A float32 image of about ``nbytes`` (some NaN), for ``stats``: 1 GiB in issue 49."""
    from astropy.io import fits

    cols = 4096
    rows = max(2, nbytes // (cols * 4))
    data = np.random.default_rng(2).standard_normal((rows, cols)).astype(np.float32)
    data[::97, ::89] = np.nan
    fits.PrimaryHDU(data).writeto(path, overwrite=True)


def one_shot(tmpdir: Path, scale: float, runs: int) -> dict[str, dict[str, float]]:
    """Median seconds of each tool per case, the tools interleaved run by run."""
    image = case_file(tmpdir, "image", scale)
    files = {"image": image, "table": case_file(tmpdir, "table", scale), "info": image}
    files["stats"] = tmpdir / f"float-{scale:g}.fits"
    if not files["stats"].exists():
        write_float_image(files["stats"], int((1 << 30) * scale))
    out: dict[str, dict[str, float]] = {}
    for case, tools in ONE_SHOT.items():
        samples: dict[str, list[float]] = {t: [] for t in tools}
        for _ in range(runs):
            for tool, script in tools.items():
                samples[tool].append(_one(script, files[case]))
        out[case] = {t: statistics.median(v) for t, v in samples.items()}
    return out


def print_one_shot(tmpdir: Path, scale: float, runs: int) -> None:
    print(f"one-shot, fresh processes, medians of {runs} (scale {scale:g}); speed-up of dfits")
    for case, times in one_shot(tmpdir, scale, runs).items():
        cells = ", ".join(f"{t} {v:.3f} s" for t, v in times.items())
        print(f"  {case}: {cells}")
        for ours in (t for t in times if t.startswith("dfits")):
            others = (t for t in times if not t.startswith("dfits"))
            ratios = ", ".join(f"{times[t] / times[ours]:.2f}x {t}" for t in others)
            print(f"    {ours}: {ratios}")
