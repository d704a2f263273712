"""Coverage-guided fuzzing with atheris: ``./run fuzz --atheris [--target T] [libFuzzer flags]``.

atheris (Google's libFuzzer for Python; optional: ``pip install 'dfits[fuzz]'``, wheels for
Linux x86-64) instruments dfits' bytecode and mutates inputs towards new branches. The targets
(:mod:`tests.fuzz.targets`): ``layout`` (default) runs the header and layout parser over the
bytes in memory; ``open`` writes them to a file and reads it as users do. Either fails on
anything but success or a DfitsError; libFuzzer then writes the input to
``<out>/crash-<sha1>`` and stops (``-fork=N -ignore_crashes=1`` goes on).

The corpus directory (``<out>/corpus-<target>``) starts from the seeded fuzzer's seed files
and keeps every input that found new coverage, so runs resume where they stopped. Flags
after ``--`` go to libFuzzer as they are, e.g. ``-runs=100000``, ``-max_total_time=600``.
Replay a crash: ``./run fuzz --atheris --target open -- <out>/crash-<sha1>``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]


def _seed_corpus(where: Path) -> None:
    from tests.fuzz.seeds import seeds

    where.mkdir(parents=True, exist_ok=True)
    if any(where.iterdir()):
        return  # a corpus from an earlier run: resume from it
    for _, blob in seeds():
        (where / hashlib.sha1(blob).hexdigest()).write_bytes(blob)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="./run fuzz --atheris", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--target", choices=("layout", "open"), default="layout")
    parser.add_argument("--out", type=Path, default=Path("fuzz-out/atheris"))
    parser.add_argument("libfuzzer", nargs="*", help="flags and inputs for libFuzzer (after --)")
    args = parser.parse_args(argv)
    try:
        import atheris
    except ImportError:
        print(
            "atheris is not installed: pip install 'dfits[fuzz]' (or atheris); it has wheels "
            "for Linux x86-64 and CPython 3.8 to 3.11",
            file=sys.stderr,
        )
        return 2
    with atheris.instrument_imports(include=["dfits"]):
        from tests.fuzz.targets import TARGETS
    target = TARGETS[args.target]
    corpus = args.out / f"corpus-{args.target}"
    _seed_corpus(corpus)
    if args.target == "open":
        path = os.path.join(tempfile.mkdtemp(prefix="dfits-atheris-"), "case.fits")
        one_input = lambda data: target(data, path)  # noqa: E731
        for blob_path in sorted(corpus.iterdir())[:64]:
            one_input(blob_path.read_bytes())  # compile the common kernels before timing starts
    else:
        one_input = target
    replay = [a for a in args.libfuzzer if not a.startswith("-")]
    flags = [a for a in args.libfuzzer if a.startswith("-")]
    defaults = {"-timeout": "30", "-rss_limit_mb": "4096", "-artifact_prefix": f"{args.out}/"}
    flags += [
        f"{k}={v}" for k, v in defaults.items() if not any(f.startswith(k + "=") for f in flags)
    ]
    atheris.Setup([sys.argv[0], *flags, *(replay or [str(corpus)])], one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
