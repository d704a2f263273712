"""``./run asv [ARGS]``: the asv suite in the project venv, from a fresh clone, without questions.

* ``./run asv [asv-run options]`` (or ``./run asv run ...``): ``asv run`` in ``asv_bench/`` with
  this venv's interpreter (``asv.conf.json``: environment ``existing``, python ``same``). The
  results are recorded under the checkout's HEAD commit (``--set-commit-hash``; asv saves
  nothing from an existing environment without one) in ``asv_bench/results/<machine>/``.
* ``./run asv continuous [options] BASE HEAD``: each commit is checked out into a git worktree
  under ``asv_bench/.asv/trees/`` (kept: a commit never changes, so its Numba cache is reused),
  its kernels are compiled (``dfits warm``) and the suite of *this* checkout is run against
  it (``PYTHONPATH=<tree>/src``, ahead of the venv's editable install); then asv's
  comparison is printed and the exit status is 1 when a benchmark got slower by more than
  ``--factor`` (default :data:`FACTOR`, see docs/performance.md, "Before merging a change to
  a hot path"), as ``asv continuous`` does. asv's own ``continuous`` builds each commit in an
  environment of its own, which an ``existing`` environment cannot.
* ``./run asv compare A B [options]``: asv's comparison of two recorded commits (``--machine``
  defaults to this machine when several have results, e.g. the reference one).
* ``./run asv plots``: the graphs of ``docs/`` from the results JSON (benchmarks/asv_plots.py).
* any other asv command (``check``, ``publish``, ``preview``, ``show``, ``machine``, ...) passes
  through unchanged.

Every command first writes the machine file (``~/.asv-machine.json``) for the machine asked
for (``--machine NAME``, else this host's name) with asv's detected values when it has none.
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TREES = HERE / ".asv" / "trees"
#: slowdown ratio that fails ``continuous`` (measured noise: docs/performance.md)
FACTOR = 2.0
#: the peers' tool names in the suite: their rows are context, not dfits' ("dfits*" tools are)
PEERS = {
    "LIMIT", "numpy-native", "numpy-rawint", "numpy-tofile", "astropy", "astropy-eager",
    "astropy-memmap", "astropy-section", "astropy-table", "astropy-verify", "astropy-rice",
    "fitsio", "dask-from-array", "spectral-cube", "funpack+dfits", "fpack-rice",
}  # fmt: skip
ASV_COMMANDS = {
    "check", "compare", "continuous", "dev", "find", "gh-pages", "machine", "preview",
    "profile", "publish", "quickstart", "rm", "run", "show", "update",
}  # fmt: skip


def asv(*args: str, env: dict | None = None, check: bool = True) -> int:
    """Run ``python -m asv ARGS`` in ``asv_bench/``; return its exit status."""
    cmd = [sys.executable, "-m", "asv", *args]
    status = subprocess.run(cmd, cwd=HERE, env=env, check=False).returncode
    if check and status:
        sys.exit(status)
    return status


def git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


def machine_of(args: list[str]) -> str:
    """The machine asked for with ``--machine NAME`` / ``--machine=NAME``, else asv's default."""
    for i, arg in enumerate(args):
        if arg == "--machine" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--machine="):
            return arg.split("=", 1)[1]
    return platform.node()


def ensure_machine(name: str) -> None:
    """Write ``name``'s entry of the machine file with asv's detected values if it is missing."""
    from asv.machine import MachineCollection
    from asv.util import UserError

    try:
        MachineCollection.load(name)
    except UserError:
        asv("machine", "--yes", "--machine", name)


def run(args: list[str]) -> int:
    """``asv run``, recorded under HEAD unless ``--set-commit-hash`` says otherwise."""
    if not any(a.startswith("--set-commit-hash") for a in args):
        if git("status", "--porcelain", "--", "src"):
            print("asv: src/ has uncommitted changes; recorded under HEAD all the same",
                  file=sys.stderr)  # fmt: skip
        args = ["--set-commit-hash", git("rev-parse", "HEAD"), *args]
    return asv("run", *args, check=False)


def worktree(commit: str) -> Path:
    """A detached worktree of ``commit`` (reused when present), its kernels compiled."""
    tree = TREES / commit
    if not (tree / "src" / "dfits").is_dir():
        git("worktree", "prune")
        TREES.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", "--force", str(tree), commit)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    warm = [sys.executable, "-m", "dfits.cli", "warm"]
    if subprocess.run(warm, env=env, cwd=tree, check=False).returncode:
        print(f"asv: dfits warm failed in {tree}: kernels compile in setup", file=sys.stderr)
    return tree


def continuous_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./run asv continuous", add_help=True)
    p.add_argument("base")
    p.add_argument("head")
    p.add_argument("-f", "--factor", type=float, default=FACTOR)
    p.add_argument("--split", action="store_true")
    p.add_argument("--only-changed", action="store_true")
    p.add_argument("--sort", default="default")
    p.add_argument("--machine")
    # asv-run options that take a value (so argparse does not take the value for BASE)
    for flag in ("-b", "--bench", "-a", "--attribute", "--launch-method", "--durations"):
        p.add_argument(flag, action="append", dest=f"run_{flag.lstrip('-').replace('-', '_')}")
    return p


