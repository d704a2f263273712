"""The fuzz worker process: reads case numbers on stdin, answers one JSON line per case.

Run by :mod:`tests.fuzz.campaign`, which kills it when a case runs past its time limit (a
hang) and starts another. Before answering, the worker reads every generated seed once, so that the
kernels' compilation is not charged to the first cases. After that its address space is
capped (:data:`HEADROOM` above what warm-up used) and a case whose peak resident memory
grows by more than :data:`GROWTH` is a memory blow-up: every seed is under a megabyte, so
only an allocation sized by what a header claims can reach either bound.

Protocol: ``{"seed": S, "case": k, "profile": P, "table": T}`` in (``P`` optional,
``"default"``; ``T`` true for a table case, :func:`tests.fuzz.tablemutate.mutated_table`);
``{"case": k, "phase": "astropy"}`` when dfits is done with it (so that a hang in the astropy
comparison is told apart); then the outcome.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import sys
import tempfile

from tests.fuzz.check import check_file
from tests.fuzz.mutate import mutated
from tests.fuzz.seeds import seeds
from tests.fuzz.tablemutate import mutated_table
from tests.fuzz.tableseeds import table_seeds

HEADROOM = 3 << 30
GROWTH = 256 << 20


def _rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _say(message: dict) -> None:
    print(json.dumps(message), flush=True)


def warm_up(path: str) -> None:
    for name, blob in seeds():
        if name.startswith("corpus/"):
            continue  # the generated seeds reach every kernel variant the corpus does
        with open(path, "wb") as out:
            out.write(blob)
        check_file(path)
    for _, blob in table_seeds():
        with open(path, "wb") as out:
            out.write(blob)
        check_file(path, tables=True)


def case_of(seed: int, case: int, profile: str, table: bool) -> tuple[str, bytes, list[str]]:
    """The seed file's name, bytes and mutations of one case (image or table)."""
    return mutated_table(seed, case) if table else mutated(seed, case, profile)


def main() -> None:
    scratch = tempfile.mkdtemp(prefix="dfits-fuzz-")
    path = os.path.join(scratch, "case.fits")
    warm_up(path)
    if _vm_size():
        limit = _vm_size() + HEADROOM
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _say({"ready": True})
    for line in sys.stdin:
        ask = json.loads(line)
        seed, case = ask["seed"], ask["case"]
        table = bool(ask.get("table"))
        name, blob, ops = case_of(seed, case, ask.get("profile", "default"), table)
        if table:
            # a file of its own: a map an earlier case let go of late is not this case's
            with contextlib.suppress(OSError):
                os.unlink(path)
            path = os.path.join(scratch, f"case-{case}.fits")
        with open(path, "wb") as out:
            out.write(blob)
        before = _rss()
        said = functools.partial(_say, {"case": case, "phase": "astropy"})
        outcome = check_file(path, said, tables=table)
        grown = _rss() - before
        if grown > GROWTH + len(blob) and outcome.kind in ("ok", "dfits_error"):
            outcome.kind, outcome.detail = "memory", f"peak RSS grew by {grown} bytes"
        answer = {
            "case": case,
            "seed_file": name,
            "mutations": ops,
            "kind": outcome.kind,
            "detail": outcome.detail,
            "errors": outcome.errors[:5],
            "unchecked": outcome.unchecked[:5],
            "held_until_gc": outcome.held_until_gc,
        }
        _say(answer)
        if table:
            for copy in (
                path,
                *(path[:-5] + s for s in (".ztable-plain.fits", ".last-scaling.fits")),
            ):
                with contextlib.suppress(OSError):
                    os.unlink(copy)  # the case and the oracle's copies of it
            path = os.path.join(scratch, "case.fits")


if __name__ == "__main__":
    main()
