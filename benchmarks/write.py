"""Side-by-side timing of writing (and verifying) a big float64 (or float32) image as FITS.

    python benchmarks/write.py --size 2GiB [--runs 5] [--source memory|fits] [--tmpdir DIR]
    python benchmarks/write.py --appends 10000 [--tmpdir DIR]
    python benchmarks/write.py --only compress --size 512MiB [--runs 5]
    python benchmarks/write.py --only compress --size 256MiB --dtype float32   # 8k x 8k

Write tools: ``numpy-tofile`` (raw native bytes, no header, no flush: the bandwidth limit),
``tofile+fsync`` (the same, flushed), ``dfits`` (``dfits.to_fits`` of a dask array, checksum
and fsync on), ``dfits-nosum`` (checksum off), ``dfits-nosync`` (fsync off), ``astropy``
(``fits.writeto`` of the numpy array), ``fitsio`` (``fitsio.write``). Verify tools:
``dfits-verify`` (``dfits.verify_checksum``), ``astropy-verify`` (``fits.open(...,
checksum=True)`` and each HDU's ``verify_checksum``/``verify_datasum``) and ``LIMIT`` (a
Numba kernel summing the file's big-endian 32-bit words over a memmap on 2 threads, told the
layout, parsing nothing). Compress tools (``--only compress``, not run by default): RICE_1
tiles of one image row, floats quantised at level 16 — ``dfits-rice`` (``dfits.to_fits(...,
compression="RICE_1")``, SUBTRACTIVE_DITHER_2, checksum and fsync on), ``astropy-rice``
(``CompImageHDU(a, compression_type="RICE_1").writeto``, SUBTRACTIVE_DITHER_1) and
``fpack-rice`` (``fpack -q 16`` of the source FITS file: file to file, read included); and
the same three with GZIP_1 tiles, floats quantised at level 16: ``dfits-gzip``
(``compression="GZIP_1"``, deflate level 1 by default), ``astropy-gzip`` and ``fpack-gzip``
(``fpack -g -q 16``; cfitsio deflates at level 1 too); the table adds the output's size.
``--dtype float32`` writes a float32 image instead (``--size 256MiB``: 8192 x 8192).

Methodology

* ``--source memory``: every worker loads the same random float64 array (``np.load`` of a
  native ``.npy``, untimed); dfits writes ``da.from_array`` of it in dask's default chunks.
  ``--source fits``: dfits writes ``dfits.open(path)[0].data`` (read from the file as it
  writes: memory stays at chunk x threads), the others the array loaded before timing.
* Every timed run is a fresh ``python`` subprocess (``write.py --worker TOOL ...``) that
  first does the same on a tiny array of the data's dtype (imports and Numba compilation
  untimed), then times the operation with ``time.perf_counter``; peak RSS is ``VmHWM`` of the
  whole process (interpreter and loaded array included), "above start" that peak less the
  process's ``VmRSS`` just before the timed operation (what the operation itself added).
* Runs are interleaved: round r runs every tool once in an order rotated by r. Tables give
  median/min/max seconds, the rate at the median, and the largest peak RSS.
* The output file is removed after each run, so every write allocates a fresh file.
* ``--appends N``: ``dfits.append`` of N small (32 x 32 float32) image HDUs, one by one, to
  one file (fsync off: the flushes would time the disk, not the append), each timed; the
  table compares the mean of the first and the last 1,000 (or tenth): linear means a ratio
  near 1. astropy's ``fits.append`` of the same HDUs, timed alike, rereads the file each time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

WRITERS = ["numpy-tofile", "tofile+fsync", "dfits", "dfits-nosum", "dfits-nosync", "astropy"]
WRITERS += ["fitsio"]
VERIFIERS = ["dfits-verify", "astropy-verify", "LIMIT"]
COMPRESSORS = ["dfits-rice", "astropy-rice", "fpack-rice", "dfits-gzip", "astropy-gzip"]
COMPRESSORS += ["fpack-gzip"]
#: per family: dfits' and astropy's name, fpack's flags (Rice is fpack's default)
_ALGORITHM = {"rice": ("RICE_1", []), "gzip": ("GZIP_1", ["-g"])}
_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _size(text: str) -> int:
    for unit, n in _UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * n)
    return int(text)


def _peak(field: str = "VmHWM") -> int:
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a worker would report the
    # parent's peak (the generated array) as its own; VmRSS: the resident size now
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith(f"{field}:"))
    return int(line.split()[1]) * 1024


def _compress(tool: str, a: np.ndarray, x, out: str, src: str) -> None:
    name, flag = _ALGORITHM[tool.split("-")[1]]
    if tool.startswith("dfits"):
        import dfits

        dfits.to_fits(x, out, overwrite=True, compression=name, quantize_level=16)
    elif tool.startswith("astropy"):
        from astropy.io import fits

        hdu = fits.CompImageHDU(a, compression_type=name, quantize_level=16)
        hdu.writeto(out, overwrite=True)
    else:
        subprocess.run(["fpack", *flag, "-q", "16", "-O", out, src], check=True)


def _write(tool: str, a: np.ndarray, x, out: str, src: str = "") -> None:
    if tool in COMPRESSORS:
        _compress(tool, a, x, out, src)
    elif tool == "numpy-tofile":
        a.tofile(out)
    elif tool == "tofile+fsync":
        with open(out, "wb") as fh:
            a.tofile(fh)
            fh.flush()
            os.fsync(fh.fileno())
    elif tool.startswith("dfits"):
        import dfits

        flags = {"dfits-nosum": {"checksum": False}, "dfits-nosync": {"fsync": False}}
        dfits.to_fits(x, out, overwrite=True, **flags.get(tool, {}))
    elif tool == "astropy":
        from astropy.io import fits

        fits.writeto(out, a, overwrite=True)
    elif tool == "fitsio":
        import fitsio

        fitsio.write(out, a, clobber=True)


def _limit_kernel():
    import numba

    from dfits.kernels._swap import swap_bits

    @numba.njit(parallel=True, nogil=True, cache=False)
    def total(words, nblocks):
        per = (words.size + nblocks - 1) // nblocks
        parts = np.zeros(nblocks, np.uint64)
        for b in numba.prange(nblocks):
            acc = np.uint64(0)
            for i in range(b * per, min((b + 1) * per, words.size)):
                acc += np.uint64(swap_bits(words[i]))
            parts[b] = acc
        return parts

    return total


def _verify(tool: str, path: str, kernel) -> object:
    if tool == "dfits-verify":
        import dfits

        return [h.checksum.status for h in dfits.verify_checksum(path)]
    if tool == "astropy-verify":
        from astropy.io import fits

        with fits.open(path, checksum=True, memmap=True) as hl:
            return [(h.verify_checksum(), h.verify_datasum()) for h in hl]
    words = np.memmap(path, np.uint32, "r", 0, os.path.getsize(path) // 4)
    parts = kernel(words, 64)  # 64 blocks over 2 threads: one cache-friendly run each
    return int(parts.sum() % np.uint64(0xFFFFFFFF))


def _worker(tool: str, source: str, path: str, out: str, fits_path: str) -> None:
    import dask.array as da

    import dfits

    # the warm-up writes the data's own dtype, so that its kernels (float32 ones too) are
    # loaded before the timed write
    dtype = np.load(path, mmap_mode="r").dtype if os.path.exists(path) else np.float64
    small = np.random.default_rng(1).random((64, 64)).astype(dtype)
    kernel = _limit_kernel() if tool == "LIMIT" else None
    if tool in VERIFIERS:
        dfits.to_fits(small, out + ".warm.fits", overwrite=True)
        _verify(tool, out + ".warm.fits", kernel)
        os.unlink(out + ".warm.fits")
        base = _peak("VmRSS")
        start = time.perf_counter()
        result = _verify(tool, fits_path, kernel)
    else:
        if not tool.startswith("fpack"):  # imports and kernels, untimed
            _write(tool, small, da.from_array(small, chunks=(16, 64)), out)
            os.unlink(out)
        load = source == "memory" or not tool.startswith("dfits")
        a = np.load(path) if load and not tool.startswith("fpack") else None
        x = dfits.open(fits_path)[0].data if not load else None if a is None else da.from_array(a)
        base = _peak("VmRSS")  # interpreter, kernels and the loaded array
        start = time.perf_counter()
        _write(tool, a, x, out, fits_path)
        result = os.path.getsize(out) if tool in COMPRESSORS else None
    seconds = time.perf_counter() - start
    peak = _peak()
    print(json.dumps({"s": seconds, "peak": peak, "base": base, "result": repr(result)}))


def _table(title: str, times: dict, nbytes: int, sizes: bool = False) -> str:
    head = "| tool | median s | min s | max s | GB/s | peak RSS MiB | above start MiB |"
    lines = [f"### {title}", "", head + " out MiB |" * sizes, "|---" * (7 + sizes) + "|"]
    for tool, runs in times.items():
        s = [r["s"] for r in runs]
        med = statistics.median(s)
        peak = max(r["peak"] for r in runs) / 2**20
        # what the operation itself added: peak less the resident size just before it
        above = max(r["peak"] - r["base"] for r in runs) / 2**20
        lines.append(
            f"| {tool} | {med:.3f} | {min(s):.3f} | {max(s):.3f} | {nbytes / med / 1e9:.2f} "
            f"| {peak:.0f} | {above:.0f} |"
            + (f" {int(runs[-1]['result']) / 2**20:.1f} |" if sizes else "")
        )
    return "\n".join(lines)


def _prepare(folder: str, nbytes: int, dtype: str = "float64") -> tuple[str, str]:
    import dfits

    item = np.dtype(dtype).itemsize
    side = int(np.sqrt(nbytes // item))
    path, fits_path = os.path.join(folder, "src.npy"), os.path.join(folder, "src.fits")
    rng, shape = np.random.default_rng(0), (nbytes // item // side, side)
    if np.dtype(dtype).kind == "i":  # counts with read noise, as a detector writes them
        a = rng.normal(1000, 30, shape).astype(dtype)
    else:
        a = rng.random(shape).astype(dtype)
    np.save(path, a)
    dfits.to_fits(a, fits_path, overwrite=True)
    return path, fits_path


def _rounds(tools: list[str], args, path: str, fits_path: str, out: str) -> dict:
    times: dict[str, list] = {t: [] for t in tools}
    for r in range(args.runs):
        for tool in tools[r % len(tools) :] + tools[: r % len(tools)]:
            cmd = [sys.executable, __file__, "--worker", tool, args.source, path, out, fits_path]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if os.path.exists(out):
                os.unlink(out)
            if done.returncode:
                print(f"{tool}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                continue
            times[tool].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {t: runs for t, runs in times.items() if runs}


def _appends(count: int, folder: str) -> str:
    """Time ``count`` appends of a small HDU with dfits and astropy: first vs last tenth."""
    from astropy.io import fits

    import dfits

    small = np.random.default_rng(2).random((32, 32)).astype("f4")
    lines = ["### append small HDUs", "", "| tool | HDUs | first ms/HDU | last ms/HDU | ratio |"]
    lines.append("|---|---|---|---|---|")
    tools = {
        "dfits": lambda path: dfits.append(path, small, fsync=False),
        "astropy": lambda path: fits.append(path, small),
    }
    for tool, append in tools.items():
        path = os.path.join(folder, f"{tool}-appends.fits")
        dfits.to_fits(small, path, overwrite=True)
        append(path)  # warm: imports and kernels
        n = count if tool == "dfits" else min(count, 300)  # astropy rereads: quadratic
        times = []
        for _ in range(n):
            start = time.perf_counter()
            append(path)
            times.append(time.perf_counter() - start)
        k = max(1, min(1000, n // 10))
        first, last = statistics.fmean(times[:k]) * 1e3, statistics.fmean(times[-k:]) * 1e3
        lines.append(f"| {tool} | {n} | {first:.2f} | {last:.2f} | {last / first:.2f} |")
        os.unlink(path)
    return "\n".join(lines)


def _chosen(tools: list[str], pick: str | None) -> list[str]:
    """``tools`` in their order, or those named in ``pick`` (astropy's GZIP_1 of 256 MiB
    takes minutes a run: a long run may leave it to fewer runs of its own)."""
    if pick is None:
        return list(tools)
    names = [t.strip() for t in pick.split(",") if t.strip()]
    if unknown := sorted(set(names) - set(tools)):
        raise SystemExit(f"unknown tool(s) {unknown}; choose from {list(tools)}")
    return [t for t in tools if t in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="256MiB")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", choices=["memory", "fits"], default="memory")
    parser.add_argument("--dtype", choices=["float64", "float32", "int16"], default="float64")
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--only", choices=["write", "verify", "compress"], default=None)
    parser.add_argument("--appends", type=int, default=0, help="time N appends instead")
    parser.add_argument(
        "--tools", default=None, help="comma-separated subset of the chosen set's tools"
    )
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(*args.worker)
        return
    if args.appends:
        with tempfile.TemporaryDirectory(dir=args.tmpdir) as folder:
            print(_appends(args.appends, folder), flush=True)
        return
    nbytes = _size(args.size)
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as folder:
        path, fits_path = _prepare(folder, nbytes, args.dtype)
        out = os.path.join(folder, "out.fits")
        size = os.path.getsize(path)
        if args.only == "compress":
            times = _rounds(_chosen(COMPRESSORS, args.tools), args, path, fits_path, out)
            title = f"RICE_1 and GZIP_1 write {args.size} {args.dtype} ({args.source})"
            print(_table(title, times, size, sizes=True), flush=True)
            return
        if args.only != "verify":
            times = _rounds(_chosen(WRITERS, args.tools), args, path, fits_path, out)
            title = f"write {args.size} {args.dtype} ({args.source})"
            print(_table(title, times, size), flush=True)
        if args.only != "write":
            times = _rounds(_chosen(VERIFIERS, args.tools), args, path, fits_path, out)
            print(_table(f"verify {args.size}", times, os.path.getsize(fits_path)), flush=True)


if __name__ == "__main__":
    main()
