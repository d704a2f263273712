"""FFT along chunked axes: dfits.fft against numpy.fft and dask's rechunk workaround (issue 36).

Every measurement runs in a fresh child process, so each method's peak RSS is its own; the
median of ``--repeat`` runs is reported with the largest peak RSS.

Cases
-----
``inmem``   1-D complex128 of 2**log2n values, chunked along the axis: ``numpy.fft.fft``,
            ``x.rechunk(n)`` + ``dask.array.fft.fft``, ``dfits.fft.fft`` (natural and
            transposed order). Normalised time = seconds / (N log2 N) in ns.
``2d``      ``fftn`` of a side x side float32 FITS image in tile x tile chunks, written to a
            zarr array, against ``numpy.fft.fft2`` of the image in memory.

``inmem`` and ``2d`` also run ``scipy.fft`` with ``workers=-1`` (pocketfft on every core: the
field's fastest in-core FFT here) and ``limit``: ``--passes`` bare ``np.copyto`` of the array's
complex bytes, the memory-bandwidth floor the six-step's passes cannot beat. Each row also
gives the child process' CPU seconds (set-up included), steadier than wall time on a busy
machine.
``ooc``     out-of-core against demand paging under a cgroup memory cap (issue 48): see
            ``fft_ooc_run.py`` (``python benchmarks/fft.py ooc --help``).
Examples (the issue's sizes; a quiet machine needed)::

    python benchmarks/fft.py inmem --log2n 26 --repeat 5
    python benchmarks/fft.py ooc --cap 1GiB --sizes 27,28,29 --dir /scratch/disk  # as root
    python benchmarks/fft.py 2d --side 16384 --tile 1024 --repeat 5 --passes 2
    python benchmarks/fft.py 2d --side 16384 --tile 1024 --repeat 5 --passes 2 --memory 1GiB

``2d`` with dfits' default ``memory_limit`` (half the RAM) transposes the 2 GiB complex64 image
in memory; ``--memory 1GiB`` sends it through the scratch store, about 1.4 GiB peak RSS instead
of 3.3 (measured with the earlier zarr store).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: methods of each case, in the order they are printed
METHODS = {
    "inmem": ["limit", "numpy", "scipy", "dask-rechunk", "dfits", "dfits-transposed"],
    "2d": ["limit", "numpy", "scipy", "dfits"],
}


def _limit(values, passes: int) -> None:
    """The memory-bandwidth floor: ``passes`` bare copies of the array's bytes (each pass of
    a six-step reads and writes every value at least once; the transposes cannot beat this)."""
    import numpy as np

    out = np.empty_like(values)
    for _ in range(passes):
        np.copyto(out, values)


def _peak_rss() -> int:
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child would report its
    # parent's resident pages at fork as part of its own peak
    try:
        with open("/proc/self/status") as fh:
            return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _inmem(method: str, args: argparse.Namespace) -> float:
    import dask.array as da
    import numpy as np

    n = 1 << args.log2n
    chunk = n // args.chunks
    x = da.random.default_rng(0).standard_normal(n, chunks=chunk).astype(np.complex128)
    x = x.persist()
    start = time.perf_counter()
    if method in ("numpy", "scipy", "limit"):
        values = x.compute()
        start = time.perf_counter()
        _in_core(method, values, args.passes, axes=(0,))
    elif method == "dask-rechunk":
        da.fft.fft(x.rechunk(n)).compute()
    else:
        import dfits.fft

        order = "transposed" if method == "dfits-transposed" else "natural"
        # import the per-block FFT library before the clock starts, as numpy's is above
        dfits.fft.fft(x[:4096].rechunk(512), block_size=8192).compute()
        start = time.perf_counter()
        dfits.fft.fft(x, order=order, block_size=args.block).compute()
    return time.perf_counter() - start


def _image_file(args: argparse.Namespace) -> Path:
    import numpy as np

    from dfits.io.writer import ImageWriter

    path = Path(args.dir) / f"fft-2d-{args.side}.fits"
    if not path.exists():
        rng = np.random.default_rng(0)
        with ImageWriter(path, (args.side, args.side), ">f4") as out:
            for _ in range(args.side // args.tile):
                out.write(rng.standard_normal((args.tile, args.side), dtype=np.float32))
    return path


def _2d(method: str, args: argparse.Namespace) -> float:

    import dfits

    path = _image_file(args)
    x = dfits.open(path, chunks=(args.tile, args.tile))[0].data
    x[:4, :4].compute()  # compile the decode kernels before the clock starts
    if method in ("numpy", "scipy", "limit"):
        values = x.compute()
        start = time.perf_counter()
        _in_core(method, values, args.passes, axes=(0, 1))
        return time.perf_counter() - start
    import dfits.fft

    scratch = tempfile.mkdtemp(dir=args.dir, prefix="fft-2d-")
    start = time.perf_counter()
    y = dfits.fft.fftn(x, block_size=args.block, memory_limit=args.memory, scratch=scratch)
    y.to_zarr(str(Path(scratch) / "out.zarr"))
    elapsed = time.perf_counter() - start
    shutil.rmtree(scratch, ignore_errors=True)
    return elapsed


def _in_core(method: str, values, passes: int, axes: tuple[int, ...]) -> None:
    """numpy's FFT (one thread), scipy's (``workers=-1``: every core) or the copy floor."""
    import numpy as np

    if method == "numpy":
        np.fft.fftn(values, axes=axes)
    elif method == "scipy":
        import scipy.fft

        scipy.fft.fftn(values, axes=axes, workers=-1)
    else:
        _limit(values.astype(np.result_type(values.dtype, np.complex64)), passes)


CASES = {"inmem": _inmem, "2d": _2d}


def _child(args: argparse.Namespace) -> None:
    import dask

    with dask.config.set(scheduler="threads", num_workers=args.threads):
        seconds = CASES[args.case](args.child, args)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    # CPU seconds of the whole child (set-up included): steadier than wall time on a busy host
    print(json.dumps({"seconds": seconds, "rss": _peak_rss(), "cpu": cpu.ru_utime + cpu.ru_stime}))


def _run_one(method: str, argv: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *argv, "--child", method],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", choices=sorted(CASES), help="(ooc: see fft.py ooc --help)")
    p.add_argument("--log2n", type=int, default=20, help="1-D length is 2**log2n")
    p.add_argument("--chunks", type=int, default=16, help="inmem: chunks along the axis")
    p.add_argument("--side", type=int, default=2048, help="2d: image side")
    p.add_argument("--tile", type=int, default=256, help="2d: chunk side")
    p.add_argument("--block", default="32MiB", help="dfits.fft block_size")
    p.add_argument("--memory", help="2d: dfits.fft memory_limit (default: half the RAM)")
    p.add_argument("--passes", type=int, default=4, help="limit: passes the floor copies")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--dir", default=tempfile.gettempdir(), help="where files and scratch go")
    p.add_argument("--methods", nargs="*", help="a subset of the case's methods")
    p.add_argument("--child", help=argparse.SUPPRESS)
    return p


def measure(argv: list[str]) -> dict[str, dict]:
    """``{method: {"median": s, "times": [...], "rss": bytes}}`` for the case ``argv`` names."""
    args = _parser().parse_args(argv)
    results = {}
    for method in args.methods or METHODS[args.case]:
        runs = [_run_one(method, argv) for _ in range(args.repeat)]
        times = [r["seconds"] for r in runs]
        results[method] = {
            "median": statistics.median(times),
            "times": times,
            "rss": max(r["rss"] for r in runs),
            "cpu": statistics.median(r["cpu"] for r in runs),
        }
    return results


def report(case: str, results: dict[str, dict], args: argparse.Namespace) -> str:
    lines = [f"case {case}, {args.threads} threads, median of {args.repeat}"]
    n = 1 << args.log2n if case != "2d" else args.side**2
    for method, r in results.items():
        norm = r["median"] / (n * math.log2(n)) * 1e9
        lines.append(
            f"  {method:18s} {r['median']:9.3f} s  peak RSS {r['rss'] / 2**30:6.2f} GiB"
            f"  normalised {norm:6.3f} ns/(N log2 N)  child CPU {r['cpu']:7.2f} s"
        )
    base = results.get("numpy")
    # the limit is a floor, not a competitor: the ratios compare with numpy
    if base:
        for method, r in results.items():
            lines.append(f"  {method:18s} {base['median'] / r['median']:6.2f}x the baseline")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["ooc"]:  # its own options: the cap, the sizes, the methods
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import fft_ooc_run

        return fft_ooc_run.main(argv[1:])
    args = _parser().parse_args(argv)
    if args.child:
        _child(args)
        return 0
    print(report(args.case, measure(argv), args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
