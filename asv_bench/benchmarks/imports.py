"""``import dfits`` must stay cheap: numba, dask and astropy load on first use, kernels compile
on first call. ``timeraw_`` benchmarks run in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numba", "dask", "astropy", "xarray", "llvmlite")


def timeraw_import_dfits():
    return "import dfits"


def timeraw_import_numpy():  # the floor: dfits needs numpy anyway
    return "import numpy"


def track_heavy_modules_after_import():
    """How many of numba, dask, astropy, xarray and llvmlite ``import dfits`` loads (want 0)."""
    code = f"import sys, dfits; print(sum(m in sys.modules for m in {HEAVY!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


track_heavy_modules_after_import.unit = "modules"
