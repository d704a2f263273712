"""Variances through plain dask against the table of reductions dfits owns, in one process.

    python benchmarks/table_std.py [--tmpdir /tmp/dfbench] [--rounds 5]

Uses the float32 cube files that ``compare.py --size 1GiB --tmpdir DIR`` writes (the big one
timed, the small one for the warm-up, which compiles the kernels). ``da.std`` runs a sum pass
then a moments pass per chunk (dask asks for a sum before the deviations); ``reduce(x, "std")``
runs one moments pass.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    import dask.array as da
    import numpy as np

    import dfits
    from dfits.array import reduce

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmpdir", type=Path, default=Path("/tmp/dfbench"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    x = dfits.open(args.tmpdir / "dfits-bench-cube-1073741824.fits")[0].data
    w = dfits.open(args.tmpdir / "dfits-bench-cube-warm.fits")[0].data

    def ops(a):
        return {
            "plain da.std(x, axis=0)": lambda: da.std(a, axis=0).compute(),
            "table reduce(x, 'std', axis=0)": lambda: reduce(a, "std", axis=0).compute(),
            "plain x.std()": lambda: a.std().compute(),
            "table reduce(x, 'std')": lambda: reduce(a, "std").compute(),
        }

    for op in ops(w).values():
        op()
    timed = ops(x)
    res: dict[str, list[float]] = {k: [] for k in timed}
    for _ in range(args.rounds):
        for k, op in timed.items():
            gc.collect()
            t = time.perf_counter()
            op()
            res[k].append(time.perf_counter() - t)
    for k, v in res.items():
        print(f"{k}: median {statistics.median(v) * 1e3:.1f} ms "
              f"({min(v) * 1e3:.1f}-{max(v) * 1e3:.1f})")  # fmt: skip
    a, b = timed["plain da.std(x, axis=0)"](), timed["table reduce(x, 'std', axis=0)"]()
    print("max relative difference", float(np.nanmax(np.abs(a - b) / np.abs(a))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
