"""Chunk plans for moment maps: the file's slabs against chunks deepened along the spectral axis.

    python benchmarks/plans.py [--cube-gib 1] [--runs 5] [--depths 64,128,256] [--tmpdir DIR]

On the float32 cube of ``compare.py`` (256 channels, square planes; 1 GiB is 1024², 4 GiB is
2048²), in one process with dask's threaded scheduler: moment-1 through
:func:`dfits.array.weighted_sums` and moment-0 as ``x.sum(axis=0)``, on

* ``file``: ``hdu.data`` (contiguous slabs of whole planes near ``array.chunk-size``);
* ``planned``: ``hdu.to_dask(reduce_axis=0)`` (:func:`dfits.array.chunks.reduction_chunks`);
* ``N-deep``: ``N`` planes per chunk, rows split to keep the file plan's chunk size.

The file is re-read into the page cache before every run; rounds are interleaved; medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from compare import ensure_file, preread  # noqa: E402


def plans(path: Path, depths: list[int]) -> dict:
    import dfits

    hdu = dfits.open(path)[0]
    nz, ny, nx = hdu.shape
    slab = hdu.data.chunks[0][0] * ny  # rows of a file-plan chunk, counted over all planes
    out: dict = {"file": None, "planned": "planned"}
    for d in depths:
        if d <= nz:
            out[f"{d}-deep"] = (d, max(1, slab // d), nx)
    return out


def array(path: Path, plan):
    import dfits

    hdu = dfits.open(path)[0]
    if plan is None:
        return hdu.data
    return hdu.to_dask(reduce_axis=0) if plan == "planned" else hdu.to_dask(chunks=plan)


def moment1(x):
    import numpy as np

    from dfits.array import weighted_sums

    s = weighted_sums(x, 0, np.arange(x.shape[0], dtype="f8"))
    return (s[1] / s[0]).compute()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cube-gib", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--depths", default="64,128,256")
    ap.add_argument("--tmpdir", type=Path, default=Path(tempfile.gettempdir()))
    args = ap.parse_args(argv)
    args.tmpdir.mkdir(parents=True, exist_ok=True)
    path = ensure_file(args.tmpdir, "cube", 2 * args.cube_gib * 2**30, False)
    table = plans(path, [int(d) for d in args.depths.split(",")])
    ops = {"moment-1": moment1, "moment-0": lambda x: x.sum(axis=0).compute()}
    for name, plan in table.items():  # compile and warm up every variant, untimed
        x = array(path, plan)
        for op in ops.values():
            op(x[:16])
        print(f"{name:10s} chunks {x.chunksize}, {x.npartitions} chunks", file=sys.stderr)
    times: dict = {}
    for r in range(args.runs):
        order = list(table.items())
        for name, plan in order[r % len(order) :] + order[: r % len(order)]:
            for op_name, op in ops.items():
                preread(path)
                t0 = time.perf_counter()
                op(array(path, plan))
                times.setdefault((name, op_name), []).append(time.perf_counter() - t0)
    print(f"| plan | chunk | moment-1 s | moment-0 s |  ({path.name}, medians of {args.runs})")
    print("|---|---|---|---|")
    for name, plan in table.items():
        chunk = array(path, plan).chunksize
        m1, m0 = (statistics.median(times[(name, k)]) for k in ops)
        print(f"| {name} | {'×'.join(map(str, chunk))} | {m1:.3f} | {m0:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
