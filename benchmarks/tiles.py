"""Tile-compressed images, side by side: dfits against astropy, fitsio, funpack and a LIMIT.

    python benchmarks/tiles.py [--tmpdir /tmp/dfbench-tiles] [--scale full|small] [--rounds 5]

Cases (issue 30): the sum and moment-0 of a RICE_1 int16 cube (full: 512 x 1024 x 1024, 1 GiB
decoded) and of an 8k x 8k float32 image quantised with SUBTRACTIVE_DITHER_2, and a 64 x 64
stamp cut from a 16k x 16k RICE_1 int16 image. Each tool runs in its own process (``--one``)
so that its peak RSS is its own; files are in the page cache (written, then read once).
Tools: ``dfits`` (``hdu.data`` + dask), ``astropy`` (``.data`` + numpy; ``.section`` for the
stamp), ``fitsio`` (``read`` + numpy; a slice for the stamp), ``funpack+dfits`` (funpack to a
file, then dfits on it), ``funpack`` (funpack to a file alone: cfitsio's decode, the LIMIT
the issue names), ``LIMIT`` (the same tile reader and decoders on 2 threads, a thread pool over
tile groups, no dask). Times are medians of ``--rounds`` runs. ``compare.py --cases tiles``
runs the same matrix.

``--breakdown`` times the phases of dfits' quantised-float path on a 4k x 4k SUBTRACTIVE_DITHER_2
RICE_1 image instead (decode, decode + dequantise into the chunk, the sum of that chunk): what
fusing the dequantisation into the reduction could save at most.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SCALES = {
    "full": {"cube": (512, 1024, 1024), "image": (8192, 8192), "big": (16384, 16384)},
    "small": {"cube": (16, 256, 256), "image": (512, 512), "big": (1024, 1024)},
    "tiny": {"cube": (4, 32, 64), "image": (64, 96), "big": (256, 256)},
}
CASES = ("cube-sum", "cube-moment0", "dither2-sum", "dither2-moment0", "stamp")
TOOLS = ("dfits", "astropy", "fitsio", "funpack+dfits", "funpack", "LIMIT")


def write_files(tmpdir: Path, scale: str) -> dict[str, Path]:
    """The three compressed files (reused when present)."""
    from astropy.io import fits

    shapes = SCALES[scale]
    tmpdir.mkdir(parents=True, exist_ok=True)
    paths = {k: tmpdir / f"tiles-{k}-{scale}.fits.fz" for k in shapes}
    rng = np.random.default_rng(0)
    for key, path in paths.items():
        if path.exists():
            continue
        shape = shapes[key]
        hdus = [fits.PrimaryHDU()]
        if key == "image":
            data = rng.normal(100, 5, shape).astype(np.float32)
            hdus.append(
                fits.CompImageHDU(
                    data, compression_type="RICE_1", quantize_method=2, quantize_level=4.0
                )
            )
        else:
            # one plane at a time: the cube is never whole in memory
            tile = (1, 1, shape[-1]) if len(shape) == 3 else (64, 64)
            data = rng.normal(1000, 30, shape).astype(np.int16)
            hdus.append(fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=tile))
        fits.HDUList(hdus).writeto(path, overwrite=True)
    for path in paths.values():
        path.read_bytes()  # into the page cache
    return paths


def _reduce(a: np.ndarray, case: str) -> Any:
    if case.endswith("moment0"):
        return a.sum(axis=0, dtype=np.float64)
    return a.sum(dtype=np.float64)


def operation(tool: str, case: str, path: Path) -> Any:
    """A callable running ``case`` with ``tool`` on ``path`` (opening included)."""
    import dfits

    if case == "stamp":
        cut = (slice(100, 164), slice(150, 214))
        if tool in ("dfits", "LIMIT"):
            return lambda: dfits.open(path)[1].section[cut]
        if tool == "astropy":
            from astropy.io import fits

            return lambda: fits.open(path)[1].section[cut]
        if tool == "fitsio":
            import fitsio

            return lambda: fitsio.FITS(str(path))[1][cut]
        return None
    if tool == "dfits":
        return lambda: _reduce_dask(dfits.open(path)[1].data, case)
    if tool == "astropy":
        from astropy.io import fits

        return lambda: _reduce(fits.open(path)[1].data, case)
    if tool == "fitsio":
        import fitsio

        return lambda: _reduce(fitsio.read(str(path), ext=1), case)
    if tool == "funpack+dfits":
        return lambda: _funpacked(path, case)
    if tool == "funpack":
        return lambda: _funpacked(path, None)
    return lambda: _limit(dfits.open(path)[1], case)


def _reduce_dask(x: Any, case: str) -> Any:
    return (x.sum(axis=0) if case.endswith("moment0") else x.sum(dtype=np.float64)).compute()


def _funpacked(path: Path, case: str) -> Any:
    import dfits

    with tempfile.TemporaryDirectory(dir=path.parent) as d:
        out = Path(d) / "u.fits"
        subprocess.run(["funpack", "-O", str(out), str(path)], check=True)
        return None if case is None else _reduce_dask(dfits.open(out)[1].data, case)


def _limit(hdu: Any, case: str) -> Any:
    """The tile reader's decoders and kernels on a 2-thread pool, no dask."""
    from concurrent.futures import ThreadPoolExecutor

    reader = hdu._block(raw=False)
    chunks = hdu.data.chunks
    starts = np.cumsum((0, *chunks[0]))
    regions = [
        (slice(int(a), int(b)), *(slice(0, n) for n in hdu.shape[1:]))
        for a, b in itertools.pairwise(starts)
    ]
    axis = 0 if case.endswith("moment0") else None

    def one(region):
        # numpy's nansum on the reader's chunk: the same kernel pass dask's chunk step runs
        # (fused with the dequantisation for quantised tiles)
        return np.nansum(reader.read(region), axis=axis, dtype=np.float64)

    with ThreadPoolExecutor(2) as pool:
        return sum(pool.map(one, regions))


