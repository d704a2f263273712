"""Fuzz campaigns: ``./run fuzz --cases N --seed S [--start K] [--seconds T] [--out DIR]
[--profile extended] [--mix both|images|tables]``.

Case ``k`` is an image case (:func:`tests.fuzz.mutate.mutated`) or a table case
(:func:`tests.fuzz.tablemutate.mutated_table`, every table route against astropy):
``--mix both`` (the default) makes every fourth case, ``k % 4 == 3``, a table case;
``--mix images`` is the stream before issue 44 (every case an image case: the case numbers
of older reproducers), ``--mix tables`` every case a table case.

Cases ``K .. K+N-1`` of seed ``S`` (see :func:`tests.fuzz.mutate.mutated`) run in a worker
process (:mod:`tests.fuzz.worker`); a case still running after ``--timeout`` seconds is a
hang: the worker is killed and a fresh one takes the next case. Shards of one long campaign
are disjoint ``--start`` ranges of the same seed, so they can run on several machines and
their summaries add up.

Every failing case (and every ``oracle_hang``: astropy hung on bytes dfits read, which fails
nothing but leaves the values unchecked) leaves a reproducer in ``--out``:
``<seed>-<case>.fits`` (the mutated bytes) and ``<seed>-<case>.txt`` (seed file, mutations,
what went wrong and the command that replays it). ``--replay FILE`` runs one file in this
process and prints the outcome.
The exit status is 1 if any case failed, else 0; a JSON summary goes to ``--out``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fuzz.check import FAILURES, check_file
from tests.fuzz.mutate import PROFILES
from tests.fuzz.worker import case_of

__all__ = ["Campaign", "main", "run_campaign"]

ROOT = Path(__file__).resolve().parents[2]
#: warm-up compiles the kernels once per worker: minutes on a loaded machine
_START_TIMEOUT = 600.0
#: how long a case past its time limit may go on compiling before it counts as a hang
_GRACE = 120.0
#: outcomes that fail a campaign
_FAILED = (*FAILURES, "crash")
#: outcomes that leave a reproducer: the failures, and astropy hanging on bytes dfits read
#: (not a dfits failure, but the comparison never happened: the file is worth a look)
_REPRODUCED = (*_FAILED, "oracle_hang")
#: ``--mix``: which cases are table cases
MIXES = ("both", "images", "tables")


def is_table(case: int, mix: str = "both") -> bool:
    """Whether case ``case`` of a campaign of ``mix`` is a table case."""
    return mix == "tables" or (mix == "both" and case % 4 == 3)


class _Worker:
    #: the mutation profile of the cases it is asked for, and which are table cases
    profile = "default"
    mix = "both"

    def __init__(self, profile: str = "default", mix: str = "both") -> None:
        self.profile, self.mix = profile, mix
        env = dict(os.environ)
        paths = [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            cwd=ROOT,
            env=env,
        )
        self.fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)
        # bytes read but not yet split into lines: the worker often writes two messages at
        # once (the astropy phase and the outcome), and a select on the pipe cannot see a
        # line already sitting in a reader's buffer (a buffered readline() waited out the
        # timeout for it: every such case was an 'oracle hang' and a worker restart)
        self.pending = b""
        if self.receive(_START_TIMEOUT) is None:
            self.kill()
            raise RuntimeError("the fuzz worker did not start")

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None if none came within ``timeout`` seconds or it died."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            if not self.sel.select(max(0.0, deadline - time.monotonic())):
                return None
            more = os.read(self.fd, 1 << 16)
            if not more:
                # the worker died: reap it, so that poll() tells this crash from a hang
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(5)
                return None
            self.pending += more
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def ask(self, seed: int, case: int, timeout: float) -> dict[str, Any]:
        """The outcome of one case; a hang only if a warm rerun is slow too.

        A case that meets a kernel variant the warm-up did not compile spends its first
        seconds in Numba (minutes on a loaded machine). So a case past ``timeout`` is given
        :data:`_GRACE` more seconds and, if it finishes, asked again: the rerun has the
        kernel compiled, and only a rerun past ``timeout`` too is a hang.
        """
        answer = self._ask_once(seed, case, timeout)
        if answer["kind"] != "hang" or self.proc.poll() is not None:
            return answer
        late = self.receive(_GRACE)
        while late is not None and "phase" in late:
            late = self.receive(_GRACE)
        if late is None:
            return answer
        return self._ask_once(seed, case, timeout)

    def waited(self) -> float:
        """Seconds the worker's main thread has spent runnable but waiting for a CPU.

        Linux's ``/proc/<pid>/schedstat`` (its second field, in ns); 0 where it is missing.
        """
        try:
            with open(f"/proc/{self.proc.pid}/schedstat") as stat:
                return int(stat.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return 0.0

    def _ask_once(self, seed: int, case: int, timeout: float) -> dict[str, Any]:
        table = is_table(case, self.mix)
        ask = {"seed": seed, "case": case, "profile": self.profile, "table": table}
        ask = json.dumps(ask) + "\n"
        self.proc.stdin.write(ask.encode())  # type: ignore[union-attr]
        phase = "dfits"
        deadline, waited = time.monotonic() + timeout, self.waited()
        while True:
            message = self.receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                # Time spent waiting for a CPU is not the case's: a niced campaign beside
                # busy processes was starved for seconds at a time (seed 5 case 1309, a 50 ms
                # case, counted as a hang twice over at load 6). A hang is `timeout` seconds
                # of running or sleeping, however long the queue for a CPU.
                now = self.waited()
                starved, waited = now - waited, now
                if starved > 0.01 and self.proc.poll() is None:
                    deadline = time.monotonic() + starved
                    continue
                died = self.proc.poll() is not None
                kind = "crash" if died else ("hang" if phase == "dfits" else "oracle_hang")
                return {"case": case, "kind": kind, "detail": f"during the {phase} phase"}
            if "phase" in message:
                # astropy gets its own time limit: a slow dfits phase must not use it up
                phase, deadline = message["phase"], time.monotonic() + timeout
                waited = self.waited()
                continue
            return message

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Campaign:
    """Counts and reproducers of one run of consecutive cases."""

    def __init__(self, seed: int, out: Path, profile: str = "default", mix: str = "both") -> None:
        self.seed, self.out, self.profile, self.mix = seed, out, profile, mix
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[dict[str, Any]] = []
        self.reproduced: list[dict[str, Any]] = []
        #: table cases, and table columns dfits read that no oracle could check
        self.tables = 0
        self.unchecked: collections.Counter[str] = collections.Counter()
        self.held_until_gc = 0

    def record(self, answer: dict[str, Any]) -> None:
        kind = answer["kind"]
        self.counts[kind] += 1
        self.tables += is_table(answer["case"], self.mix)
        self.held_until_gc += bool(answer.get("held_until_gc"))
        for text in answer.get("unchecked", []):
            self.unchecked[text.split(":")[0] if "HDU" in text[:4] else "column"] += 1
        if kind in _FAILED:
            self.failures.append(answer)
        if kind in _REPRODUCED:
            self.reproduced.append(answer)
            self._reproducer(answer)

    def _reproducer(self, answer: dict[str, Any]) -> None:
        case = answer["case"]
        name, blob, ops = case_of(self.seed, case, self.profile, is_table(case, self.mix))
        tail = "" if self.profile == "default" else f" --profile {self.profile}"
        tail += "" if self.mix == "both" else f" --mix {self.mix}"
        stem = self.out / f"{self.seed}-{case}"
        self.out.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".fits").write_bytes(blob)
        replay = " --tables" if is_table(case, self.mix) else ""
        text = (
            f"seed {self.seed} case {case}: {answer['kind']}\nseed file: {name}\n"
            f"table case: {is_table(case, self.mix)}\n"
            f"mutations: {ops}\nreplay: ./run fuzz --replay {stem}.fits{replay}\n"
            f"   or: ./run fuzz --seed {self.seed} --start {case} --cases 1{tail}\n\n"
            f"{answer['detail']}\n"
        )
        stem.with_suffix(".txt").write_text(text)

    @property
    def ran(self) -> int:
        """How many cases ran."""
        return sum(self.counts.values())

    @property
    def failed(self) -> int:
        return sum(self.counts[k] for k in _FAILED)


def run_campaign(
    seed: int,
    start: int,
    cases: int,
    out: Path,
    timeout: float = 5.0,
    log: Any = None,
    seconds: float | None = None,
    profile: str = "default",
    mix: str = "both",
) -> Campaign:
    """Run cases ``start .. start + cases - 1`` of ``seed``; reproducers go to ``out``.

    With ``seconds``, stop after the case running when that time is up: ``campaign.ran``
    says how many cases ran (consecutive from ``start``). ``profile`` names the mutations
    (:data:`tests.fuzz.mutate.PROFILES`), ``mix`` which cases are table cases
    (:func:`is_table`).
    """
    campaign = Campaign(seed, out, profile, mix)
    worker = _Worker(profile, mix)
    began = time.monotonic()
    try:
        for case in range(start, start + cases):
            if seconds is not None and time.monotonic() - began > seconds:
                break
            answer = worker.ask(seed, case, timeout)
            campaign.record(answer)
            if answer["kind"] in ("hang", "oracle_hang", "crash"):
                worker.kill()
                worker = _Worker(profile, mix)
            done = case - start + 1
            if log is not None and (done % 100 == 0 or done == cases):
                rate = done / (time.monotonic() - began)
                print(f"{done}/{cases} cases, {rate:.0f}/s: {dict(campaign.counts)}", file=log)
    finally:
        worker.kill()
    return campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./run fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first case (for shards)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds before a hang")
    parser.add_argument("--seconds", type=float, help="stop after this long (summary says where)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"))
    parser.add_argument("--replay", type=Path, help="run one file here and print the outcome")
    parser.add_argument(
        "--profile",
        choices=list(PROFILES),
        default="default",
        help="mutations: default, or extended (docs/fuzzing.md)",
    )
    parser.add_argument(
        "--mix",
        choices=MIXES,
        default="both",
        help="table cases: every fourth (both), none (images), all (tables)",
    )
    parser.add_argument("--tables", action="store_true",
                        help="with --replay: read its tables through every route")  # fmt: skip
    args = parser.parse_args(argv)
    if args.replay is not None:
        outcome = check_file(str(args.replay), tables=args.tables)
        print(f"{outcome.kind}\n{outcome.detail}\n" + "\n".join(outcome.errors))
        return int(outcome.kind in FAILURES)
    began = time.monotonic()
    campaign = run_campaign(
        args.seed, args.start, args.cases, args.out, args.timeout, sys.stderr, args.seconds,
        args.profile, args.mix,
    )  # fmt: skip
    summary = {
        "seed": args.seed,
        "profile": args.profile,
        "mix": args.mix,
        "start": args.start,
        "cases": campaign.ran,
        "seconds": round(time.monotonic() - began, 1),
        "counts": dict(campaign.counts),
        "table_cases": campaign.tables,
        "unchecked": dict(campaign.unchecked),
        "held_until_gc": campaign.held_until_gc,
        "failures": [(a["case"], a["kind"]) for a in campaign.failures],
        "reproducers": [(a["case"], a["kind"]) for a in campaign.reproduced],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"summary-{args.seed}-{args.start}-{args.start + campaign.ran}.json"
    if args.profile != "default":
        name = name.replace("summary-", f"summary-{args.profile}-")
    if args.mix != "both":
        name = name.replace("summary-", f"summary-{args.mix}-")
    (args.out / name).write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["counts"]))
    return int(campaign.failed > 0)


if __name__ == "__main__":
    sys.exit(main())
