"""Tile-compressed images, side by side: dfits against astropy, fitsio, funpack and a LIMIT.

    python benchmarks/tiles.py [--tmpdir /tmp/dfbench-tiles] [--scale full|small] [--rounds 5]
                               [--tools dfits,astropy,...] [--files cube,image,big]
                               [--write-only]

Cases (issue 30): the sum and moment-0 of a RICE_1 int16 cube (full: 512 x 1024 x 1024, 1 GiB
decoded) and of an 8k x 8k float32 image quantised with SUBTRACTIVE_DITHER_2, and a 64 x 64
stamp cut from a 16k x 16k RICE_1 int16 image (64 x 64 tiles). Beside the one ``stamp``
(a fresh process's first, opening included), issue 46's loops of :data:`STAMPS` stamps at
distinct pseudo-random places (the same places for every tool, :func:`stamp_places`), each
timed alone, the median stamp shown: ``stamp-warm`` opens the file once (``dfits.open``,
``fits.open``, ``fitsio.FITS``; untimed) and cuts every stamp from it, ``stamp-reopen``
opens the file again for each stamp (timed with it), as a cut-out service would.

Every measurement is a fresh process (``--one``): it runs its tool on each case of one file,
first on the tiny file of the same kind (imports, kernels loaded or compiled: untimed), then
once on the real file, timed; so its peak RSS is its own. Rounds are interleaved (round 1 of
every file and tool, then round 2, ...; the tools' order rotates each round) and each time
shown is the median of ``--rounds`` processes, with the median peak RSS, how many times faster
dfits ran, and a check that each tool's result agrees with dfits'. Files are in the page cache
(written once and reused from ``--tmpdir``, then read once).
Tools: ``dfits`` (``hdu.data`` + dask), ``astropy`` (``.data`` + numpy; ``.section`` for the
stamp), ``fitsio`` (``read`` + numpy; a slice for the stamp), ``funpack+dfits`` (funpack to a
file, then dfits on it), ``funpack`` (funpack to a file alone: cfitsio's decode), ``LIMIT``
(the same tile reader, decoders and kernels on a 2-thread pool over tile groups, no dask).
``--tools`` picks tools (default all but ``funpack`` alone) and ``--files`` files (``cube``:
its sum and moment 0; ``image``: the DITHER_2 image's; ``big``: the stamp); ``--write-only``
writes the files into ``--tmpdir`` and stops, so that timed runs reuse them.
``compare.py --cases tiles`` runs the same matrix. At full scale on 2 cores, in parts of a
few minutes each (each part has dfits as its baseline)::

    python tiles.py --scale full --write-only              # once: ~1.5 GiB of files
    python tiles.py --scale full --files cube --tools dfits,astropy,fitsio
    python tiles.py --scale full --files cube --tools dfits,funpack+dfits,LIMIT
    python tiles.py --scale full --files image,big

``--breakdown`` times the phases of dfits' quantised-float path on a 4k x 4k SUBTRACTIVE_DITHER_2
RICE_1 image instead (decode, dequantise, sum, and the fused sum; see ``tiles_fusion.py``).
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
CASES = ("cube-sum", "cube-moment0", "dither2-sum", "dither2-moment0", "stamp", "stamp-warm",
         "stamp-reopen")  # fmt: skip
#: the stamp cases run as loops of this many stamps, each timed alone (median shown)
LOOPS = ("stamp-warm", "stamp-reopen")
STAMPS = 200
#: a stamp's side (pixels)
SIDE = 64
TOOLS = ("dfits", "astropy", "fitsio", "funpack+dfits", "funpack", "LIMIT")
#: the issue's comparisons; ``funpack`` alone (cfitsio's decode to a file) on request
DEFAULT_TOOLS = ("dfits", "astropy", "fitsio", "funpack+dfits", "LIMIT")


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
            tile = (1, 1, shape[-1]) if len(shape) == 3 else (64, 64)
            # drawn a slab at a time: the 1 GiB int16 cube never exists in float64 (4 GiB)
            data = np.empty(shape, np.int16)
            for k in range(0, shape[0], 16):
                slab = data[k : k + 16]
                slab[...] = rng.normal(1000, 30, slab.shape)
            hdus.append(fits.CompImageHDU(data, compression_type="RICE_1", tile_shape=tile))
        fits.HDUList(hdus).writeto(path, overwrite=True)
    for path in paths.values():
        _cache(path)
    return paths


def _cache(path: Path) -> None:
    """Read ``path`` into the page cache 16 MiB at a time: this process's peak RSS stays
    small, and it would be every timed child's floor (see :func:`_peak`)."""
    with path.open("rb", buffering=0) as fh:
        while fh.read(16 << 20):
            pass