def continuous(args: list[str]) -> int:
    """Run the suite on BASE and HEAD (worktrees), print asv's comparison, fail on a slowdown."""
    opts, run_args = continuous_parser().parse_known_args(args)
    for flag in ("b", "bench", "a", "attribute", "launch_method", "durations"):
        for value in getattr(opts, f"run_{flag}") or ():
            run_args += [f"-{flag}" if len(flag) == 1 else f"--{flag.replace('_', '-')}", value]
    machine = opts.machine or platform.node()
    ensure_machine(machine)
    hashes = [git("rev-parse", "--verify", f"{name}^{{commit}}") for name in (opts.base, opts.head)]
    for commit in hashes:
        tree = worktree(commit)
        # an existing environment passes PYTHONPATH on as it is; the others take ASV_PYTHONPATH
        src = str(tree / "src")
        env = {**os.environ, "PYTHONPATH": src, "ASV_PYTHONPATH": src}
        print(f"asv: {commit[:10]} from {tree}", file=sys.stderr)
        asv("run", "--set-commit-hash", commit, "--machine", machine, *run_args, env=env,
            check=False)  # fmt: skip
    return compare_and_judge(hashes, opts, machine)


def compare_and_judge(hashes: list[str], opts, machine: str) -> int:
    """asv's comparison table (every row); 1 when one of dfits' rows got slower than
    ``opts.factor`` by asv's rule (:func:`slower_rows`)."""
    from asv.commands.compare import Compare
    from asv.config import Config

    os.chdir(HERE)
    conf = Config.load(str(HERE / "asv.conf.json"))
    Compare.print_table(
        conf,
        hashes[0],
        hashes[1],
        factor=opts.factor,
        split=opts.split,
        only_changed=opts.only_changed,
        sort=opts.sort,
        machine=machine,
        commit_names={h: h[:10] for h in hashes},
    )
    slower = slower_rows(conf, machine, hashes, opts.factor)
    for name in slower:
        print(f"asv: slower than {opts.factor}x: {name}", file=sys.stderr)
    return 1 if slower else 0


def rows(conf, machine: str, commit: str) -> dict[str, tuple]:
    """``{row name: (value, (stats, samples))}`` of one commit's results, as asv unrolls them."""
    from asv.commands.compare import unroll_result
    from asv.results import iter_results_for_machine_and_hash

    out = {}
    for result in iter_results_for_machine_and_hash(conf.results_dir, machine, commit):
        for key in result.get_all_result_keys():
            params = result.get_result_params(key)
            got = (result.get_result_value(key, params), result.get_result_stats(key, params))
            for name, value, stats, samples in unroll_result(
                key, params, *got, result.get_result_samples(key, params)
            ):
                out[name] = (value, (stats, samples))
    return out


def ours(name: str) -> bool:
    """A row of dfits itself: a ``dfits*`` tool, or a benchmark without another tool (imports,
    counters). The peers' rows (astropy, fitsio, LIMIT, ...) are context: the same library
    versions run them on both commits, so their changes are the machine's noise."""
    if "(" not in name:
        return True
    values = ast.literal_eval(name[name.index("(") :])
    values = values if isinstance(values, tuple) else (values,)
    strings = [v for v in values if isinstance(v, str)]
    return any(v.startswith("dfits") for v in strings) or not PEERS.intersection(strings)


def slower_rows(conf, machine: str, hashes: list[str], factor: float) -> list[str]:
    """dfits' rows slower after than before by ``factor`` and, when both have several samples,
    by asv's significance test (``asv continuous``'s rule), or failing only after."""
    from asv.commands.compare import _is_result_better

    before, after = (rows(conf, machine, h) for h in hashes)
    out = []
    for name in sorted(set(before) & set(after)):
        (a, a_ss), (b, b_ss) = before[name], after[name]
        if not ours(name) or a is None or a != a:  # not dfits', or not measured before
            continue
        if b is None or b != b or _is_result_better(a, b, a_ss, b_ss, factor):
            out.append(name)
    return out


def main(argv: list[str]) -> int:
    cmd, rest = (
        (argv[0], argv[1:]) if argv and argv[0] in ASV_COMMANDS | {"plots"} else ("run", argv)
    )
    if cmd == "plots":
        script = ROOT / "benchmarks" / "asv_plots.py"
        return subprocess.run([sys.executable, str(script), *rest], check=False).returncode
    if cmd not in ("machine", "quickstart", "continuous"):
        ensure_machine(machine_of(rest))
    if cmd == "run":
        return run(rest)
    if cmd == "continuous":
        return continuous(rest)
    if cmd == "compare" and machine_of(rest) == platform.node() and "--machine" not in rest:
        rest = [*rest, "--machine", platform.node()]
    return asv(cmd, *rest, check=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
