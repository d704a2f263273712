"""Alternate two or more source trees of dfits on one compare.py case: did a change move it?

    python benchmarks/abtrees.py --trees OLD/src NEW/src --case moment0 [--rounds 6]
        [--size 2GiB] [--tmpdir DIR] [--cache large|huge|small|asis]

A tree is a folder holding the ``dfits`` package (a checkout's ``src``; ``git worktree add
/tmp/old REV`` gives one for any commit). Every run is ``compare.py``'s dfits worker in a fresh
process with ``PYTHONPATH`` set to one tree, after ``compare.py``'s page-cache preparation
(warmed on the small file, timed on the big one), so that only the tree differs. Trees
alternate within each round and the order turns every round, so drift of the machine hits
them alike; trust the ratio of the medians, and the spread, over the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

import compare


def imported_from(tree: Path) -> str:
    """Where ``import dfits`` resolves with ``PYTHONPATH=tree`` (an editable install could win)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = "import dfits, sys; sys.stdout.write(dfits.__file__)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", nargs="+", type=Path, required=True)
    ap.add_argument("--case", required=True, choices=compare.REDUCTIONS)
    ap.add_argument("--size", default="2GiB", type=compare.parse_size)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--tmpdir", type=Path)
    ap.add_argument("--cache", choices=sorted(compare.CACHE_STATES), default="large")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in args.trees]
    if len(set(trees)) != len(trees) or len(trees) < 2:
        ap.error("give two or more different trees")
    for tree in trees:
        where = Path(imported_from(tree)).resolve()
        if tree not in where.parents:
            ap.error(f"with PYTHONPATH={tree}, dfits comes from {where}")
    path, warm = compare.case_files(args.case, args.size, args.tmpdir)
    seconds: dict[Path, list[float]] = {t: [] for t in trees}
    checks: dict[Path, object] = {}
    saved = os.environ.get("PYTHONPATH")
    try:
        for r in range(args.rounds):
            k = r % len(trees)
            for tree in trees[k:] + trees[:k]:
                os.environ["PYTHONPATH"] = str(tree)  # compare.run_one's worker inherits it
                got = compare.run_one(args.case, "dfits", path, warm, args.timeout, args.cache)
                if "error" in got:
                    print(f"{tree}: {got['error']}", file=sys.stderr)
                    return 1
                seconds[tree].append(got["seconds"])
                checks[tree] = got["check"]
                print(f"  round {r + 1} {tree}: {got['seconds'] * 1e3:8.2f} ms", file=sys.stderr)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    same = len({repr(c) for c in checks.values()}) == 1
    print(f"{args.case}: dfits compute ms, median of {args.rounds} (min-max); same values: {same}")
    base = statistics.median(seconds[trees[0]])
    for tree, ts in seconds.items():
        med = statistics.median(ts)
        print(
            f"  {tree}: {med * 1e3:.1f} ({min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f}),"
            f" {base / med:.2f}x the first tree"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
