"""The ``ooc`` case of ``benchmarks/fft.py``: each method in a child (capped ones in a memory
cgroup), its time, the cgroup's peak and its error against numpy (see ``fft_ooc.py``).

Examples (the issue's figures; a quiet machine, and the lead's decision, needed)::

    python benchmarks/fft.py ooc --cap 1GiB --sizes 27,28,29 --dir /big/disk
    python benchmarks/fft.py ooc --cap 16MiB --sizes 22,23 --methods paging dfits floor
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fft_ooc as harness


@functools.cache
def _radix2():
    import numba

    @numba.njit(nogil=True)
    def kernel(x, coarse, fine, shift):  # pragma: no cover - compiled
        n = x.size
        j = 0
        for i in range(1, n):  # bit reversal: the in-core FFT's random access
            bit = n >> 1
            while j & bit:
                j ^= bit
                bit >>= 1
            j |= bit
            if i < j:
                x[i], x[j] = x[j], x[i]
        mask = (1 << shift) - 1
        m = 2
        while m <= n:
            half, step = m // 2, n // m
            for start in range(0, n, m):
                for k in range(half):
                    t = k * step
                    w = coarse[t >> shift] * fine[t & mask]
                    a, b = x[start + k], x[start + k + half] * w
                    x[start + k] = a + b
                    x[start + k + half] = a - b
            m *= 2

    return kernel


def _twiddles(n: int):
    """exp(-2πi t/n) for t < n/2 as coarse[t >> shift] * fine[t & mask]: two ~sqrt(n) tables
    (a full table would be 4 n bytes of anonymous memory, more than the cap)."""
    import numpy as np

    shift = max(1, (max(2, n // 2).bit_length()) // 2)
    coarse = np.exp(-2j * np.pi * (np.arange(max(1, (n // 2) >> shift) + 1) << shift) / n)
    fine = np.exp(-2j * np.pi * np.arange(1 << shift) / n)
    return coarse, fine, shift


def _paging(spec: dict):
    import numpy as np

    kernel = _radix2()
    small = np.ones(1 << 10, np.complex64)
    kernel(small, *_twiddles(small.size))  # compile before the cap and the clock
    values = np.memmap(spec["paging"], dtype=np.complex64, mode="r+")
    tables = _twiddles(values.size)

    def run():
        kernel(np.asarray(values), *tables)
        values.flush()  # the result on disk, as the others'

    return run


def _as_complex(pairs):
    """An ``(m, 2)`` block of float32 (real, imaginary) pairs as ``(m, 1)`` complex64."""
    import numpy as np

    return np.asarray(pairs, dtype=np.float32).view(np.complex64)


def _dfits(spec: dict):
    import numpy as np

    import dfits
    import dfits.fft

    block, scratch = spec["block"], spec["scratch"]
    pairs = dfits.open(spec["input"], chunks=(block // 8, 2))[0].data
    # (real, imaginary) float32 pairs are complex64's layout: one decode per chunk, then a
    # view (``pairs[:, 0] + 1j * pairs[:, 1]`` made four block-sized arrays per chunk)
    # (drop_axis would have dask join each (m, 2) block with itself first: one more copy)
    x = pairs.map_blocks(_as_complex, chunks=(pairs.chunks[0], (1,)), dtype=np.complex64)[:, 0]
    # imports, decode and encode kernels, the writer: before the cap
    small = x[: 1 << 12].rechunk(1 << 9)
    warm = dfits.fft.fft(small, block_size=1 << 12, memory_limit=0, scratch=scratch)
    dfits.to_fits(_as_pairs(warm), os.path.join(scratch, "warm.fits"), checksum=False)
    shutil.rmtree(scratch)
    os.mkdir(scratch)

    def run():
        y = dfits.fft.fft(x, block_size=block, memory_limit=0, scratch=scratch)
        # FITS out as in: (N, 2) float32, each block encoded through the writer's bounded
        # buffer (no checksum: zarr's output had none either)
        dfits.to_fits(_as_pairs(y), spec["out"], checksum=False)

    return run


def _as_pairs(y):
    """complex64 values as ``(N, 2)`` float32 (real, imaginary): a view per block."""
    import numpy as np

    chunks = (y.chunks[0], (2,))
    return y.map_blocks(_pairs, chunks=chunks, new_axis=1, dtype=np.float32)


def _pairs(block):
    import numpy as np

    return np.asarray(block).view(np.float32).reshape(-1, 2)


def _floor(spec: dict):
    size = min(8 << 20, max(64 << 10, spec["cap"] // 8))

    def run():
        buf, current = bytearray(size), spec["input"]
        for i in range(spec["passes"]):
            target = os.path.join(spec["scratch"], f"floor-{i}.bin")
            with open(current, "rb", buffering=0) as src, open(target, "wb", buffering=0) as dst:
                while k := src.readinto(buf):
                    dst.write(memoryview(buf)[:k])
                os.fsync(dst.fileno())
            if current != spec["input"]:
                os.unlink(current)  # as the scratch stores: gone once read
            current = target
        os.unlink(current)

    return run


def _in_memory(spec: dict, method: str):
    import dask.array as da
    import numpy as np

    import dfits
    import dfits.fft

    values = dfits.open(spec["input"])[0].data.compute().view(np.complex64).ravel()
    if method == "numpy":
        return lambda: np.fft.fft(values)
    x = da.from_array(values, chunks=values.size // 16)
    dfits.fft.fft(x[: 1 << 12].rechunk(1 << 9), block_size=1 << 12).compute()
    return lambda: dfits.fft.fft(x).compute()


def child(method: str, spec: dict) -> dict:
    """Prepare (imports, compilation), cap, run once; time, peaks and the cap used."""
    import dask

    prepare = {"paging": _paging, "dfits": _dfits, "floor": _floor}
    run = prepare[method](spec) if method in prepare else _in_memory(spec, method)
    group = harness.MemoryCap.from_env()
    result = {}
    if group is not None:
        base = group.anon()
        group.limit(base + int(os.environ["DFITS_OOC_CAP"]))
        group.reset_peak()
        result |= {"base": base, "limit": base + int(os.environ["DFITS_OOC_CAP"])}
    watch = harness.DirtyWatch(group) if group is not None else contextlib.nullcontext()
    hits = group.limit_hits() if group is not None else 0
    before = harness.io_counters()
    with dask.config.set(scheduler="threads", num_workers=spec["threads"]), watch:
        start = time.perf_counter()
        run()
        result["seconds"] = time.perf_counter() - start
    after = harness.io_counters()
    result["io"] = {key: after[key] - before[key] for key in after}
    if group is not None:
        result["peak"] = group.peak()
        result["io"] |= {"limit_hits": group.limit_hits() - hits, "dirty_most": watch.most}
    with open("/proc/self/status") as fh:
        result["hwm"] = int(next(x for x in fh if x.startswith("VmHWM:")).split()[1]) * 1024
    return result


def _error(method: str, spec: dict, want) -> float | None:
    import numpy as np

    if want is None or method == "floor":
        return None
    if method == "paging":
        got = np.fromfile(spec["paging"], dtype=np.complex64)
    elif method == "dfits":
        import dfits

        got = dfits.open(spec["out"])[0].data.compute().view(np.complex64)[:, 0]
    else:
        return None  # the in-memory references compute what the check compares with
    want = want.astype(np.complex128)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


#: extra copies of the data each method keeps on disk at once, beyond the input
EXTRA = {"paging": 1, "dfits": 2, "floor": 2, "numpy": 0, "dfits-inmem": 0}


def _space(directory: Path, log2n: int, methods: list[str]) -> tuple[str, str | None]:
    """(what the size needs on disk, why it cannot run there or None)."""
    size = 8 << log2n
    made = directory / f"fft-ooc-{log2n}.fits"
    have = shutil.disk_usage(directory).free + (made.stat().st_size if made.exists() else 0)
    copies = 1 + max(EXTRA[m] for m in methods)
    need = copies * size
    say = (
        f"2**{log2n} complex64: input {size / 2**30:.2f} GiB; at once paging +1, dfits +2 "
        f"(scratch stores are deleted once the next pass has read them), floor +2 copies: "
        f"{need / 2**30:.2f} GiB in {directory} ({have / 2**30:.0f} GiB free)"
    )
    if need <= have:
        return say, None
    fits = max((k for k in range(10, 41) if copies * (8 << k) <= have), default=None)
    return say, f"{say}: too little; the largest size that fits is 2**{fits}"


def _one(method: str, log2n: int, plan, args, want) -> dict | None:
    path = harness.input_file(Path(args.dir), log2n)
    work = tempfile.mkdtemp(dir=args.dir, prefix="fft-ooc-")
    spec = {
        "input": str(path),
        "paging": f"{work}/paging.c64",
        "scratch": f"{work}/scratch",
        "out": f"{work}/out.fits",
        "block": plan.block_bytes,
        "passes": plan.passes,
        "threads": args.threads,
        "cap": args.cap_bytes,
    }
    try:
        os.mkdir(spec["scratch"])
        if method == "paging":
            harness.native_copy(Path(spec["paging"]), log2n)
            harness.drop_cache(Path(spec["paging"]))
        harness.drop_cache(path)
        cmd = [sys.executable, __file__, "--child", method, "--spec", json.dumps(spec)]
        cap = args.cap_bytes if method in harness.CAPPED else None
        timeout = args.timeout if method == "paging" else None
        try:
            result = harness.run_child(cmd, cap, timeout)
        except RuntimeError as error:  # one method killed under the cap: the others still run
            print(error, file=sys.stderr)
            return {"failed": str(error).split(":")[0]}
        if result is not None:
            result["error"] = _error(method, spec, want)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _row(
    method: str, runs: list[dict | None], timeout: float, nbytes: int = 1
) -> tuple[str, float | None]:
    if any(r and "failed" in r for r in runs):
        return f"  {method:12s} failed: {next(r['failed'] for r in runs if r)}", 0.0
    done = [r for r in runs if r is not None]
    if not done:
        return f"  {method:12s} > {timeout:9.1f} s (stopped: a lower bound)", None
    median = statistics.median(r["seconds"] for r in done)
    peak = max(r.get("peak", 0) for r in done)
    cap = f"peak {peak / 2**20:7.1f} / limit {done[0]['limit'] / 2**20:7.1f} MiB" if peak else ""
    base = f"(base {done[0]['base'] / 2**20:5.1f})" if peak else ""
    err = done[0].get("error")
    check = f"  err {err:.1e}" if err is not None else ""
    hwm = f"  VmHWM {max(r['hwm'] for r in done) / 2**20:7.1f} MiB"
    io = harness.counters_text(done[0].get("io", {}), nbytes)
    return f"  {method:12s} {median:9.3f} s  {cap} {base}{hwm}{check}{io}", median


def _size(log2n: int, args, bandwidth: float, latency: float) -> str:
    import numpy as np

    from dfits.fft.plan import plan_disk

    n = 1 << log2n
    plan = plan_disk(
        n, 8, args.cap_bytes, threads=args.threads, bandwidth=bandwidth, latency=latency
    )
    lines = [
        f"2**{log2n} complex64 ({8 * n / 2**20:.0f} MiB), cap {args.cap}, {args.threads} "
        f"threads, median of {args.repeat}",
        f"  plan: block {plan.block_bytes / 2**20:g} MiB, {plan.n1} x {plan.n2}, {plan.passes}"
        f" passes, tiles {plan.tile_bytes / 2**10:g} KiB, predicted {plan.seconds:.2f} s",
    ]
    avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    want = harness.reference(log2n) if 48 * n < avail // 2 else None
    if want is not None:
        want = np.asarray(want)
    medians = {}
    for method in args.methods:
        runs = []
        for _ in range(args.repeat):
            runs.append(_one(method, log2n, plan, args, want))
            if runs[-1] is None or "failed" in runs[-1]:
                break  # demand paging past the timeout, or killed: once is enough
        line, medians[method] = _row(method, runs, args.timeout, 8 * n)
        lines.append(line)
    lines += _ratios(medians, args.timeout)
    return "\n".join(lines)


def _ratios(medians: dict, timeout: float) -> list[str]:
    out = []
    dfits, paging = medians.get("dfits"), medians.get("paging", 0)
    if dfits and "paging" in medians and paging != 0:
        bound = ">= " if paging is None else ""
        out.append(f"  dfits {bound}{(paging or timeout) / dfits:.1f}x faster than demand paging")
    if dfits and medians.get("floor"):
        out.append(f"  dfits takes {dfits / medians['floor']:.2f}x the I/O floor")
    if medians.get("dfits-inmem") and medians.get("numpy"):
        out.append(f"  in memory: dfits {medians['numpy'] / medians['dfits-inmem']:.2f}x numpy")
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fft.py ooc", description=__doc__.splitlines()[0])
    p.add_argument("--cap", default="1GiB", help="memory above the child's baseline")
    p.add_argument("--sizes", default="22", help="log2 N, comma separated (27,28,29)")
    p.add_argument("--methods", nargs="*", default=harness.METHODS, choices=harness.METHODS)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--dir", default=tempfile.gettempdir(), help="input, scratch and output")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=3600.0, help="demand paging's limit, s")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, json.loads(args.spec))))
        return 0
    from dask.utils import parse_bytes

    args.cap_bytes = parse_bytes(args.cap)
    if harness.CAPPED & set(args.methods) and (why := harness.cgroup_unavailable()):
        print(f"ooc refused: {why}", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    for log2n in sizes:  # every size's disk need, before anything is written
        say, why = _space(Path(args.dir), log2n, args.methods)
        print(say)
        if why:
            print(why, file=sys.stderr)
            return 2
    probe = min(8 << max(sizes), 256 << 20)
    bandwidth, latency = harness.probe_disk(Path(args.dir), probe)
    print(
        f"disk: {bandwidth / 2**20:.0f} MiB/s write + read, {latency * 1e3:.3f} ms per random "
        f"4 KiB read ({max(1, probe >> 20)} MiB probe)"
    )
    for log2n in sizes:
        print(_size(log2n, args, bandwidth, latency), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
