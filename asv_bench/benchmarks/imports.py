"""``import dfits`` must stay cheap: numba, dask and astropy load on first use, kernels compile
on first call. ``timeraw_`` benchmarks run in a fresh interpreter; the one-shot cold start
(import, open, first reduction) has an astropy-eager twin."""

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


#: run in a child process by the setup: writes the file and fills Numba's cache and the
#: bytecode caches, so the timed process starts cold in memory only, as a notebook restart
_CHILD = (
    "import sys, numpy as np; from astropy.io import fits; "
    "fits.PrimaryHDU(np.ones((16, 64, 64), np.float32)).writeto(sys.argv[1]); "
    "import dfits; dfits.open(sys.argv[1])[0].data.sum(axis=0).compute()"
)
#: asv runs the setup in the timed process before the code: it imports nothing heavy there
COLD_SETUP = (
    "import os, subprocess, sys, tempfile; "
    "p = os.path.join(tempfile.mkdtemp(), 'c.fits'); "
    f"subprocess.run([sys.executable, '-c', {_CHILD!r}, p], check=True)"
)


def timeraw_cold_start_first_sum():
    """Fresh process: import, open, the first reduction (kernels loaded from Numba's cache,
    which the setup's child process fills; ``dfits warm`` does the same ahead of time)."""
    return "import dfits; dfits.open(p)[0].data.sum(axis=0).compute()", COLD_SETUP


def timeraw_cold_start_first_sum_astropy():
    """The astropy-eager twin: import, ``getdata``, numpy's sum, in a fresh process."""
    return "from astropy.io import fits; fits.getdata(p).sum(axis=0)", COLD_SETUP
