"""Tile-compressed tables (ZTABLE = T, GZIP_2): dfits reading them against funpack + dfits.

    python benchmarks/ztable.py --size 1GiB [--tools dfits,dfits-columns,funpack]
        [--rounds 5] [--tmpdir /tmp/dfbench]

The file: ``tables_files.py``'s 30-column BINTABLE (10 each of E, D and J; 160-byte rows) of
``--size`` bytes, compressed once by ``fpack -table`` with ``FZALGOR = 'GZIP_2'`` (every
column byte-shuffled and gzipped; fpack's default tiles of about 10 MB of rows), kept in
``--tmpdir``. The case (issue 44's figure): the sums of three columns (``E0``, ``D0``,
``J0``).

* ``dfits``: ``dask.compute(hdu.aggregate("sum", ["E0", "D0", "J0"]))`` on the compressed
  file: each task decompresses only those three columns' cells of its tiles.
* ``dfits-columns``: ``dask.compute(*(hdu.column(n).sum() for n in names))``.
* ``funpack``: ``funpack -O`` to a file in ``--tmpdir``, then ``dfits``' aggregate on it
  (both timed; the file is deleted after each run).

Each tool runs ``--rounds`` times, each in a fresh process (``--worker``), right after the
parent reads the compressed file into the page cache; inside a process the operation first
runs untimed on a tiny twin (imports, Numba compilation). The median time, peak RSS (the
process's own ``VmHWM``) and the sums are reported; the sums of every tool must agree.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the file writer lives beside this driver
    sys.path.insert(0, _HERE)

from tables_files import THREE, ensure, row_dtype, write_table  # noqa: E402

TOOLS = ("dfits", "dfits-columns", "funpack")
WARM_ROWS = 1000


def compressed(tmpdir: Path, nrows: int) -> Path:
    """The GZIP_2 tile-compressed twin of the plain table of ``nrows`` rows (written once)."""
    packed = tmpdir / f"ztable-{nrows}.fits.fz"
    if packed.exists():
        return packed
    plain = ensure(tmpdir / f"ztable-{nrows}.fits", write_table, nrows)
    from astropy.io import fits

    fits.setval(plain, "FZALGOR", value="GZIP_2", ext=1)
    subprocess.run(["fpack", "-table", "-O", str(packed), str(plain)], check=True)
    plain.unlink()
    return packed


def _sums(path: str, tmpdir: str, tool: str) -> list[float]:
    import dask

    import dfits

    if tool == "funpack":
        out = Path(tempfile.mkdtemp(dir=tmpdir)) / "plain.fits"
        try:
            subprocess.run(["funpack", "-O", str(out), path], check=True)
            return _sums(str(out), tmpdir, "dfits")
        finally:
            shutil.rmtree(out.parent, ignore_errors=True)
    hdu = dfits.open(path)[1]
    if tool == "dfits-columns":
        return [float(v) for v in dask.compute(*(hdu.column(n).sum() for n in THREE))]
    sums = dask.compute(hdu.aggregate("sum", list(THREE)))[0]
    return [float(sums[n]) for n in THREE]


def peak_rss() -> int:
    with open("/proc/self/status") as fh:
        return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024


def worker(tool: str, path: str, warm: str, tmpdir: str) -> None:
    _sums(warm, tmpdir, tool)  # imports, Numba compilation
    t0 = time.perf_counter()
    value = _sums(path, tmpdir, tool)
    print(json.dumps({"s": time.perf_counter() - t0, "rss": peak_rss(), "value": value}))


def preread(path: Path, block: int = 64 << 20) -> None:
    buf = bytearray(block)
    with open(path, "rb", buffering=0) as fh:
        while fh.readinto(buf):
            pass


def measure(tool: str, path: Path, warm: Path, rounds: int, tmpdir: Path) -> dict:
    times, rss, value = [], [], None
    for _ in range(rounds):
        preread(path)
        cmd = [sys.executable, __file__, "--worker", tool, str(path), str(warm), str(tmpdir)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode:
            return {"tool": tool, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
        res = json.loads(done.stdout.strip().splitlines()[-1])
        times.append(res["s"])
        rss.append(res["rss"])
        value = res["value"]
    return {"tool": tool, "median_s": statistics.median(times), "peak_rss": max(rss),
            "value": value}  # fmt: skip


def parse_size(text: str) -> int:
    units = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "B": 1}
    upper = text.upper()
    for unit, factor in units.items():
        if upper.endswith(unit):
            return int(float(upper[: -len(unit)]) * factor)
    return int(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", nargs=4, metavar=("TOOL", "PATH", "WARM", "TMPDIR"))
    p.add_argument("--size", default="1GiB")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--tmpdir", default="/tmp/dfbench")
    args = p.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    if not (shutil.which("fpack") and shutil.which("funpack")):
        print("fpack and funpack (cfitsio's tools) are needed", file=sys.stderr)
        return 2
    tmpdir = Path(args.tmpdir)
    tmpdir.mkdir(parents=True, exist_ok=True)
    nrows = max(parse_size(args.size) // row_dtype().itemsize, 1)
    path, warm = compressed(tmpdir, nrows), compressed(tmpdir, WARM_ROWS)
    print(f"{path}: {nrows} rows, {path.stat().st_size / 2**20:.1f} MiB compressed")
    got = [measure(t, path, warm, args.rounds, tmpdir) for t in args.tools.split(",")]
    base = next((g["median_s"] for g in got if g["tool"] == "funpack" and "median_s" in g), None)
    ref = next((g["value"] for g in got if "value" in g), None)
    for g in got:
        if "error" in g:
            print(f"{g['tool']:<14} error: {g['error']}")
            continue
        speed = f"{base / g['median_s']:.2f}x funpack" if base else ""
        ok = "ok" if np.allclose(g["value"], ref, rtol=1e-6) else f"DIFFERS {g['value']}"
        print(f"{g['tool']:<14} {g['median_s']:8.3f} s  {speed:>14}  "
              f"{g['peak_rss'] / 2**20:7.0f} MiB  {ok}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