def _peak() -> int:
    """This process's own peak RSS in bytes: VmHWM, not ``ru_maxrss``, which Linux keeps
    across exec, so a child would report its parent's peak (a whole file read) as its own."""
    try:
        with open("/proc/self/status") as fh:
            line = next(x for x in fh if x.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reduce(a: np.ndarray, case: str) -> Any:
    if case.endswith("moment0"):
        return a.sum(axis=0, dtype=np.float64)
    return a.sum(dtype=np.float64)


def stamp_places(shape: tuple[int, ...], n: int = STAMPS) -> list[tuple[slice, slice]]:
    """``n`` distinct :data:`SIDE` x :data:`SIDE` cuts of an image of ``shape``, drawn from a
    fixed seed: the same for every tool (and every run) on one file."""
    rng = np.random.default_rng(46)
    room = [max(k - SIDE, 0) + 1 for k in shape[-2:]]
    seen: dict[tuple[int, int], None] = {}
    for _ in range(100 * n):
        if len(seen) == min(n, room[0] * room[1]):
            break
        seen[int(rng.integers(room[0])), int(rng.integers(room[1]))] = None
    return [(slice(y, y + SIDE), slice(x, x + SIDE)) for y, x in seen]


def _stamp_loop(tool: str, case: str, path: Path) -> Any:
    """A callable cutting every :func:`stamp_places` stamp of ``path`` with ``tool``, each
    timed alone: ``{"times": [seconds per stamp], "value": [stamps]}``. ``stamp-warm`` opens
    the file once, untimed; ``stamp-reopen`` opens it for each stamp, timed with it."""
    import dfits

    if tool == "dfits":
        opener, hdu, cut = dfits.open, lambda f: f[1], lambda h, c: h.section[c]
    elif tool == "astropy":
        from astropy.io import fits

        opener, hdu, cut = fits.open, lambda f: f[1], lambda h, c: h.section[c]
    elif tool == "fitsio":
        import fitsio

        opener, hdu, cut = lambda p: fitsio.FITS(str(p)), lambda f: f[1], lambda h, c: h[c]
    else:
        return None

    def run() -> dict[str, list]:
        clock = time.perf_counter
        times, values = [], []
        places = stamp_places(_shape(path))
        held = hdu(opener(path)) if case == "stamp-warm" else None
        for c in places:
            t = clock()
            values.append(cut(held if held is not None else hdu(opener(path)), c))
            times.append(clock() - t)
        return {"times": times, "value": values}

    return run


def _shape(path: Path) -> tuple[int, ...]:
    """The image's shape (from dfits' header parse: untimed, before the loop)."""
    import dfits

    return dfits.open(path)[1].shape


def operation(tool: str, case: str, path: Path) -> Any:
    """A callable running ``case`` with ``tool`` on ``path`` (opening included; the stamp
    loops return their per-stamp times: :func:`_stamp_loop`)."""
    import dfits

    if case in LOOPS:
        return _stamp_loop(tool, case, path)
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


#: each file's cases: one process times both (sum, then moment 0) for one tool
FILE_CASES = {"cube": CASES[:2], "image": CASES[2:4], "big": CASES[4:]}


def _summary(value: Any) -> float | None:
    """One number standing for a result, to check that the tools agree."""
    if value is None:
        return None
    if isinstance(value, list):  # a loop's stamps
        return float(sum(np.sum(np.asarray(v, dtype=np.float64)) for v in value))
    return float(np.sum(np.asarray(value, dtype=np.float64)))


def run_one(tool: str, key: str, path: Path, warm: Path) -> dict[str, Any]:
    """Time ``tool`` on each case of file ``key`` once, in this fresh process.

    Each case runs first on ``warm`` (the tiny file of the same kind: kernels load or
    compile, imports happen, untimed), then once on ``path``, timed.
    """
    out: dict[str, Any] = {}
    for case in FILE_CASES[key]:
        op = operation(tool, case, path)
        if op is None:
            continue
        operation(tool, case, warm)()
        t = time.perf_counter()
        value = op()
        seconds = time.perf_counter() - t
        if case in LOOPS:  # the median stamp of the loop
            seconds, value = statistics.median(value["times"]), value["value"]
        out[case] = {"s": seconds, "check": _summary(value)}
    out["peak_rss"] = _peak()
    return out


def _tools(key: str, chosen: tuple[str, ...]) -> list[str]:
    """The tools run on file ``key``: the stamp is a section read (no funpack, and the LIMIT
    would run dfits' own section again); funpack only where installed."""
    tools = [t for t in chosen if not t.startswith("funpack") or shutil.which("funpack")]
    return [t for t in tools if key != "big" or t in ("dfits", "astropy", "fitsio")]


def measure(
    tmpdir: Path,
    scale: str,
    rounds: int,
    tools: tuple[str, ...] = DEFAULT_TOOLS,
    files: tuple[str, ...] = tuple(FILE_CASES),
) -> list[tuple[str, str, str]]:
    """Every case x tool, median of ``rounds`` fresh processes each, rounds interleaved
    (round 1 of every tool and file, then round 2, ...): rows of (case, tool, result text)."""
    paths, warm = write_files(tmpdir, scale), write_files(tmpdir, "tiny")
    times: dict[tuple[str, str], list[float]] = {}
    rss: dict[tuple[str, str], list[int]] = {}
    checks: dict[tuple[str, str], float | None] = {}
    failed: dict[tuple[str, str], str] = {}
    for r in range(rounds):
        for key in files:
            order = _tools(key, tools)
            for tool in order[r % len(order) :] + order[: r % len(order)]:
                cmd = [sys.executable, __file__, "--one", tool, key, str(paths[key])]
                res = subprocess.run([*cmd, str(warm[key])], capture_output=True, text=True)
                if res.returncode:
                    for case in FILE_CASES[key]:
                        failed[case, tool] = res.stderr.strip().splitlines()[-1:]
                    continue
                got = json.loads(res.stdout.strip().splitlines()[-1])
                for case in FILE_CASES[key]:
                    if case in got:
                        times.setdefault((case, tool), []).append(got[case]["s"])
                        rss.setdefault((case, tool), []).append(got["peak_rss"])
                        checks[case, tool] = got[case]["check"]
    return _rows(times, rss, checks, failed)


def _rows(times, rss, checks, failed) -> list[tuple[str, str, str]]:
    """Median time, speed-up of dfits over the tool, median peak RSS and the result check."""
    out = []
    for case in CASES:
        base = times.get((case, "dfits"))
        ref = checks.get((case, "dfits"))
        for tool in TOOLS:
            if (case, tool) in failed:
                out.append((case, tool, f"failed: {failed[case, tool]}"))
            if (case, tool) not in times:
                continue
            med = statistics.median(times[case, tool])
            ms = f"{med * 1e3:.1f}" if med >= 0.01 else f"{med * 1e3:.3f}"  # a stamp: µs
            text = f"{ms} ms, peak RSS {statistics.median(rss[case, tool]) / 2**20:.0f} MiB"
            if base and tool != "dfits":
                text += f", dfits speed-up {med / statistics.median(base):.2f}x"
            check = checks.get((case, tool))
            if ref is not None and check is not None and not np.isclose(check, ref, rtol=1e-6):
                text += f", RESULT DIFFERS ({check!r} against dfits' {ref!r})"
            out.append((case, tool, text))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench-tiles"))
    ap.add_argument("--scale", choices=SCALES, default="full")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--breakdown", action="store_true", help="phases of the quantised path")
    ap.add_argument(
        "--one", nargs=4, metavar=("TOOL", "KEY", "PATH", "WARM"), help=argparse.SUPPRESS
    )
    ap.add_argument("--tools", default=",".join(DEFAULT_TOOLS), help=f"any of {','.join(TOOLS)}")
    ap.add_argument("--write-only", action="store_true", help="write the files and stop")
    ap.add_argument("--files", default=",".join(FILE_CASES), help="any of cube,image,big")
    args = ap.parse_args(argv)
    if args.one:
        tool, key, path, warm = args.one
        print(json.dumps(run_one(tool, key, Path(path), Path(warm))))
        return 0
    if args.breakdown:
        from tiles_fusion import breakdown

        side = {"full": 4096, "small": 1024, "tiny": 256}[args.scale]
        for phase, seconds in breakdown(args.tmpdir, side, args.rounds).items():
            print(f"{phase:34} median {seconds * 1e3:9.1f} ms")
        return 0
    if args.write_only:
        write_files(args.tmpdir, "tiny")
        for key, path in write_files(args.tmpdir, args.scale).items():
            print(f"{key:6} {path} ({path.stat().st_size / 2**20:.0f} MiB)")
        return 0
    tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    if unknown := sorted(set(tools) - set(TOOLS)):
        ap.error(f"unknown tool(s) {unknown}; choose from {TOOLS}")
    files = tuple(f.strip() for f in args.files.split(",") if f.strip())
    if unknown := sorted(set(files) - set(FILE_CASES)):
        ap.error(f"unknown file(s) {unknown}; choose from {tuple(FILE_CASES)}")
    for case, tool, text in measure(args.tmpdir, args.scale, args.rounds, tools, files):
        print(f"{case:16} {tool:14} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
