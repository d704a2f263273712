"""Where one dfits reduction spends its time: task timelines, and the cost of dask's order.

    python benchmarks/timeline.py --case nanmean16 [--size 2GiB] [--rounds 6] [--tmpdir DIR]
        [--cache large|small|asis] [--show]

For ``compare.py``'s reduction cases it times ``dfits.open(path)[0].data`` + the dask reduction
(``compute()`` only: the graph is built first), each run in a fresh process after the same
page-cache preparation as ``compare.py``, alternating two schedules:

* ``dask``: dask's own task order;
* ``first-block-first``: the same graph, with dask's priorities mirrored along the block
  indices (block ``i`` gets the priority dask gave block ``n - 1 - i``), so the file's first
  chunk runs first instead of last.

dask's ``order`` breaks ties between alike blocks by their key strings and starts a reduction
at its last block, so the file's first chunk runs last. After a sequential read Linux caches a
file's first tens of MiB in small folios (readahead ramps up), which map 4 KiB at a time, so
that chunk is the slowest, and it runs while the other thread has nothing left to do. The
difference between the two schedules is what that costs. ``--show`` prints the last run's task
timeline (``dask.diagnostics.Profiler``: worker, start, end, duration, key) for each schedule.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import compare

SCHEDULES = ("dask", "first-block-first")
MARK = "@@TIMELINE "


def mirror_order(order):
    """Wrap dask's ``order`` so that each block's priority becomes its mirror block's."""

    def mirrored(dsk, *args, **kwargs):
        prio = order(dsk, *args, **kwargs)
        last: dict[str, int] = {}
        for key in prio:
            if isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], int):
                last[key[0]] = max(last.get(key[0], 0), key[1])
        out = dict(prio)
        for key in prio:
            if isinstance(key, tuple) and key[0] in last:
                twin = (key[0], last[key[0]] - key[1], *key[2:])
                if twin in prio:
                    out[key] = prio[twin]
        return out

    return mirrored


def run(case: str, path: str, warm: str, schedule: str) -> dict:
    """Time one ``compute()`` of ``case`` on ``path`` (after a warm-up on ``warm``)."""
    import dask.local
    from dask.diagnostics import Profiler

    import dfits

    if schedule == "first-block-first":
        dask.local.order = mirror_order(dask.local.order)
    # imports, compilation (of combine kernels too: several chunks), thread pool
    compare.small_chunks(lambda: compare.dask_reduce(case, dfits.open(warm)[0].data))()
    gc.collect()  # as compare.py's worker does: no warm-up garbage in the timed region
    x = dfits.open(path)[0].data
    graph = compare.dask_graph(case, x)
    with Profiler() as prof:
        t0 = time.perf_counter()
        value = graph.compute()
        seconds = time.perf_counter() - t0
    tasks = [
        (r.worker_id, r.start_time - t0, r.end_time - t0, str(r.key)[:60])
        for r in sorted(prof.results, key=lambda r: r.start_time)
    ]
    return {"seconds": seconds, "tasks": tasks, "check": compare.check_values(case, value)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        print(MARK + json.dumps(run(*argv[1:5])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", required=True, choices=compare.REDUCTIONS)
    ap.add_argument("--size", default="2GiB", type=compare.parse_size)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--tmpdir", type=Path)
    ap.add_argument("--cache", choices=sorted(compare.CACHE_STATES), default="large")
    ap.add_argument("--show", action="store_true", help="print the last timelines")
    args = ap.parse_args(argv)
    path, warm = compare.case_files(args.case, args.size, args.tmpdir)
    got: dict[str, list[dict]] = {s: [] for s in SCHEDULES}
    for r in range(args.rounds):
        for schedule in SCHEDULES[r % 2 :] + SCHEDULES[: r % 2]:
            compare.preread(path, args.cache)
            cmd = [sys.executable, __file__, "--worker", args.case, str(path), str(warm), schedule]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rec = json.loads(out.split(MARK, 1)[1])
            got[schedule].append(rec)
            print(f"  round {r + 1} {schedule:18s} {rec['seconds'] * 1e3:8.2f} ms", file=sys.stderr)
    same = got["dask"][-1]["check"] == got["first-block-first"][-1]["check"]
    print(f"{args.case}: compute() ms, median of {args.rounds} (min-max); same values: {same}")
    for schedule, recs in got.items():
        ms = [rec["seconds"] * 1e3 for rec in recs]
        print(f"  {schedule:18s} {statistics.median(ms):8.2f}  ({min(ms):.2f}-{max(ms):.2f})")
        if args.show:
            workers: dict[int, int] = {}
            for worker, start, end, key in recs[-1]["tasks"]:
                span = f"{start * 1e3:7.2f} -> {end * 1e3:7.2f} ({(end - start) * 1e3:6.2f})"
                print(f"      w{workers.setdefault(worker, len(workers))} {span} {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
