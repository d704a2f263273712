"""How dfits' reductions scale with workers: the threaded scheduler and dask.distributed.

    python benchmarks/scaling.py [--workers 1,2,4,8,16] [--runs 5] [--gib 8] [--tmpdir DIR]
                                 [--schedulers threads,distributed] [--out results.jsonl]
                                 [--chunk-size 64MiB] [--dask-runs 3]

Two files are written once into ``--tmpdir`` (a tmpfs such as ``/dev/shm`` keeps them in
memory, as the page cache would):

* ``f32``: a float32 cube of ``--gib`` GiB (512 planes of 2048 x 2048 at 8 GiB);
* ``i16``: an int16 cube of half that size with BSCALE/BZERO and BLANK (1 pixel in 97 blank).

Cases, each on dfits' default chunks (slabs near dask's ``array.chunk-size``, set to
``--chunk-size`` so that 16 workers get several chunks each):

* ``sum``: ``hdu.data.sum()`` of the float32 cube, dfits' fused path;
* ``nanmean16``: ``da.nanmean(hdu.data)`` of the scaled int16 cube (decode, BLANK → NaN);
* ``dask-sum`` (threads only): the same sum as plain dask over ``np.memmap`` of the big-endian
  bytes (``da.from_array(...).astype("f4").sum()``, what astropy users write), same chunks.

``threads``: every timed run is a fresh process (imports and a warm-up on a small twin file
untimed, kernels from the on-disk cache), worker counts interleaved run by run, median of
``--runs`` (``--dask-runs`` for the slow ``dask-sum``). ``distributed``: one ``LocalCluster``
of n single-threaded worker processes per count, an untimed compute of the case on it, then
``--runs`` timed computes, median. Each result is checked against the sum computed while
writing the file. One JSON line per sample goes to
``--out`` as it is measured, so a run cut short still reports what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PLANE = (2048, 2048)
BSCALE, BZERO, BLANK = 0.5, 100.0, -32768
MARK = "@@scaling "


def card(key: str, value: object) -> bytes:
    text = "T" if value is True else repr(value) if isinstance(value, str) else str(value)
    if isinstance(value, str):
        text = "'" + value.ljust(8) + "'"
    return f"{key:<8}= {text:>20}".ljust(80).encode("ascii")


def write_cube(path: Path, kind: str, planes: int, side: tuple[int, int]) -> float:
    """Write the cube plane slab by plane slab; return the sum of its physical values."""
    import numpy as np

    bitpix = -32 if kind == "f32" else 16
    cards = [card("SIMPLE", True), card("BITPIX", bitpix), card("NAXIS", 3)]
    cards += [card("NAXIS1", side[1]), card("NAXIS2", side[0]), card("NAXIS3", planes)]
    if kind == "i16":
        cards += [card("BSCALE", BSCALE), card("BZERO", BZERO), card("BLANK", BLANK)]
    head = b"".join(cards) + b"END".ljust(80)
    head += b" " * (-len(head) % 2880)
    total, count = 0.0, 0
    part = path.with_suffix(".part")
    with open(part, "wb") as f:
        f.write(head)
        base = np.arange(side[0] * side[1], dtype=np.int64).reshape(side)
        for k in range(planes):
            # cheap, varied values: a ramp with a per-plane offset (no RNG: writing 8 GiB of
            # random numbers would dominate the set-up)
            ramp = (base * 7 + k * 13) % 2000
            if kind == "f32":
                plane = (ramp.astype(np.float32) * np.float32(0.25)) - np.float32(100)
                total += float(plane.sum(dtype=np.float64))
                f.write(plane.astype(">f4").tobytes())
            else:
                stored = (ramp - 1000).astype(np.int16)
                stored[(base + k) % 97 == 0] = BLANK
                good = stored != BLANK
                total += float(stored[good].sum(dtype=np.float64)) * BSCALE + BZERO * good.sum()
                count += int(good.sum())
                f.write(stored.astype(">i2").tobytes())
        f.write(b"\0" * (-f.tell() % 2880))
    os.replace(part, path)
    return total / count if kind == "i16" else total


def ensure(tmpdir: Path, kind: str, planes: int, side: tuple[int, int], tag: str) -> dict:
    path = tmpdir / f"scaling-{kind}-{tag}.fits"
    side_file = path.with_suffix(".json")
    if path.exists() and side_file.exists():
        return json.loads(side_file.read_text())
    t0 = time.perf_counter()
    expect = write_cube(path, kind, planes, side)
    meta = {"path": str(path), "expect": expect, "shape": [planes, *side], "kind": kind}
    side_file.write_text(json.dumps(meta))
    print(f"wrote {path} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return meta


def compute(case: str, path: str, shape: list[int]):
    """The case's lazy result on one file."""
    import dask.array as da
    import numpy as np

    import dfits

    if case == "dask-sum":
        x = dfits.open(path)[0].data  # only for its chunks and data offset
        offset = 2880  # one header block: write_cube's header is 7 cards
        raw = np.memmap(path, dtype=">f4", mode="r", offset=offset, shape=tuple(shape))
        return da.from_array(raw, chunks=x.chunks).astype("f4").sum(dtype="f8")
    x = dfits.open(path)[0].data
    return x.sum() if case == "sum" else da.nanmean(x)