def run_one(tool: str, case: str, path: Path, rounds: int) -> dict[str, Any]:
    op = operation(tool, case, path)
    if op is None:
        return {"skipped": True}
    op()  # compiles kernels, warms caches
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        op()
        times.append(time.perf_counter() - t)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"median_s": statistics.median(times), "peak_rss": peak}


def measure(tmpdir: Path, scale: str, rounds: int) -> list[tuple[str, str, str]]:
    """Every case x tool, each in its own process: rows of (case, tool, result text)."""
    paths = write_files(tmpdir, scale)
    which = {"cube": "cube", "dither2": "image", "stamp": "big"}
    out = []
    for case in CASES:
        path = paths[which[case.split("-")[0]]]
        for tool in TOOLS:
            if tool.startswith("funpack") and not shutil.which("funpack"):
                continue
            cmd = [sys.executable, __file__, "--rounds", str(rounds)]
            res = subprocess.run(
                [*cmd, "--one", tool, case, str(path)], capture_output=True, text=True
            )
            if res.returncode:
                out.append((case, tool, f"failed: {res.stderr.strip().splitlines()[-1:]}"))
                continue
            got = json.loads(res.stdout.strip().splitlines()[-1])
            if not got.get("skipped"):
                text = f"{got['median_s'] * 1e3:.1f} ms, peak RSS {got['peak_rss'] / 2**20:.0f} MiB"
                out.append((case, tool, text))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench-tiles"))
    ap.add_argument("--scale", choices=SCALES, default="full")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--breakdown", action="store_true", help="phases of the quantised path")
    ap.add_argument("--one", nargs=3, metavar=("TOOL", "CASE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        tool, case, path = args.one
        print(json.dumps(run_one(tool, case, Path(path), args.rounds)))
        return 0
    if args.breakdown:
        from tiles_fusion import breakdown

        side = {"full": 4096, "small": 1024, "tiny": 256}[args.scale]
        for phase, seconds in breakdown(args.tmpdir, side, args.rounds).items():
            print(f"{phase:34} median {seconds * 1e3:9.1f} ms")
        return 0
    for case, tool, text in measure(args.tmpdir, args.scale, args.rounds):
        print(f"{case:16} {tool:14} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
