"""asv benchmarks for dfits: every hot path next to the usual ways of doing the same job.

Run with ``./run asv [asv-run options]`` from the repository root (``asv_bench/asv_run.py``:
the project venv, the machine file written, results recorded under HEAD; ``./run asv
continuous BASE HEAD`` compares two commits). ``DFITS_ASV_SCALE=tiny`` shrinks every file to a few
kilobytes (``tests/test_asv.py`` uses it; so does a smoke run with ``--quick``); the default,
``full``, uses ``DFITS_ASV_SIZE`` bytes per 2-D image (default ``512MiB``; half that for the
cube), a 4000x4000 image for stamps and up to 10,000 HDUs for headers.

Files are written once per ``setup_cache`` (into the working folder asv gives it, or into
``DFITS_ASV_DATA`` when set, where they are reused across runs) with the generators of
``benchmarks/compare.py``, whose ``LIMIT`` kernels are reused too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

__all__ = [
    "SCALE",
    "TINY",
    "bench_script",
    "compare",
    "data_dir",
    "image_file",
    "prewarm",
    "require",
]

SCALE = os.environ.get("DFITS_ASV_SCALE", "full").strip().lower()
if SCALE not in ("tiny", "full"):
    raise ValueError(f"DFITS_ASV_SCALE must be 'tiny' or 'full', not {SCALE!r}")
TINY = SCALE == "tiny"
_COMPARE = Path(__file__).resolve().parents[2] / "benchmarks" / "compare.py"


def bench_script(stem: str):
    """Import ``benchmarks/<stem>.py`` under a name that cannot clash with this package."""
    name = f"dfits_bench_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _COMPARE.with_name(f"{stem}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


compare = bench_script("compare")


def image_bytes() -> int:
    """Bytes of one full-size 2-D image (``DFITS_ASV_SIZE``, default 512 MiB)."""
    return 256 << 10 if TINY else compare.parse_size(os.environ.get("DFITS_ASV_SIZE", "512MiB"))


def data_dir() -> Path:
    """Where ``setup_cache`` writes: ``DFITS_ASV_DATA`` or asv's per-run working folder."""
    where = Path(os.environ.get("DFITS_ASV_DATA") or Path.cwd()) / f"dfits-asv-{SCALE}"
    where.mkdir(parents=True, exist_ok=True)
    return where.resolve()


def image_file(name: str, kind: str, meta: dict) -> tuple[str, dict]:
    """Write (or reuse) an image with ``compare.write_image``; return its path and layout.

    ``kind`` picks compare's value generator (``f8img``, ``i2img``, anything else: float32).
    """
    path = data_dir() / f"{name}.fits"
    side = path.with_suffix(".json")
    if path.exists() and side.exists():
        old = json.loads(side.read_text())
        if old.get("file_bytes") == path.stat().st_size and all(
            old.get(k) == v for k, v in meta.items()
        ):
            return str(path), old
    part = path.with_suffix(".part")
    meta = dict(meta)
    compare.write_image(part, kind, meta)
    meta["file_bytes"] = part.stat().st_size
    os.replace(part, path)
    side.write_text(json.dumps(meta))
    return str(path), meta


def prewarm(*paths: str) -> None:
    """Read files into the page cache with a small buffer (keeps peak RSS honest)."""
    buf = bytearray(1 << 20)
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
            while f.readinto(buf):
                pass


def require(module: str) -> None:
    """Skip (asv's ``NotImplementedError``) when an optional peer is not installed."""
    if importlib.util.find_spec(module) is None:
        raise NotImplementedError(f"{module} is not installed")