def thread_worker(case: str, n: int, big: str, small: str) -> None:
    import dask

    with dask.config.set(scheduler="threads", num_workers=n):  # chunk-size from the env
        warm, target = json.loads(small), json.loads(big)
        compute(case, warm["path"], warm["shape"]).compute()
        t0 = time.perf_counter()
        value = float(compute(case, target["path"], target["shape"]).compute())
        dt = time.perf_counter() - t0
    print(MARK + json.dumps({"seconds": dt, "value": value}), flush=True)


def one_thread_sample(case: str, n: int, big: dict, small: dict) -> dict:
    cmd = [sys.executable, __file__, "--worker", case, str(n), json.dumps(big), json.dumps(small)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = next(s for s in out.splitlines() if s.startswith(MARK))
    return json.loads(line[len(MARK) :])


def check(value: float, expect: float, what: str) -> None:
    if abs(value - expect) > 1e-6 * max(1.0, abs(expect)):
        raise SystemExit(f"{what}: got {value!r}, expected {expect!r}")


def thread_samples(files: dict, workers: list[int], runs: tuple[int, int], emit) -> None:
    cases = [("sum", "f32"), ("nanmean16", "i16"), ("dask-sum", "f32")]
    for r in range(max(runs)):
        order = workers if r % 2 == 0 else workers[::-1]
        for n in order:
            for case, kind in cases:
                if r >= runs[case == "dask-sum"]:
                    continue
                big, small = files[kind]
                res = one_thread_sample(case, n, big, small)
                check(res["value"], big["expect"], f"{case} threads n={n}")
                emit({"scheduler": "threads", "case": case, "workers": n, "run": r, **res})


def distributed_samples(files: dict, workers: list[int], runs: int, emit) -> None:
    from distributed import Client, LocalCluster

    for n in workers:
        kw = {"threads_per_worker": 1, "processes": True, "dashboard_address": None}
        with LocalCluster(n_workers=n, **kw) as cluster, Client(cluster):
            for case, kind in (("sum", "f32"), ("nanmean16", "i16")):
                big, _ = files[kind]
                # one untimed pass over the big file: every worker loads the kernels (from
                # the on-disk cache) before timing
                compute(case, big["path"], big["shape"]).compute()
                for r in range(runs):
                    t0 = time.perf_counter()
                    value = float(compute(case, big["path"], big["shape"]).compute())
                    dt = time.perf_counter() - t0
                    check(value, big["expect"], f"{case} distributed n={n}")
                    rec = {"scheduler": "distributed", "case": case, "workers": n, "run": r}
                    emit({**rec, "seconds": dt, "value": value})


def table(records: list[dict], gib: float) -> str:
    rows = ["| scheduler | case | workers | median s | GiB/s of stored bytes | speed-up vs 1 |"]
    rows.append("|---|---|---|---|---|---|")
    keys = sorted({(r["scheduler"], r["case"]) for r in records})
    for sched, case in keys:
        stored = gib / 2 if case == "nanmean16" else gib
        per_n: dict[int, list[float]] = {}
        for r in records:
            if (r["scheduler"], r["case"]) == (sched, case):
                per_n.setdefault(r["workers"], []).append(r["seconds"])
        base = statistics.median(per_n[min(per_n)])
        for n in sorted(per_n):
            med = statistics.median(per_n[n])
            rows.append(
                f"| {sched} | {case} | {n} | {med:.3f} | {stored / med:.1f} | {base / med:.2f}× |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        thread_worker(argv[1], int(argv[2]), argv[3], argv[4])
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,4,8,16")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--gib", type=float, default=8.0)
    p.add_argument("--tmpdir", type=Path, default=Path("/dev/shm/dfits-scaling"))
    p.add_argument("--schedulers", default="threads,distributed")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--chunk-size", default="64MiB", help="dask's array.chunk-size")
    p.add_argument("--dask-runs", type=int, default=3, help="runs of the slow dask-sum case")
    a = p.parse_args(argv)
    # the worker processes (fresh interpreters, cluster workers) read it from the environment
    os.environ["DASK_ARRAY__CHUNK_SIZE"] = a.chunk_size
    a.tmpdir.mkdir(parents=True, exist_ok=True)
    workers = [int(w) for w in a.workers.split(",")]
    planes = max(2, round(a.gib * 2**30 / (4 * PLANE[0] * PLANE[1])))
    files = {
        kind: (
            ensure(a.tmpdir, kind, planes, PLANE, "big"),
            ensure(a.tmpdir, kind, 4, (64, 64), "warm"),
        )
        for kind in ("f32", "i16")
    }
    records: list[dict] = []

    def emit(rec: dict) -> None:
        records.append(rec)
        line = json.dumps(rec)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")

    schedulers = a.schedulers.split(",")
    if "threads" in schedulers:
        thread_samples(files, workers, (a.runs, a.dask_runs), emit)
    if "distributed" in schedulers:
        distributed_samples(files, workers, a.runs, emit)
    gib = planes * PLANE[0] * PLANE[1] * 4 / 2**30
    print(table(records, gib))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
